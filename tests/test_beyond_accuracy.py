"""Novelty, AveragePopularity, LongTailShare, IntraListDiversity, Serendipity, ShannonEntropy and
ExpectedExposure against a brute-force reference written here from the cited formulas.

The reference ranks each query on its own (``reference.list_orders``: ties by index, by label
for the bounds, every order of every tied block for ``"average"``), takes each list's first
``min(k, n)`` items and computes every value with Python floats in loops. Inputs: dense rows with
many ties, ``-1``-padded Retrieved lists (rows of no item included), graded labels.
"""

from __future__ import annotations

import copy
import math
import socket

import numpy as np
import pytest
import torch
from reference import list_orders, tied_batch

import ignite_ranking as ir
from ignite_ranking import functional as F

KS = [1, 2, 5, 10]
PAIR_KS = [2, 5, 10]
NUM_ITEMS = 7


# --------------------------------------------------------------------------- the reference


def novelty_ref(items, popularity):
    total = sum(popularity)
    return sum(-math.log2(popularity[i] / total) for i in items) / len(items)


def arp_ref(items, popularity):
    return sum(popularity[i] for i in items) / len(items)


def aplt_ref(items, tail):
    return sum(1.0 for i in items if tail[i]) / len(items)


def ild_ref(items, embeddings):
    distances = []
    for a in range(len(items)):
        for b in range(a + 1, len(items)):
            u, v = embeddings[items[a]], embeddings[items[b]]
            dot = sum(x * y for x, y in zip(u, v, strict=True))
            norms = math.sqrt(sum(x * x for x in u)) * math.sqrt(sum(y * y for y in v))
            distances.append(1.0 - dot / norms)
    return sum(distances) / len(distances)


def serendipity_ref(items, relevant, popularity, k):
    """Ge et al.: relevant items not in the primitive recommender's top k, over the list length."""
    primitive = sorted(range(len(popularity)), key=lambda i: (-popularity[i], i))[:k]
    if not items:
        return 0.0
    return sum(1.0 for i in items if i in relevant and i not in primitive) / len(items)


def entropy_ref(lists):
    counts = {}
    for items in lists:
        for i in items:
            counts[i] = counts.get(i, 0) + 1
    total = sum(counts.values())
    return -sum(c / total * math.log2(c / total) for c in counts.values()) if total else 0.0


def ee_ref(orders, labels, k, gamma, threshold, groups=None, exposure=None):
    """EE-L, EE-D, EE-R (and group exposure) of one query: ``orders`` are the equally likely
    rankings (item ids in rank order), ``labels`` the label of every catalog item; or the
    system's ``exposure`` of each item, given."""
    n = len(labels)
    if exposure is None:
        exposure = [0.0] * n
        for order in orders:
            for rank, item in enumerate(order[:k]):
                exposure[item] += gamma**rank / len(orders)
    relevant = [i for i in range(n) if labels[i] >= threshold]
    grades = sorted({labels[i] for i in relevant}, reverse=True)
    levels = [[i for i in relevant if labels[i] == g] for g in grades]
    levels.append([i for i in range(n) if labels[i] < threshold])
    target, start = [0.0] * n, 0
    for level in levels:
        if level:
            share = sum(gamma**p for p in range(start, start + len(level)) if p < k) / len(level)
            for i in level:
                target[i] = share
            start += len(level)
    loss = sum((e - t) ** 2 for e, t in zip(exposure, target, strict=True))
    disparity = sum(e * e for e in exposure)
    relevance = 2 * sum(e * t for e, t in zip(exposure, target, strict=True))
    out = {"l": loss, "d": disparity, "r": relevance}
    if groups is not None:
        for g in range(max(groups) + 1):
            out[f"group{g}"] = sum(exposure[i] for i in range(n) if groups[i] == g)
    return out


def mean(rows):
    return [math.fsum(column) / len(rows) for column in zip(*rows, strict=True)] if rows else None


# --------------------------------------------------------------------------- data


class Queries:
    """A batch as the reference sees it: per query, its orders, judged labels and catalog."""

    def __init__(self, queries):
        self.queries = queries  # [(orders, labels of the catalog, relevant set)]

    @classmethod
    def dense(cls, y_pred, y, ties, threshold=1.0):
        out = []
        for scores, labels in zip(y_pred.tolist(), y.tolist(), strict=True):
            orders = list(list_orders(scores, list(range(len(scores))), labels, ties))
            out.append((orders, labels, {i for i, v in enumerate(labels) if v >= threshold}))
        return cls(out)

    @classmethod
    def retrieved(cls, r: ir.Retrieved, num_items, ties, threshold=1.0):
        out = []
        grades = r.grades if r.grades is not None else torch.ones(r.relevant.shape)
        for row in range(r.ids.shape[0]):
            ids = [i for i in r.ids[row].tolist() if i >= 0]
            labels = [0.0] * num_items
            for item, grade in zip(r.relevant[row].tolist(), grades[row].tolist(), strict=True):
                if item >= 0:
                    labels[item] = float(grade)
            if r.scores is None:
                orders = [ids]
            else:
                scores = r.scores[row, : len(ids)].tolist()
                listed = [labels[i] for i in ids]
                orders = [[ids[p] for p in o] for o in list_orders(scores, ids, listed, ties)]
            out.append((orders, labels, {i for i in range(num_items) if labels[i] >= threshold}))
        return cls(out)

    def lists(self, k):
        return [orders[0][:k] for orders, _, _ in self.queries]


def random_retrieved(rng, batch, num_items, width, scored=False):
    ids = torch.full((batch, width), -1, dtype=torch.int64)
    relevant = torch.full((batch, 3), -1, dtype=torch.int64)
    grades = torch.zeros(batch, 3)
    for row in range(batch):
        length = int(rng.integers(0, width + 1))
        ids[row, :length] = torch.from_numpy(rng.permutation(num_items)[:length])
        judged = int(rng.integers(0, 4))
        relevant[row, :judged] = torch.from_numpy(rng.permutation(num_items)[:judged])
        grades[row, :judged] = torch.from_numpy(rng.integers(0, 4, size=judged).astype(np.float32))
    scores = torch.from_numpy(rng.integers(0, 3, size=(batch, width)).astype(np.float64)) if scored else None
    return ir.Retrieved(ids, relevant, scores=scores, grades=grades)


