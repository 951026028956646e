"""The top-k selection by group maxima (kernels/selection.py) against ``torch.topk`` and a brute force.

Rows of at least 8,192 items take the grouped path on CPU. The selection must give
``torch.topk``'s values bit for bit, columns that hold them (each once), and the ranking kernel
on top of it the reference's values under every tie policy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from reference import SCORE_DTYPES, functional_values, per_query, tied_batch

from ignite_ranking import MRR, NDCG, RankingMetrics
from ignite_ranking.kernels import selection
from ignite_ranking.kernels.selection import sort_descending, top_k_rows

POLICIES = ["first", "last", "optimistic", "pessimistic", "average"]


def assert_exact_selection(values: torch.Tensor, k: int) -> None:
    expected = torch.topk(values, k, dim=1).values
    got, columns = top_k_rows(values, k)
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(values.gather(1, columns), got, rtol=0, atol=0, equal_nan=True)
    assert all(len(set(row)) == k for row in columns.tolist())  # each column once


@pytest.mark.parametrize("num_items", [8192, 10_007, 1 << 18])
def test_grouped_path_is_taken_for_long_rows(num_items):
    assert selection._group_size(num_items, 101) in (8, 16)
    assert selection._group_size(8191, 101) == 0
    assert selection._group_size(10_000, 1_000) == 0  # k too deep for the groups to prune


@pytest.mark.parametrize("num_items", [8192, 10_007, 20_000])
def test_random_rows_with_ties_and_infinities(num_items):
    rng = np.random.default_rng(num_items)
    scores = torch.from_numpy(rng.standard_normal((6, num_items)))
    scores[1] = torch.from_numpy(rng.integers(0, 40, num_items).astype(np.float64))  # many ties
    scores[2] = 0.5  # one tied block
    scores[3, rng.choice(num_items, 300, replace=False)] = math.inf
    scores[4] = -math.inf
    scores[4, :50] = 1.0
    scores[5, -7:] = 100.0  # the best items past the last whole group
    for k in (1, 2, 11, 101, num_items // 64):
        assert_exact_selection(scores, k)


def test_every_best_item_in_one_group():
    # The groups interleave: columns j, j + G, j + 2G... form group j.
    num_items, size = 16_384, selection._group_size(16_384, 101)
    groups = num_items // size
    scores = torch.zeros(3, num_items)
    scores[0, torch.arange(5, num_items, groups)] = torch.arange(size, dtype=torch.float32) + 1
    scores[1] = torch.arange(num_items, dtype=torch.float32)  # rising: the last group holds the best
    scores[2] = -torch.arange(num_items, dtype=torch.float32)
    for k in (1, size, 101, 200):
        assert_exact_selection(scores, k)


@pytest.mark.parametrize("dtype", [*SCORE_DTYPES, torch.int64, torch.int32])
def test_dtypes_and_strides(dtype):
    rng = np.random.default_rng(5)
    base = torch.from_numpy(rng.integers(-1000, 1000, (12_000, 4))).to(dtype)
    scores = base.t()  # columns 4 elements apart
    assert scores.stride(1) != 1
    for k in (3, 150):
        assert_exact_selection(scores, k)
        assert_exact_selection(scores.contiguous(), k)


def test_nan_is_selected_first():
    scores = torch.randn(3, 9000)
    scores[1, 4321] = math.nan
    values, columns = top_k_rows(scores, 10)
    assert math.isnan(values[1, 0]) and int(columns[1, 0]) == 4321
    assert not values[[0, 2]].isnan().any()


@pytest.mark.parametrize("top_k", [[1, 10, 100], [5_000]])  # the grouped top-k; a whole-row sort
def test_a_nan_score_in_a_long_row_is_refused_and_the_state_kept(top_k):
    scores, labels = torch.randn(3, 9000), (torch.rand(3, 9000) < 0.01).float()
    metric = RankingMetrics(mrr=MRR(top_k), ndcg=NDCG(top_k))
    metric.update((scores, labels))
    state = lambda: [(m._sum_per_k.clone(), m._num_examples.clone()) for m in metric.metrics.values()]  # noqa: E731
    before = state()
    scores[2, 8999] = math.nan
    with pytest.raises(ValueError, match="y_pred must not contain NaN"):
        metric.update((scores, labels))
    for (sums, count), (sums_after, count_after) in zip(before, state(), strict=True):
        assert torch.equal(sums, sums_after) and torch.equal(count, count_after)


@pytest.mark.parametrize("ties", POLICIES)
def test_metrics_on_long_rows_are_those_of_torch_topk(ties, monkeypatch):
    # Bit for bit the values of the kernel on torch.topk alone, and the brute force's.
    rng = np.random.default_rng(17)
    y_pred, y = tied_batch(rng, 3, 8192, levels=200)
    quantized = torch.round(torch.randn(3, 8192, dtype=torch.float64) * 8) / 8
    one_block = torch.zeros(3, 8192, dtype=torch.float64)  # the cutoff inside a block of 8,000
    one_block[:, ::97] = 1.0  # (the tied slots are then filled by a top-k of a key, grouped too)
    top_k = [1, 5, 10, 100]
    metrics = ("mrr", "ndcg", "precision", "recall", "map")
    for scores in (y_pred, quantized, one_block):
        grouped = {m: functional_values(m, scores, y, top_k, ties=ties) for m in metrics}
        with monkeypatch.context() as patched:
            patched.setattr(selection, "_group_size", lambda num_items, k: 0)
            plain = {m: functional_values(m, scores, y, top_k, ties=ties) for m in metrics}
        for m in metrics:
            assert torch.equal(grouped[m], plain[m]), m
            if ties in ("first", "last"):
                expected = np.asarray(per_query(scores, y, m, top_k, ties=ties))
                np.testing.assert_allclose(grouped[m].numpy(), expected, rtol=1e-12, atol=1e-15, err_msg=m)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.int8, torch.uint8, torch.int64])
def test_sort_descending_is_the_stable_descending_sort(dtype):
    info = torch.iinfo(dtype)
    rng = np.random.default_rng(3)
    keys = torch.from_numpy(rng.integers(info.min, info.max, (5, 3000), endpoint=True)).to(dtype)
    keys[1] = torch.from_numpy(rng.integers(0, 3, 3000)).to(dtype)  # few values: long tied runs
    keys[2, :10] = info.min
    keys[2, 10:20] = info.max
    for case in (keys, keys[:, ::3], keys[:, :1], keys[:0], keys.t().contiguous().t()):
        values, order = sort_descending(case)
        expected = case.sort(dim=1, descending=True, stable=True)
        assert values.dtype == case.dtype and order.dtype == torch.int64
        assert torch.equal(values, expected.values) and torch.equal(order, expected.indices)
