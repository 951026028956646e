"""torchmetrics' retrieval options, each against torchmetrics itself on the flat form.

Random flat streams hold empty queries (no relevant item), ignored rows and queries cut across
updates. Where torchmetrics' order of equal scores is not specified (MRR, HitRate, Precision,
Recall, MAP, R-Precision, AUC's top k) the scores are tie-free; NDCG and AUC over whole queries
see tied scores, under the policy that matches theirs (``ties="average"`` for NDCG; AUC counts
ties one half whatever the policy). Values agree to 1e-6 except where docs/migrating.md names a
difference; the tests that pin those differences down come last.
"""

from __future__ import annotations

import copy
import itertools
import math
import socket
from collections.abc import Mapping

import numpy as np
import pytest
import torch
from ignite.exceptions import NotComputableError

torchmetrics = pytest.importorskip("torchmetrics")
from torchmetrics import retrieval as tm  # noqa: E402

from ignite_ranking import (  # noqa: E402
    AUC,
    MAP,
    MRR,
    NDCG,
    HitRate,
    Judged,
    Precision,
    RankingMetrics,
    Recall,
    Retrieved,
    RPrecision,
)

IGNORE = -100
ACTIONS = ("skip", "neg", "pos")
CUTOFFS = [1, 3, 10, 25]


