"""A resume that cannot be exact is refused, naming what differs; the warnings of the other cases.

One process: a checkpoint of the evaluator and its metric taken at iteration 3 of 7, then a
fresh evaluator and metric loaded from it, run on data that differ in one respect each time.
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from ignite.engine import Engine, Events
from ignite.handlers import Checkpoint
from resume_cases import dataset, make, result
from torch.utils.data import DataLoader

from ignite_ranking import MAP, MRR
from ignite_ranking.distributed import EvaluationSampler


def _checkpoint(kind="single", form="dense", **make_args):
    """The objects' states after 3 of 7 batches, as Checkpoint saves them, and the full result."""
    evaluator, metric, loader = make(form, kind, dataset(form, 1), **make_args)
    saved = {}

    @evaluator.on(Events.ITERATION_COMPLETED(once=3))
    def save(engine):
        saved.update(metric=metric.state_dict(), evaluator=engine.state_dict())

    evaluator.run(loader)
    return saved, dict(evaluator.state.metrics)


def _resume(saved, data=None, batch_size=4, sampler=True, kind="single", objects=("metric", "evaluator")):
    data = dataset("dense", 1) if data is None else data
    evaluator, metric, loader = make("dense", kind, data, batch_size=batch_size, sampler=sampler)
    to_load = {"metric": metric, "evaluator": evaluator}
    Checkpoint.load_objects({name: to_load[name] for name in objects}, saved)
    evaluator.run(loader)
    return dict(evaluator.state.metrics)


@pytest.fixture(scope="module")
def saved():
    return _checkpoint()


def test_the_resume_is_exact(saved):
    checkpoint, expected = saved
    assert _resume(checkpoint) == expected


@pytest.mark.parametrize(
    ("change", "differing"),
    [
        ({"data": dataset("dense", 1, rows=24)}, "dataset_size (saved 25, here 24)"),
        ({"batch_size": 5}, "batch_size (saved 4, here 5)"),
        ({"sampler": False}, "sampler (saved 'EvaluationSampler', here 'SequentialSampler')"),
    ],
)
def test_other_data_are_refused_naming_what_differs(saved, change, differing):
    with pytest.raises(ValueError, match="saved over other data") as error:
        _resume(saved[0], **change)
    assert differing in str(error.value)


def test_other_metric_settings_are_refused(saved):
    evaluator = Engine(lambda engine, batch: batch)
    other = MAP([3, 10])
    other.attach(evaluator, "map")
    with pytest.raises(ValueError, match=r"other settings.*top_k \(saved \[3, 5\], here \[3, 10\]\)"):
        Checkpoint.load_objects({"metric": other, "evaluator": evaluator}, saved[0])


def test_another_number_of_processes_is_refused_at_load(saved):
    states = saved[0]["metric"]["__metric_state_per_rank"]
    two = {"__metric_state_per_rank": [states[0], states[0]]}
    metric = MAP([3, 5])
    with pytest.raises(ValueError, match=r"states of 2 process\(es\) and this run has 1.*resume on 2"):
        metric.load_state_dict(two)


def test_data_that_restart_from_the_first_batch_are_refused():
    data = [tuple(t[i : i + 4] for t in dataset("dense", 1).tensors) for i in range(0, 25, 4)]
    evaluator = Engine(lambda engine, batch: batch)
    metric = MRR([5])
    metric.attach(evaluator, "mrr")
    saved = {}
    evaluator.add_event_handler(
        Events.ITERATION_COMPLETED(once=2), lambda e: saved.update(m=metric.state_dict(), e=e.state_dict())
    )
    evaluator.run(data)
    fresh, engine = MRR([5]), Engine(lambda engine, batch: batch)
    fresh.attach(engine, "mrr")
    fresh.load_state_dict(saved["m"])
    engine.load_state_dict(saved["e"])
    with pytest.raises(ValueError, match=r"\(list\) from the first batch again.*EvaluationSampler"):
        engine.run(data)


