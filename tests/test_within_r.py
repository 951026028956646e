"""Relevant items among each row's top R by selection (R-Precision's kernel), against brute force.

The brute force sorts each row by the policy's full key in Python and counts; ``"average"`` sums
each rank's tied-block share of relevant items as exact fractions. Both selections (numpy's
partition on CPU, the sort used on other devices) run on rows that are all tied, two-valued,
quantized with ±inf and -0.0, or distinct, a few rows a chunk so that chunks are crossed.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch
from reference import SCORE_DTYPES
from test_worst_cases import patterned_batch

from ignite_ranking import RPrecision
from ignite_ranking.kernels import chunks, within_r
from ignite_ranking.kernels.inputs import comparable_labels, count_relevant

POLICIES = ["first", "last", "optimistic", "pessimistic", "average"]


def brute_force(scores: list[float], labels: list[float], threshold: float, ties: str) -> float:
    relevant = [label >= threshold for label in labels]
    r = sum(relevant)
    if r == 0:
        return 0.0
    n = len(scores)
    if ties == "average":
        share = {}
        for s in set(scores):
            block = [i for i in range(n) if scores[i] == s]
            share[s] = Fraction(sum(relevant[i] for i in block), len(block))
        ranked = sorted(range(n), key=lambda i: -scores[i])
        return float(sum(share[scores[i]] for i in ranked[:r]))
    key = {
        "first": lambda i: (-scores[i], i),
        "last": lambda i: (-scores[i], -i),
        "optimistic": lambda i: (-scores[i], -labels[i], i),
        "pessimistic": lambda i: (-scores[i], labels[i], i),
    }[ties]
    return float(sum(relevant[i] for i in sorted(range(n), key=key)[:r]))


@pytest.fixture(params=["partition", "sort"])
def selection(request, monkeypatch):
    """Small chunks, and the CPU selection or the devices' sort."""
    monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 64)
    monkeypatch.setattr(within_r, "_PARTITION_FROM", 1 if request.param == "partition" else 10**9)
    return request.param


@pytest.mark.parametrize("ties", POLICIES)
@pytest.mark.parametrize("seed", range(3))
def test_equals_brute_force_on_tie_patterns(selection, ties, seed):
    rng = np.random.default_rng(seed)
    y_pred, y = patterned_batch(rng, 24, 30)
    y[rng.random(24) < 0.2] = 0.0  # rows without relevant items
    y[0] = 3.0  # a row all relevant
    labels, threshold = comparable_labels(y, 1.0)
    got = within_r.relevant_within_r(y_pred, labels, threshold, count_relevant(y, 1.0), ties)
    expected = [brute_force(s, lab, 1.0, ties) for s, lab in zip(y_pred.tolist(), y.tolist(), strict=True)]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-14, atol=0)


@pytest.mark.parametrize("dtype", SCORE_DTYPES)
@pytest.mark.parametrize("ties", ["first", "average"])
def test_score_dtypes_and_integer_labels(selection, dtype, ties):
    rng = np.random.default_rng(7)
    y_pred = torch.from_numpy(rng.integers(0, 6, (10, 40)) / 4.0).to(dtype)  # exact in every dtype
    y = torch.from_numpy(rng.integers(0, 3, (10, 40)))
    got = within_r.relevant_within_r(y_pred, y, 1, count_relevant(y, 1.0), ties)
    expected = [brute_force(s, lab, 1, ties) for s, lab in zip(y_pred.tolist(), y.tolist(), strict=True)]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-14, atol=0)


def test_empty_batches():
    for shape in ((0, 5), (3, 0)):
        scores, labels = torch.zeros(shape), torch.zeros(shape)
        got = within_r.relevant_within_r(
            scores, labels, 1.0, torch.zeros(shape[0], dtype=torch.float64), "first"
        )
        assert got.tolist() == [0.0] * shape[0]


@pytest.mark.parametrize("ties", POLICIES)
def test_metric_reads_the_count_without_ranking_deep(ties):
    rng = np.random.default_rng(3)
    y_pred, y = patterned_batch(rng, 12, 60)
    metric = RPrecision(ties=ties)
    ranked = metric.ranking
    from ignite_ranking.kernels.forms import normalize

    batch = normalize((y_pred, y), ranked).ranked
    assert batch.depth == 1 and batch.relevant_within_r is not None
    metric.update((y_pred, y))
    values = [
        brute_force(s, lab, 1.0, ties) / max(sum(v >= 1 for v in lab), 1)
        for s, lab in zip(y_pred.tolist(), y.tolist(), strict=True)
    ]
    counted = [v for v, lab in zip(values, y.tolist(), strict=True) if any(x >= 1 for x in lab)]
    assert metric.compute() == pytest.approx(sum(counted) / len(counted), rel=1e-14)


def test_r_precision_from_ranked_positions_when_not_counted_by_the_kernel():
    """Without ``relevant_within_r`` (TREC batches), R-Precision reads the ranked positions'
    cumulative count at rank R: brute force, rows with R = 0, and a batch of no position."""
    from ignite_ranking.kernels import RankedBatch, scoring

    generator = torch.Generator().manual_seed(5)
    relevant = (torch.rand(40, 30, generator=generator) < 0.3).to(torch.float64)
    relevant[:5] = 0.0
    num_relevant = relevant.sum(dim=1) + torch.randint(0, 3, (40,), generator=generator) * (
        relevant.sum(dim=1) > 0
    )
    num_relevant = torch.minimum(num_relevant, torch.full_like(num_relevant, 30.0))
    got = scoring.r_precision(RankedBatch(labels=relevant, relevant=relevant, num_relevant=num_relevant))[
        :, 0
    ]
    expected = [
        relevant[row, : int(r)].sum().item() / r if r else 0.0 for row, r in enumerate(num_relevant.tolist())
    ]
    assert got.tolist() == expected
    empty = RankedBatch(labels=torch.zeros(3, 0), relevant=torch.zeros(3, 0, dtype=torch.float64),
                        num_relevant=torch.zeros(3, dtype=torch.float64))  # fmt: skip
    assert scoring.r_precision(empty).tolist() == [[0.0]] * 3
