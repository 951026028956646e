"""The documentation's command lines run and print what the pages show.

A ``console`` block line ``$ ignite-ranking ...`` followed by output lines is an example: the
page's Python examples above it (``>>>``, which write its files into ``folder``) run first, then
the command runs in that folder in a child process, and its stdout must be the lines shown
(compared word by word: the pages' tabs and spaces may differ). Commands without output lines
(synopses) are not run.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
CONSOLE = re.compile(r"^```console\n(.*?)^```", re.MULTILINE | re.DOTALL)
FENCE = re.compile(r"^\s*(```|~~~|:::)")


def _examples():
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for block in CONSOLE.finditer(text):
            lines = block.group(1).splitlines()
            i = 0
            while i < len(lines):
                if not lines[i].startswith("$ ignite-ranking "):
                    i += 1
                    continue
                command = lines[i][2:]
                i += 1
                output = []
                while i < len(lines) and not lines[i].startswith("$ "):
                    output.append(lines[i])
                    i += 1
                if output and not command.rstrip().endswith("\\"):
                    yield pytest.param(
                        page, text[: block.start()], command, output, id=f"{page.name}:{command}"
                    )


EXAMPLES = list(_examples())


def _setup(text_before: str) -> dict:
    """Runs the page's ``>>>`` examples above the command; returns their names."""
    blanked = "\n".join("" if FENCE.match(line) else line for line in text_before.splitlines())
    names: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for example in doctest.DocTestParser().get_examples(blanked):
            exec(compile(example.source, "<docs>", "single"), names)
    return names


def _words(lines: list[str]) -> list[list[str]]:
    rows = [line.split() for line in lines]
    while rows and not rows[-1]:
        rows.pop()
    return rows


def test_the_pages_have_command_line_examples():
    pages = {param.values[0].name for param in EXAMPLES}
    assert {"compare.md", "trec.md"} <= pages


@pytest.mark.parametrize(("page", "text_before", "command", "output"), EXAMPLES)
def test_command_line_example(page, text_before, command, output):
    names = _setup(text_before)
    argv = shlex.split(command)
    assert argv[0] == "ignite-ranking"
    done = subprocess.run(
        [sys.executable, "-m", "ignite_ranking", *argv[1:]],
        cwd=names["folder"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert _words(done.stdout.splitlines()) == _words(output), done.stdout
