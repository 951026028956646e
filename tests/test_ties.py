"""Tie policies against brute force: every order of every tied block, and explicit sort keys."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from reference import DEVICES, functional_values, ranked_values

from ignite_ranking import MRR, NDCG, RankingMetrics, Recall
from ignite_ranking import functional as F

METRICS = ["mrr", "hit_rate", "precision", "recall", "map", "ndcg", "r_precision"]


def values_of_order(ranked, threshold, cutoffs, gain_function):
    """Every metric of one full ranking, given the labels in ranked order: {metric: values}."""
    return {name: ranked_values(ranked, name, cutoffs, threshold, gain_function) for name in METRICS}


def mean_over_tie_orders(scores, labels, threshold, cutoffs, gain_function):
    """The mean of every metric over all orders of every block of equal scores."""
    blocks = [[i for i, s in enumerate(scores) if s == v] for v in sorted(set(scores), reverse=True)]
    orders = list(itertools.product(*(itertools.permutations(b) for b in blocks)))
    totals = {name: [0.0] * (1 if name == "r_precision" else len(cutoffs)) for name in METRICS}
    for order in orders:
        ranked = [labels[i] for block in order for i in block]
        for name, values in values_of_order(ranked, threshold, cutoffs, gain_function).items():
            totals[name] = [t + v for t, v in zip(totals[name], values, strict=True)]
    return {name: [t / len(orders) for t in values] for name, values in totals.items()}


def ours(y_pred, y, cutoffs, threshold, gain_function, ties):
    """Every metric from the functional API, per row: [{metric: values}]."""
    kwargs = {"ties": ties, "gain_function": gain_function}
    per_metric = {name: functional_values(name, y_pred, y, cutoffs, threshold, **kwargs) for name in METRICS}
    return [{name: values[b].tolist() for name, values in per_metric.items()} for b in range(y_pred.shape[0])]


def random_tied_batch(generator, batch, num_items):
    scores = torch.randint(0, 3, (batch, num_items), generator=generator).float()
    scores[torch.rand(batch, num_items, generator=generator) < 0.15] = -math.inf
    labels = torch.randint(0, 4, (batch, num_items), generator=generator).float()
    labels *= torch.rand(batch, num_items, generator=generator) < 0.6
    return scores, labels


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("seed", range(40))
def test_average_equals_mean_over_every_order_of_every_tied_block(seed, device):
    generator = torch.Generator().manual_seed(seed)
    num_items = int(torch.randint(1, 8, (), generator=generator))
    y_pred, y = random_tied_batch(generator, 3, num_items)
    threshold = (1.0, 2.0)[seed % 2]
    gain_function = ("exp_rank", "linear_rank")[seed % 2]
    # Small cutoffs put ties across the cutoff; one beyond the row covers everything.
    cutoffs = sorted({1, 2, int(torch.randint(1, num_items + 3, (), generator=generator))})
    got = ours(y_pred.to(device), y.to(device), cutoffs, threshold, gain_function, "average")
    for b in range(y_pred.shape[0]):
        expected = mean_over_tie_orders(y_pred[b].tolist(), y[b].tolist(), threshold, cutoffs, gain_function)
        for name, values in expected.items():
            assert got[b][name] == pytest.approx(values, abs=1e-12), (name, y_pred[b], y[b])


@pytest.mark.parametrize(("ties", "label_order"), [("optimistic", -1), ("pessimistic", 1)])
@pytest.mark.parametrize("seed", range(10))
def test_optimistic_and_pessimistic_order_ties_by_label_then_index(ties, label_order, seed):
    generator = torch.Generator().manual_seed(100 + seed)
    y_pred, y = random_tied_batch(generator, 4, 9)
    cutoffs = [1, 3, 5, 12]
    got = ours(y_pred, y, cutoffs, 1.0, "exp_rank", ties)
    for b in range(y_pred.shape[0]):
        order = sorted(range(9), key=lambda i: (-y_pred[b, i].item(), label_order * y[b, i].item(), i))
        expected = values_of_order([y[b, i].item() for i in order], 1.0, cutoffs, "exp_rank")
        for name, values in expected.items():
            assert got[b][name] == pytest.approx(values, abs=1e-12), (name, y_pred[b], y[b])


def test_optimistic_and_pessimistic_bound_the_average():
    generator = torch.Generator().manual_seed(7)
    y_pred, y = random_tied_batch(generator, 64, 30)
    low, mid, high = (F.ndcg(y_pred, y, [1, 5, 10], ties=t) for t in ("pessimistic", "average", "optimistic"))
    assert torch.all(low <= mid + 1e-12) and torch.all(mid <= high + 1e-12)


def test_last_reverses_the_index_order_of_ties():
    y_pred = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    y = torch.tensor([[1, 0, 0, 0]])
    assert F.reciprocal_rank(y_pred, y, [3], ties="first").item() == 1.0
    assert F.reciprocal_rank(y_pred, y, [3], ties="last").item() == pytest.approx(1 / 3)
    assert F.reciprocal_rank(y_pred, y, [3], ties="average").item() == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)


def test_average_cutoff_inside_a_block_larger_than_the_depth():
    # One relevant item among 1,000 tied ones: E[Hit@10] = 10 / 1000, E[RR@10] = H_10 / 1000.
    y_pred = torch.zeros(1, 1000)
    y = torch.zeros(1, 1000)
    y[0, 500] = 1
    assert F.hit_rate(y_pred, y, [10], ties="average").item() == pytest.approx(0.01, abs=1e-15)
    harmonic = sum(1 / i for i in range(1, 11))
    assert F.reciprocal_rank(y_pred, y, [10], ties="average").item() == pytest.approx(
        harmonic / 1000, abs=1e-15
    )


def test_metrics_and_group_take_the_policy():
    generator = torch.Generator().manual_seed(3)
    y_pred, y = random_tied_batch(generator, 16, 12)
    for ties in ("last", "average", "optimistic"):
        group = RankingMetrics(
            mrr=MRR([1, 5], ties=ties), ndcg=NDCG([5], ties=ties), recall=Recall(3, ties=ties)
        )
        alone = MRR([1, 5], ties=ties)
        group.update((y_pred, y))
        alone.update((y_pred, y))
        expected = F.reciprocal_rank(y_pred, y, [1, 5], ties=ties)[y.ge(1).any(dim=1)].mean(dim=0).tolist()
        assert alone.compute() == pytest.approx(expected, abs=1e-12)
        assert [group.compute()["mrr@1"], group.compute()["mrr@5"]] == alone.compute()


def test_group_refuses_members_with_different_policies():
    with pytest.raises(ValueError, match="ties"):
        RankingMetrics(a=MRR(1, ties="first"), b=MRR(1, ties="average"))


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="ties must be one of"):
        MRR(1, ties="random")
    with pytest.raises(ValueError, match="ties must be one of"):
        F.precision(torch.zeros(1, 2), torch.zeros(1, 2), 1, ties="trec")


def _expected_by_linearity(scores, labels, cutoffs, threshold):
    """Expected hits and DCG (exp gains) within each cutoff, under uniformly random orders of
    each tied block: by linearity, each rank of a block holds its mean relevance and gain."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    mean_relevant, mean_gain = [], []
    for _, block in itertools.groupby(order, key=lambda i: scores[i]):
        block = list(block)
        relevant = [labels[i] >= threshold for i in block]
        gains = sum(2.0 ** labels[i] - 1.0 for i, hit in zip(block, relevant, strict=True) if hit)
        mean_relevant += [sum(relevant) / len(block)] * len(block)
        mean_gain += [gains / len(block)] * len(block)
    hits = [math.fsum(mean_relevant[:k]) for k in cutoffs]
    dcg = [math.fsum(g / math.log2(i + 2) for i, g in enumerate(mean_gain[:k])) for k in cutoffs]
    return hits, dcg