def statistics(rng, num_items=NUM_ITEMS):
    popularity = torch.from_numpy(rng.integers(1, 6, size=num_items).astype(np.float64))  # ties
    tail = torch.from_numpy(rng.random(num_items) < 0.5)
    embeddings = torch.from_numpy(rng.normal(size=(num_items, 3)))
    embeddings[1] = 2.5 * embeddings[0]  # same direction: distance 0
    groups = torch.from_numpy(rng.integers(0, 3, size=num_items))
    return popularity, tail, embeddings, groups


def list_measures(popularity, tail, embeddings, ties, threshold=1.0, ignore_zero_hits=True):
    common = {"ties": ties}
    return {
        "novelty": ir.Novelty(KS, popularity, **common),
        "arp": ir.AveragePopularity(KS, popularity, **common),
        "aplt": ir.LongTailShare(KS, tail, **common),
        "ild": ir.IntraListDiversity(PAIR_KS, embeddings, **common),
        "serendipity": ir.Serendipity(
            KS, popularity, ignore_zero_hits, threshold, ties=ties, per_query=False
        ),
        "entropy": ir.ShannonEntropy(KS, popularity.shape[0], ties=ties),
    }


def expected_list_values(q: Queries, popularity, tail, embeddings, threshold=1.0, ignore_zero_hits=True):
    pop, tl, emb = popularity.tolist(), tail.tolist(), embeddings.tolist()
    rows = {name: [] for name in ("novelty", "arp", "aplt", "ild", "serendipity")}
    for orders, _labels, relevant in q.queries:
        order = orders[0]
        if order:
            rows["novelty"].append([novelty_ref(order[:k], pop) for k in KS])
            rows["arp"].append([arp_ref(order[:k], pop) for k in KS])
            rows["aplt"].append([aplt_ref(order[:k], tl) for k in KS])
        if len(order) >= 2:
            rows["ild"].append([ild_ref(order[:k], emb) for k in PAIR_KS])
        if relevant or not ignore_zero_hits:
            rows["serendipity"].append([serendipity_ref(order[:k], relevant, pop, k) for k in KS])
    out = {name: mean(values) for name, values in rows.items()}
    out["entropy"] = [entropy_ref(q.lists(k)) for k in KS]
    return out


def assert_values(got, want, what):
    assert want is not None, what
    assert got == pytest.approx(want, abs=1e-12, rel=0), what


# --------------------------------------------------------------------------- list measures


@pytest.mark.parametrize("ties", ["first", "last", "optimistic", "pessimistic"])
@pytest.mark.parametrize("ignore_zero_hits", [True, False])
def test_list_measures_equal_the_reference_on_dense_rows_with_ties(ties, ignore_zero_hits):
    rng = np.random.default_rng([1, len(ties), ignore_zero_hits])
    popularity, tail, embeddings, _ = statistics(rng)
    batches = [tied_batch(rng, 9, NUM_ITEMS), tied_batch(rng, 4, NUM_ITEMS)]
    metrics = list_measures(popularity, tail, embeddings, ties, 2.0, ignore_zero_hits)
    group = ir.RankingMetrics(list_measures(popularity, tail, embeddings, ties, 2.0, ignore_zero_hits))
    for batch in batches:
        for metric in (*metrics.values(), group):
            metric.update(batch)
    reference = Queries([q for y_pred, y in batches for q in Queries.dense(y_pred, y, ties, 2.0).queries])
    want = expected_list_values(reference, popularity, tail, embeddings, 2.0, ignore_zero_hits)
    together = group.compute()
    for name, metric in metrics.items():
        assert_values(metric.compute(), want[name], name)
        ks = PAIR_KS if name == "ild" else KS
        assert [together[f"{name}@{k}"] for k in ks] == metric.compute(), name


@pytest.mark.parametrize("scored", [False, True])
def test_list_measures_on_padded_retrieved_lists_mean_over_the_real_items(scored):
    rng = np.random.default_rng([2, scored])
    popularity, tail, embeddings, _ = statistics(rng, 12)
    batches = [random_retrieved(rng, 10, 12, 6, scored), random_retrieved(rng, 5, 12, 6, scored)]
    assert any(int((b.ids >= 0).sum(dim=1).min()) == 0 for b in batches)  # a row of no item
    metrics = list_measures(popularity, tail, embeddings, "first")
    for batch in batches:
        for metric in metrics.values():
            metric.update(batch)
    reference = Queries([q for b in batches for q in Queries.retrieved(b, 12, "first").queries])
    want = expected_list_values(reference, popularity, tail, embeddings)
    for name, metric in metrics.items():
        assert_values(metric.compute(), want[name], name)


def test_dense_ignore_index_leaves_items_out_of_the_lists():
    rng = np.random.default_rng(3)
    popularity, tail, embeddings, _ = statistics(rng)
    y_pred, y = tied_batch(rng, 8, NUM_ITEMS, max_label=3)
    y[rng.random(size=y.shape) < 0.2] = -100
    y[0] = -100  # a row of no item
    kept = list_measures(popularity, tail, embeddings, "first")
    for name, metric in list(kept.items()):
        if name in ("entropy",):
            kept[name] = ir.ShannonEntropy(KS, NUM_ITEMS, ignore_index=-100)
        else:
            kept[name] = type(metric)(
                metric.top_k, *_statistic_of(name, popularity, tail, embeddings), ignore_index=-100
            )
        kept[name].update((y_pred, y))
    queries = []
    for (orders, labels, relevant), row in zip(
        Queries.dense(y_pred, y, "first").queries, y.tolist(), strict=True
    ):
        order = [i for i in orders[0] if row[i] != -100]
        queries.append(([order], labels, {i for i in relevant if row[i] != -100}))
    want = expected_list_values(Queries(queries), popularity, tail, embeddings)
    for name, metric in kept.items():
        assert_values(metric.compute(), want[name], name)


def _statistic_of(name, popularity, tail, embeddings):
    return {
        "novelty": (popularity,),
        "arp": (popularity,),
        "aplt": (tail,),
        "ild": (embeddings,),
        "serendipity": (popularity,),
    }[name]


