"""State: save/resume mid-epoch, copies, refusals, exact counts past 2**24, reset."""

from __future__ import annotations

import copy
import io
import math

import numpy as np
import pytest
import torch
from ignite.engine import Engine, Events
from ignite.exceptions import NotComputableError
from reference import DEVICES, METRIC_NAMES, build_metric, tied_batch

from ignite_ranking import MRR, NDCG, HitRate, Precision, RankingMetrics, RPrecision
from ignite_ranking.kernels.exact_sum import LIMBS, limb_totals

KS = [1, 4, 20]


@pytest.fixture(scope="module")
def batches():
    rng = np.random.default_rng(17)
    return [tied_batch(rng, b, 9) for b in (5, 3, 8, 2, 6)]


def _group():
    return RankingMetrics({name: build_metric(name, KS) for name in METRIC_NAMES})


def _state_tensors(metric):
    return metric._sum_per_k.clone(), metric._num_examples.clone()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", [*METRIC_NAMES, "group"])
def test_resume_mid_epoch_equals_an_uninterrupted_run(name, batches, device):
    def make():
        if name == "group":
            return RankingMetrics({n: build_metric(n, KS, device=device) for n in METRIC_NAMES})
        return build_metric(name, KS, device=device)

    batches = [(y_pred.to(device), y.to(device)) for y_pred, y in batches]

    uninterrupted = make()
    for output in batches:
        uninterrupted.update(output)

    first = make()
    for output in batches[:2]:
        first.update(output)
    saved = first.state_dict()

    resumed = make()
    resumed.load_state_dict(saved)
    for output in batches[2:]:
        resumed.update(output)
    assert resumed.compute() == uninterrupted.compute()


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_state_dict_returns_copies(name, batches):
    metric = build_metric(name, KS)
    metric.update(batches[0])
    saved = metric.state_dict()
    snapshot = copy.deepcopy(saved)
    metric.update(batches[1])
    metric.update(batches[2])
    (per_rank,) = saved["__metric_state_per_rank"]
    (before,) = snapshot["__metric_state_per_rank"]
    assert torch.equal(per_rank["_sum_per_k"], before["_sum_per_k"])
    assert torch.equal(per_rank["_num_examples"], before["_num_examples"])
    assert not torch.equal(per_rank["_num_examples"], metric._num_examples)


def test_load_state_dict_copies_what_it_is_given(batches):
    source = MRR(KS)
    source.update(batches[0])
    saved = source.state_dict()
    snapshot = copy.deepcopy(saved)
    target = MRR(KS)
    target.load_state_dict(saved)
    target.update(batches[1])
    (per_rank,) = saved["__metric_state_per_rank"]
    (before,) = snapshot["__metric_state_per_rank"]
    assert torch.equal(per_rank["_sum_per_k"], before["_sum_per_k"])
    assert torch.equal(per_rank["_num_examples"], before["_num_examples"])


def test_group_state_dict_round_trip(batches):
    group = _group()
    for output in batches:
        group.update(output)
    restored = _group()
    restored.load_state_dict(group.state_dict())
    assert restored.compute() == group.compute()


def _saved(metric, sums, count):
    """A state for ``metric`` with the given sums and count (and the metric's own settings)."""
    return {
        "__metric_state_per_rank": [
            {"_sum_per_k": sums, "_num_examples": count, "_settings": metric.settings()}
        ]
    }


@pytest.mark.parametrize(
    ("source", "target", "pattern"),
    [
        (MRR([1, 2]), MRR([1, 2, 3]), "top_k"),
        (MRR([1, 2, 3]), MRR([1, 5, 10]), "top_k"),
        (NDCG([5, 10, 20]), NDCG([5]), "top_k"),
        (MRR([1, 5]), NDCG([1, 5]), "metric"),
        (Precision([1, 2]), RPrecision(), "metric"),
        (RPrecision(), MRR([1, 2]), "metric"),
        (MRR([1]), MRR([1], relevance_threshold=2), "relevance_threshold"),
        (MRR([1]), MRR([1], ignore_zero_hits=False), "ignore_zero_hits"),
        (HitRate([1]), HitRate([1], ties="average"), "ties"),
        (NDCG([3]), NDCG([3], gain_function="linear_rank"), "gain_function"),
    ],
    ids=[
        "mrr-2-to-3",
        "mrr-1.2.3-to-1.5.10",
        "ndcg-3-to-1",
        "mrr-to-ndcg",
        "precision-to-rprec",
        "rprec-to-mrr",
        "threshold",
        "ignore-zero-hits",
        "ties",
        "gain",
    ],
)
def test_load_state_dict_refuses_a_state_of_other_settings(source, target, pattern):
    source.update((torch.tensor([[0.3, 0.9]]), torch.tensor([[1, 0]])))
    target.update((torch.tensor([[0.3, 0.9]]), torch.tensor([[0, 1]])))
    before = _state_tensors(target)
    with pytest.raises(ValueError, match=pattern):
        target.load_state_dict(source.state_dict())
    after = _state_tensors(target)
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])