@pytest.mark.parametrize("cutoffs", [[1, 10, 700, 1500], [1, 10, 300], [2000]])
def test_average_over_a_few_large_blocks_sums_the_block_slots(cutoffs):
    # Five score values over 2,000 items: the expected sums are taken over the block slots
    # (TieBlocks.sums_to_cutoffs), deep (whole rows sorted) and shallow (torch.topk) alike.
    from ignite_ranking.kernels import rank_batch

    generator = torch.Generator().manual_seed(len(cutoffs))
    y_pred = torch.randint(0, 5, (4, 2000), generator=generator).to(torch.float32)
    y = torch.randint(0, 4, (4, 2000), generator=generator)
    y[1] = 0  # a row without relevant items
    ranked = rank_batch(y_pred, y, cutoffs[-1], relevance_threshold=2, ties="average", ideal=True)
    assert ranked.blocks.few_blocks(cutoffs)
    discount = 1.0 / torch.log2(torch.arange(2, ranked.depth + 2, dtype=torch.float64))
    hits, dcg = ranked.hits(cutoffs), ranked.dcg("exp_rank", cutoffs, discount)
    for row in range(4):
        expected_hits, expected_dcg = _expected_by_linearity(
            y_pred[row].tolist(), y[row].tolist(), cutoffs, 2
        )
        assert hits[row].tolist() == pytest.approx(expected_hits, rel=1e-12, abs=1e-12)
        assert dcg[row].tolist() == pytest.approx(expected_dcg, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("levels", [3, 20, 40, 1000])
def test_block_counts_from_boundaries_or_slots_equal_counting_each_block(levels):
    # Few blocks are counted from where they start and end, many by adding each position to
    # its slot (kernels.ties._count_blocks); both equal counting them one by one.
    from ignite_ranking.kernels.ties import _count_blocks

    generator = torch.Generator().manual_seed(levels)
    values = torch.randint(0, levels, (5, 400), generator=generator).sort(dim=1, descending=True).values
    relevant = (torch.rand(5, 400, generator=generator) < 0.3).to(torch.float64)
    new_block = torch.ones_like(values, dtype=torch.bool)
    new_block[:, 1:] = values[:, 1:] != values[:, :-1]
    block_id = new_block.to(torch.int64).cumsum(dim=1) - 1
    size, hits = _count_blocks(block_id, new_block, relevant)
    for row in range(5):
        blocks = [
            list(group) for _, group in itertools.groupby(range(400), key=lambda i: int(values[row, i]))
        ]
        assert size[row, : len(blocks)].tolist() == [len(block) for block in blocks]
        assert hits[row, : len(blocks)].tolist() == [
            sum(relevant[row, i].item() for i in block) for block in blocks
        ]


@pytest.mark.parametrize("shape", [(0, 0), (3, 0), (0, 5)])
def test_block_counts_of_an_empty_ranking(shape):
    from ignite_ranking.kernels.ties import _count_blocks

    block_id = torch.zeros(shape, dtype=torch.int64)
    size, hits = _count_blocks(
        block_id, torch.ones(shape, dtype=torch.bool), torch.zeros(shape, dtype=torch.float64)
    )
    assert size.shape[0] == hits.shape[0] == shape[0]
