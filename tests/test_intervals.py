"""Confidence intervals (``confidence=``): Student t intervals equal scipy's, cover as they should,
reach the engine, and group-level settings reach every member that did not set its own."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from ignite.engine import Engine
from reference import tied_batch

from ignite_ranking import (
    AUC,
    MAP,
    MRR,
    NDCG,
    RBP,
    Bpref,
    Coverage,
    GiniIndex,
    HitRate,
    RankingMetrics,
    Recall,
    RPrecision,
)

stats = pytest.importorskip("scipy.stats")

BUILDERS = {
    "mrr": lambda **kw: MRR([1, 5, 10], **kw),
    "hit_rate": lambda **kw: HitRate([1, 5], **kw),
    "ndcg": lambda **kw: NDCG([3, 10], **kw),
    "map": lambda **kw: MAP([10], **kw),
    "recall": lambda **kw: Recall([5], **kw),
    "rbp": lambda **kw: RBP([10], p=0.8, **kw),
    "r_precision": lambda **kw: RPrecision(**kw),
    "auc": lambda **kw: AUC(**kw),
    "bpref": lambda **kw: Bpref(**kw),
}


def _batches(seed: int, sizes=(17, 1, 30, 12), num_items: int = 11):
    rng = np.random.default_rng(seed)
    return [tied_batch(rng, size, num_items) for size in sizes]


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("confidence", [0.95, 0.5])
def test_interval_equals_scipy_t_interval_of_the_per_query_values(name, confidence):
    metric = BUILDERS[name](confidence=confidence)
    twin = BUILDERS[name](per_query=True)
    for batch in _batches(3):
        metric.update(batch)
        twin.update(batch)
    assert metric.compute() == twin.compute()  # the interval leaves the means alone
    per_query = twin.per_query_values().values
    intervals = metric.interval()
    intervals = intervals if isinstance(intervals, list) else [intervals]
    for (low, high), values in zip(intervals, per_query.values(), strict=True):
        v = values.numpy()
        expected = stats.t.interval(confidence, len(v) - 1, loc=v.mean(), scale=stats.sem(v))
        assert (low, high) == pytest.approx(expected, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("count", [2, 10, 1000])
def test_equal_values_have_an_interval_of_no_width(count):
    """Regression: the squares' rounding left a spread of ~2**-64, a width of ~1e-9 where every
    reciprocal rank is 1/3; a spread just past the rounding is kept, and equals scipy's."""
    y_pred = torch.tensor([[0.9, 0.8, 0.7, 0.1]]).repeat(count, 1)
    y = torch.tensor([[0, 0, 1, 0]]).repeat(count, 1)  # ranked third
    mrr, ndcg = MRR([3], confidence=0.9), NDCG([3], confidence=0.9)
    for metric in (mrr, ndcg):
        metric.update((y_pred, y))
        (mean,) = metric.compute()
        assert metric.interval() == [(mean, mean)]
    y[0] = torch.tensor([0, 0, 0, 1])  # one reciprocal rank of 1/4: a real spread
    near = MRR([4], confidence=0.9, per_query=True)
    near.update((y_pred, y))
    (v,) = (values.numpy() for values in near.per_query_values().values.values())
    (low, high), expected = (
        near.interval()[0],
        stats.t.interval(0.9, count - 1, loc=v.mean(), scale=stats.sem(v)),
    )
    assert low < high and (low, high) == pytest.approx(expected, rel=1e-12)


def test_interval_coverage_over_simulated_evaluations():
    """2,000 evaluations of 200 queries: each query's one relevant item sits at a uniform rank
    among 5, so RR@5 is uniform over 1, 1/2, ..., 1/5 and the true mean is H_5 / 5."""
    true_mean = sum(1 / r for r in range(1, 6)) / 5
    generator = torch.Generator().manual_seed(0)
    covered, runs = 0, 2000
    for _ in range(runs):
        scores = torch.rand(200, 5, generator=generator)
        labels = torch.zeros(200, 5, dtype=torch.int64)
        labels[torch.arange(200), torch.randint(0, 5, (200,), generator=generator)] = 1
        metric = MRR([5], confidence=0.95)
        metric.update((scores, labels))
        ((low, high),) = metric.interval()
        covered += low <= true_mean <= high
    assert 0.935 <= covered / runs <= 0.965


def test_one_query_gives_nan_and_no_query_is_not_computable():
    from ignite.exceptions import NotComputableError

    metric = MRR([1], confidence=0.95)
    with pytest.raises(NotComputableError, match="interval"):
        metric.interval()
    metric.update((torch.tensor([[0.9, 0.1]]), torch.tensor([[1, 0]])))
    ((low, high),) = metric.interval()
    assert math.isnan(low) and math.isnan(high)


def test_engine_publishes_the_bounds():
    batches = _batches(4)
    evaluator = Engine(lambda engine, batch: batch)
    MRR([1, 10], confidence=0.9).attach(evaluator, "mrr")
    RPrecision(confidence=0.9).attach(evaluator, "rprec")
    group = RankingMetrics(ndcg=NDCG([10]), recall=Recall([5]), confidence=0.9)
    group.attach(evaluator, "ranking")
    metrics = evaluator.run(batches).metrics
    alone = MRR([1, 10], confidence=0.9)
    for batch in batches:
        alone.update(batch)
    (low1, high1), (low10, high10) = alone.interval()
    assert (metrics["mrr@1_low"], metrics["mrr@1_high"]) == (low1, high1)
    assert (metrics["mrr@10_low"], metrics["mrr@10_high"]) == (low10, high10)
    assert metrics["rprec_low"] < metrics["rprec"] < metrics["rprec_high"]
    for key in ("ndcg@10", "recall@5"):
        assert metrics[f"{key}_low"] < metrics[key] < metrics[f"{key}_high"]
    assert "mrr_low" not in metrics