def test_group_refuses_a_member_state_of_other_settings():
    group = RankingMetrics(mrr=MRR([1, 2, 3]), ndcg=NDCG([5]))
    other = RankingMetrics(mrr=MRR([1, 5, 10]), ndcg=NDCG([5]))
    with pytest.raises(ValueError, match="top_k"):
        other.load_state_dict(group.state_dict())


def test_group_refuses_members_that_keep_other_queries():
    """Regression: a per_query group loaded members with permuted keys and then paired one
    member's values with another query."""
    group = RankingMetrics(mrr=MRR([1]), ndcg=NDCG([3]), per_query=True)
    y_pred = torch.tensor([[0.9, 0.1, 0.5], [0.1, 0.9, 0.5], [0.5, 0.1, 0.9]])
    group.update(
        (y_pred, torch.tensor([[1, 0, 0], [1, 0, 0], [0, 1, 0]]), {"query_ids": torch.tensor([10, 11, 12])})
    )
    state = copy.deepcopy(group.state_dict())
    state["__metric_state_per_rank"][0]["metrics"]["mrr"]["_query_keys"] = torch.tensor([12, 10, 11])
    fresh = RankingMetrics(mrr=MRR([1]), ndcg=NDCG([3]), per_query=True)
    before = fresh.state_dict()
    with pytest.raises(ValueError, match="keeps other queries than metric 'mrr'"):
        fresh.load_state_dict(state)
    assert str(fresh.state_dict()) == str(before)


def test_load_state_dict_refuses_user_keys_without_per_query():
    """Only per_query=True takes query_ids: a state of another aggregation saying so is refused
    (it left the metric refusing every later update)."""
    metric = Precision([2], aggregation="median")
    metric.update((torch.tensor([[0.9, 0.1, 0.5]]), torch.tensor([[1, 0, 0]])))
    state = copy.deepcopy(metric.state_dict())
    state["__metric_state_per_rank"][0]["_user_keys"] = True
    with pytest.raises(ValueError, match="only a metric created with per_query=True takes"):
        Precision([2], aggregation="median").load_state_dict(state)


def test_load_state_dict_refuses_missing_keys():
    metric = MRR([1])
    with pytest.raises(ValueError, match="_num_examples"):
        metric.load_state_dict({"__metric_state_per_rank": [{"_sum_per_k": torch.zeros(1)}]})
    state = {"_sum_per_k": torch.zeros(1), "_num_examples": torch.tensor(0)}  # without settings
    with pytest.raises(ValueError, match="_settings"):
        metric.load_state_dict({"__metric_state_per_rank": [state]})


@pytest.mark.parametrize(
    ("count", "error"),
    [
        (2.7, TypeError),
        (torch.tensor(2.7), TypeError),
        (torch.tensor(3.0), TypeError),
        (True, TypeError),
        (torch.tensor(True), TypeError),
        (torch.tensor([1, 2]), TypeError),
        ("3", TypeError),
        (-2, ValueError),
        (torch.tensor(-2), ValueError),
    ],
    ids=repr,
)
def test_load_state_dict_refuses_a_count_that_is_not_a_non_negative_integer(count, error):
    metric = MRR([1, 2])
    metric.update((torch.tensor([[0.3, 0.9]]), torch.tensor([[1, 0]])))
    before = _state_tensors(metric)
    with pytest.raises(error, match="_num_examples"):
        metric.load_state_dict(_saved(metric, torch.tensor([1.0, 2.0], dtype=torch.float64), count))
    after = _state_tensors(metric)
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])


@pytest.mark.parametrize(
    ("sums", "error"),
    [
        (torch.tensor([1.0, math.nan], dtype=torch.float64), ValueError),
        (torch.tensor([1.0, math.inf], dtype=torch.float64), ValueError),
        (torch.tensor([1, 2]), ValueError),
        (torch.zeros(2, 4, dtype=torch.int32), ValueError),
        (torch.tensor([[0, 0, 0, -1], [0, 0, 0, 0]]), ValueError),
        (torch.tensor([True, False]), TypeError),
        ([1.0, 2.0], TypeError),
        (torch.zeros(3, dtype=torch.float64), ValueError),
        (torch.zeros(3, 4, dtype=torch.int64), ValueError),
    ],
    ids=["nan", "inf", "int", "int32-limbs", "negative-flags", "bool", "list", "shape", "limbs-shape"],
)
def test_load_state_dict_refuses_bad_sums(sums, error):
    metric = MRR([1, 2])
    with pytest.raises(error, match="_sum_per_k"):
        metric.load_state_dict(_saved(metric, sums, 3))