def _stream(seed, *, tied=False, graded=False, num_queries=120, with_negative=False, shortest=1):
    """Flat rows: queries of ``shortest``..20 rows, a fifth of them without a relevant item,
    about a tenth of the rows ignored; scores tie-free in (0, 1] or from five values.
    ``with_negative``: every query keeps a non-relevant row (AUC needs one, see the end)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(shortest, 21, size=num_queries)
    n = int(lengths.sum())
    if tied:
        preds = torch.from_numpy(rng.integers(1, 6, size=n) / 5.0)
    else:
        preds = torch.from_numpy(rng.permutation(n) + 1.0) / n
    preds = preds.to(torch.float32)
    top = 4 if graded else 2
    target = torch.from_numpy(rng.integers(0, top, size=n) * (rng.random(n) < 0.5))
    query = np.repeat(np.arange(num_queries), lengths)
    empty = rng.random(num_queries) < 0.2
    target[torch.from_numpy(empty[query])] = 0
    target[torch.from_numpy(rng.random(n) < 0.1)] = IGNORE
    if with_negative:
        target[torch.from_numpy(np.cumsum(lengths) - lengths)] = 0
    indexes = torch.from_numpy(rng.permutation(num_queries)[query])
    return preds, target, indexes


def _chunks(stream, parts=4):
    n = stream[0].shape[0]
    bounds = np.linspace(0, n, parts + 1).astype(int)
    return [tuple(t[a:b] for t in stream) for a, b in itertools.pairwise(bounds)]


def _ours(metric, chunks):
    for chunk in chunks:
        metric.update(chunk)
    return metric.compute()


def _theirs(cls, chunks, **kwargs):
    metric = cls(ignore_index=IGNORE, **kwargs)
    for preds, target, indexes in chunks:
        metric.update(preds, target, indexes=indexes)
    return metric.compute().item()


def _at_cutoffs(cls, chunks, cutoffs, **kwargs):
    return [_theirs(cls, chunks, top_k=k, **kwargs) for k in cutoffs]


# ours (class, kwargs), theirs, the stream's kind
CUTOFF_PAIRS = [
    (MRR, {}, tm.RetrievalMRR, {}),
    (HitRate, {}, tm.RetrievalHitRate, {}),
    (Precision, {}, tm.RetrievalPrecision, {}),
    (Recall, {}, tm.RetrievalRecall, {}),
    (MAP, {"denominator": "relevant_retrieved"}, tm.RetrievalMAP, {}),  # its AP@k: over the hits
    (NDCG, {"gain_function": "linear_rank", "ties": "average"}, tm.RetrievalNormalizedDCG, {"tied": True}),
]


def _pair_ids(pairs):
    return [pair[2].__name__ for pair in pairs]


# ------------------------------------------------------------------------- empty_target_action


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize(("ours", "kwargs", "theirs", "kind"), CUTOFF_PAIRS, ids=_pair_ids(CUTOFF_PAIRS))
def test_empty_target_action_equals_torchmetrics(ours, kwargs, theirs, kind, action):
    chunks = _chunks(_stream(1, graded=ours is NDCG, **kind))
    got = _ours(ours(CUTOFFS, ignore_index=IGNORE, empty_target_action=action, **kwargs), chunks)
    expected = _at_cutoffs(theirs, chunks, CUTOFFS, empty_target_action=action)
    assert got == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("action", ACTIONS)
def test_empty_target_action_of_the_metrics_without_a_cutoff(action):
    chunks = _chunks(_stream(2))
    r_precision = _ours(RPrecision(ignore_index=IGNORE, empty_target_action=action), chunks)
    assert r_precision == pytest.approx(
        _theirs(tm.RetrievalRPrecision, chunks, empty_target_action=action), abs=1e-6
    )
    full_map = _ours(MAP([20], ignore_index=IGNORE, empty_target_action=action), chunks)  # k >= every query
    assert full_map == pytest.approx([_theirs(tm.RetrievalMAP, chunks, empty_target_action=action)], abs=1e-6)


@pytest.mark.parametrize("action", ACTIONS)
def test_empty_target_action_of_auc(action):
    auc_chunks = _chunks(_stream(3, tied=True, with_negative=True))
    auc = _ours(AUC(ignore_index=IGNORE, empty_target_action=action), auc_chunks)
    assert auc == pytest.approx(_theirs(tm.RetrievalAUROC, auc_chunks, empty_target_action=action), abs=1e-6)


def test_pos_scores_one_and_neg_zero_for_an_empty_query():
    y_pred = torch.tensor([[0.9, 0.1, 0.5], [0.2, 0.3, 0.4]])
    y = torch.tensor([[0, 1, 0], [0, 0, 0]])
    values = {}
    for action in ACTIONS:
        metric = MRR([1, 3], empty_target_action=action, per_query=True)
        metric.update((y_pred, y))
        values[action] = (metric.compute(), metric.per_query_values().values["mrr@3"].tolist())
    assert values["skip"] == ([0.0, 1 / 3], [1 / 3])
    assert values["neg"] == ([0.0, 1 / 6], [1 / 3, 0.0])
    assert values["pos"] == ([0.5, 2 / 3], [1 / 3, 1.0])
    mask = torch.tensor([[True, True, False], [False, False, True]])
    for action, expected in (("neg", [0.5]), ("pos", [0.75])):  # Judged@2 of the rows: 1/2, 1/2
        judged = Judged([2], empty_target_action=action)
        judged.update((y_pred, y, {"judged": mask}))
        assert judged.compute() == expected  # neg: the second query's own 1/2; pos: 1
    auc = AUC(empty_target_action="pos")
    auc.update((torch.tensor([[0.9, 0.1, 0.5], [0.2, 0.3, 0.4]]), torch.tensor([[0, 1, 0], [1, 1, 1]])))
    assert auc.compute() == 0.5  # (0 + 1) / 2: the second query has no non-relevant item


def _state(metric):
    return copy.deepcopy(metric.state_dict())


def _same(before, after):
    if isinstance(before, Mapping):
        assert before.keys() == after.keys()
        for key, value in before.items():
            _same(value, after[key])
    elif isinstance(before, (list, tuple)):
        assert len(before) == len(after)
        for value, other in zip(before, after, strict=True):
            _same(value, other)
    elif isinstance(before, torch.Tensor):
        assert torch.equal(before, after)
    else:
        assert before == after


def test_error_refuses_the_update_naming_the_query_and_keeps_the_state():
    stream = _stream(4)
    metric = MRR([1, 10], ignore_index=IGNORE, empty_target_action="error")
    group = RankingMetrics(mrr=MRR(10), ndcg=NDCG(10), empty_target_action="error", ignore_index=IGNORE)
    for m in (metric, group):  # updates without empty queries are added (query -5 is held)
        m.update((torch.tensor([0.5, 0.4]), torch.tensor([1, 0]), torch.tensor([-1, -1])))
        m.update((torch.tensor([0.3, 0.2]), torch.tensor([1, 0]), torch.tensor([-5, -5])))
    for m in (metric, group):
        before = _state(m)
        with pytest.raises(ValueError, match=r"empty_target_action='error'.*query \d+ \(its indexes value\)"):
            m.update(stream)
        _same(before, _state(m))
        assert m.compute() == ([1.0, 1.0] if m is metric else {"mrr@10": 1.0, "ndcg@10": 1.0})
    with pytest.raises(ValueError, match="the query at row 1 of the batch"):
        MRR(3, empty_target_action="error").update((torch.rand(2, 3), torch.tensor([[1, 0, 0], [0, 0, 0]])))
    # the flat form's last query is checked when it completes: here at compute()
    held = MRR(3, empty_target_action="error")
    held.update((torch.tensor([0.1, 0.2, 0.3]), torch.tensor([1, 0, 0]), torch.tensor([4, 9, 9])))
    with pytest.raises(ValueError, match=r"query 9 \(its indexes value\)"):
        held.compute()


def test_error_on_a_stream_without_empty_queries_equals_torchmetrics():
    preds, target, indexes = _stream(5)
    has_relevant = torch.zeros(int(indexes.max()) + 1, dtype=torch.bool)
    has_relevant[indexes[target == 1]] = True
    keep = has_relevant[indexes]
    chunks = _chunks((preds[keep], target[keep], indexes[keep]))
    got = _ours(Recall(CUTOFFS, ignore_index=IGNORE, empty_target_action="error"), chunks)
    assert got == pytest.approx(_at_cutoffs(tm.RetrievalRecall, chunks, CUTOFFS, empty_target_action="error"))
    with pytest.raises(ValueError, match="no positive target"):  # theirs raises in compute
        _theirs(tm.RetrievalRecall, _chunks(_stream(5)), empty_target_action="error")


# ---------------------------------------------------------------------------------- aggregation


def _squares(values, dim=None):  # torchmetrics calls it with dim=None
    return (values**2).mean() if dim is None else (values**2).mean(dim=dim)


AGGREGATIONS = ["median", "min", "max", _squares]


@pytest.mark.parametrize("aggregation", AGGREGATIONS, ids=["median", "min", "max", "callable"])
@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize(("ours", "kwargs", "theirs", "kind"), CUTOFF_PAIRS, ids=_pair_ids(CUTOFF_PAIRS))
def test_aggregation_equals_torchmetrics(ours, kwargs, theirs, kind, action, aggregation):
    chunks = _chunks(_stream(6, graded=ours is NDCG, **kind))
    metric = ours(CUTOFFS, ignore_index=IGNORE, empty_target_action=action, aggregation=aggregation, **kwargs)
    got = _ours(metric, chunks)
    expected = _at_cutoffs(theirs, chunks, CUTOFFS, empty_target_action=action, aggregation=aggregation)
    assert got == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("aggregation", AGGREGATIONS, ids=["median", "min", "max", "callable"])
def test_aggregation_of_auc(aggregation):
    chunks = _chunks(_stream(7, tied=True, with_negative=True))
    got = _ours(AUC(ignore_index=IGNORE, aggregation=aggregation, empty_target_action="neg"), chunks)
    expected = _theirs(tm.RetrievalAUROC, chunks, aggregation=aggregation)
    assert got == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("aggregation", AGGREGATIONS, ids=["median", "min", "max", "callable"])
def test_aggregation_of_a_group_member(aggregation):
    tie_free = _chunks(_stream(8))
    group = RankingMetrics(mrr=MRR([3, 10], aggregation=aggregation), hit=HitRate(3), ignore_index=IGNORE)
    values = _ours(group, tie_free)
    assert [values["mrr@3"], values["mrr@10"]] == pytest.approx(
        _at_cutoffs(tm.RetrievalMRR, tie_free, [3, 10], empty_target_action="skip", aggregation=aggregation),
        abs=1e-6,
    )
    assert values["hit@3"] == pytest.approx(
        _theirs(tm.RetrievalHitRate, tie_free, top_k=3, empty_target_action="skip")
    )


def test_the_mean_keeps_no_values_and_the_others_keep_them_in_the_state():
    chunks = _chunks(_stream(9))
    mean = MRR([3], ignore_index=IGNORE)
    median = MRR([3], ignore_index=IGNORE, aggregation="median")
    for chunk in chunks:
        mean.update(chunk)
        median.update(chunk)
    assert mean._query_values == [] and "_query_values" not in mean.state_dict()
    assert sum(v.shape[0] for v in median._query_values) > 50
    restored = MRR([3], ignore_index=IGNORE, aggregation="median")
    restored.load_state_dict(median.state_dict())
    assert restored.compute() == median.compute()
    # the aggregation is not part of the settings: the same state means the same queries
    as_max = MRR([3], ignore_index=IGNORE, aggregation="max")
    as_max.load_state_dict(median.state_dict())
    assert as_max.compute() == [1.0]
    with pytest.raises(ValueError, match="per-query values"):
        MRR([3], ignore_index=IGNORE, aggregation="median").load_state_dict(mean.state_dict())


def test_an_aggregation_of_no_query_is_not_computable():
    metric = MRR([3], aggregation="median")
    metric.update((torch.rand(2, 3), torch.zeros(2, 3)))
    with pytest.raises(NotComputableError, match="MRR saw 2 queries"):
        metric.compute()


# ------------------------------------------------------------------------------------- Precision


@pytest.mark.parametrize("adaptive_k", [False, True])
@pytest.mark.parametrize("top_k", [None, 1, 3, 10, 25])
@pytest.mark.parametrize("action", ACTIONS)
def test_precision_adaptive_k_and_whole_queries_equal_torchmetrics(top_k, adaptive_k, action):
    chunks = _chunks(_stream(10))
    metric = Precision(top_k, ignore_index=IGNORE, adaptive_k=adaptive_k, empty_target_action=action)
    got = _ours(metric, chunks)
    expected = _theirs(
        tm.RetrievalPrecision, chunks, top_k=top_k, adaptive_k=adaptive_k, empty_target_action=action
    )
    assert (got if top_k is None else got[0]) == pytest.approx(expected, abs=1e-6)


def test_precision_of_whole_queries_in_every_form():
    y_pred = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.3, 0.2, 0.1, 0.0]])
    y = torch.tensor([[0, 1, 1, 0], [1, 0, 0, 0]])
    metric = Precision(None, per_query=True)
    metric.update((y_pred, y))
    assert metric.per_query_values().values["precision"].tolist() == [0.5, 0.25]
    retrieved = Precision(None)  # a Retrieved list's items are what it retrieved: 1 of 3
    retrieved.update(Retrieved(torch.tensor([[4, 2, 7, -1]]), torch.tensor([[2, 9]])))
    assert retrieved.compute() == pytest.approx(1 / 3)
    group = RankingMetrics(p=Precision(None), p2=Precision(2, adaptive_k=True), rprec=RPrecision())
    group.update((y_pred, y))
    assert group.compute() == {"p": 0.375, "p2@2": 0.5, "rprec": 0.75}


# ---------------------------------------------------------------------------------- N-D flat form


@pytest.mark.parametrize("shape", [(-1, 6), (-1, 2, 3)])
def test_flat_inputs_of_any_shape_equal_torchmetrics(shape):
    preds, target, indexes = _stream(11)
    n = preds.shape[0] // 6 * 6
    stream = tuple(t[:n].reshape(shape) for t in (preds, target, indexes))
    got = _ours(
        NDCG(CUTOFFS, gain_function="linear_rank", ignore_index=IGNORE, ignore_zero_hits=False), [stream]
    )
    expected = _at_cutoffs(tm.RetrievalNormalizedDCG, [stream], CUTOFFS)
    assert got == pytest.approx(expected, abs=1e-6)
    flat = _ours(
        NDCG(CUTOFFS, gain_function="linear_rank", ignore_index=IGNORE, ignore_zero_hits=False),
        [tuple(t.reshape(-1) for t in stream)],
    )
    assert got == flat


def test_a_batch_of_one_query_per_row_in_the_flat_form():
    y_pred, y = torch.rand(5, 7), (torch.rand(5, 7) > 0.6).long()
    indexes = torch.arange(5)[:, None].expand(5, 7)
    flat, dense = MRR([1, 5], ignore_zero_hits=False), MRR([1, 5], ignore_zero_hits=False)
    flat.update((y_pred, y, indexes))
    dense.update((y_pred, y))
    assert flat.compute() == dense.compute()
    assert flat.compute() == pytest.approx(
        _at_cutoffs(tm.RetrievalMRR, [(y_pred, y, indexes)], [1, 5]), abs=1e-6
    )


# ------------------------------------------------------------------------------ AUC, flat form


@pytest.mark.parametrize("max_fpr", [None, 0.05, 0.3, 1.0])
@pytest.mark.parametrize("action", ACTIONS)
def test_auc_on_flat_tied_queries_equals_torchmetrics(max_fpr, action):
    chunks = _chunks(_stream(12, tied=True, with_negative=True))
    got = _ours(AUC(ignore_index=IGNORE, max_fpr=max_fpr, empty_target_action=action), chunks)
    expected = _theirs(tm.RetrievalAUROC, chunks, max_fpr=max_fpr, empty_target_action=action)
    assert got == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("max_fpr", [None, 0.2])
@pytest.mark.parametrize("action", ACTIONS)
def test_auc_of_the_top_k_equals_torchmetrics(max_fpr, action):
    chunks = _chunks(_stream(13, with_negative=True))
    got = _ours(AUC(top_k=CUTOFFS, ignore_index=IGNORE, max_fpr=max_fpr, empty_target_action=action), chunks)
    expected = _at_cutoffs(tm.RetrievalAUROC, chunks, CUTOFFS, max_fpr=max_fpr, empty_target_action=action)
    assert got == pytest.approx(expected, abs=1e-6)


def test_auc_gives_the_same_value_in_the_flat_and_the_dense_form():
    rng = np.random.default_rng(14)
    y_pred = torch.from_numpy(rng.integers(0, 4, size=(6, 9)) / 4.0)
    y = torch.from_numpy(rng.integers(0, 2, size=(6, 9)))
    indexes = torch.arange(6)[:, None].expand(6, 9)
    for kwargs in ({}, {"max_fpr": 0.4}, {"top_k": [2, 5]}):
        dense, flat = AUC(**kwargs), AUC(**kwargs)
        dense.update((y_pred, y))
        flat.update((y_pred.reshape(-1), y.reshape(-1), indexes.reshape(-1)))
        assert flat.compute() == dense.compute()
    group = RankingMetrics(auc=AUC(), mrr=MRR(3))  # ragged queries, held across updates
    alone = AUC()
    chunks = _chunks(_stream(15, tied=True, with_negative=True))
    for chunk in chunks:
        group.update(chunk)
        alone.update(chunk)
    assert group.compute()["auc"] == alone.compute()


# ------------------------------------------------------------------------------------ bad input


def _refused(build, error, pattern):
    with pytest.raises(error, match=pattern):
        build()


@pytest.mark.parametrize(
    ("build", "error", "pattern"),
    [
        (lambda: MRR(3, empty_target_action="ignore"), ValueError, "empty_target_action"),
        (lambda: MRR(3, empty_target_action=False), TypeError, "empty_target_action must be None or one of"),
        (
            lambda: MRR(3, True, empty_target_action="pos"),
            ValueError,
            "ignore_zero_hits=True and empty_target_action",
        ),
        (lambda: NDCG(3, ignore_zero_hits=False, empty_target_action="skip"), ValueError, "disagree"),
        (lambda: RPrecision(ignore_zero_hits=False, empty_target_action="error"), ValueError, "disagree"),
        (
            lambda: RankingMetrics(mrr=MRR(3), ignore_zero_hits=True, empty_target_action="neg"),
            ValueError,
            "disagree",
        ),
        (lambda: RankingMetrics(mrr=MRR(3), empty_target_action="all"), ValueError, "empty_target_action"),
        (
            lambda: RankingMetrics(mrr=MRR(3, ignore_zero_hits=False), empty_target_action="pos"),
            ValueError,
            "'mrr' sets empty_target_action='neg' and the group empty_target_action='pos'",
        ),
        (
            lambda: RankingMetrics(a=MRR(3), b=MRR(3, empty_target_action="pos"), per_query=True),
            ValueError,
            "share ignore_zero_hits",
        ),
    ],
)
def test_bad_empty_target_action_is_refused_naming_it(build, error, pattern):
    _refused(build, error, pattern)


def test_bad_aggregation_is_refused_naming_it():
    _refused(lambda: MRR(3, aggregation="average"), ValueError, "aggregation")
    _refused(lambda: MRR(3, aggregation=2), TypeError, "aggregation")
    _refused(lambda: MRR(3, aggregation="median", confidence=0.9), ValueError, "aggregation='median'")
    metric = MRR(3, aggregation=lambda values: values)  # not one number
    metric.update((torch.rand(2, 3), torch.ones(2, 3)))
    with pytest.raises(TypeError, match="aggregation must return one number"):
        metric.compute()


def test_bad_precision_arguments_are_refused_naming_them():
    _refused(lambda: Precision(3, adaptive_k=1), TypeError, "adaptive_k must be a bool")
    _refused(lambda: Precision(None, adaptive_k="yes"), TypeError, "adaptive_k must be a bool")
    _refused(lambda: Precision([]), ValueError, "top_k")


def test_flat_inputs_of_other_shapes_are_refused():
    _refused(
        lambda: MRR(3).update((torch.rand(2, 3), torch.ones(2, 3), torch.zeros(3, 2, dtype=torch.int64))),
        ValueError,
        "one shape",
    )
    _refused(
        lambda: MRR(3).update((torch.tensor(0.5), torch.tensor(1), torch.tensor(0))),
        ValueError,
        "at least one dimension",
    )


@pytest.mark.parametrize(
    ("build", "error", "pattern"),
    [
        (lambda: AUC(ignore_zero_hits=False, empty_target_action="error"), ValueError, "disagree"),
        (lambda: AUC(max_fpr=0), ValueError, "max_fpr"),
        (lambda: AUC(max_fpr=1.5), ValueError, "max_fpr"),
        (lambda: AUC(max_fpr=math.nan), ValueError, "max_fpr"),
        (lambda: AUC(max_fpr="0.1"), TypeError, "max_fpr must be None or a float"),
        (lambda: AUC(max_fpr=True), TypeError, "max_fpr must be None or a float"),
        (lambda: AUC(top_k=0), ValueError, "top_k"),
        (lambda: AUC(top_k=2.5), TypeError, "top_k must be a positive int"),
        (
            lambda: AUC().update(
                Retrieved(torch.tensor([[1, 2]]), torch.tensor([[2]]), scores=torch.rand(1, 2))
            ),
            ValueError,
            "flat",
        ),
    ],
)
def test_bad_auc_arguments_are_refused_naming_them(build, error, pattern):
    _refused(build, error, pattern)


def test_group_settings_of_empty_target_action():
    group = RankingMetrics(mrr=MRR(3), ndcg=NDCG(3, empty_target_action="pos"), empty_target_action="pos")
    assert [m.empty_target_action for m in group.metrics.values()] == ["pos", "pos"]
    group = RankingMetrics(mrr=MRR(3), ndcg=NDCG(3, ignore_zero_hits=False), ignore_zero_hits=False)
    assert [m.empty_target_action for m in group.metrics.values()] == ["neg", "neg"]
    # neg, pos and error keep every query: they may share a per_query group
    group = RankingMetrics(
        a=MRR(3, empty_target_action="pos"), b=MRR(3, ignore_zero_hits=False), per_query=True
    )
    group.update((torch.tensor([[0.2, 0.1], [0.3, 0.4]]), torch.tensor([[0, 0], [0, 1]])))
    assert group.per_query_values().values == {
        "a@3": pytest.approx(torch.tensor([1.0, 1.0], dtype=torch.float64)),
        "b@3": pytest.approx(torch.tensor([0.0, 1.0], dtype=torch.float64)),
    }


# ------------------------------------------------------------------------------------- settings


def test_empty_target_action_is_saved_only_when_it_is_pos_or_error():
    base = MRR(3).settings()
    assert "empty_target_action" not in base and "aggregation" not in base
    assert MRR(3, empty_target_action="skip").settings() == base
    assert MRR(3, empty_target_action="neg").settings() == MRR(3, ignore_zero_hits=False).settings()
    assert MRR(3, empty_target_action="pos").settings()["empty_target_action"] == "pos"
    assert MRR(3, empty_target_action="error").settings()["empty_target_action"] == "error"
    pos = MRR(3, empty_target_action="pos")
    pos.update((torch.rand(2, 3), torch.ones(2, 3)))
    with pytest.raises(ValueError, match="empty_target_action"):
        MRR(3, ignore_zero_hits=False).load_state_dict(pos.state_dict())


def test_precision_settings_are_saved_only_when_set():
    assert (
        "adaptive_k" not in Precision(3).settings() and Precision(3, adaptive_k=True).settings()["adaptive_k"]
    )
    assert Precision(None).settings()["top_k"] is None


def test_auc_settings_are_saved_only_when_set():
    assert "max_fpr" not in AUC().settings() and AUC(max_fpr=0.5).settings()["max_fpr"] == 0.5
    assert AUC().settings()["top_k"] is None and AUC(top_k=[5, 2]).settings()["top_k"] == [2, 5]
    with pytest.raises(ValueError, match="max_fpr"):
        AUC().load_state_dict(AUC(max_fpr=0.5).state_dict())


# ------------------------------------------------------------------------- deliberate differences


def test_a_query_with_only_relevant_items_is_an_empty_query_of_auc_here_and_zero_there():
    preds = torch.tensor([0.9, 0.5, 0.4, 0.7, 0.2])
    target = torch.tensor([1, 0, 1, 1, 1])
    indexes = torch.tensor([0, 0, 0, 1, 1])  # query 1 has no non-relevant item
    expected = {"skip": 0.5, "neg": 0.25, "pos": 0.75}
    for action, value in expected.items():
        metric = AUC(empty_target_action=action)
        metric.update((preds, target, indexes))
        assert metric.compute() == value
        theirs = tm.RetrievalAUROC(empty_target_action=action)
        theirs.update(preds, target, indexes=indexes)
        assert theirs.compute().item() == pytest.approx(0.25)  # 0 for query 1 whatever the action
    refusing = AUC(empty_target_action="error")
    refusing.update((preds, target, indexes))  # query 1 is held until it is complete
    with pytest.raises(ValueError, match=r"query 1 \(its indexes value\) lacks a judged item below"):
        refusing.compute()


def test_a_run_without_any_counted_query_is_not_computable_here_and_zero_there():
    preds, target, indexes = torch.tensor([0.3, 0.2]), torch.tensor([0, 0]), torch.tensor([1, 1])
    metric = MRR(3, empty_target_action="skip")
    metric.update((preds, target, indexes))
    with pytest.raises(NotComputableError):
        metric.compute()
    theirs = tm.RetrievalMRR(empty_target_action="skip")
    theirs.update(preds, target, indexes=indexes)
    assert theirs.compute().item() == 0.0


# -------------------------------------------------------------------- aggregation, 2 processes

WORLD_SIZE = 2


def _aggregated(rank_chunks):
    results = {}
    for name, aggregation in (("median", "median"), ("min", "min"), ("max", "max"), ("squares", _squares)):
        metric = RankingMetrics(
            mrr=MRR([1, 10], aggregation=aggregation, empty_target_action="pos"),
            ndcg=NDCG(5, gain_function="linear_rank", aggregation=aggregation, empty_target_action="pos"),
            ignore_index=IGNORE,
        )
        for chunk in rank_chunks:
            metric.update(chunk)
        results[name] = metric.compute()
    return results


def _rank_chunks(rank):
    """Rank r's updates: queries of its own (a query never straddles two processes)."""
    preds, target, indexes = _stream(16, with_negative=True)
    mine = indexes % WORLD_SIZE == rank
    return _chunks((preds[mine], target[mine], indexes[mine]), parts=3)


def _worker(local_rank, out_dir):
    import ignite.distributed as idist

    torch.save(_aggregated(_rank_chunks(idist.get_rank())), f"{out_dir}/rank{idist.get_rank()}.pt")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_aggregations_over_two_processes_equal_one_over_all_queries(tmp_path):
    import ignite.distributed as idist

    with idist.Parallel(
        backend="gloo", nproc_per_node=WORLD_SIZE, master_addr="127.0.0.1", master_port=_free_port()
    ) as parallel:
        parallel.run(_worker, str(tmp_path))
    single = _aggregated([chunk for rank in range(WORLD_SIZE) for chunk in _rank_chunks(rank)])
    for rank in range(WORLD_SIZE):
        assert torch.load(tmp_path / f"rank{rank}.pt", weights_only=False) == single
