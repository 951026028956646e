"""docs/trec.md's flag tables list every option of ``ignite-ranking --help`` and its subcommands."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from ignite_ranking.cli import _parser

TREC_PAGE = Path(__file__).resolve().parents[1] / "docs" / "trec.md"


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parser = _parser()
    found = {"ignite-ranking": parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update({f"ignite-ranking {name}": sub for name, sub in action.choices.items()})
    return found


def _options() -> list[tuple[str, str]]:
    return [
        (name, option)
        for name, parser in _parsers().items()
        for action in parser._actions
        for option in action.option_strings
    ]


def test_every_subcommand_is_found():
    assert set(_parsers()) == {"ignite-ranking", "ignite-ranking evaluate", "ignite-ranking compare"}


@pytest.mark.parametrize(("command", "option"), _options(), ids=[" ".join(o) for o in _options()])
def test_option_is_in_a_flags_table(command, option):
    rows = [line for line in TREC_PAGE.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    # in backticks, as a whole option: `--progress` must not pass for `--no-progress` alone
    pattern = re.compile(r"`(?:[^`]*[\s,])?" + re.escape(option) + r"(?:[\s,=][^`]*)?`")
    assert any(pattern.search(row) for row in rows), (
        f"{command} {option} is missing from docs/trec.md's tables"
    )
