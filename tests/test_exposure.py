"""Coverage@k and GiniIndex equal RecBole's ItemCoverage and GiniIndex (reimplemented here from
their definitions) on the same top-k lists, in the dense and Retrieved forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from reference import rank_order, tied_batch

import ignite_ranking as ir

KS = [1, 3, 10]


def _recbole(item_matrix: np.ndarray, num_items: int) -> tuple[float, float]:
    """RecBole's ItemCoverage and GiniIndex of a (users, k) matrix of recommended item ids."""
    coverage = len(set(item_matrix.flatten().tolist())) / num_items
    _, counts = np.unique(item_matrix.flatten(), return_counts=True)
    sorted_count = np.sort(counts)
    recommended = sorted_count.shape[0]
    idx = np.arange(num_items - recommended + 1, num_items + 1)
    gini = np.sum((2 * idx - num_items - 1) * sorted_count) / item_matrix.size / num_items
    return coverage, float(gini)


@pytest.mark.parametrize("ties", ["first", "last"])
def test_coverage_and_gini_equal_recbole(ties):
    rng = np.random.default_rng(11)
    y_pred, y = tied_batch(rng, 50, 14)
    coverage, gini = ir.Coverage(KS, num_items=14, ties=ties), ir.GiniIndex(KS, num_items=14, ties=ties)
    group = ir.RankingMetrics(coverage=ir.Coverage(KS, num_items=14, ties=ties), mrr=ir.MRR(KS, ties=ties))
    for m in (coverage, gini, group):
        m.update((y_pred[:20], y[:20]))
        m.update((y_pred[20:], y[20:]))
    orders = np.array([rank_order(row.tolist(), ties) for row in y_pred])
    want = [_recbole(orders[:, :k], 14) for k in KS]
    assert coverage.compute() == pytest.approx([w[0] for w in want], abs=1e-12)
    assert gini.compute() == pytest.approx([w[1] for w in want], abs=1e-12)
    assert [group.compute()[f"coverage@{k}"] for k in KS] == pytest.approx([w[0] for w in want], abs=1e-12)


def test_retrieved_lists_count_their_ids_and_skip_padding():
    ids = torch.tensor([[5, 2, -1], [5, 7, 1]])
    relevant = torch.tensor([[2], [9]])
    coverage, gini = ir.Coverage([1, 3], num_items=10), ir.GiniIndex([3], num_items=10)
    for m in (coverage, gini):
        m.update(ir.Retrieved(ids, relevant))
    assert coverage.compute() == [0.1, 0.4]
    counts = np.array([2, 1, 1, 1])  # items 5, 2, 7, 1 ; six others 0
    assert gini.compute() == pytest.approx([_recbole_counts(counts, 10)], abs=1e-12)


def _recbole_counts(counts: np.ndarray, num_items: int) -> float:
    sorted_count = np.sort(counts)
    idx = np.arange(num_items - len(counts) + 1, num_items + 1)
    return float(np.sum((2 * idx - num_items - 1) * sorted_count) / counts.sum() / num_items)


def test_state_round_trip_and_refusals():
    rng = np.random.default_rng(12)
    y_pred, y = tied_batch(rng, 10, 6)
    metric = ir.GiniIndex(KS, num_items=6)
    metric.update((y_pred[:5], y[:5]))
    restored = ir.GiniIndex(KS, num_items=6)
    restored.load_state_dict(metric.state_dict())
    for m in (metric, restored):
        m.update((y_pred[5:], y[5:]))
    assert restored.compute() == metric.compute()
    with pytest.raises(ValueError, match="other settings"):
        ir.GiniIndex(KS, num_items=7).load_state_dict(metric.state_dict())
    with pytest.raises(ValueError, match="num_items"):
        ir.Coverage(KS, num_items=0)
    small = ir.Coverage(KS, num_items=3)
    with pytest.raises(ValueError, match="num_items"):
        small.update(ir.Retrieved(torch.tensor([[0, 4]]), torch.tensor([[0]])))
    with pytest.raises(ValueError, match="flat"):
        small.update((torch.rand(4), torch.ones(4), torch.tensor([0, 0, 1, 1])))


def test_pooled_measures_refuse_a_per_query_group():
    with pytest.raises(ValueError, match="pool their queries"):
        ir.RankingMetrics(
            mrr=ir.MRR(KS), gauc=ir.GAUC(), coverage=ir.Coverage(KS, num_items=5), per_query=True
        )