def test_a_checkpoint_taken_before_the_metric_s_update_is_refused():
    data = dataset("dense", 1)
    evaluator = Engine(lambda engine, batch: tuple(batch))
    metric = MAP([3, 5])
    saved = {}

    # handler added before attach: it runs before the metric's update of the same iteration
    @evaluator.on(Events.ITERATION_COMPLETED(once=3))
    def save(engine):
        saved.update(metric=metric.state_dict(), evaluator=engine.state_dict())

    metric.attach(evaluator, "map")
    evaluator.run(DataLoader(data, batch_size=4, sampler=EvaluationSampler(data)))
    with pytest.raises(ValueError, match="counts 2 batches of the epoch and the engine 3"):
        _resume(saved)


def test_a_state_saved_outside_an_engine_run_is_refused_mid_epoch(saved):
    plain = MAP([3, 5])
    plain.update(tuple(dataset("dense", 1).tensors))
    with pytest.raises(ValueError, match="records no position"):
        _resume({"metric": plain.state_dict(), "evaluator": saved[0]["evaluator"]})


def test_a_malformed_position_is_refused_at_load(saved):
    state = saved[0]["metric"]["__metric_state_per_rank"][0]
    bad = {"__metric_state_per_rank": [{**state, "_engine_position": {"batches": -1, "data": {}}}]}
    with pytest.raises(ValueError, match="_engine_position"):
        MAP([3, 5]).load_state_dict(bad)


def test_a_metric_not_loaded_warns_that_it_counts_the_rest_only(saved):
    with pytest.warns(UserWarning, match="counts only the batches from there on"):
        _resume(saved[0], objects=("evaluator",))


def test_a_loaded_metric_on_a_fresh_engine_warns_and_counts_the_whole_epoch(saved):
    checkpoint, expected = saved
    with pytest.warns(UserWarning, match="is reset, since the engine starts its epoch"):
        assert _resume(checkpoint, objects=("metric",)) == expected


def test_the_sampler_yields_the_rest_until_told_otherwise():
    sampler = EvaluationSampler(range(10), num_replicas=2, rank=1)
    sampler.resume_after(3)
    assert list(sampler) == [8, 9] == list(sampler) and "after the first 3" in repr(sampler)
    sampler.resume_after(0)
    assert list(sampler) == [5, 6, 7, 8, 9] and len(sampler) == 5
    with pytest.raises(ValueError, match=r"consumed must be in \[0, 5\]"):
        sampler.resume_after(6)
    with pytest.raises(TypeError, match="consumed must be an int"):
        sampler.resume_after(1.0)
    assert torch.equal(torch.tensor(list(sampler)), torch.arange(5, 10))


