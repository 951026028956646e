"""Many cutoffs at or past the ranked depth: scored once, their values and sums the same to the bit.

A metric with a ``cutoff_tail`` scores the cutoffs below the ranked depth and the first at or
past it, and spreads that one to the rest (repeated, or a numerator divided by each k for
P@k). Here every such metric is compared with itself scoring every cutoff (``cutoff_tail =
None``): the state's limbs, the per-query values and the results must be equal, bit for bit,
for ties, graded labels, rows with no relevant item and every input form; the main family is
also compared with the brute-force reference.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from reference import list_values, tied_batch

import ignite_ranking as ir
from ignite_ranking.kernels.exact_sum import limb_sums, limb_totals, weighted_limb_sums
from ignite_ranking.kernels.exposure import item_counts

ROW = 7  # items of a dense row
# A few cutoffs below the row length, and many at or past it (the length itself among them).
KS = [1, 2, 4, ROW - 1, *range(ROW, ROW + 40), 100, 1_000, 54_321]
TIES = ["first", "last", "optimistic", "pessimistic", "average"]


def _every_cutoff(metric: ir.RankingMetric) -> ir.RankingMetric:
    """The same metric, scoring every cutoff on its own (as before cutoffs had a tail)."""
    clone = copy.deepcopy(metric)
    clone.__class__ = type(f"Every{type(metric).__name__}", (type(metric),), {"cutoff_tail": None})
    return clone


def _statistics(rng, num_items):
    popularity = torch.from_numpy(rng.integers(1, 6, size=num_items).astype(np.float64))
    embeddings = torch.from_numpy(rng.normal(size=(num_items, 3)))
    return popularity, popularity >= 3, embeddings


def _family(popularity, tail, embeddings, **common):
    """Every metric with a cutoff tail, built for ``common`` settings."""
    ties = common.get("ties", "first")
    average = ties == "average"
    members = {
        "mrr": ir.MRR(KS, **common),
        "hit_rate": ir.HitRate(KS, **common),
        "precision": ir.Precision(KS, **common),
        "precision_adaptive": ir.Precision(KS, adaptive_k=True, **common),
        "recall": ir.Recall(KS, **common),
        "map": ir.MAP(KS, **common),
        "ndcg": ir.NDCG(KS, **common),
        "ndcg_linear": ir.NDCG(KS, gain_function="linear_rank", **common),
        "rbp": ir.RBP(KS, p=0.8, **common),
    }
    if not average:  # these refuse ties="average"
        members |= {
            "judged": ir.Judged(KS, **common),
            "rbp_resid": ir.RBPResidual(KS, p=0.8, **common),
            "auc": ir.AUC(top_k=KS, **common),
            "err": ir.ERR(KS, **common),
            "nerr": ir.NERR(KS, **common),
            "p_judged": ir.Precision(KS, judged_only=True, **common),
            "ndcg_judged": ir.NDCG(KS, judged_only=True, **common),
        }
    return members


def _list_measures(popularity, tail, embeddings, **common):
    return {
        "novelty": ir.Novelty(KS, popularity, **common),
        "arp": ir.AveragePopularity(KS, popularity, **common),
        "aplt": ir.LongTailShare(KS, tail, **common),
        "ild": ir.IntraListDiversity(KS[1:], embeddings, **common),
        "serendipity": ir.Serendipity(KS, popularity, **common),
    }


def _assert_same(tail: ir.RankingMetric, full: ir.RankingMetric, name: str) -> None:
    assert torch.equal(tail._sum_per_k, full._sum_per_k), name
    assert int(tail._num_examples) == int(full._num_examples), name
    if tail._query_values:
        assert torch.equal(torch.cat(tail._query_values), torch.cat(full._query_values)), name
    try:
        expected = full.compute()
    except Exception as error:
        with pytest.raises(type(error)):
            tail.compute()
        return
    got = tail.compute()
    assert str(got) == str(expected), name  # NaN compares equal as text


def _dense_batches(rng, ties):
    for _ in range(2):
        y_pred, y = tied_batch(rng, 9, ROW, levels=2 if ties == "average" else 3)
        y[0] = 0.0  # a row with no relevant item
        yield y_pred, y


def _retrieved_batches(rng):
    """Short, padded lists: the ranked depth is the longest list (5), below most cutoffs."""
    for _ in range(2):
        ids = torch.from_numpy(rng.integers(0, 12, size=(6, 5)))
        ids = torch.stack([torch.from_numpy(rng.permutation(12)[:5]) for _ in range(6)])
        ids[1, 3:] = -1
        ids[2, :] = -1
        scores = torch.from_numpy(rng.integers(0, 3, size=(6, 5)).astype(np.float64))
        relevant = torch.stack([torch.from_numpy(rng.permutation(12)[:4]) for _ in range(6)])
        relevant[3, 2:] = -1
        grades = torch.from_numpy(rng.integers(0, 4, size=(6, 4)).astype(np.float64))
        yield ir.Retrieved(ids, relevant, scores=scores, grades=grades)


def _flat_batches(rng):
    y_pred, y = tied_batch(rng, 6, ROW, levels=3)
    lengths = rng.integers(1, ROW + 1, size=6)
    keep = torch.arange(ROW)[None, :] < torch.from_numpy(lengths)[:, None]
    indexes = torch.arange(6)[:, None].expand(6, ROW)
    yield y_pred[keep], y[keep], indexes[keep]


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize(
    "options", [{}, {"per_query": True, "confidence": 0.9}, {"empty_target_action": "pos"}]
)
def test_dense_cutoffs_past_the_row_equal_every_cutoff_scored(ties, options):
    rng = np.random.default_rng(len(ties) + len(options))
    stats = _statistics(rng, ROW)
    members = _family(*stats, ties=ties, **options)
    if ties != "average":
        members |= _list_measures(*stats, ties=ties, **{k: v for k, v in options.items() if k == "per_query"})
    full = {name: _every_cutoff(metric) for name, metric in members.items()}
    assert members["mrr"]._tail(ROW) == KS.index(ROW) and full["mrr"]._tail(ROW) is None
    for y_pred, y in _dense_batches(rng, ties):
        for name, metric in members.items():
            metric.update((y_pred, y))
            full[name].update((y_pred, y))
    for name, metric in members.items():
        _assert_same(metric, full[name], name)


@pytest.mark.parametrize("ties", ["first", "average"])
def test_retrieved_short_lists_and_flat_rows_equal_every_cutoff_scored(ties):
    rng = np.random.default_rng(7)
    stats = _statistics(rng, 12)
    members = _family(*stats, ties=ties, per_query=True)
    members.pop("auc", None)  # AUC reads every item's score: dense and flat forms only
    if ties == "first":  # the list measures read the items (not of the flat form) of one order
        members |= _list_measures(*stats, ties=ties, per_query=True)
    flat_members = _family(*stats, ties=ties, per_query=True)
    flat_members.pop("judged", None)  # flat rows are all judged
    for metrics, batches in ((members, _retrieved_batches(rng)), (flat_members, _flat_batches(rng))):
        full = {name: _every_cutoff(metric) for name, metric in metrics.items()}
        for batch in batches:
            for name, metric in metrics.items():
                metric.update(batch)
                full[name].update(batch)
        for name, metric in metrics.items():
            _assert_same(metric, full[name], name)


def test_a_group_spreads_its_members_cutoffs_as_each_alone():
    rng = np.random.default_rng(3)
    members = {
        "mrr": ir.MRR(KS),
        "p": ir.Precision(KS),
        "ndcg": ir.NDCG(KS),
        "map": ir.MAP(KS, per_query=True),
    }
    group = ir.RankingMetrics(**members)
    alone = {name: _every_cutoff(metric) for name, metric in members.items()}
    for y_pred, y in _dense_batches(rng, "first"):
        group.update((y_pred, y))
        for metric in alone.values():
            metric.update((y_pred, y))
    for name, metric in members.items():
        _assert_same(metric, alone[name], name)


@pytest.mark.parametrize("metric", ["mrr", "hit_rate", "precision", "recall", "map", "ndcg"])
@pytest.mark.parametrize("ties", TIES)
def test_per_query_values_past_the_row_equal_the_reference(metric, ties):
    rng = np.random.default_rng(11)
    classes = {
        "mrr": ir.MRR,
        "hit_rate": ir.HitRate,
        "precision": ir.Precision,
        "recall": ir.Recall,
        "map": ir.MAP,
        "ndcg": ir.NDCG,
    }
    built = classes[metric](KS, ties=ties, per_query=True, ignore_zero_hits=False)
    y_pred, y = tied_batch(rng, 8, ROW - 1, levels=3)  # tied blocks of a few items (every order)
    y[1] = 0.0
    built.update((y_pred, y))
    got = torch.stack(list(built.per_query_values().values.values()), dim=1).tolist()
    for row, (scores, labels) in enumerate(zip(y_pred.tolist(), y.tolist(), strict=True)):
        index = list(range(len(scores)))
        expected = list_values(scores, index, labels, labels, metric, KS, ties=ties)
        assert got[row] == pytest.approx(expected, rel=1e-12, abs=1e-15), row


@pytest.mark.parametrize("metric", ["mrr", "precision", "recall", "map", "ndcg"])
def test_retrieved_short_lists_past_their_length_equal_the_reference(metric):
    rng = np.random.default_rng(5)
    classes = {"mrr": ir.MRR, "precision": ir.Precision, "recall": ir.Recall, "map": ir.MAP, "ndcg": ir.NDCG}
    built = classes[metric](KS, per_query=True, ignore_zero_hits=False)
    batch = next(_retrieved_batches(rng))
    built.update(batch)
    got = torch.stack(list(built.per_query_values().values.values()), dim=1).tolist()
    grades = dict.fromkeys(range(12), 0.0)
    for row in range(batch.ids.shape[0]):
        judged = {
            int(i): float(g)
            for i, g in zip(batch.relevant[row], batch.grades[row], strict=True)
            if int(i) >= 0
        }
        listed = [int(i) for i in batch.ids[row] if int(i) >= 0]
        scores = [float(s) for s, i in zip(batch.scores[row], batch.ids[row], strict=True) if int(i) >= 0]
        labels = [judged.get(i, grades[i]) for i in listed]
        expected = list_values(scores, listed, labels, list(judged.values()), metric, KS)
        assert got[row] == pytest.approx(expected, rel=1e-12, abs=1e-15), row


def test_precision_past_the_row_sums_each_query_rounded_on_its_own():
    """P@k = hits / k of many queries: the sums are those of each value rounded, not of the
    hits divided once (which can differ in the last 2**-64 unit)."""
    y = torch.zeros(300, 3)
    y[:, 0] = 1.0
    y[::3, 1] = 1.0
    y_pred = torch.rand(300, 3, generator=torch.Generator().manual_seed(0))
    ks = [3, *range(1_000, 1_100), 99_991]
    tail, full = ir.Precision(ks), _every_cutoff(ir.Precision(ks))
    tail.update((y_pred, y))
    full.update((y_pred, y))
    assert torch.equal(tail._sum_per_k, full._sum_per_k)
    units = [round((h / k) * 2.0**64) for h in y.sum(dim=1).tolist() for k in (99_991,)]
    assert tail.compute()[-1] == sum(units) / (300 << 64)  # each value rounded, the sum exact


def test_item_counts_past_the_depth_repeat_and_equal_a_count_per_cutoff():
    rng = np.random.default_rng(2)
    ids = torch.stack([torch.from_numpy(rng.permutation(20)[:6]) for _ in range(5)])
    ids[1, 4:] = -1
    ks = [1, 3, 5, 6, 7, 8, 50]
    expected = []
    for k in ks:
        top = ids[:, :k].reshape(-1)
        expected.append(torch.bincount(top[top >= 0], minlength=20))
    assert torch.equal(item_counts(ids, ks, 20), torch.stack(expected))
    metric, batch = ir.Coverage(ks, num_items=20), ir.Retrieved(ids, torch.zeros(5, 1, dtype=torch.int64))
    metric.update(batch)
    metric.update(batch)
    assert torch.equal(metric._sum_per_k, 2 * torch.stack(expected).reshape(-1))


def test_weighted_limb_sums_are_the_limb_sums_of_the_rows_repeated():
    gen = torch.Generator().manual_seed(4)
    values = (
        torch.randn(5, 300, generator=gen, dtype=torch.float64)
        * torch.tensor([1e-12, 1e-3, 1.0, 1e3, 1e8], dtype=torch.float64)[:, None]
    )
    values[2, :5] = torch.tensor([math.inf, math.nan, 2.0**31, -(2.0**31) + 1, 0.1])
    weights = torch.tensor([3, 0, 7, 1, 250])
    got = weighted_limb_sums(values, weights)
    expected = limb_sums(values.repeat_interleave(weights, dim=0))
    finite = expected[:, -1] == 0
    assert torch.equal(got[:, -1], expected[:, -1]) and bool((~finite[:3]).all())
    assert torch.equal(got[finite], expected[finite]) and int(finite.sum()) > 250
    # Weights past 2**21 in all are summed in int64: the exact totals of the values rounded.
    weights = torch.tensor([2**22, 1, 3, 0, 2**21 + 5])
    totals = limb_totals(weighted_limb_sums(values[:, 5:], weights))
    for column, total in enumerate(totals):
        rounded = [round(v * 2.0**64) for v in values[:, 5 + column].tolist()]
        assert total == sum(w * r for w, r in zip(weights.tolist(), rounded, strict=True))


@pytest.mark.parametrize("make", [ir.NDCG, ir.Precision, ir.Recall])
def test_average_ties_sum_as_for_every_cutoff_asked(make):
    """Under "average", hits and DCG are summed over the tied blocks or over the ranks depending
    on the number of cutoffs (the two can differ in the last bits): the first cutoff past the
    depth is scored as if all were, here 4 asked (over the ranks) and 2 scored (blocks)."""
    rng = np.random.default_rng(0)
    y_pred = torch.from_numpy(rng.integers(0, 3, size=(16, 120)).astype(np.float64))
    y = torch.from_numpy((rng.random((16, 120)) < 0.2) * rng.integers(1, 4, size=(16, 120))).double()
    tail, full = (
        make([3, 120, 2000, 3000], ties="average"),
        _every_cutoff(make([3, 120, 2000, 3000], ties="average")),
    )
    tail.update((y_pred, y))
    full.update((y_pred, y))
    assert torch.equal(tail._sum_per_k, full._sum_per_k)