def test_per_query_values_are_the_reference_values_of_the_counted_queries():
    rng = np.random.default_rng(4)
    popularity, _tail, embeddings, _ = statistics(rng, 12)
    batch = random_retrieved(rng, 12, 12, 5)
    metric = ir.IntraListDiversity(PAIR_KS, embeddings, per_query=True)
    novelty = ir.Novelty(KS, popularity, per_query=True)
    for m in (metric, novelty):
        m.update(batch)
    reference = Queries.retrieved(batch, 12, "first").queries
    emb, pop = embeddings.tolist(), popularity.tolist()
    keys = [q for q, (orders, _, _) in enumerate(reference) if len(orders[0]) >= 2]
    result = metric.per_query_values()
    assert result.keys.tolist() == keys
    for k in PAIR_KS:
        want = [ild_ref(reference[q][0][0][:k], emb) for q in keys]
        assert result.values[f"ild@{k}"].tolist() == pytest.approx(want, abs=1e-12)
    keys = [q for q, (orders, _, _) in enumerate(reference) if orders[0]]
    assert novelty.per_query_values().keys.tolist() == keys
    want = [novelty_ref(reference[q][0][0][:5], pop) for q in keys]
    assert novelty.per_query_values().values["novelty@5"].tolist() == pytest.approx(want, abs=1e-12)


# --------------------------------------------------------------------------- expected exposure


def expected_exposure_values(q: Queries, ks, gamma, threshold=1.0, ignore_zero_hits=True, groups=None):
    rows = []
    for orders, labels, relevant in q.queries:
        if ignore_zero_hits and not relevant:
            continue
        per_k = [ee_ref(orders, labels, k, gamma, threshold, groups) for k in ks]
        rows.append([per_k[c][part] for part in per_k[0] for c in range(len(ks))])
    if not rows:
        return None
    parts = list(ee_ref([[]], [0.0], 1, gamma, threshold, groups))
    return dict(zip([f"ee_{p}@{k}" for p in parts for k in ks], mean(rows), strict=True))


def assert_exposure(got: dict, want: dict):
    assert want is not None and list(got) == list(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-12, rel=0), key


@pytest.mark.parametrize("ties", ["first", "last", "average"])
@pytest.mark.parametrize(("threshold", "patience"), [(1.0, 0.5), (2.0, 0.8)])
def test_expected_exposure_equals_the_reference_with_ties_and_graded_labels(ties, threshold, patience):
    rng = np.random.default_rng([5, len(ties), int(threshold)])
    _, _, _, groups = statistics(rng, 6)
    batches = [tied_batch(rng, 8, 6), tied_batch(rng, 3, 6)]
    for ignore_zero_hits in (True, False):
        plain = ir.ExpectedExposure(KS, None, patience, ignore_zero_hits, threshold, ties=ties)
        grouped = ir.ExpectedExposure(KS, groups, patience, ignore_zero_hits, threshold, ties=ties)
        for batch in batches:
            plain.update(batch)
            grouped.update(batch)
        queries = Queries(
            [q for y_pred, y in batches for q in Queries.dense(y_pred, y, ties, threshold).queries]
        )
        g = groups.tolist()
        assert_exposure(
            plain.compute(), expected_exposure_values(queries, KS, patience, threshold, ignore_zero_hits)
        )
        want = expected_exposure_values(queries, KS, patience, threshold, ignore_zero_hits, g)
        assert_exposure(grouped.compute(), want)


@pytest.mark.parametrize(
    ("num_items", "ks", "grid"),
    [
        (40, [1, 3, 5], True),
        (40, [1, 3, 5], False),
        (12, [3, 6, 20], True),
        (12, [3, 6, 20], False),
        (12, [3, 12, 13, 50, 10_000], True),  # cutoffs past the catalog: computed once, repeated
    ],
)
def test_expected_exposure_levels_longer_than_the_cutoff(num_items, ks, grid):
    """Many relevant items of few grades: a level crosses the cutoff and its items beyond it share
    its exposure (the top-k kernel and the one that sorts whole rows; labels on a grid of few values
    and arbitrary floats)."""
    rng = np.random.default_rng([6, num_items, grid])
    y_pred = torch.from_numpy(rng.integers(0, 6, size=(10, num_items)).astype(np.float64))
    if grid:
        y = torch.from_numpy(rng.integers(0, 4, size=(10, num_items)).astype(np.float64))
    else:
        y = torch.from_numpy(rng.choice([0.0, 1.25, 1.5, 3.75], size=(10, num_items)))
    y[0] = 1.0  # every item relevant: one level
    for ties in ("first", "average"):
        metric = ir.ExpectedExposure(ks, ties=ties, patience=0.7)
        metric.update((y_pred, y))
        if ties == "first":
            want = expected_exposure_values(Queries.dense(y_pred, y, ties), ks, 0.7)
        else:  # each item of a tied block is equally likely at each of the block's ranks
            rows = []
            for scores, labels in zip(y_pred.tolist(), y.tolist(), strict=True):
                per_k = [ee_ref(None, labels, k, 0.7, 1.0, exposure=_block_means(scores, k, 0.7)) for k in ks]
                rows.append([per_k[c][p] for p in ("l", "d", "r") for c in range(len(ks))])
            want = dict(zip([f"ee_{p}@{k}" for p in "ldr" for k in ks], mean(rows), strict=True))
        assert_exposure(metric.compute(), want)


def _block_means(scores, k, gamma):
    """Each item's exposure averaged over the ranks of its block of equal scores."""
    exposure, start = [0.0] * len(scores), 0
    for value in sorted(set(scores), reverse=True):
        block = [i for i in range(len(scores)) if scores[i] == value]
        share = sum(gamma**r for r in range(start, start + len(block)) if r < k) / len(block)
        for i in block:
            exposure[i] = share
        start += len(block)
    return exposure


