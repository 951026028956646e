"""docs/install.md names every extra and every runtime dependency of pyproject.toml."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the check needs to run on one of them

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
PAGE = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
REQUIREMENT = re.compile(r"^([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)")


def _table_rows() -> list[str]:
    return [line for line in PAGE.splitlines() if line.startswith("|")]


@pytest.mark.parametrize("extra", sorted(PROJECT["optional-dependencies"]))
def test_every_extra_is_in_the_table(extra):
    assert any(row.startswith(f"| `{extra}` |") for row in _table_rows()), (
        f"extra {extra!r} is not on the page"
    )


@pytest.mark.parametrize("extra", sorted(PROJECT["optional-dependencies"]))
def test_the_table_names_what_each_extra_adds(extra):
    row = next(row for row in _table_rows() if row.startswith(f"| `{extra}` |"))
    for requirement in PROJECT["optional-dependencies"][extra]:
        name = REQUIREMENT.match(requirement).group(1)
        assert name.lower() in row.lower(), f"extra {extra!r} adds {name}, which its row does not name"


@pytest.mark.parametrize("requirement", PROJECT["dependencies"])
def test_every_runtime_dependency_is_named_with_its_floor(requirement):
    name, floor = REQUIREMENT.match(requirement).groups()
    assert any(row.startswith(f"| `{name}` | {floor} or later |") for row in _table_rows()), requirement
    assert "no other dependency" not in PAGE


def test_install_commands():
    assert "$ pip install ." in PAGE  # a plain install, not only an editable one
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in PAGE
