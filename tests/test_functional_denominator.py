"""functional.average_precision and per_query("map") take MAP's ``denominator``: per query equal
to the metric's values, to a brute force (every order of the tied items, averaged, for
``ties="average"``), and for ``"relevant_retrieved"`` to torchmetrics' AP@k."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from reference import rank_order, tie_free_batch, tied_batch

from ignite_ranking import MAP
from ignite_ranking import functional as F
from ignite_ranking.kernels.scoring import AP_DENOMINATORS

KS = [1, 2, 4, 10]


def _ap(labels: list[float], k: int, denominator: str) -> float:
    """AP@k of labels in ranked order (relevant: >= 1), over R, min(k, R) or the hits in the top k."""
    relevant = [label >= 1 for label in labels]
    total, hits = 0.0, 0
    for i, rel in enumerate(relevant[:k]):
        if rel:
            hits += 1
            total += hits / (i + 1)
    divisor = {"relevant": sum(relevant), "min_k_relevant": min(k, sum(relevant)), "relevant_retrieved": hits}
    return total / divisor[denominator] if divisor[denominator] else 0.0


def _brute_force(y_pred: torch.Tensor, y: torch.Tensor, denominator: str, ties: str) -> np.ndarray:
    rows = []
    for scores, labels in zip(y_pred.tolist(), y.tolist(), strict=True):
        if ties == "average":  # every order that sorts the scores descending, equally likely
            orders = [p for p in itertools.permutations(range(len(scores)))
                      if all(scores[a] >= scores[b] for a, b in itertools.pairwise(p))]  # fmt: skip
        else:
            orders = [rank_order(scores, ties)]
        ranked = [[labels[i] for i in order] for order in orders]
        rows.append([np.mean([_ap(row, k, denominator) for row in ranked]) for k in KS])
    return np.array(rows)


@pytest.mark.parametrize(
    ("denominator", "ties"),
    [(d, t) for d in AP_DENOMINATORS for t in ("first", "last", "average")
     if (d, t) != ("relevant_retrieved", "average")],  # refused: see the last test
)  # fmt: skip
def test_equals_the_metric_and_a_brute_force(denominator, ties):
    y_pred, y = tied_batch(np.random.default_rng(3), 24, 6, levels=3)
    got = F.average_precision(y_pred, y, KS, ties=ties, denominator=denominator)
    expected = _brute_force(y_pred, y, denominator, ties)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-15)
    values, rows = F.per_query((y_pred, y), "map", KS, ties=ties, denominator=denominator)
    assert torch.equal(values, got) and rows.tolist() == list(range(24))
    metric = MAP(KS, ties=ties, denominator=denominator, per_query=True, ignore_zero_hits=False)
    metric.update((y_pred, y))
    per_query = metric.per_query_values().values
    assert torch.equal(torch.stack([per_query[f"map@{k}"] for k in KS], dim=1), got)


def test_relevant_retrieved_is_torchmetrics_ap_at_k():
    ap_at_k = pytest.importorskip("torchmetrics.functional.retrieval").retrieval_average_precision
    y_pred, y = tie_free_batch(np.random.default_rng(4), 30, 12)
    got = F.average_precision(y_pred, y, KS, denominator="relevant_retrieved")
    theirs = [[ap_at_k(p, t >= 1, top_k=k).item() for k in KS] for p, t in zip(y_pred, y, strict=True)]
    np.testing.assert_allclose(got.numpy(), np.array(theirs), rtol=1e-6)


@pytest.mark.parametrize(
    ("function", "kwargs", "message"),
    [
        ("average_precision", {"denominator": "k"}, "denominator must be one of"),
        ("average_precision", {"ties": "average", "denominator": "relevant_retrieved"}, "random under"),
        ("mrr", {"denominator": "min_k_relevant"}, "of 'map' only"),
        ("map", {"denominator": None}, "denominator must be one of"),
    ],
)
def test_bad_denominators_are_refused(function, kwargs, message):
    y_pred, y = torch.tensor([[0.3, 0.2]]), torch.tensor([[1, 0]])
    with pytest.raises(ValueError, match=message):
        if function == "average_precision":
            F.average_precision(y_pred, y, 2, **kwargs)
        else:
            F.per_query((y_pred, y), function, 2, **kwargs)