def test_expected_exposure_on_retrieved_lists_padded_and_sparse():
    rng = np.random.default_rng(7)
    _, _, _, groups = statistics(rng, 12)
    batch = random_retrieved(rng, 14, 12, 6)
    padded = ir.ExpectedExposure(KS, num_items=12, patience=0.6)
    grouped = ir.ExpectedExposure(KS, groups, patience=0.6, ignore_zero_hits=False)
    padded.update(batch)
    grouped.update(batch)
    queries = Queries.retrieved(batch, 12, "first")
    assert_exposure(padded.compute(), expected_exposure_values(queries, KS, 0.6))
    assert_exposure(
        grouped.compute(), expected_exposure_values(queries, KS, 0.6, 1.0, False, groups.tolist())
    )
    # The same judgements as a sparse (batch, num_items) tensor: the catalog is its width.
    dense = torch.zeros(14, 12)
    for row in range(14):
        for item, grade in zip(batch.relevant[row].tolist(), batch.grades[row].tolist(), strict=True):
            if item >= 0:
                dense[row, item] = grade
    sparse = ir.ExpectedExposure(KS, patience=0.6)
    sparse.update(ir.Retrieved(batch.ids, dense.to_sparse()))
    assert sparse.compute() == padded.compute()


# --------------------------------------------------------------------------- functional


def test_functional_values_are_the_metrics_per_query_values():
    rng = np.random.default_rng(8)
    popularity, tail, embeddings, groups = statistics(rng, 12)
    batch = random_retrieved(rng, 10, 12, 6)
    y_pred, y = tied_batch(rng, 6, 12)
    functions = {
        "novelty": (F.novelty, ir.Novelty, popularity, KS),
        "arp": (F.average_popularity, ir.AveragePopularity, popularity, KS),
        "aplt": (F.long_tail_share, ir.LongTailShare, tail, KS),
        "ild": (F.intra_list_diversity, ir.IntraListDiversity, embeddings, PAIR_KS),
        "serendipity": (F.serendipity, ir.Serendipity, popularity, KS),
    }
    for output in (batch, (y_pred, y)):
        for name, (function, cls, statistic, ks) in functions.items():
            values = function(output, ks, statistic)
            metric = cls(ks, statistic, per_query=True)
            metric.update(output)
            kept = metric.per_query_values()
            for column, k in enumerate(ks):
                assert values[kept.keys, column].tolist() == kept.values[f"{name}@{k}"].tolist(), name
            left_out = torch.ones(values.shape[0], dtype=torch.bool)
            left_out[kept.keys] = False
            if name != "serendipity":  # left out: not defined; serendipity leaves out R = 0 (value 0)
                assert bool(values[left_out].isnan().all()), name
    assert torch.equal(F.novelty(y_pred, KS, popularity), F.novelty((y_pred, y), KS, popularity))
    for ties in ("first", "average"):
        metric = ir.ExpectedExposure(KS, groups, 0.7, ignore_zero_hits=False, ties=ties, per_query=True)
        metric.update((y_pred, y))
        values = F.expected_exposure((y_pred, y), KS, 0.7, groups, ties=ties)
        kept = metric.per_query_values().values
        for column, k in enumerate(KS):
            assert values.loss[:, column].tolist() == kept[f"ee_l@{k}"].tolist()
            assert values.relevance[:, column].tolist() == kept[f"ee_r@{k}"].tolist()
            assert values.groups[:, column, 2].tolist() == kept[f"ee_group2@{k}"].tolist()


def test_functional_refuses_what_the_metrics_refuse():
    y_pred = torch.rand(2, 5)
    with pytest.raises(ValueError, match="average"):
        F.novelty(y_pred, [2], torch.ones(5), ties="average")
    with pytest.raises(ValueError, match="holds 4 items, but the batch has 5 columns"):
        F.average_popularity(y_pred, [2, 5], torch.ones(4))
    with pytest.raises(ValueError, match="holds 4 items, but the batch has 5 columns"):
        F.novelty((y_pred.clone().fill_(0.5) - torch.arange(5.0), torch.zeros(2, 5)), [2], torch.ones(4))
    with pytest.raises(ValueError, match="item id 4"):
        F.serendipity(ir.Retrieved(torch.tensor([[0, 4]]), torch.tensor([[1]])), [2], torch.ones(4))
    with pytest.raises(ValueError, match="groups holds 4 items, but the batch has 5 columns"):
        F.expected_exposure((y_pred, torch.ones(2, 5)), [1], groups=torch.zeros(4, dtype=torch.int64))
    with pytest.raises(ValueError, match="flat"):
        F.novelty((torch.rand(4), torch.ones(4), torch.tensor([0, 0, 1, 1])), [2], torch.ones(5))
    with pytest.raises(ValueError, match="catalog size"):
        F.expected_exposure(ir.Retrieved(torch.tensor([[0, 1]]), torch.tensor([[1]])), [2])
    assert F.expected_exposure(ir.Retrieved(torch.tensor([[0, 1]]), torch.tensor([[1]])), [2], num_items=5)


# --------------------------------------------------------------------------- refusals and state


def all_metrics(popularity, tail, embeddings, groups, ties="first"):
    return {
        **list_measures(popularity, tail, embeddings, ties),
        "ee": ir.ExpectedExposure(KS, groups, 0.6, ties=ties),
    }


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: ir.Novelty(KS, torch.tensor([1.0, -1.0])), ValueError, "non-negative|positive"),
        (lambda: ir.Novelty(KS, torch.tensor([1.0, 0.0])), ValueError, "positive"),
        (lambda: ir.AveragePopularity(KS, torch.tensor([1.0, -2.0])), ValueError, "non-negative"),
        (lambda: ir.AveragePopularity(KS, torch.tensor([1.0, math.nan])), ValueError, "finite"),
        (lambda: ir.AveragePopularity(KS, torch.tensor([0.0, 0.0])), ValueError, "positive sum"),
        (lambda: ir.AveragePopularity(KS, torch.tensor([2.0**31])), ValueError, "2\\*\\*31"),
        (lambda: ir.AveragePopularity(KS, torch.ones(2, 2)), ValueError, "1-D"),
        (lambda: ir.AveragePopularity(KS, torch.ones(3, dtype=torch.bool)), TypeError, "real numbers"),
        (lambda: ir.AveragePopularity(KS, [1.0, 2.0]), TypeError, "torch.Tensor"),
        (lambda: ir.Serendipity(KS, torch.tensor([-1.0, 2.0])), ValueError, "non-negative"),
        (lambda: ir.LongTailShare(KS, torch.tensor([0, 1])), TypeError, "bool mask"),
        (lambda: ir.IntraListDiversity([2], torch.tensor([[1.0, math.nan]])), ValueError, "finite"),
        (lambda: ir.IntraListDiversity([2], torch.tensor([[1.0, math.inf]])), ValueError, "finite"),
        (lambda: ir.IntraListDiversity([2], torch.zeros(3, 2)), ValueError, "zero row"),
        (lambda: ir.IntraListDiversity([2], torch.ones(3)), ValueError, "2-D"),
        (lambda: ir.IntraListDiversity([1, 5], torch.ones(3, 2)), ValueError, ">= 2"),
        (lambda: ir.Novelty(KS, torch.ones(3), ties="average"), ValueError, "average"),
        (lambda: ir.ExpectedExposure(KS, patience=1.0), ValueError, "patience"),
        (lambda: ir.ExpectedExposure(KS, patience=0), ValueError, "patience"),
        (lambda: ir.ExpectedExposure(KS, relevance_threshold=0.0), ValueError, "relevance_threshold > 0"),
        (lambda: ir.ExpectedExposure(KS, torch.tensor([0, -1])), ValueError, ">= 0"),
        (lambda: ir.ExpectedExposure(KS, torch.tensor([0.0, 1.0])), TypeError, "integer"),
        (lambda: ir.ExpectedExposure(KS, torch.tensor([0, 1]), num_items=3), ValueError, "one group"),
        (lambda: ir.ExpectedExposure(KS, num_items=0), ValueError, "num_items"),
    ],
)
def test_bad_statistics_and_arguments_are_refused(build, error, match):
    with pytest.raises(error, match=match):
        build()


