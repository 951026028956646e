"""`make check` is a quick loop that weakens nothing: `make test` and CI still run every test."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _recipe(target: str) -> list[list[str]]:
    """The commands `make -n TARGET` would run (the venv set-up left out)."""
    done = subprocess.run(
        ["make", "-n", "-s", target, "VENV=/venv", "STAMP=/dev/null"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [shlex.split(line) for line in done.stdout.splitlines() if line.startswith("/venv/bin/")]


def _pytest(commands: list[list[str]]) -> list[str]:
    return next(c for c in commands if c[:3] == ["/venv/bin/python", "-m", "pytest"])


def test_make_test_runs_every_test_after_lint():
    commands = _recipe("test")
    assert ["/venv/bin/ruff", "check", "."] in commands
    assert _pytest(commands) == ["/venv/bin/python", "-m", "pytest"]  # no subset, no marker
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_make_check_lints_and_runs_a_fast_subset():
    commands = _recipe("check")
    assert ["/venv/bin/ruff", "check", "."] in commands
    assert ["/venv/bin/ruff", "format", "--check", "."] in commands
    args = _pytest(commands)[3:]  # after `python -m pytest`
    assert "-x" in args and args[args.index("-m") : args.index("-m") + 2] == ["-m", "not slow"]
    ignored = [a.removeprefix("--ignore=") for a in args if a.startswith("--ignore=")]
    assert ignored, "the quick loop leaves the heavy files out"
    for path in ignored:  # a typo would silently run a heavy file
        assert (ROOT / path).is_file(), path


def test_readme_says_how_long_and_offers_make_check():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "$ make check" in readme and "$ make test" in readme
    assert "about 10-12 minutes on a quiet 2-core machine" in readme and "14" in readme
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "about 10-12 minutes on a quiet 2-core machine" in makefile  # the same figure in both
