"""The ranking kernel on adversarial inputs, against brute force.

All-tied rows, ties across the cutoff in some rows only, many relevant items, depths near or past
the row length, every tie policy and score dtype, ±inf. The kernel works a few rows at a time;
here a chunk is made a few rows long so that small batches cross chunk borders, and the top-k and
the whole-row sort paths are both forced on the same data.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from reference import SCORE_DTYPES, functional_values, per_query, ranked_values

from ignite_ranking import MRR, NDCG, RankingMetrics, Recall, RPrecision
from ignite_ranking import functional as F
from ignite_ranking.kernels import chunks, ranking, top_indices
from ignite_ranking.kernels.ideal import _MAX_LEVELS, label_levels
from ignite_ranking.kernels.inputs import comparable_labels
from ignite_ranking.kernels.selection import top_k_rows

POLICIES = ["first", "last", "optimistic", "pessimistic", "average"]
METRICS = ["mrr", "hit_rate", "precision", "recall", "map", "ndcg", "r_precision"]


@pytest.fixture(params=["topk", "sort"])
def path(request, monkeypatch):
    """Forces the top-k path or the whole-row sort path, with chunks of a few rows."""
    monkeypatch.setattr(chunks, "CHUNK_ELEMENTS", 64)
    monkeypatch.setattr(ranking, "sorts_whole_rows", lambda k, n: request.param == "sort")
    return request.param


def patterned_batch(rng: np.random.Generator, batch: int, num_items: int, max_label: int = 3):
    """Float64 scores whose rows are all tied, two-valued, quantized or distinct, with ±inf and -0.0."""
    rows = []
    for _ in range(batch):
        kind = rng.integers(4)
        if kind == 0:
            row = np.full(num_items, rng.choice([0.0, -0.0, 1.5, math.inf, -math.inf]))
        elif kind == 1:
            row = rng.integers(0, 2, num_items).astype(np.float64)
        elif kind == 2:
            row = rng.integers(0, 4, num_items) / 2.0
            row[rng.random(num_items) < 0.1] = math.inf
            row[rng.random(num_items) < 0.1] = -math.inf
        else:
            row = rng.permutation(num_items).astype(np.float64)
        rows.append(row)
    scores = torch.from_numpy(np.stack(rows))
    labels = rng.integers(0, max_label + 1, (batch, num_items)).astype(np.float64)
    labels[rng.random((batch, num_items)) < 0.5] = 0.0
    return scores, torch.from_numpy(labels)


def assert_close(got, expected, message=None):
    """Float64 values equal to the reference up to rounding (tensors or nested lists)."""
    got = got.numpy() if isinstance(got, torch.Tensor) else np.asarray(got, dtype=np.float64)
    np.testing.assert_allclose(
        got, np.asarray(expected, dtype=np.float64), rtol=1e-12, atol=1e-15, err_msg=str(message)
    )


def policy_order(scores, labels, ties):
    """Every index of one row in ranking order, by an explicit sort key."""
    keys = {
        "first": lambda i: (-scores[i], i),
        "average": lambda i: (-scores[i], i),
        "last": lambda i: (-scores[i], -i),
        "optimistic": lambda i: (-scores[i], -labels[i], i),
        "pessimistic": lambda i: (-scores[i], labels[i], i),
    }
    return sorted(range(len(scores)), key=keys[ties])


@pytest.mark.parametrize("ties", POLICIES)
@pytest.mark.parametrize("dtype", SCORE_DTYPES, ids=str)
def test_top_indices_follow_the_policy_on_every_tie_pattern(path, ties, dtype):
    rng = np.random.default_rng(sum(map(ord, ties + str(dtype) + path)))
    for _ in range(4):
        batch, n = int(rng.integers(1, 14)), int(rng.integers(1, 24))
        scores, labels = patterned_batch(rng, batch, n)
        scores = scores.to(dtype)
        rows = list(zip(scores.to(torch.float64).tolist(), labels.tolist(), strict=True))
        orders = [policy_order(s, lab, ties) for s, lab in rows]
        for k in sorted({1, 2, n // 2 + 1, n - 1, n, n + 3} - {0}):
            got = top_indices(scores, k, ties, labels).tolist()
            assert got == [order[:k] for order in orders], (ties, k, scores, labels)


@pytest.mark.parametrize("ties", ["optimistic", "pessimistic"])
@pytest.mark.parametrize("label_dtype", [torch.bool, torch.uint8, torch.int64, torch.float16, torch.float32])
def test_label_policies_on_all_tied_rows_and_extreme_labels(path, ties, label_dtype):
    rng = np.random.default_rng(len(ties) + len(str(label_dtype)))
    scores = torch.zeros(9, 40)
    scores[::3, :5] = 1.0  # some rows have a tie at the cutoff only among lower scores
    labels = torch.from_numpy(rng.integers(0, 3, (9, 40)))
    if label_dtype.is_floating_point:
        labels = labels.to(label_dtype)
        labels[1, [3, 17]] = -math.inf
        labels[2, [0, 39]] = math.inf
    else:
        labels = labels.to(label_dtype)
    rows = list(zip(scores.tolist(), labels.to(torch.float64).tolist(), strict=True))
    for k in (1, 3, 7, 20, 39):
        got = top_indices(scores, k, ties, labels).tolist()
        assert got == [policy_order(s, lab, ties)[:k] for s, lab in rows], (k, labels)


@pytest.mark.parametrize("ties", ["first", "last"])
def test_metrics_match_the_reference_on_tied_and_crowded_rows(path, ties):
    rng = np.random.default_rng(11 if ties == "first" else 12)
    for _ in range(3):
        batch, n = int(rng.integers(2, 12)), int(rng.integers(5, 30))
        y_pred, y = patterned_batch(rng, batch, n)
        y[: batch // 2] = torch.from_numpy(rng.integers(1, 4, (batch // 2, n))).double()  # all relevant
        top_k = [1, 2, n - 1, n, n + 4]
        for metric in METRICS:
            got = functional_values(metric, y_pred, y, top_k, ties=ties)
            expected = per_query(y_pred, y, metric, top_k, ties=ties)
            assert_close(got, expected, metric)


@pytest.mark.parametrize("ties", ["optimistic", "pessimistic"])
def test_label_policy_metrics_match_their_explicit_order(path, ties):
    rng = np.random.default_rng(21)
    y_pred, y = patterned_batch(rng, 10, 17)
    top_k = [1, 4, 16, 17, 30]
    got = {m: functional_values(m, y_pred, y, top_k, ties=ties) for m in METRICS}
    for b, (s, lab) in enumerate(zip(y_pred.tolist(), y.tolist(), strict=True)):
        ranked = [lab[i] for i in policy_order(s, lab, ties)]
        for metric in METRICS:
            expected = ranked_values(ranked, metric, top_k)
            assert_close(got[metric][b], expected, metric)


def test_average_with_a_cutoff_inside_the_block_equals_the_fully_ranked_value(path):
    # Ranked only to k, a row whose block runs past k reads that block's statistics over the
    # whole row; ranked to the end, every block is held whole. Both must agree.
    rng = np.random.default_rng(31)
    y_pred, y = patterned_batch(rng, 12, 25)
    y[0] = torch.from_numpy(rng.integers(1, 4, 25)).double()  # every item relevant
    for metric in METRICS[:-1]:
        for k in (1, 3, 10):
            shallow = functional_values(metric, y_pred, y, [k], ties="average")
            deep = functional_values(metric, y_pred, y, [k, 25], ties="average")[:, :1]
            assert_close(shallow, deep, (metric, k))


def test_average_all_tied_rows_have_closed_form_values(path):
    # n tied items, r relevant: E[P@k] = r / n, E[Hit@k] = 1 - C(n - r, k) / C(n, k).
    n, r = 40, 6
    y_pred = torch.zeros(3, n)
    y = torch.zeros(3, n)
    y[:, torch.arange(r) * 5] = 1
    for k in (1, 5, 39):
        assert torch.allclose(F.precision(y_pred, y, [k], ties="average"), torch.tensor(r / n).double())
        hit = 1 - math.comb(n - r, k) / math.comb(n, k)
        assert torch.allclose(F.hit_rate(y_pred, y, [k], ties="average"), torch.tensor(hit).double())
    ndcg = F.ndcg(y_pred, y, [n], ties="average")
    mean_dcg = (r / n) * sum(1 / math.log2(i + 2) for i in range(n))
    ideal = sum(1 / math.log2(i + 2) for i in range(r))
    assert torch.allclose(ndcg, torch.tensor(mean_dcg / ideal).double())


@pytest.mark.parametrize("ties", POLICIES)
def test_r_precision_with_half_the_items_relevant(path, ties):
    rng = np.random.default_rng(41)
    y_pred, y = patterned_batch(rng, 8, 30)
    y = (torch.from_numpy(rng.random((8, 30))) < 0.5).double()
    metric = RPrecision(ties=ties)
    metric.update((y_pred, y))
    per_row = F.r_precision(y_pred, y, ties=ties)
    if ties in ("first", "last"):
        assert per_row[:, None].tolist() == per_query(y_pred, y, "r_precision", ties=ties)
    assert metric.compute() == pytest.approx(per_row[y.sum(dim=1) > 0].mean().item(), abs=1e-15)


def test_group_with_many_relevant_items_equals_its_members(path):
    from ignite_ranking import NDCG, Recall

    rng = np.random.default_rng(51)
    y_pred = torch.from_numpy(rng.standard_normal((16, 50)))
    y = torch.from_numpy(rng.integers(0, 4, (16, 50)))
    y[:, :45] = torch.clamp(y[:, :45], min=1)  # 45+ relevant items a row, far past the depth
    group = RankingMetrics(ndcg=NDCG([1, 5]), recall=Recall([1, 5]))
    group.update((y_pred, y))
    recall = F.recall(y_pred, y, [1, 5]).mean(dim=0).tolist()
    ndcg = F.ndcg(y_pred, y, [1, 5]).mean(dim=0).tolist()
    got = group.compute()
    assert [got["recall@1"], got["recall@5"]] == pytest.approx(recall, abs=1e-15)
    assert [got["ndcg@1"], got["ndcg@5"]] == pytest.approx(ndcg, abs=1e-15)
    assert recall == pytest.approx(np.mean(per_query(y_pred, y, "recall", [1, 5]), axis=0).tolist())


def test_many_cutoffs_past_a_short_row():
    rng = np.random.default_rng(61)
    y_pred, y = patterned_batch(rng, 6, 12)
    top_k = list(range(1, 300))
    for metric in ("mrr", "precision", "ndcg", "map"):
        got = functional_values(metric, y_pred, y, top_k)
        assert_close(got, per_query(y_pred, y, metric, top_k), metric)


@pytest.mark.parametrize("ties", POLICIES)
def test_rows_rising_along_their_length_are_ranked_exactly(ties):
    # Long enough rows for the CPU top-k's heap regime, which reads rising rows backwards.
    rng = np.random.default_rng(71)
    n = 900
    rising = torch.arange(n, dtype=torch.float64).repeat(4, 1)
    rising[1] = torch.from_numpy(np.sort(rng.integers(0, 50, n))).double()  # rising, with ties
    rising[2] = torch.from_numpy(rng.permutation(n)).double()  # not rising: read as it is
    rising[3, 500:] = math.inf
    labels = torch.from_numpy(rng.integers(0, 3, (4, n))).double()
    labels[0] = torch.arange(n) % 4  # labels rising too, for the ideal order of NDCG
    rows = list(zip(rising.tolist(), labels.tolist(), strict=True))
    for k in (1, 5, 13):
        values, indices = top_k_rows(rising, k)
        assert torch.equal(values, torch.topk(rising, k, dim=1).values)
        assert torch.equal(rising.gather(1, indices), values)
        got = top_indices(rising, k, ties, labels).tolist()
        assert got == [policy_order(s, lab, ties)[:k] for s, lab in rows]
    if ties in ("first", "last"):
        got = functional_values("ndcg", rising, labels, [1, 5, 13], ties=ties)
        assert_close(got, per_query(rising, labels, "ndcg", [1, 5, 13], ties=ties))


@pytest.mark.parametrize("dtype", SCORE_DTYPES)
def test_order_key_sorts_and_ties_as_the_scores(dtype):
    rng = np.random.default_rng(61)
    info = torch.finfo(dtype)
    special = [0.0, -0.0, math.inf, -math.inf, info.max, -info.max, info.tiny, -info.tiny, info.eps]
    values = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-6, 6, 500), special])
    scores = torch.from_numpy(rng.choice(values, (4, 800))).to(dtype)
    scores[0, :20] = info.smallest_normal / 4  # subnormal
    key = ranking.order_key(scores)
    for descending in (False, True):
        expected = scores.argsort(dim=1, descending=descending, stable=True)
        assert torch.equal(key.argsort(dim=1, descending=descending, stable=True), expected)
    equal = scores[:, :, None] == scores[:, None, :]
    assert torch.equal(key[:, :, None] == key[:, None, :], equal)


@pytest.mark.parametrize("ties", ["optimistic", "pessimistic"])
@pytest.mark.parametrize(
    "labels_of",
    [
        lambda rng, shape: torch.from_numpy(rng.integers(-128, 128, shape)).to(torch.int8),
        lambda rng, shape: torch.from_numpy(rng.integers(0, 2, shape)).bool(),
        lambda rng, shape: torch.from_numpy(rng.integers(-(2**40), 2**40, shape)),  # too wide for one key
        lambda rng, shape: torch.from_numpy(rng.integers(0, 4, shape)).to(torch.float32),
    ],
    ids=["int8", "bool", "wide-int64", "float"],
)
def test_label_policies_order_by_score_then_label_then_index(path, ties, labels_of):
    rng = np.random.default_rng(71)
    y_pred, _ = patterned_batch(rng, 12, 40)
    for dtype in (torch.float32, torch.float64):
        scores = y_pred.to(dtype)
        labels = labels_of(rng, scores.shape)
        sign = -1 if ties == "optimistic" else 1
        expected = [
            sorted(range(40), key=lambda i, s=s, lab=lab: (-s[i], sign * lab[i], i))
            for s, lab in zip(scores.tolist(), labels.to(torch.float64).tolist(), strict=True)
        ]
        for k in (7, 40):
            got = top_indices(scores, k, ties=ties, labels=labels)
            assert got.tolist() == [row[:k] for row in expected]


@pytest.mark.parametrize(
    "low, high, dtype",
    [
        (0, 1, torch.bool),
        *(
            (low, high, dtype)
            for low, high in [(0, 1), (-2, 2), (0, 3), (0, 9), (-30, 34), (0, 100)]
            for dtype in (torch.int8, torch.int32, torch.int64, torch.float16, torch.float64)
        ),
    ],
)
def test_label_levels_of_a_deep_cutoff_equal_the_ideal_order(low, high, dtype):
    rng = np.random.default_rng(81)
    labels = torch.from_numpy(rng.integers(low, high + 1, (6, 50))).to(dtype)
    labels[0] = low  # one level only
    for given in (low - 1, low, (low + high) // 2, high, high + 1):
        labels, threshold = comparable_labels(labels, float(given))
        best = torch.topk(labels, 50).values
        expected_labels, expected_relevant = ranking.ideal_order(labels, threshold, best)
        expected_count = (labels >= threshold).sum(dim=1).to(torch.float64)
        for k in (13, 49, 50):
            levels, relevant = label_levels(labels, threshold, ranking.sorts_whole_rows(k, 50))
            if high - low >= _MAX_LEVELS or k < 50 // 4:
                assert levels is None
                continue
            ideal_labels, ideal_relevant = levels.expand(k)
            assert torch.equal(ideal_labels, expected_labels[:, :k])
            assert torch.equal(ideal_relevant, expected_relevant[:, :k])
            assert torch.equal(relevant, expected_count)


@pytest.mark.parametrize("odd", [0.3, 0.125, math.inf, -math.inf])
def test_float_labels_off_the_grid_of_a_sample_are_ranked_for_the_ideal_order(odd):
    # Labels on the grid of multiples of 1/2 are counted (also 1.5, which no label holds);
    # one label off it (in no sample of every 4th label) makes the kernel rank them.
    generator = torch.Generator().manual_seed(3)
    labels = torch.tensor([0.0, 0.5, 1.0, 2.5])[torch.randint(0, 4, (2, 2**17), generator=generator)]
    levels, relevant = label_levels(labels, 1.0, True)
    assert levels.labels.tolist() == [2.5, 2.0, 1.5, 1.0, 0.5, 0.0]
    expected = ranking.ideal_order(labels, 1.0, torch.topk(labels, 2**17).values)
    assert all(torch.equal(a, b) for a, b in zip(levels.expand(2**17), expected, strict=True))
    assert torch.equal(relevant, (labels >= 1.0).sum(dim=1).to(torch.float64))
    labels[1, 5] = odd
    assert label_levels(labels, 1.0, True) == (None, None)


@pytest.mark.parametrize("ties", ["first", "last", "optimistic", "pessimistic", "average"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int8, torch.bool, torch.float32])
def test_update_never_writes_to_its_inputs(ties, dtype):
    generator = torch.Generator().manual_seed(5)
    y_pred = torch.randint(0, 4, (6, 40), generator=generator).to(torch.float32)
    y = torch.randint(-2 if dtype != torch.bool else 0, 3, (6, 40), generator=generator).to(dtype)
    before = (y_pred.clone(), y.clone())
    for top_k in ([3], [30]):  # by torch.topk, and by sorting whole rows
        metrics = {
            name: build(top_k, ties=ties)
            for name, build in (("mrr", MRR), ("ndcg", NDCG), ("recall", Recall))
        }
        group = RankingMetrics({**metrics, "rprec": RPrecision(ties=ties)})
        group.update((y_pred, y))
        assert torch.equal(y_pred, before[0]) and torch.equal(y, before[1])


@pytest.mark.parametrize("ties", ["optimistic", "pessimistic"])
@pytest.mark.parametrize("score_dtype", [torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("offset", [0, -7, 10**6, 2**40])
def test_label_policies_sort_rows_by_score_then_label_then_index(ties, score_dtype, offset):
    # Quantized scores leave the key's low bits 0 (the label goes there, int32/int16 sort);
    # continuous ones do not (an int64 key); labels far from 0 must not wrap in either.
    generator = torch.Generator().manual_seed(offset % 97)
    for scores in (
        (torch.randn(3, 300, generator=generator) * 4).round() / 4,
        torch.randn(3, 300, generator=generator),
    ):
        scores = scores.to(score_dtype)
        labels = torch.randint(0, 3, (3, 300), generator=generator) + offset
        got = ranking._sorted_rows(scores, ties, labels)
        sign = -1 if ties == "optimistic" else 1
        for row in range(3):
            s, y = scores[row].tolist(), labels[row].tolist()
            expected = sorted(range(300), key=lambda i: (-s[i], sign * y[i], i))
            assert got[row].tolist() == expected


def test_deep_sums_taken_a_block_at_a_time_equal_one_cumulative_sum():
    """``sum_to_cutoffs`` sums deep rows a block of columns at a time, each block starting from
    the sum so far: the sums of one ``cumsum`` over all ranks, to the bit."""
    from ignite_ranking.kernels.batch import sum_to_cutoffs

    generator = torch.Generator().manual_seed(24)
    for batch, depth in [(1, 70_000), (5, 20_000), (64, 3_000)]:
        values = torch.rand(batch, depth, dtype=torch.float64, generator=generator)
        weights = torch.rand(depth, dtype=torch.float64, generator=generator)
        cutoffs = [1, 7, depth // 3, depth - 1, depth, depth + 5]
        columns = [min(k, depth) - 1 for k in cutoffs]
        weighted = (values * weights).cumsum(dim=1)[:, columns]
        assert torch.equal(sum_to_cutoffs(values, cutoffs, weights), weighted)
        assert torch.equal(sum_to_cutoffs(values, cutoffs), values.cumsum(dim=1)[:, columns])


@pytest.mark.parametrize("decimals", [2, 3])
def test_few_ties_in_the_top_k_are_ordered_as_a_stable_sort(decimals):
    """Rows with a few runs of equal scores among their best items: the tied items alone are
    sorted by index (ascending under "first", descending under "last")."""
    generator = torch.Generator().manual_seed(decimals)
    y_pred = torch.randn(64, 3_000, generator=generator).round(decimals=decimals)
    for k in (10, 100):
        first = torch.argsort(y_pred, dim=1, descending=True, stable=True)[:, :k]
        last = 2_999 - torch.argsort(y_pred.flip(1), dim=1, descending=True, stable=True)[:, :k]
        assert torch.equal(top_indices(y_pred, k, "first"), first)
        assert torch.equal(top_indices(y_pred, k, "last"), last)
