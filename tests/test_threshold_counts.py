"""Relevant and judged non-relevant counts decide relevance by one exact test, whatever the dtype.

AUC and bpref divide by N, the judged non-relevant items; N once compared ``y < threshold`` in
the labels' dtype while relevance compares exactly, so a threshold the dtype cannot hold (0.7 in
float32, 1e-300 for integers) found an item neither relevant nor non-relevant. Here AUC and bpref
equal a brute force that compares each stored label with the threshold as exact rationals, and
bpref gives the same value on the flat form as on the dense one.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from ignite_ranking import AUC, Bpref

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64, torch.uint8)
THRESHOLDS = (0.7, 0.1, 1 / 3, 1e-300, 2.5, 1.0)


def _exact_auc(scores: list[float], labels: list, threshold: float) -> float | None:
    relevant = [Fraction(label) >= Fraction(threshold) for label in labels]
    pos = [s for s, r in zip(scores, relevant, strict=True) if r]
    neg = [s for s, r in zip(scores, relevant, strict=True) if not r]
    if not pos or not neg:
        return None
    won = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return won / (len(pos) * len(neg))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_auc_counts_non_relevant_items_with_the_exact_test(dtype, threshold):
    rng = np.random.default_rng([DTYPES.index(dtype), THRESHOLDS.index(threshold)])
    grid = np.array([0.0, 0.1, 1 / 3, 0.5, 0.7, 1.0, 2.5, 3.0])
    y = torch.from_numpy(rng.choice(grid, size=(40, 9))).to(torch.float64)
    y = y.round() if not dtype.is_floating_point else y
    y = y.to(dtype)
    y[0, :2] = torch.tensor([1.0, 0.7]).to(dtype)  # the issue's row: 0.7 is below 0.7 in float32
    y_pred = torch.from_numpy(rng.integers(0, 5, size=y.shape) / 4.0)
    expected = [
        _exact_auc(
            y_pred[i].tolist(), [float(v) if dtype.is_floating_point else int(v) for v in y[i]], threshold
        )
        for i in range(y.shape[0])
    ]
    counted = [v for v in expected if v is not None]
    metric = AUC(relevance_threshold=threshold)
    metric.update((y_pred, y))
    assert metric.compute() == pytest.approx(sum(counted) / len(counted), rel=1e-12)


def test_the_issue_example():
    metric = AUC(relevance_threshold=0.7)
    metric.update((torch.tensor([[0.9, 0.1]]), torch.tensor([[1.0, 0.7]], dtype=torch.float32)))
    assert metric.compute() == 1.0
    metric = AUC(relevance_threshold=1e-300)
    metric.update((torch.tensor([[0.9, 0.1]]), torch.tensor([[1, 0]])))
    assert metric.compute() == 1.0


@pytest.mark.parametrize("ragged", [False, True])
def test_bpref_on_the_flat_form_equals_the_dense_form(ragged):
    rng = np.random.default_rng(5)
    y_pred = torch.from_numpy(rng.integers(0, 4, size=(30, 8)) / 2.0)
    y = torch.from_numpy(rng.integers(0, 3, size=(30, 8)))
    lengths = torch.from_numpy(rng.integers(1, 9, size=30)) if ragged else torch.full((30,), 8)
    keep = torch.arange(8)[None, :] < lengths[:, None]
    dense = Bpref()
    for row in range(30):  # a dense row per query, cut to its length
        n = int(lengths[row])
        dense.update((y_pred[row : row + 1, :n], y[row : row + 1, :n]))
    flat = Bpref()
    ids = torch.arange(30)[:, None].expand(30, 8)
    flat.update((y_pred[keep], y[keep], ids[keep]))
    assert flat.compute() == dense.compute()
