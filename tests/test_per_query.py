"""Per-query values of the metrics and the group (``per_query=True``), in one process."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ignite.engine import Engine
from reference import METRIC_NAMES, build_metric, per_query, tied_batch

from ignite_ranking import MRR, NDCG, RankingMetrics, Recall
from ignite_ranking.compare import compare

KS = [1, 3, 10]


def _batches(seed=0, sizes=(5, 1, 0, 8)):
    rng = np.random.default_rng(seed)
    return [tied_batch(rng, b, 9) for b in sizes]


@pytest.mark.parametrize("name", METRIC_NAMES)
@pytest.mark.parametrize("ignore_zero_hits", [True, False])
def test_values_are_the_reference_per_query_and_average_to_compute(name, ignore_zero_hits):
    metric = build_metric(name, KS, ignore_zero_hits=ignore_zero_hits, per_query=True, ties="last")
    expected, keys, arrived = [], [], 0
    for y_pred, y in _batches():
        metric.update((y_pred, y))
        rows = per_query(y_pred, y, name, KS, ties="last")
        for i, row in enumerate(rows):
            if not ignore_zero_hits or (y[i] >= 1).any():
                expected.append(row)
                keys.append(arrived + i)
        arrived += y_pred.shape[0]
    result = metric.per_query_values()
    assert result.keys.tolist() == keys
    assert list(result.values) == metric.value_names
    got = torch.stack(list(result.values.values()), dim=1)
    np.testing.assert_allclose(got.numpy(), np.array(expected), rtol=1e-12, atol=1e-15)
    means = metric.compute()
    means = means if isinstance(means, list) else [means]
    np.testing.assert_allclose(got.mean(dim=0).numpy(), means, rtol=1e-12)


def test_off_by_default_and_memory_free():
    metric = MRR(KS)
    for y_pred, y in _batches():
        metric.update((y_pred, y))
    assert metric._query_values == []
    with pytest.raises(ValueError, match="per_query=True"):
        metric.per_query_values()
    y_pred, y = _batches()[0]
    with pytest.raises(ValueError, match="per_query=True"):
        metric.update((y_pred, y, {"query_ids": torch.arange(5)}))


def test_user_ids_sort_the_rows_and_must_be_unique():
    metric = Recall([3], per_query=True, ignore_zero_hits=False)
    (y1, l1), (y2, l2) = _batches(sizes=(3, 2))[:2]
    metric.update((y1, l1, {"query_ids": [30, 10, 50]}))
    metric.update((y2, l2, {"query_ids": torch.tensor([40, 20])}))
    result = metric.per_query_values()
    assert result.keys.tolist() == [10, 20, 30, 40, 50]
    rows = per_query(y1, l1, "recall", [3]) + per_query(y2, l2, "recall", [3])
    by_key = dict(zip([30, 10, 50, 40, 20], (r[0] for r in rows), strict=True))
    assert result.values["recall@3"].tolist() == [by_key[k] for k in [10, 20, 30, 40, 50]]
    metric.update((y2, l2, {"query_ids": [20, 60]}))
    metric.compute()  # the mean counts each query; only the values keyed by id cannot be told apart
    with pytest.raises(ValueError, match=r"unique across updates and processes; \[20\]"):
        metric.per_query_values()


@pytest.mark.parametrize(
    ("extra", "error", "message"),
    [
        ({"query_ids": [1, 2]}, ValueError, r"shape \(3,\)"),
        ({"query_ids": [0.5, 1.5, 2.5]}, TypeError, "integers"),
        ({"ids": [1, 2, 3]}, ValueError, "query_ids"),
    ],
)
def test_bad_ids_are_refused_and_leave_the_state(extra, error, message):
    metric = MRR([3], per_query=True)
    y_pred, y = _batches(sizes=(3,))[0]
    metric.update((y_pred, y, {"query_ids": [7, 8, 9]}))
    before = metric.per_query_values()
    with pytest.raises(error, match=message):
        metric.update((y_pred, y, extra))
    after = metric.per_query_values()
    assert after.keys.tolist() == before.keys.tolist()
    # Ids in some updates and not in others are refused too.
    with pytest.raises(ValueError, match="every update"):
        metric.update((y_pred, y))


def test_state_dict_round_trip_keeps_the_values():
    metric = NDCG(KS, per_query=True)
    batches = _batches(seed=3)
    for y_pred, y in batches[:2]:
        metric.update((y_pred, y))
    restored = NDCG(KS, per_query=True)
    restored.load_state_dict(metric.state_dict())
    for m in (metric, restored):
        for y_pred, y in batches[2:]:
            m.update((y_pred, y))
    one, two = metric.per_query_values(), restored.per_query_values()
    assert one.keys.tolist() == two.keys.tolist()
    for name in one.values:
        assert torch.equal(one.values[name], two.values[name])
    assert restored.compute() == metric.compute()
    with pytest.raises(ValueError, match="per-query values"):
        NDCG(KS, per_query=True).load_state_dict(NDCG(KS).state_dict())


def test_group_under_an_engine_feeds_compare():
    batches = _batches(seed=4, sizes=(6, 6, 6))

    def evaluate(shift):
        group = RankingMetrics(mrr=MRR([10]), ndcg=NDCG([5, 10]), per_query=True)
        engine = Engine(lambda e, b: (b[0] + shift * b[1], b[1], {"query_ids": b[2]}))
        group.attach(engine, "ranking")
        data = [(y_pred, y, torch.arange(6) + 6 * i) for i, (y_pred, y) in enumerate(batches)]
        state = engine.run(data)
        return group, state.metrics

    (base, base_metrics), (better, better_metrics) = evaluate(0.0), evaluate(0.7)
    values = base.per_query_values()
    assert list(values.values) == ["mrr@10", "ndcg@5", "ndcg@10"]
    assert values.values["ndcg@10"].mean().item() == pytest.approx(base_metrics["ndcg@10"], rel=1e-12)
    report = compare({"base": values, "better": better.per_query_values()}, seed=0, resamples=200)
    assert report.num_queries == len(values)
    first = report.comparisons[0]
    assert first.mean_a == pytest.approx(base_metrics["mrr@10"]) and first.mean_b == pytest.approx(
        better_metrics["mrr@10"]
    )
    with pytest.raises(ValueError, match="share ignore_zero_hits"):
        RankingMetrics(a=MRR([1]), b=MRR([1], ignore_zero_hits=False), per_query=True)


@pytest.mark.parametrize("as_group", [False, True])
def test_flat_form_keys_are_its_query_ids_also_across_updates(as_group):
    # The flat form names its queries itself: the keys are its indexes, and a query cut across
    # updates (held back, then closed by compute) keeps its id.
    from ignite_ranking.functional import per_query as functional_per_query

    gen = torch.Generator().manual_seed(5)
    sizes = [3, 1, 4, 2, 5, 3]
    ids = torch.tensor([40, 7, 12, 3, 99, 5]).repeat_interleave(torch.tensor(sizes))
    preds = torch.randint(0, 3, (ids.numel(),), generator=gen).float()
    target = torch.randint(0, 2, (ids.numel(),), generator=gen)
    metric = MRR([1, 3], per_query=True, ignore_zero_hits=False)
    tracked = RankingMetrics(mrr=metric, per_query=True) if as_group else metric
    for start, stop in [(0, 5), (5, 11), (11, ids.numel())]:  # cuts inside queries 7 and 99
        tracked.update((preds[start:stop], target[start:stop], ids[start:stop]))
    tracked.compute()
    result = tracked.per_query_values()
    expected, expected_ids = functional_per_query((preds, target, ids), "mrr", top_k=[1, 3])
    order = torch.argsort(expected_ids)
    assert result.keys.tolist() == expected_ids[order].tolist()
    name = "mrr@3"
    assert torch.allclose(result.values[name], expected[order, 1].to(torch.float64), atol=1e-12)


def test_retrieved_form_takes_query_ids():
    from ignite_ranking import Retrieved

    metric = MRR([2], per_query=True)
    ids = torch.tensor([[4, 2, -1], [1, 0, 3]])
    relevant = torch.tensor([[2, -1], [3, 0]])
    metric.update(Retrieved(ids, relevant))
    assert metric.per_query_values().values["mrr@2"].tolist() == [0.5, 0.5]
    with pytest.raises(ValueError, match="query_ids"):
        MRR([2], per_query=True).update((torch.rand(2, 3), torch.ones(2, 3), {"query_ids": [1]}))


def test_int32_query_ids_equal_int64():
    y_pred, y = _batches(seed=3, sizes=(6,))[0]
    ids = torch.tensor([40, 7, 12, 3, 99, 5])
    results = []
    for dtype in (torch.int64, torch.int32):
        group = RankingMetrics(mrr=MRR(KS), ndcg=NDCG(KS), per_query=True)
        group.update((y_pred, y, {"query_ids": ids.to(dtype)}))
        result = group.per_query_values()
        results.append(result)
        assert result.keys.dtype == torch.int64
    assert results[0].keys.equal(results[1].keys)
    assert all(results[0].values[n].equal(results[1].values[n]) for n in results[0].values)
    # The flat form keys its queries by int32 indexes as by int64 ones.
    flat = [y_pred.flatten(), y.flatten(), torch.arange(6).repeat_interleave(y.shape[1])]
    keyed = []
    for dtype in (torch.int64, torch.int32):
        metric = MRR(KS, per_query=True)
        metric.update((flat[0], flat[1], flat[2].to(dtype)))
        keyed.append(metric.per_query_values())
    assert keyed[0].keys.equal(keyed[1].keys) and keyed[0].values["mrr@1"].equal(keyed[1].values["mrr@1"])


def test_group_refuses_members_that_skip_different_queries():
    # AUC skips rows without a non-relevant item too; its values would sit under MRR's keys.
    from ignite_ranking import AUC, RankingMetrics

    with pytest.raises(ValueError, match="must keep the same queries"):
        RankingMetrics(mrr=MRR([10]), auc=AUC(), per_query=True)
    group = RankingMetrics(
        mrr=MRR([10], ignore_zero_hits=False), auc=AUC(ignore_zero_hits=False), per_query=True
    )
    group.update((torch.tensor([[0.3, 0.2, 0.1], [0.1, 0.2, 0.3]]), torch.tensor([[1, 1, 1], [1, 0, 0]])))
    result = group.per_query_values()
    assert result.keys.tolist() == [0, 1]
    assert result.values["auc"].tolist() == [0.0, 0.0] and result.values["mrr@10"].tolist() == [1.0, 1 / 3]
