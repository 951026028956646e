"""NDCG's gains at the extremes: relevant items of negative grade, grades whose exponential
gain overflows float64, +inf labels. Checked against the brute-force reference, which computes
gains as Decimals (no overflow) and sorts the gains, not the labels, for the ideal order."""

from __future__ import annotations

import math

import pytest
import torch
from reference import DEVICES, per_query, query_values, ranked_values
from test_ties import mean_over_tie_orders

from ignite_ranking import NDCG
from ignite_ranking import functional as F

GAINS = ["exp_rank", "linear_rank"]
KS = [1, 2, 3, 5, 9]


def _reference(y_pred, y, threshold, gain_function, ties):
    """Per-query NDCG of the reference for every fixed-order tie policy and for "average"."""
    rows = []
    for scores, labels in zip(y_pred.tolist(), y.to(torch.float64).tolist(), strict=True):
        if ties in ("first", "last"):
            rows.append(query_values(scores, labels, "ndcg", KS, threshold, ties, gain_function))
        elif ties == "average":
            rows.append(mean_over_tie_orders(scores, labels, threshold, KS, gain_function)["ndcg"])
        else:
            sign = -1 if ties == "optimistic" else 1
            order = sorted(range(len(scores)), key=lambda i: (-scores[i], sign * labels[i], i))
            ranked = [labels[i] for i in order]
            rows.append(ranked_values(ranked, "ndcg", KS, threshold, gain_function))
    return rows


def _tied_batch(generator, low, high, batch=6, num_items=6):
    scores = torch.randint(0, 3, (batch, num_items), generator=generator).to(torch.float64)
    labels = torch.randint(low, high + 1, (batch, num_items), generator=generator).to(torch.float64)
    return scores, labels


@pytest.mark.parametrize("ties", ["first", "last", "optimistic", "pessimistic", "average"])
@pytest.mark.parametrize("gain_function", GAINS)
@pytest.mark.parametrize("threshold", [-2.5, -1.0, -0.5, 0.0])
def test_negative_grades_take_the_ideal_order_of_their_gains(threshold, gain_function, ties):
    generator = torch.Generator().manual_seed(int(threshold * 10) + 7)
    y_pred, y = _tied_batch(generator, -4, 3)
    got = F.ndcg(y_pred, y, KS, threshold, gain_function, ties=ties)
    expected = _reference(y_pred, y, threshold, gain_function, ties)
    assert got.tolist() == [pytest.approx(row, rel=1e-12, abs=1e-14) for row in expected]
    assert (got <= 1.0 + 1e-12).all()


def test_a_relevant_negative_grade_does_not_lift_ndcg_above_one():
    # Threshold -2: labels 2 and -1 are relevant (linear gains 2 and -1), -3 is not (gain 0).
    # The best order of the gains is 2, 0, -1; ranking by label (2, -1, -3) is worse.
    y_pred = torch.tensor([[0.9, 0.1, 0.5]])
    y = torch.tensor([[2, -1, -3]])
    for gain_function in GAINS:
        assert F.ndcg(y_pred, y, [3], -2, gain_function).item() == pytest.approx(1.0, rel=1e-15)
        metric = NDCG([3], relevance_threshold=-2, gain_function=gain_function)
        metric.update((y_pred, y))
        assert metric.compute()[0] == pytest.approx(1.0, rel=1e-15)