def test_a_state_saved_after_the_epoch_loads_without_a_position_or_warning(saved):
    evaluator, metric, loader = make("dense", "single", dataset("dense", 1))
    evaluator.run(loader)
    state = metric.state_dict()
    assert "_engine_position" not in state["__metric_state_per_rank"][0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _resume({"metric": state}, objects=("metric",)) == saved[1]


def _every_iteration(kind="group", form="flat", max_epochs=1):
    """The objects' states at every iteration (and epoch end), and the full result."""
    evaluator, metric, loader = make(form, kind, dataset(form, 1))
    saved = {}

    @evaluator.on(Events.ITERATION_COMPLETED)
    def save(engine):
        states = {"metric": metric.state_dict(), "evaluator": engine.state_dict()}
        saved[engine.state.iteration] = copy.deepcopy(states)

    evaluator.run(loader, max_epochs=max_epochs)
    return saved, result(evaluator, metric)


def _resumed(kind, form, checkpoint, max_epochs=1):
    evaluator, metric, loader = make(form, kind, dataset(form, 1))
    Checkpoint.load_objects({"metric": metric, "evaluator": evaluator}, copy.deepcopy(checkpoint))
    evaluator.run(loader, max_epochs=max_epochs)
    return result(evaluator, metric)


@pytest.mark.parametrize(("kind", "max_epochs"), [("group", 1), ("single", 2)])
def test_every_iteration_resumes_exactly_and_the_last_one_without_a_warning(kind, max_epochs):
    # The last iteration of an epoch counted it whole: the next epoch (or, the run done, ignite's
    # new run) starts clean, as it should, and without telling the user to load what they did.
    checkpoints, expected = _every_iteration(kind, max_epochs=max_epochs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for checkpoint in checkpoints.values():
            assert _resumed(kind, "flat", checkpoint, max_epochs) == expected


def test_a_resumed_run_interrupted_again_resumes_exactly():
    checkpoints, expected = _every_iteration()
    evaluator, metric, loader = make("flat", "group", dataset("flat", 1))
    Checkpoint.load_objects({"metric": metric, "evaluator": evaluator}, copy.deepcopy(checkpoints[2]))
    again = {}
    evaluator.add_event_handler(
        Events.ITERATION_COMPLETED(once=5),
        lambda e: again.update(metric=copy.deepcopy(metric.state_dict()), evaluator=e.state_dict()),
    )
    evaluator.run(loader)
    assert result(evaluator, metric) == expected
    assert _resumed("group", "flat", again) == expected


def test_a_metric_reset_by_hand_after_a_load_resumes_nothing(saved):
    checkpoint, expected = saved
    evaluator, metric, loader = make("dense", "single", dataset("dense", 1))
    metric.load_state_dict(checkpoint["metric"])
    metric.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "the state loaded into it is reset": it was, by hand
        assert dict(evaluator.run(loader).metrics) == expected
    evaluator, metric, loader = make("dense", "single", dataset("dense", 1))
    Checkpoint.load_objects({"metric": metric, "evaluator": evaluator}, checkpoint)
    metric.reset()  # the engine still resumes: the metric says it counts the rest only
    with pytest.warns(UserWarning, match=r"no state was loaded into this metric \(or it was reset since\)"):
        evaluator.run(loader)


def test_epoch_2_on_rank_0_s_engine_state_reads_this_rank_s_batches_once():
    # Every process loads rank 0's engine state, whose epoch length is its own: rank 1 of 2 has
    # one batch less (3 of 4), and ignite would read its data again to make up rank 0's count.
    data = dataset("dense", 1)

    def engine_on(rank, save_at=None):
        evaluator, metric = Engine(lambda engine, batch: tuple(batch)), MAP([3, 5])
        metric.attach(evaluator, "map")
        saved = {}
        if save_at is not None:
            evaluator.add_event_handler(
                save_at, lambda e: saved.update(metric=metric.state_dict(), evaluator=e.state_dict())
            )
        sampler = EvaluationSampler(data, num_replicas=2, rank=rank)
        return evaluator, metric, DataLoader(data, batch_size=4, sampler=sampler), saved

    rank0, _, loader0, epoch_end = engine_on(0, Events.EPOCH_COMPLETED(once=1))
    rank0.run(loader0, max_epochs=2)
    rank0, _, loader0, rank0_mid = engine_on(0, Events.ITERATION_COMPLETED(once=4 + 2))
    rank0.run(loader0, max_epochs=2)
    rank1, _, loader1, rank1_mid = engine_on(1, Events.ITERATION_COMPLETED(once=3 + 2))
    expected = rank1.run(loader1, max_epochs=2).metrics
    assert epoch_end["evaluator"]["epoch_length"] == 4 and len(loader1) == 3
    after_epoch_1 = {"evaluator": epoch_end["evaluator"]}
    for checkpoint in (after_epoch_1, {**rank1_mid, "evaluator": rank0_mid["evaluator"]}):
        evaluator, metric, loader, _ = engine_on(1)
        objects = {"metric": metric, "evaluator": evaluator}
        Checkpoint.load_objects({name: objects[name] for name in checkpoint}, checkpoint)
        assert evaluator.run(loader).metrics == expected
