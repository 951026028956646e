"""What the metrics publish in an engine's state.metrics: keys once, collisions refused, and
ignite's RunningAverage refused a list with what to use instead (or given one number)."""

from __future__ import annotations

import pytest
import torch
from ignite.engine import Engine, Events
from ignite.metrics import RunningAverage
from ignite.metrics.metric import SingleEpochRunningBatchWise

from ignite_ranking import MRR, NDCG, RankingMetrics, RPrecision

Y_PRED = torch.tensor([[0.2, 0.9, 0.4, 0.1], [0.3, 0.2, 0.8, 0.1], [0.5, 0.6, 0.1, 0.9]])
Y = torch.tensor([[1, 0, 0, 1], [1, 0, 0, 0], [0, 1, 1, 0]])
BATCHES = [(Y_PRED[i : i + 1], Y[i : i + 1]) for i in range(3)]


def _engine():
    return Engine(lambda engine, batch: batch)


def test_two_groups_writing_the_same_keys_are_refused_at_attach():
    evaluator = _engine()
    RankingMetrics(mrr=MRR([10])).attach(evaluator, "a")
    other = RankingMetrics(mrr=MRR([10]), ndcg=NDCG([10]))
    with pytest.raises(ValueError, match=r"attached as 'b' would publish \['mrr@10'\].*attached as 'a'"):
        other.attach(evaluator, "b")
    assert not other.is_attached(evaluator)


def test_a_metric_alone_named_like_a_group_s_key_is_refused():
    evaluator = _engine()
    RankingMetrics(mrr=MRR([10])).attach(evaluator, "ranking")
    with pytest.raises(ValueError, match="would publish"):
        MRR([10]).attach(evaluator, "mrr@10")
    MRR([10]).attach(evaluator, "mrr")  # "mrr" is not a key of the group


def test_named_groups_keep_their_values_apart_under_their_names():
    evaluator = _engine()
    a = RankingMetrics(mrr=MRR([1, 10]), confidence=0.9, metrics_result_mode="named")
    b = RankingMetrics(mrr=MRR([1, 10]), metrics_result_mode="named")
    a.attach(evaluator, "a")
    b.attach(evaluator, "b")
    metrics = evaluator.run(BATCHES).metrics
    assert set(metrics) == {"a", "b"}
    assert set(metrics["a"]) == {"mrr@1", "mrr@10", "mrr@1_low", "mrr@1_high", "mrr@10_low", "mrr@10_high"}
    assert metrics["b"] == {"mrr@1": metrics["a"]["mrr@1"], "mrr@10": metrics["a"]["mrr@10"]}


def test_a_flattened_group_publishes_each_value_once():
    evaluator = _engine()
    group = RankingMetrics(mrr=MRR([1, 10]), ndcg=NDCG([10]), metrics_result_mode="flatten")
    group.attach(evaluator, "ranking")
    assert set(evaluator.run(BATCHES).metrics) == {"mrr@1", "mrr@10", "ndcg@10"}
    with pytest.raises(ValueError, match="metrics_result_mode must be one of"):
        RankingMetrics(mrr=MRR([1]), metrics_result_mode="flat")


def test_a_detached_metric_s_keys_are_free_again():
    evaluator = _engine()
    first = RankingMetrics(mrr=MRR([10]))
    first.attach(evaluator, "a")
    first.detach(evaluator)
    RankingMetrics(mrr=MRR([10])).attach(evaluator, "b")


def test_running_average_of_a_list_is_refused_with_what_to_use():
    trainer = _engine()
    RunningAverage(MRR([10])).attach(trainer, "running_mrr")
    with pytest.raises(TypeError, match=r"RunningAverage.*RunningAverage\(MRR\(\[10\]\)\[0\]\)"):
        trainer.run(BATCHES)


def test_running_average_of_a_group_is_refused():
    trainer = _engine()
    RunningAverage(RankingMetrics(mrr=MRR([10]))).attach(trainer, "running")
    with pytest.raises(TypeError, match=r"gets a dict of values.*group\['mrr@10'\]"):
        trainer.run(BATCHES)


def _ema(values, alpha):
    running = None
    for value in values:
        running = value if running is None else running * alpha + (1 - alpha) * value
    return running


def test_running_average_of_one_value_per_key_works():
    per_batch = []
    for batch in BATCHES:
        metric = MRR([1, 10])
        metric.update(batch)
        per_batch.append(metric.compute())
    trainer = _engine()
    RunningAverage(MRR([1, 10])[1], alpha=0.5).attach(trainer, "mrr@10")
    RunningAverage(RankingMetrics(mrr=MRR([1, 10]))["mrr@1"], alpha=0.5).attach(trainer, "mrr@1")
    RunningAverage(RPrecision(), alpha=0.5).attach(trainer, "r_precision")  # one number: as it is
    metrics = trainer.run(BATCHES).metrics
    assert metrics["mrr@10"] == pytest.approx(_ema([v[1] for v in per_batch], 0.5))
    assert metrics["mrr@1"] == pytest.approx(_ema([v[0] for v in per_batch], 0.5))
    assert 0.0 <= metrics["r_precision"] <= 1.0


def test_the_exact_running_mean_per_key():
    trainer = _engine()
    seen = []
    RankingMetrics(mrr=MRR([10])).attach(trainer, "ranking", usage=SingleEpochRunningBatchWise())
    trainer.add_event_handler(Events.ITERATION_COMPLETED, lambda e: seen.append(e.state.metrics["mrr@10"]))
    trainer.run(BATCHES)
    whole = MRR([10])
    whole.update((Y_PRED, Y))
    assert seen[-1] == whole.compute()[0] and len(seen) == 3