@pytest.mark.parametrize("count", [4, np.int64(4), torch.tensor(4, dtype=torch.int32), torch.tensor([4])])
def test_loaded_state_takes_the_accumulation_dtypes(count):
    metric = MRR([1, 2])
    # float sums, as states saved before the exact sums hold them: converted to limbs
    metric.load_state_dict(_saved(metric, torch.tensor([1.0, 2.0], dtype=torch.float32), count))
    assert metric._sum_per_k.dtype == torch.int64 and metric._sum_per_k.shape == (2, LIMBS)
    assert metric._num_examples.dtype == torch.int64 and metric._num_examples.shape == ()
    assert metric.compute() == [0.25, 0.5]


def test_state_survives_torch_save_with_weights_only_loading(batches):
    group = _group()
    for output in batches[:2]:
        group.update(output)
    buffer = io.BytesIO()
    torch.save(group.state_dict(), buffer)
    buffer.seek(0)
    restored = _group()
    restored.load_state_dict(torch.load(buffer, weights_only=True))
    assert restored.compute() == group.compute()


def test_ignite_checkpoint_saves_and_restores_a_group(tmp_path, batches):
    from ignite.handlers import Checkpoint, DiskSaver

    group = _group()
    for output in batches[:3]:
        group.update(output)
    engine = Engine(lambda engine, batch: None)
    checkpoint = Checkpoint({"metrics": group}, DiskSaver(tmp_path, require_empty=False))
    engine.add_event_handler(Events.COMPLETED, checkpoint)
    engine.run([0])
    restored = _group()
    Checkpoint.load_objects({"metrics": restored}, tmp_path / checkpoint.last_checkpoint)
    for metric in (group, restored):
        for output in batches[3:]:
            metric.update(output)
    assert restored.compute() == group.compute()
    # A checkpoint of other cutoffs is refused by Checkpoint.load_objects too.
    other = RankingMetrics({name: build_metric(name, [1, 5, 20]) for name in METRIC_NAMES})
    with pytest.raises(ValueError, match="top_k"):
        Checkpoint.load_objects({"metrics": other}, tmp_path / checkpoint.last_checkpoint)


@pytest.mark.parametrize("count", [2**24, 2**24 + 1, 2**40 + 7])
def test_count_and_mean_stay_exact_past_float32_range(count):
    metric = MRR([1, 2])
    sums = torch.tensor([count / 2, count], dtype=torch.float64)  # RR@1 = 0.5, RR@2 = 1 so far
    metric.load_state_dict(_saved(metric, sums, torch.tensor(count)))
    # Three more queries, each with the relevant item first: RR@1 = RR@2 = 1.
    y_pred = torch.tensor([[0.9, 0.1]] * 3)
    y = torch.tensor([[1, 0]] * 3)
    metric.update((y_pred, y))
    assert metric._num_examples.dtype == torch.int64
    assert int(metric._num_examples) == count + 3
    assert limb_totals(metric._sum_per_k) == [(count + 6) << 63, (count + 3) << 64]
    assert metric.compute() == [(count / 2 + 3) / (count + 3), 1.0]
    # A float32 count would have lost the three queries at 2**24 already.
    assert float(torch.tensor(2**24, dtype=torch.float32) + 1) == 2**24


def test_count_dtype_stays_int64_over_many_updates():
    metric = NDCG([3])
    for _ in range(5):
        metric.update((torch.rand(4, 6), torch.randint(0, 3, (4, 6))))
        assert metric._num_examples.dtype == torch.int64
        assert metric._sum_per_k.dtype == torch.int64


@pytest.mark.parametrize("name", [*METRIC_NAMES, "group"])
def test_reset_clears(name, batches):
    metric = _group() if name == "group" else build_metric(name, KS, ignore_zero_hits=False)
    for output in batches:
        metric.update(output)
    metric.reset()
    members = metric.metrics.values() if name == "group" else [metric]
    for m in members:
        assert (m._sum_per_k == 0).all()
        assert int(m._num_examples) == 0
    with pytest.raises(NotComputableError):
        metric.compute()
    # And it counts afresh afterwards.
    fresh = _group() if name == "group" else build_metric(name, KS, ignore_zero_hits=False)
    for m in (metric, fresh):
        m.update(batches[0])
    assert metric.compute() == fresh.compute()