def test_a_negative_ideal_dcg_scores_zero():
    """Only negative grades relevant (threshold -3, linear gains -1 and -2): IDCG < 0, and the
    query scores 0 (docs/metrics/ndcg.md), not DCG / IDCG of two negative sums."""
    y_pred, y = torch.tensor([[0.9, 0.5]]), torch.tensor([[-1, -2]])
    assert F.ndcg(y_pred, y, [1, 2], -3, "linear_rank").tolist() == [[0.0, 0.0]]
    metric = NDCG([1, 2], relevance_threshold=-3, gain_function="linear_rank")
    metric.update((y_pred, y))
    assert metric.compute() == [0.0, 0.0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ties", ["first", "last", "optimistic", "average"])
@pytest.mark.parametrize("gain_function", GAINS)
def test_grades_whose_gain_overflows_float64_are_exact(gain_function, ties, device):
    generator = torch.Generator().manual_seed(3)
    y_pred, y = _tied_batch(generator, 0, 4)
    big = 2.0**1000 if gain_function == "linear_rank" else 1000.0
    # Rows of small, large-and-close, large-and-far and infinite grades.
    y[1] = y[1] * big
    y[2] = torch.tensor([big + 40, 3.0, big + 41, 0.0, big, 1.0], dtype=torch.float64)
    y[3] = torch.tensor([math.inf, 4.0, 0.0, math.inf, 2.0, 1.0], dtype=torch.float64)
    y[4] = torch.tensor([0.0, math.inf, 2.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    got = F.ndcg(y_pred.to(device), y.to(device), KS, 1.0, gain_function, ties=ties).cpu()
    expected = _reference(y_pred, y, 1.0, gain_function, ties)
    assert torch.isfinite(got).all()
    assert got.tolist() == [pytest.approx(row, rel=1e-12, abs=1e-14) for row in expected]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.float64])
def test_large_grades_and_inf_labels_never_put_nan_in_the_running_mean(dtype):
    y_pred = torch.tensor([[0.9, 0.5, 0.1], [0.9, 0.5, 0.1], [0.3, 0.2, 0.1]])
    y = torch.tensor([[0.0, 1030.0, 1024.0], [1.0, 0.0, 2.0], [5000.0, 0.0, 0.0]])
    if dtype.is_floating_point:
        y[2, 0] = math.inf
    y = y.to(dtype)
    metric = NDCG([1, 3])
    metric.update((y_pred, y))
    got = metric.compute()
    expected = per_query(y_pred, y, "ndcg", [1, 3])
    means = [sum(column) / 3 for column in zip(*expected, strict=True)]
    assert all(math.isfinite(v) for v in got)
    assert got == pytest.approx(means, rel=1e-12)
    # The first row: 2**1030 - 1 at rank 2 and 2**1024 - 1 at rank 3, ideal 2**1030 - 1 first.
    dcg = 1 / math.log2(3) + 2.0**-6 / 2
    idcg = 1 + 2.0**-6 / math.log2(3)
    assert F.ndcg(y_pred[:1], y[:1], [3]).item() == pytest.approx(dcg / idcg, rel=1e-14)


def test_linear_gain_refuses_a_threshold_whose_gains_overflow():
    with pytest.raises(ValueError, match="relevance_threshold"):
        NDCG([3], relevance_threshold=-math.inf, gain_function="linear_rank")
    with pytest.raises(ValueError, match="relevance_threshold"):
        F.ndcg(torch.rand(1, 3), torch.ones(1, 3), [3], -1e300, "linear_rank")
    # Exponential gains of negative grades lie in (-1, 0): any threshold is fine.
    y = torch.tensor([[-math.inf, 2.0, -1.0]])
    value = F.ndcg(torch.tensor([[0.9, 0.5, 0.1]]), y, [3], -math.inf).item()
    assert value == pytest.approx(query_values([0.9, 0.5, 0.1], y[0].tolist(), "ndcg", [3], -math.inf)[0])


@pytest.mark.parametrize("ties", ["first", "optimistic", "average"])
@pytest.mark.parametrize("gain_function", GAINS)
@pytest.mark.parametrize(
    "low, high, threshold",
    [
        (-2, 2, -1.5),
        (-2, 2, 0.0),
        (0, 1, 1.0),
        (0, 3, 2.0),
        (0, 3, 3.0),
        (-4, 0, -3.0),
        (998, 1002, 1000.0),
        (998, 1002, 1002.0),
    ],
)
def test_deep_cutoffs_of_few_valued_integer_labels_count_the_ideal_runs(
    low, high, threshold, gain_function, ties
):
    # A deep ranking of integer labels of at most five values takes IDCG from the runs of
    # each label (kernels.batch.IdealLevels), never laying the ideal ranking out; with one
    # relevant value, DCG is its gain times the discounted relevance.
    generator = torch.Generator().manual_seed(low + 10 * high)
    y_pred, y = _tied_batch(generator, low, high, batch=8, num_items=9)
    y[0] = low  # one value only
    labels = y.to(torch.int64)
    got = F.ndcg(y_pred, labels, KS, threshold, gain_function, ties=ties)
    expected = _reference(y_pred, y, threshold, gain_function, ties)
    assert got.tolist() == [pytest.approx(row, rel=1e-12, abs=1e-14) for row in expected]
    assert torch.allclose(got, F.ndcg(y_pred, y, KS, threshold, gain_function, ties=ties), rtol=1e-13, atol=0)


@pytest.mark.parametrize("gain_function", GAINS)
@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
@pytest.mark.parametrize("high", [1, 3, 20, 200])
def test_a_perfect_ranking_scores_exactly_one(high, dtype, gain_function):
    # Whichever way the ideal ranking is found (counted runs of one or many values, or a
    # top-k), IDCG is summed as DCG is, so ranking by the labels themselves gives 1.0, not
    # 1 +- 1 ulp.
    generator = torch.Generator().manual_seed(high)
    y = torch.randint(0, high + 1, (6, 400), generator=generator).to(dtype)
    for top_k in ([5, 50], [150, 400]):  # by torch.topk, and by sorting whole rows
        got = F.ndcg(y.to(torch.float64), y, top_k, 1.0, gain_function)
        assert torch.equal(got, torch.ones_like(got))