def test_interval_survives_a_state_dict_round_trip_and_refuses_other_settings():
    metric = NDCG([5], confidence=0.95)
    for batch in _batches(5):
        metric.update(batch)
    assert metric.settings()["confidence"] == 0.95
    restored = NDCG([5], confidence=0.95)
    restored.load_state_dict(metric.state_dict())
    assert restored.interval() == metric.interval() and restored.compute() == metric.compute()
    with pytest.raises(ValueError, match="confidence"):
        NDCG([5]).load_state_dict(metric.state_dict())
    assert "confidence" not in NDCG([5]).settings()  # older states keep loading


@pytest.mark.parametrize(
    ("make", "error", "pattern"),
    [
        (lambda: MRR([1], confidence=1.0), ValueError, "confidence"),
        (lambda: MRR([1], confidence=0), ValueError, "confidence"),
        (lambda: MRR([1], confidence="0.9"), TypeError, "confidence"),
        (lambda: MRR([1], confidence=True), TypeError, "confidence"),
        (lambda: Coverage([1], num_items=3, confidence=0.9), TypeError, "confidence"),
        (
            lambda: RankingMetrics(c=Coverage([1], num_items=3), m=MRR([1]), confidence=2),
            ValueError,
            "confidence",
        ),
    ],
)
def test_bad_confidence_is_refused(make, error, pattern):
    with pytest.raises(error, match=pattern):
        make()


def test_interval_needs_a_confidence():
    with pytest.raises(ValueError, match=r"confidence=0\.95"):
        MRR([1]).interval()


# ----------------------------------------------------------------------- group-level settings


def test_group_settings_reach_the_members_that_did_not_set_their_own():
    batches = [(y_pred, y.to(torch.float64) / 2) for y_pred, y in _batches(6)]  # labels 0, 0.5, ... 2
    settings = {"relevance_threshold": 0.5, "ties": "average", "ignore_zero_hits": False}
    group = RankingMetrics(mrr=MRR(10), ndcg=NDCG(10), **settings)
    alone = {"mrr": MRR(10, **settings), "ndcg": NDCG(10, **settings)}
    for batch in batches:
        group.update(batch)
        for metric in alone.values():
            metric.update(batch)
    assert group.compute() == {"mrr@10": alone["mrr"].compute()[0], "ndcg@10": alone["ndcg"].compute()[0]}
    for member in group.metrics.values():
        assert (member.relevance_threshold, member.ties, member.ignore_zero_hits) == (0.5, "average", False)


def test_a_member_that_set_its_own_value_is_refused_unless_equal():
    with pytest.raises(ValueError, match=r"'ndcg' sets ties='first' and the group ties='average'"):
        RankingMetrics(mrr=MRR(10), ndcg=NDCG(10, ties="first"), ties="average")
    group = RankingMetrics(mrr=MRR(10), ndcg=NDCG(10, relevance_threshold=2), relevance_threshold=2)
    assert group.metrics["mrr"].relevance_threshold == 2.0
    with pytest.raises(ValueError, match=r"'bpref'.*ties='average'"):  # the group's value is checked too
        RankingMetrics(mrr=MRR(10), bpref=Bpref(), ties="average")


def test_settings_that_do_not_apply_leave_a_member_alone():
    group = RankingMetrics(
        mrr=MRR([1]),
        coverage=Coverage([1], num_items=4),
        gini=GiniIndex([1], num_items=4),
        confidence=0.9,
        relevance_threshold=2,
        ignore_zero_hits=False,
    )
    assert group.metrics["mrr"].confidence == 0.9 and group.metrics["coverage"].confidence is None
    assert group.metrics["coverage"].relevance_threshold == 1.0  # Coverage counts every list
    group.update((torch.tensor([[0.9, 0.1, 0.5, 0.0]]), torch.tensor([[2, 0, 0, 0]])))
    assert group.compute() == {"mrr@1": 1.0, "coverage@1": 0.25, "gini@1": 0.75}
    assert set(group.interval()) == {"mrr@1"}


def test_intervals_of_a_metric_with_several_values_per_cutoff_and_of_list_measures():
    from ignite_ranking import ExpectedExposure, Novelty

    group = RankingMetrics(
        ee=ExpectedExposure([2, 3]), novelty=Novelty([3], torch.tensor([5.0, 1.0, 2.0, 8.0])), confidence=0.9
    )
    y_pred = torch.tensor([[0.9, 0.1, 0.5, 0.3], [0.2, 0.8, 0.4, 0.1], [0.3, 0.5, 0.9, 0.7]])
    group.update((y_pred, torch.tensor([[1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 0, 0]])))
    values, intervals = group.compute(), group.interval()
    assert set(intervals) == set(values)
    for name, (low, high) in intervals.items():
        assert low <= values[name] <= high or math.isnan(low), name