def _state(metric):
    return copy.deepcopy(metric.state_dict())


def _same_state(a, b):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and torch.equal(a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _same_state(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same_state(x, y)
    else:
        assert a == b


def test_a_refused_update_leaves_every_metric_and_group_as_it_was():
    rng = np.random.default_rng(9)
    popularity, tail, embeddings, groups = statistics(rng, 6)
    good = tied_batch(rng, 5, 6)
    wide = tied_batch(rng, 3, 8)  # items 6 and 7 have no statistics
    metrics = all_metrics(popularity, tail, embeddings, groups)
    group = ir.RankingMetrics(mrr=ir.MRR(KS), **all_metrics(popularity, tail, embeddings, groups))
    for metric in (*metrics.values(), group):
        metric.update(good)
        before = _state(metric)
        with pytest.raises(ValueError, match=r"item id|num_items"):
            metric.update(wide)
        if metric is group:
            assert group.metrics["mrr"]._num_examples.item() == 5 - int((good[1] < 1).all(dim=1).sum())
        _same_state(before, _state(metric))
    retrieved = ir.Retrieved(torch.tensor([[0, 1]]), torch.tensor([[1]]))
    ee = ir.ExpectedExposure(KS)
    ee.update(good)
    before = _state(ee)
    with pytest.raises(ValueError, match="catalog size"):
        ee.update(retrieved)
    _same_state(before, _state(ee))
    with pytest.raises(ValueError, match="Novelty read catalog items"):
        metrics["novelty"].update((torch.rand(4), torch.ones(4), torch.tensor([0, 0, 1, 1])))


def test_state_dict_round_trip_and_refusal_of_other_statistics():
    rng = np.random.default_rng(10)
    popularity, tail, embeddings, groups = statistics(rng, 6)
    first, second = tied_batch(rng, 5, 6), tied_batch(rng, 4, 6)
    for ties in ("first", "average"):
        for name, metric in all_metrics(popularity, tail, embeddings, groups).items():
            if ties == "average" and name != "ee":
                continue
            if ties == "average":
                metric = ir.ExpectedExposure(KS, groups, 0.6, ties="average")
            metric.update(first)
            restored = _rebuild(name, metric, popularity, tail, embeddings, groups, ties)
            restored.load_state_dict(metric.state_dict())
            for m in (metric, restored):
                m.update(second)
            assert restored.compute() == metric.compute(), name
    other = popularity.clone()
    other[0] += 1
    metric = ir.Novelty(KS, popularity)
    metric.update(first)
    with pytest.raises(ValueError, match="item_popularity"):
        ir.Novelty(KS, other).load_state_dict(metric.state_dict())
    ee = ir.ExpectedExposure(KS, groups)
    ee.update(first)
    with pytest.raises(ValueError, match=r"groups|patience"):
        ir.ExpectedExposure(KS, groups, patience=0.9).load_state_dict(ee.state_dict())
    shuffled = groups.flip(0)
    if not torch.equal(shuffled, groups):
        with pytest.raises(ValueError, match="groups"):
            ir.ExpectedExposure(KS, shuffled).load_state_dict(ee.state_dict())


def _rebuild(name, metric, popularity, tail, embeddings, groups, ties):
    if name == "ee":
        return ir.ExpectedExposure(KS, groups, 0.6, ties=ties)
    if name == "entropy":
        return ir.ShannonEntropy(KS, popularity.shape[0])
    return type(metric)(metric.top_k, _statistic_of(name, popularity, tail, embeddings)[0])


# --------------------------------------------------------------------------- RecBole and Elliot

# A fixed example: 4 users' top-3 lists over 6 items, each item's training interactions (one per
# user and item, so that it is also the number of users who interacted: Elliot's popularity), and
# the held-out relevant items (user 3 has none).
FIXED_LISTS = [[0, 1, 2], [0, 3, 4], [1, 0, 5], [2, 4, 5]]
FIXED_POPULARITY = [10.0, 6.0, 3.0, 3.0, 1.0, 1.0]
FIXED_RELEVANT = [[1], [4, 0], [5], []]


def _fixed(lists=FIXED_LISTS):
    width = max(len(items) for items in lists)
    ids = torch.tensor([items + [-1] * (width - len(items)) for items in lists])
    relevant = torch.tensor([r + [-1] * (2 - len(r)) for r in FIXED_RELEVANT])
    return ir.Retrieved(ids, relevant)


def _ours(metric, lists=FIXED_LISTS):
    metric.update(_fixed(lists))
    return metric.compute()


def recbole_average_popularity(lists, counts, k):
    """RecBole's AveragePopularity: per user the cumulative mean of the items' counts, at k."""
    return float(np.mean([np.cumsum([counts[i] for i in items])[k - 1] / k for items in lists]))


def recbole_tail_percentage(lists, counts, tail_ratio, k):
    """RecBole's TailPercentage with an integer tail_ratio: items of at most that many interactions."""
    tail = {item for item, count in enumerate(counts) if count <= tail_ratio}
    return float(np.mean([sum(1 for i in items[:k] if i in tail) / k for items in lists]))


def recbole_shannon_entropy(lists, k):
    """RecBole's ShannonEntropy code: natural log, divided by the number of distinct items."""
    flat = [i for items in lists for i in items[:k]]
    counts = {i: flat.count(i) for i in set(flat)}
    total = len(lists) * k
    return sum(-(c / total) * math.log(c / total) for c in counts.values()) / len(counts)


def elliot_arp(lists, popularity, k):
    return float(np.mean([sum(popularity[i] for i in items[:k]) / len(items[:k]) for items in lists]))


def elliot_aplt(lists, long_tail, k):
    return float(np.mean([len(set(items[:k]) & set(long_tail)) / len(items[:k]) for items in lists]))


def elliot_shannon_entropy(lists, k):
    """Elliot's SEntropy: item weights 1/|list| per user, -log2 of the item's share, over users."""
    counts, weights, norm = {}, {}, 0
    for items in lists:
        top = items[:k]
        norm += len(top)
        for i in top:
            counts[i] = counts.get(i, 0) + 1
            weights[i] = weights.get(i, 0) + 1 / len(top)
    return sum(w * -math.log2(counts[i] / norm) for i, w in weights.items()) / len(lists)


def elliot_efd(lists, relevant, popularity, k, discount=None, relevance=None):
    """Elliot's EFD: sum over ranks of rel * disc(r) * novelty, over the sum of disc(r); users
    with a relevant item only; novelty -log2(users of i / all interactions)."""
    discount = discount or (lambda r: 1 / math.log2(r + 2))
    total = sum(popularity)
    values = []
    for items, rel in zip(lists, relevant, strict=True):
        if not rel:
            continue
        nov = norm = 0.0
        for r, i in enumerate(items[:k]):
            weight = relevance(i, rel) if relevance else float(i in rel)
            nov += weight * discount(r) * -math.log2(popularity[i] / total)
            norm += discount(r)
        values.append(nov / norm)
    return float(np.mean(values))


def recommenders_novelty(lists, counts, k):
    """Microsoft Recommenders' novelty: historical item novelty averaged over all recommendations."""
    total = sum(counts)
    flat = [i for items in lists for i in items[:k]]
    return sum(-math.log2(counts[i] / total) for i in flat) / len(flat)


def test_average_popularity_and_tail_share_equal_recbole_and_elliot():
    counts = torch.tensor(FIXED_POPULARITY)
    ours = _ours(ir.AveragePopularity([1, 2, 3], counts))
    for column, k in enumerate([1, 2, 3]):
        assert ours[column] == pytest.approx(
            recbole_average_popularity(FIXED_LISTS, FIXED_POPULARITY, k), abs=1e-12
        )
        assert ours[column] == pytest.approx(elliot_arp(FIXED_LISTS, FIXED_POPULARITY, k), abs=1e-12)
    tail = counts <= 3  # RecBole's tail_ratio=3; Elliot's long tail given as the same items
    ours = _ours(ir.LongTailShare([1, 2, 3], tail))
    long_tail = tail.nonzero().squeeze(1).tolist()
    for column, k in enumerate([1, 2, 3]):
        assert ours[column] == pytest.approx(
            recbole_tail_percentage(FIXED_LISTS, FIXED_POPULARITY, 3, k), abs=1e-12
        )
        assert ours[column] == pytest.approx(elliot_aplt(FIXED_LISTS, long_tail, k), abs=1e-12)


def test_shannon_entropy_against_recbole_and_elliot():
    ours = _ours(ir.ShannonEntropy([2, 3], num_items=6))
    for column, k in enumerate([2, 3]):
        distinct = len({i for items in FIXED_LISTS for i in items[:k]})
        # RecBole's code: ln instead of log2, then divided by the number of distinct items.
        assert recbole_shannon_entropy(FIXED_LISTS, k) == pytest.approx(
            ours[column] * math.log(2) / distinct, abs=1e-12
        )
        assert recbole_shannon_entropy(FIXED_LISTS, k) != pytest.approx(ours[column], abs=1e-3)
        # Elliot's SEntropy: the same value when every list has the same length ...
        assert elliot_shannon_entropy(FIXED_LISTS, k) == pytest.approx(ours[column], abs=1e-12)
    # ... and another one when they differ (it weighs each item by 1/|list| and divides by the users).
    short = [[0, 1, 2], [0, 3, 4], [1, 0, 5], [2]]
    ours = _ours(ir.ShannonEntropy([3], num_items=6), short)
    assert ours[0] == pytest.approx(entropy_ref(short), abs=1e-12)
    assert elliot_shannon_entropy(short, 3) != pytest.approx(ours[0], abs=1e-3)


def test_novelty_against_recommenders_and_elliot():
    popularity = torch.tensor(FIXED_POPULARITY)
    ours = _ours(ir.Novelty([1, 2, 3], popularity))
    for column, k in enumerate([1, 2, 3]):
        # Microsoft Recommenders' novelty averages over all recommendations: equal for lists of one length.
        assert ours[column] == pytest.approx(
            recommenders_novelty(FIXED_LISTS, FIXED_POPULARITY, k), abs=1e-12
        )
        # Elliot's EFD weighs each rank by relevance and 1/log2(rank + 1), over users with a relevant
        # item: another number. Without discount and relevance, over every user, it is ours.
        efd = elliot_efd(FIXED_LISTS, FIXED_RELEVANT, FIXED_POPULARITY, k)
        plain = elliot_efd(
            FIXED_LISTS, [[0]] * 4, FIXED_POPULARITY, k, discount=lambda r: 1.0, relevance=lambda i, rel: 1.0
        )
        assert plain == pytest.approx(ours[column], abs=1e-12)
        if k > 1:
            assert efd != pytest.approx(ours[column], abs=1e-3)


# --------------------------------------------------------------------------- two processes

WORLD_SIZE = 2


def _dist_statistics():
    return statistics(np.random.default_rng(11), NUM_ITEMS)


def _dist_batches(rank: int):
    """Uneven work: rank 0 two dense batches and a Retrieved one, rank 1 the other way round."""
    rng = np.random.default_rng([12, rank])
    dense = [tied_batch(rng, 5, NUM_ITEMS), tied_batch(rng, 2, NUM_ITEMS)]
    retrieved = [random_retrieved(rng, 6, NUM_ITEMS, 4)]
    return dense + retrieved if rank == 0 else retrieved + dense[:1]


def _dist_metrics():
    popularity, tail, embeddings, groups = _dist_statistics()
    metrics = all_metrics(popularity, tail, embeddings, groups)
    metrics["ee_average"] = ir.ExpectedExposure(KS, groups, 0.7, ignore_zero_hits=False, ties="average")
    metrics["novelty_per_query"] = ir.Novelty(KS, popularity, per_query=True)
    metrics["group"] = ir.RankingMetrics(mrr=ir.MRR(KS), **all_metrics(popularity, tail, embeddings, groups))
    return metrics


def _dist_results(batches):
    results = {}
    for name, metric in _dist_metrics().items():
        for batch in batches:
            metric.update(batch)
        results[name] = metric.compute()
        if name == "novelty_per_query":
            kept = metric.per_query_values()
            results["novelty_keys"] = kept.keys.tolist()
            results["novelty_values"] = kept.values["novelty@5"].tolist()
    return results


def _dist_worker(local_rank: int, out_dir: str) -> None:
    import ignite.distributed as idist

    rank = idist.get_rank()
    assert idist.get_world_size() == WORLD_SIZE and idist.backend() == "gloo"
    torch.save(_dist_results(_dist_batches(rank)), f"{out_dir}/rank{rank}.pt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_gloo_processes_equal_one_process(tmp_path):
    import ignite.distributed as idist

    with idist.Parallel(
        backend="gloo", nproc_per_node=WORLD_SIZE, master_addr="127.0.0.1", master_port=_free_port()
    ) as parallel:
        parallel.run(_dist_worker, str(tmp_path))
    single = _dist_results([b for rank in range(WORLD_SIZE) for b in _dist_batches(rank)])
    assert single["novelty"] and single["ee"]["ee_l@5"] > 0
    for rank in range(WORLD_SIZE):
        got = torch.load(tmp_path / f"rank{rank}.pt", weights_only=False)
        assert got.keys() == single.keys()
        for name, value in single.items():
            assert got[name] == value, (rank, name)  # exact sums and counts: equal to the bit


# --------------------------------------------------------------------------- the sparse ideal path


@pytest.mark.parametrize("num_items", [5, 64, 130, 1000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.uint8, torch.bool])
@pytest.mark.parametrize("grades", [(1, 4), (1, 2)])
def test_sparse_ideal_labels_equal_the_top_k_of_the_relevant_labels(num_items, dtype, grades):
    """The kernel lists the relevant labels of rows with few of them instead of a top-k over all
    labels; both give the same ideal ranking (relevant labels descending, then gain 0). Where
    every relevant label is 1 (binary labels), the ideal ranking is R ones, counted."""
    from ignite_ranking.kernels.batch import IdealLevels
    from ignite_ranking.kernels.ideal import relevant_largest
    from ignite_ranking.kernels.ranking import rank_batch

    rng = np.random.default_rng([13, num_items])
    y = torch.zeros(40, num_items, dtype=torch.float64)  # at most one relevant item a row, ...
    for row in range(40):
        if rng.random() < 0.8:
            y[row, int(rng.integers(num_items))] = float(rng.integers(*grades))
    y[7, -1] = grades[1] - 1.0  # ... and one in the columns after the last whole run
    y[9, 0] = 0.5 if dtype.is_floating_point else 0  # a label below the threshold
    y = (y >= 1) if dtype == torch.bool else y.to(dtype)
    labels = y.view(torch.uint8) if dtype == torch.bool else y
    width = min(11, num_items)
    ideal, counts, largest = relevant_largest(labels, 1, width)
    top = torch.topk(labels, width, dim=1).values
    expected = torch.where(top >= 1, top, torch.zeros_like(top))
    if grades[1] == 2 or dtype == torch.bool:  # binary: R ones
        assert isinstance(ideal, IdealLevels) and ideal.single == 1.0
        ideal_labels, ideal_relevant = ideal.expand(width)
        assert torch.equal(ideal_labels, expected.to(torch.float64))
        assert torch.equal(ideal_relevant, (expected >= 1).to(torch.float64))
    else:
        assert torch.equal(ideal, expected)
    assert counts.tolist() == (labels >= 1).sum(dim=1).double().tolist()
    assert torch.equal(largest, labels.amax(dim=1))  # what the NaN check reads
    assert relevant_largest(labels, 0, width) is None  # every item may be relevant: top-k
    assert relevant_largest(torch.full_like(labels, 2), 1, width) is None  # many relevant: top-k
    y_pred = torch.from_numpy(rng.normal(size=(40, num_items)))
    ranked = rank_batch(y_pred, y, 10, ideal=True, count=True)
    assert ranked.num_relevant.tolist() == counts.tolist()
    want = reference_ndcg_values(y_pred, y)
    got = ir.functional.ndcg(y_pred, y, [1, 10])
    assert got.reshape(-1).tolist() == pytest.approx([v for row in want for v in row], abs=1e-12)


def reference_ndcg_values(y_pred, y):
    from reference import per_query

    return per_query(y_pred, y.to(torch.float64), "ndcg", [1, 10])


# --------------------------------------------------------------------------- groups


def test_groups_share_a_threshold_only_among_members_that_read_relevance():
    rng = np.random.default_rng(14)
    popularity = statistics(rng)[0]
    batch = tied_batch(rng, 6, NUM_ITEMS)
    group = ir.RankingMetrics(mrr=ir.MRR(KS, relevance_threshold=2.0), novelty=ir.Novelty(KS, popularity))
    mrr, novelty = ir.MRR(KS, relevance_threshold=2.0), ir.Novelty(KS, popularity)
    for metric in (group, mrr, novelty):
        metric.update(batch)
    result = group.compute()
    assert [result[f"mrr@{k}"] for k in KS] == mrr.compute()
    assert [result[f"novelty@{k}"] for k in KS] == novelty.compute()
    with pytest.raises(ValueError, match="ties"):
        ir.RankingMetrics(mrr=ir.MRR(KS), novelty=ir.Novelty(KS, popularity, ties="last"))


def test_per_query_groups_keep_one_set_of_queries():
    rng = np.random.default_rng(15)
    popularity, tail, embeddings, groups = statistics(rng, 12)
    batch = random_retrieved(rng, 9, 12, 5)
    lists = ir.RankingMetrics(
        novelty=ir.Novelty(KS, popularity), tail=ir.LongTailShare(KS, tail), per_query=True
    )
    lists.update(batch)
    kept = lists.per_query_values()
    alone = ir.Novelty(KS, popularity, per_query=True)
    alone.update(batch)
    assert kept.keys.tolist() == alone.per_query_values().keys.tolist()
    assert kept.values["novelty@5"].tolist() == alone.per_query_values().values["novelty@5"].tolist()
    assert "tail@10" in kept.values
    exposure = ir.RankingMetrics(mrr=ir.MRR(KS), exposure=ir.ExpectedExposure(KS, groups), per_query=True)
    exposure.update(batch)
    names = set(exposure.per_query_values().values)
    assert {"mrr@5", "exposure_l@5", "exposure_r@10", "exposure_group1@2"} <= names
    assert {"exposure_l@5", "exposure_group1@2"} <= set(exposure.compute())
    with pytest.raises(ValueError, match="keep the same queries"):
        ir.RankingMetrics(mrr=ir.MRR(KS), novelty=ir.Novelty(KS, popularity), per_query=True)
    with pytest.raises(ValueError, match="keep the same queries"):
        ir.RankingMetrics(
            novelty=ir.Novelty(KS, popularity), ild=ir.IntraListDiversity(PAIR_KS, embeddings), per_query=True
        )


def test_sparse_labels_give_the_dense_forms_values():
    rng = np.random.default_rng(16)
    popularity, tail, embeddings, groups = statistics(rng)
    y_pred, y = tied_batch(rng, 8, NUM_ITEMS)
    for sparse in (y.to_sparse(), y.to_sparse_csr()):
        dense_metrics = all_metrics(popularity, tail, embeddings, groups)
        sparse_metrics = all_metrics(popularity, tail, embeddings, groups)
        for name in dense_metrics:
            dense_metrics[name].update((y_pred, y))
            sparse_metrics[name].update((y_pred, sparse))
            assert sparse_metrics[name].compute() == pytest.approx(
                dense_metrics[name].compute(), abs=1e-12
            ), name


def test_serendipity_past_a_short_list_is_each_cutoffs_value_alone():
    """PM_k grows past a list shorter than the catalog: the cutoffs past the list are scored
    until PM_k holds every item (issue 32, item 1: [1.0, 1.0, 1.0] before)."""
    popularity = torch.arange(10, 0, -1).float()
    batch = ir.Retrieved(torch.tensor([[5, 6, 7]]), torch.tensor([[5, 6, 7]]))
    together = ir.Serendipity([3, 6, 8, 10, 12, 40], popularity)
    together.update(batch)
    alone = []
    for k in together.top_k:
        metric = ir.Serendipity([k], popularity)
        metric.update(batch)
        alone += metric.compute()
    assert together.compute() == alone == [1.0, 2 / 3, 0.0, 0.0, 0.0, 0.0]


def _sized(popularity, tail, embeddings, groups):
    """Every metric given item statistics, with the argument its size comes from."""
    size = popularity.shape[0]
    return {
        **{
            name: (m, m.statistic)
            for name, m in list_measures(popularity, tail, embeddings, "first").items()
            if name != "entropy"
        },
        "serendipity": (ir.Serendipity(KS, popularity), "item_popularity"),
        "ee_groups": (ir.ExpectedExposure(KS, groups), "groups"),
        "ee_items": (ir.ExpectedExposure(KS, num_items=size), "num_items"),
        **{
            cls.__name__: (cls(KS, size), "num_items")
            for cls in (ir.Coverage, ir.GiniIndex, ir.ShannonEntropy)
        },
    }


@pytest.mark.parametrize("width", [NUM_ITEMS - 1, NUM_ITEMS + 1])
def test_statistics_of_another_size_than_the_batch_are_refused_before_any_change(width):
    """Issue 32, item 12: statistics of 7 items and a batch of 8 columns were accepted while
    the 8th item stayed below k (and 6 columns always); every form whose width tells the
    catalog is refused now, naming the argument, and the state is kept."""
    rng = np.random.default_rng(12)
    stats = statistics(rng)
    good = tied_batch(rng, 4, NUM_ITEMS)
    y_pred, y = tied_batch(rng, 3, width)
    y_pred[:, -1] = -math.inf  # the last column ranked last: never in the top k
    y[:, 0] = 1.0
    relevant = ir.Retrieved(torch.tensor([[0, 1], [2, -1], [3, 4]]), y.to_sparse())
    for metric, argument in _sized(*stats).values():
        group = ir.RankingMetrics(mrr=ir.MRR(KS), member=copy.deepcopy(metric))
        for target in (metric, group):
            target.update(good)
            before = _state(target)
            for bad in ((y_pred, y), (y_pred, y.to_sparse()), relevant):
                with pytest.raises(ValueError, match=f"{argument} holds {NUM_ITEMS} items.*{width} columns"):
                    target.update(bad)
                _same_state(before, _state(target))


def test_intra_list_diversity_is_scale_free_at_any_magnitude():
    """Regression: float64 rows past 1e154 had an infinite norm (every pair at distance 1) and
    rows below 1e-154 a norm of 0 (refused as a zero row)."""
    base = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [3.0, -2.0]], dtype=torch.float64)
    y_pred, y = torch.tensor([[0.9, 0.8, 0.7, 0.6]]), torch.zeros(1, 4)
    values = []
    for scale in (1.0, 2.0**-1070, 2.0**-600, 2.0**600, 2.0**1000):
        metric = ir.IntraListDiversity([2, 4], base * scale)
        metric.update((y_pred, y))
        values.append(metric.compute())
    assert all(v == values[0] for v in values), values
    unit = base / base.norm(dim=1, keepdim=True)
    pairs = [1 - float(unit[i] @ unit[j]) for i in range(4) for j in range(i + 1, 4)]
    assert values[0] == pytest.approx([1.0, sum(pairs) / len(pairs)], rel=1e-15)
