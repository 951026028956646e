"""Parity with torchmetrics 1.9's retrieval metrics on the flat form, and where they differ.

On tie-free data with positive scores, each of our metrics fed ``(preds, target, indexes)``
equals its torchmetrics counterpart to 1e-6, with ``top_k``, ``ignore_index`` and
``empty_target_action`` "skip" / "neg" (our ``ignore_zero_hits`` True / False). torchmetrics
defines three things differently (docs/migrating.md); the last tests pin those differences down.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

torchmetrics = pytest.importorskip("torchmetrics")
from torchmetrics import retrieval as tm  # noqa: E402
from torchmetrics.functional import retrieval as tmf  # noqa: E402

from ignite_ranking import MAP, MRR, NDCG, HitRate, Precision, Recall, RPrecision  # noqa: E402
from ignite_ranking import functional as F  # noqa: E402

IGNORE = -100


def _stream(seed, graded=False, num_queries=150):
    """Flat rows of queries of 1..20 candidates, distinct positive scores, some ignored rows."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 21, size=num_queries)
    n = int(lengths.sum())
    preds = torch.from_numpy(rng.permutation(n) + 1.0) / n  # distinct, all > 0
    top = 4 if graded else 2
    target = torch.from_numpy(rng.integers(0, top, size=n) * (rng.random(n) < 0.5))
    target[torch.from_numpy(rng.random(n) < 0.1)] = IGNORE
    indexes = torch.from_numpy(np.repeat(rng.permutation(num_queries), lengths))
    return preds, target, indexes


# ours (class, kwargs) -> torchmetrics class
PAIRS = [
    (MRR, {}, tm.RetrievalMRR),
    (HitRate, {}, tm.RetrievalHitRate),
    (Precision, {}, tm.RetrievalPrecision),
    (Recall, {}, tm.RetrievalRecall),
    (NDCG, {"gain_function": "linear_rank"}, tm.RetrievalNormalizedDCG),
]


def _ours(cls, kwargs, top_k, chunks, ignore_zero_hits):
    metric = cls(top_k, ignore_zero_hits=ignore_zero_hits, ignore_index=IGNORE, **kwargs)
    for chunk in chunks:
        metric.update(chunk)
    return metric.compute()


def _theirs(cls, top_k, chunks, action):
    kwargs = {} if top_k is None else {"top_k": top_k}
    metric = cls(empty_target_action=action, ignore_index=IGNORE, **kwargs)
    for preds, target, indexes in chunks:
        metric.update(preds, target, indexes=indexes)
    return metric.compute().item()


def _chunks(stream, parts=4):
    n = stream[0].shape[0]
    bounds = np.linspace(0, n, parts + 1).astype(int)
    return [tuple(t[a:b] for t in stream) for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize(("ours", "kwargs", "theirs"), PAIRS, ids=[p[2].__name__ for p in PAIRS])
@pytest.mark.parametrize(("ignore_zero_hits", "action"), [(True, "skip"), (False, "neg")])
def test_metrics_with_a_cutoff_equal_torchmetrics(ours, kwargs, theirs, ignore_zero_hits, action):
    stream = _stream(0, graded=theirs is tm.RetrievalNormalizedDCG)
    chunks = _chunks(stream)  # queries cut across updates
    cutoffs = [1, 3, 10, 25]
    got = _ours(ours, kwargs, cutoffs, chunks, ignore_zero_hits)
    expected = [_theirs(theirs, k, chunks, action) for k in cutoffs]
    assert got == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(("ignore_zero_hits", "action"), [(True, "skip"), (False, "neg")])
def test_r_precision_and_full_list_map_equal_torchmetrics(ignore_zero_hits, action):
    chunks = _chunks(_stream(1))
    r_precision = RPrecision(ignore_zero_hits=ignore_zero_hits, ignore_index=IGNORE)
    for chunk in chunks:
        r_precision.update(chunk)
    assert r_precision.compute() == pytest.approx(
        _theirs(tm.RetrievalRPrecision, None, chunks, action), abs=1e-6
    )
    # With k at least every query's length, AP divides by R on both sides.
    full = _ours(MAP, {}, [20], chunks, ignore_zero_hits)
    assert full == pytest.approx([_theirs(tm.RetrievalMAP, None, chunks, action)], abs=1e-6)


def _per_query_pairs(stream, metric, top_k, **kwargs):
    """Our per-query values and torchmetrics' functional, query by query."""
    ours = F.per_query(stream, metric, top_k, **kwargs)
    preds, target, indexes = stream
    for row, query in enumerate(ours.query_ids.tolist()):
        rows = indexes == query
        yield ours.values[row], preds[rows], target[rows]


def test_map_at_k_differs_torchmetrics_divides_by_the_hits_in_the_top_k():
    stream = _stream(2)
    stream = (stream[0], stream[1].clamp(min=0), stream[2])
    checked = 0
    for values, preds, target in _per_query_pairs(stream, "map", [3]):
        theirs = tmf.retrieval_average_precision(preds, target, top_k=3).item()
        relevant = int(target.sum())
        hits = 0
        for i in preds.argsort(descending=True)[:3].tolist():
            hits += int(target[i])
        # ours = (sum of P@i at relevant ranks <= k) / R; theirs divides the same sum by the hits
        expected = values.item() * relevant / hits if hits else 0.0
        assert theirs == pytest.approx(expected, abs=1e-6)
        checked += hits > 0 and hits < relevant
    assert checked > 10  # the definitions really differ on these queries


def test_ndcg_differs_torchmetrics_gain_is_linear():
    stream = _stream(3, graded=True)
    stream = (stream[0], stream[1].clamp(min=0), stream[2])
    differ = 0
    rows = zip(
        _per_query_pairs(stream, "ndcg", [5], gain_function="linear_rank"),
        F.per_query(stream, "ndcg", [5]).values[:, 0].tolist(),
        strict=True,
    )
    for (linear, preds, target), exponential in rows:
        theirs = tmf.retrieval_normalized_dcg(preds, target, top_k=5).item()
        assert theirs == pytest.approx(linear.item(), abs=1e-6)
        differ += abs(exponential - theirs) > 1e-3
    assert differ > 10  # our default, 2**label - 1, gives other values on graded labels


def test_non_positive_scores_differ_torchmetrics_zeroes_their_targets():
    preds = torch.tensor([0.5, -0.2, -0.9, 0.3, 0.0])
    target = torch.tensor([0, 1, 0, 0, 1])
    indexes = torch.zeros(5, dtype=torch.int64)
    # Ranked: 0.5 (0), 0.3 (0), 0.0 (1), -0.2 (1), -0.9 (0): ours finds a relevant item at rank 3.
    ours = F.per_query((preds, target, indexes), "mrr", [5]).values.item()
    assert ours == pytest.approx(1 / 3)
    # torchmetrics treats items scored <= 0 as non-relevant in MRR, MAP, precision and recall...
    assert tmf.retrieval_reciprocal_rank(preds, target, top_k=5).item() == 0.0
    assert tmf.retrieval_recall(preds, target, top_k=5).item() == 0.0
    # ...but not in HitRate, R-Precision and NDCG.
    assert tmf.retrieval_hit_rate(preds, target, top_k=5).item() == 1.0
    ours_hit = F.per_query((preds, target, indexes), "hit_rate", [5]).values.item()
    assert ours_hit == 1.0
