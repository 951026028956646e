"""The modules the metric base is split into import downward only: never the base, nor above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

METRICS = Path(__file__).resolve().parents[1] / "src" / "ignite_ranking" / "metrics"
# The base imports these; none of them imports the base, a metric or the group (no cycle).
BELOW_THE_BASE = [
    "attached",
    "batches",
    "cutoff_tail",
    "devices",
    "intervals",
    "label_notes",
    "options",
    "per_query",
    "publishing",
    "readout",
    "refusal",
    "resume",
    "state",
]
ABOVE = {"base", "group", "single_value"}


def _imported_siblings(path: Path) -> set[str]:
    """The sibling modules of ``metrics`` that ``path`` imports, at any level (typing ones too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                names.add(node.module.split(".")[0])
            else:
                names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ignite_ranking.metrics."):
            names.add(node.module.split(".")[2])
    return names


@pytest.mark.parametrize("module", BELOW_THE_BASE)
def test_the_base_s_parts_do_not_import_it(module):
    imported = _imported_siblings(METRICS / f"{module}.py")
    assert not imported & (ABOVE | {"mrr", "ndcg", "beyond", "diversity"}), (module, imported)
    assert imported <= set(BELOW_THE_BASE), (module, imported)


def test_the_base_imports_its_parts():
    assert _imported_siblings(METRICS / "base.py") <= set(BELOW_THE_BASE)


def test_the_base_is_read_in_one_sitting():
    assert len((METRICS / "base.py").read_text().splitlines()) < 600
