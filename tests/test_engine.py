"""Metrics attached to an ignite Engine give what update/compute give, under the expected names."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ignite.engine import Engine
from reference import METRIC_NAMES, build_metric, mean_values, tied_batch

from ignite_ranking import MRR, NDCG, RankingMetrics, Recall

KS = [1, 3, 10]


def _evaluator() -> Engine:
    return Engine(lambda engine, batch: batch)


@pytest.fixture(scope="module")
def batches():
    rng = np.random.default_rng(5)
    return [tied_batch(rng, b, 12) for b in (4, 9, 1, 6)]


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_attached_metric_equals_direct_use(name, batches):
    attached, direct = build_metric(name, KS), build_metric(name, KS)
    engine = _evaluator()
    attached.attach(engine, name)
    state = engine.run(batches)
    for output in batches:
        direct.update(output)
    assert state.metrics[name] == direct.compute()
    expected = mean_values(batches, name, KS)
    got = state.metrics[name]
    assert (got if isinstance(got, list) else [got]) == pytest.approx(expected, rel=1e-12)


def test_metric_is_reset_between_runs(batches):
    metric = MRR(KS)
    engine = _evaluator()
    metric.attach(engine, "mrr")
    first = engine.run(batches).metrics["mrr"]
    second = engine.run(batches).metrics["mrr"]
    assert first == second


def test_output_transform_picks_y_pred_and_y(batches):
    engine = Engine(lambda engine, batch: {"scores": batch[0], "labels": batch[1], "loss": 0.0})
    metric = NDCG(KS, output_transform=lambda out: (out["scores"], out["labels"]))
    metric.attach(engine, "ndcg")
    got = engine.run(batches).metrics["ndcg"]
    assert got == pytest.approx(mean_values(batches, "ndcg", KS), rel=1e-12)


def test_dict_output_with_y_pred_and_y_keys(batches):
    engine = Engine(lambda engine, batch: {"y_pred": batch[0], "y": batch[1]})
    Recall(KS).attach(engine, "recall")
    got = engine.run(batches).metrics["recall"]
    assert got == pytest.approx(mean_values(batches, "recall", KS), rel=1e-12)


DOC_Y_PRED = torch.tensor([[4.0, 2.0, 3.0, 1.0], [1.0, 2.0, 3.0, 4.0]])
DOC_Y = torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])


@pytest.mark.parametrize(
    ("ignore_zero_hits", "expected"), [(True, [0.0, 0.5, 0.5, 0.5]), (False, [0.0, 0.25, 0.25, 0.25])]
)
def test_documented_mrr_example(ignore_zero_hits, expected):
    engine = _evaluator()
    MRR(top_k=[1, 2, 3, 4], ignore_zero_hits=ignore_zero_hits).attach(engine, "mrr")
    assert engine.run([(DOC_Y_PRED, DOC_Y)]).metrics["mrr"] == expected


def test_group_publishes_one_scalar_per_cutoff_and_equals_members_alone(batches):
    def members():
        return {name: build_metric(name, [1, 10] if name == "mrr" else [10]) for name in METRIC_NAMES}

    group = RankingMetrics(members())
    engine = _evaluator()
    group.attach(engine, "ranking")
    metrics = engine.run(batches).metrics

    expected = {}
    for name, metric in members().items():
        for output in batches:
            metric.update(output)
        value = metric.compute()
        if name == "r_precision":
            expected[name] = value
        else:
            expected.update({f"{name}@{k}": v for k, v in zip(metric.top_k, value, strict=True)})
    assert {"mrr@1", "mrr@10", "ndcg@10", "r_precision"} <= expected.keys()
    for key, value in expected.items():
        assert metrics[key] == value, key
    assert metrics["ranking"] == expected


def test_group_accepts_keywords_and_uses_its_own_output_transform(batches):
    group = RankingMetrics(
        mrr=MRR([1, 10]), ndcg=NDCG([10]), output_transform=lambda out: (out["p"], out["t"])
    )
    engine = Engine(lambda engine, batch: {"p": batch[0], "t": batch[1]})
    group.attach(engine, "group")
    metrics = engine.run(batches).metrics
    assert metrics["mrr@10"] == pytest.approx(mean_values(batches, "mrr", [10])[0], rel=1e-12)
    assert metrics["ndcg@10"] == pytest.approx(mean_values(batches, "ndcg", [10])[0], rel=1e-12)


@pytest.mark.parametrize("metrics", [[MRR([1])], (NDCG([10]),), MRR([1])])
def test_group_refuses_metrics_that_are_not_a_mapping(metrics):
    # dict() of a list of ignite metrics never returned: a Metric iterates by __getitem__
    with pytest.raises(TypeError, match="mapping of names to metrics"):
        RankingMetrics(metrics)
