"""A batch's way through the library reads in order: traced over one ``update`` of each case of
``benchmarks/trace_path.py`` (whose docstring defines the module sequence and its returns), it
comes back to a module it left no more often than today, never goes back to an earlier step,
and every module it enters is named on the map's "The way of a batch"."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("_trace_path", ROOT / "benchmarks" / "trace_path.py")
trace_path = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = trace_path  # dataclasses look their module up
_SPEC.loader.exec_module(trace_path)

# The most returns each case may make: what the moves of issue 33 reached. The ones left are a
# metric's own method called back by the form step (metrics/base.py), the ranked batch's type
# read by the lifecycle and then by the scorers (kernels/batch.py), the tie-settling pass's own
# top-k (kernels/selection.py), and in a group each member's way through the scorers. Issue 35
# added one (two in a group): the accumulate step run by the device path's refusal
# (metrics/refusal.py), which takes its additions back when the batch held NaN.
MOST_RETURNS = {
    "mrr_dense": 3,
    "mrr_dense_ties": 4,
    "mrr_dense_average": 3,
    "six_metrics": 31,
    "mrr_flat": 3,
    "mrr_sparse": 3,
    "mrr_retrieved": 3,
}


def test_every_case_has_a_bound():
    assert set(MOST_RETURNS) == set(trace_path.CASES)


@pytest.mark.parametrize("case", sorted(MOST_RETURNS))
def test_the_way_reads_in_order(case):
    result = trace_path.trace_case(case)
    back = dict(trace_path.returns_by_module(result.sequence))
    assert result.returns <= MOST_RETURNS[case], f"{case}: {result.returns} returns {back}: {result.sequence}"
    assert not trace_path.steps_out_of_order(result.sequence), result.sequence
    assert result.sequence[0] in ("metrics/base.py", "metrics/group.py")
    assert "kernels/forms.py" in result.sequence and "kernels/exact_sum.py" in result.sequence


@pytest.mark.parametrize("case", sorted(MOST_RETURNS))
def test_the_map_names_every_module_on_the_way(case):
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("## The way of a batch") : text.index("## Where to add")]
    named = set(re.findall(r"`((?:kernels|metrics)/\w+\.py)`", section))
    sequence = trace_path.trace_case(case).sequence
    lifecycle = {"metrics/base.py", "metrics/group.py"}
    # A metric's own module (metrics/mrr.py...) is the scorers' step; the map names one as the shape.
    own = {m for m in sequence if m.startswith("metrics/") and m not in {*trace_path.STEPS, *lifecycle}}
    missing = set(sequence) - named - own
    assert not missing, f"docs/architecture.md's way of a batch does not name {sorted(missing)}"


def test_leaves_import_nothing_of_the_library_but_other_leaves():
    for leaf in trace_path.LEAVES:
        tree = ast.parse((trace_path.PACKAGE / leaf).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:  # from . import x / from .x import y
                names = [node.module] if node.module else [alias.name for alias in node.names]
                folder = leaf.rpartition("/")[0]
                assert all(f"{folder}/{name}.py" in trace_path.LEAVES for name in names), leaf
            elif isinstance(node, ast.ImportFrom):
                assert not node.level and not (node.module or "").startswith("ignite_ranking"), leaf
            elif isinstance(node, ast.Import):
                assert not any(alias.name.startswith("ignite_ranking") for alias in node.names), leaf


def test_returns_are_counted_as_defined():
    sequence = trace_path.module_sequence(["a", "a", "b", "kernels/chunks.py", "b", "a", "c", "b"])
    assert sequence == ["a", "b", "a", "c", "b"]
    assert dict(trace_path.returns_by_module(sequence)) == {"a": 1, "b": 1}
