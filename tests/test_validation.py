"""Bad input is refused with the right exception, a message naming the argument, and no state change;
edge cases that are valid give the contract's values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from ignite.exceptions import NotComputableError
from reference import METRIC_NAMES, build_metric, functional_values, per_query, tied_batch

from ignite_ranking import MAP, MRR, NDCG, HitRate, Precision, RankingMetrics, Recall, RPrecision
from ignite_ranking import functional as F

KS = [1, 3, 10]
GOOD = (torch.tensor([[0.5, 0.2, 0.9]]), torch.tensor([[1, 0, 1]]))


def _all_metrics():
    metrics = {name: build_metric(name, KS) for name in METRIC_NAMES}
    metrics["group"] = RankingMetrics({name: build_metric(name, KS) for name in METRIC_NAMES})
    return metrics


def _state(metric):
    members = metric.metrics.values() if isinstance(metric, RankingMetrics) else [metric]
    return [(m._sum_per_k.clone(), m._num_examples.clone()) for m in members]


def _assert_same_state(before, after):
    for (s0, n0), (s1, n1) in zip(before, after, strict=True):
        assert torch.equal(s0, s1) and s0.dtype == s1.dtype == torch.int64
        assert torch.equal(n0, n1) and n0.dtype == n1.dtype == torch.int64


# --------------------------------------------------------------------------- bad update() input

y_pred_ok = torch.rand(2, 4)
y_ok = torch.randint(0, 3, (2, 4))
nan_pred = y_pred_ok.clone()
nan_pred[1, 3] = math.nan
nan_label = y_ok.to(torch.float32)
nan_label[1, 0] = math.nan

BAD_OUTPUTS = [
    ("triple", (y_pred_ok, y_ok, y_ok[:, :3]), ValueError, "one shape"),
    ("quadruple", (y_pred_ok, y_ok, y_ok, y_ok), ValueError, "output"),
    ("single", (y_pred_ok,), ValueError, "output"),
    ("tensor", y_pred_ok, ValueError, "output"),
    ("string", "ab", ValueError, "output"),
    ("pred-not-tensor", (y_pred_ok.tolist(), y_ok), TypeError, "y_pred"),
    ("label-not-tensor", (y_pred_ok, y_ok.tolist()), TypeError, "y"),
    ("shapes-differ", (y_pred_ok, y_ok[:, :3]), ValueError, "shape"),
    ("rows-differ", (y_pred_ok, y_ok[:1]), ValueError, "shape"),
    ("1-d", (y_pred_ok[0], y_ok[0]), ValueError, "y_pred"),
    ("3-d", (y_pred_ok[None], y_ok[None]), ValueError, "y_pred"),
    ("nan-score", (nan_pred, y_ok), ValueError, "y_pred"),
    ("nan-label", (y_pred_ok, nan_label), ValueError, "y"),
    ("int-scores", (y_ok, y_ok), TypeError, "y_pred"),
    ("bool-scores", (y_ok > 0, y_ok), TypeError, "y_pred"),
    ("complex-labels", (y_pred_ok, y_ok.to(torch.complex64)), TypeError, "y"),
    ("complex-scores", (y_pred_ok.to(torch.complex64), y_ok), TypeError, "y_pred"),
]


@pytest.mark.parametrize(
    ("output", "error", "pattern"),
    [case[1:] for case in BAD_OUTPUTS],
    ids=[case[0] for case in BAD_OUTPUTS],
)
@pytest.mark.parametrize("name", [*METRIC_NAMES, "group"])
def test_refused_update_leaves_state_unchanged(name, output, error, pattern):
    metric = _all_metrics()[name]
    metric.update(GOOD)
    metric.update((torch.rand(3, 5), torch.randint(0, 2, (3, 5))))
    before = _state(metric)
    with pytest.raises(error, match=pattern):
        metric.update(output)
    _assert_same_state(before, _state(metric))


@pytest.mark.parametrize(("output", "error", "pattern"), [case[1:] for case in BAD_OUTPUTS[5:]])
@pytest.mark.parametrize("name", METRIC_NAMES)
def test_functional_refuses_the_same_input(name, output, error, pattern):
    with pytest.raises(error, match=pattern):
        functional_values(name, *output, top_k=KS)


def test_nan_anywhere_in_a_large_batch_is_found():
    y_pred = torch.rand(64, 100)
    y_pred[63, 99] = math.nan
    with pytest.raises(ValueError, match="NaN"):
        F.ndcg(y_pred, torch.ones(64, 100), [5])


NAN_KERNEL_PATHS = {
    # the top-k path: MRR reads the labels' row maxima, Recall counts, NDCG's sparse ideal labels
    # (few relevant) or its top-k of the labels (many relevant); deep cutoffs sort whole rows
    "mrr": lambda: MRR([1, 5]),
    "recall": lambda: Recall([1, 5]),
    "ndcg": lambda: NDCG([1, 5]),
    "group": lambda: RankingMetrics(mrr=MRR([1, 5]), ndcg=NDCG([1, 5]), map=MAP([1, 5])),
    "deep": lambda: NDCG([1, 400]),
    "average": lambda: MRR([1, 5], ties="average"),
}


@pytest.mark.parametrize("dense_labels", [False, True])
@pytest.mark.parametrize("where", ["scores", "labels", "both"])
@pytest.mark.parametrize("name", sorted(NAN_KERNEL_PATHS))
def test_nan_found_on_every_kernel_path_and_state_untouched(name, where, dense_labels):
    """The kernel reads NaN off the passes it makes (topk's best score, the labels' maxima):
    a NaN anywhere is refused with the full check's message (scores first), nothing added."""
    gen = torch.Generator().manual_seed(3)
    y_pred = (torch.randn(6, 1000, generator=gen) * 8).round() / 8  # ties across the cutoff
    share = 0.3 if dense_labels else 0.002
    y = (torch.rand(6, 1000, generator=gen) < share) * torch.randint(1, 4, (6, 1000), generator=gen)
    y = y.to(torch.float32)
    if where in ("scores", "both"):
        y_pred[4, 777] = math.nan
    if where in ("labels", "both"):
        y[2, 999] = math.nan
    metric = NAN_KERNEL_PATHS[name]()
    metric.update((torch.randn(6, 1000, generator=gen), (torch.rand(6, 1000, generator=gen) < 0.01).float()))
    before = str(metric.state_dict())
    message = "y must not contain NaN labels" if where == "labels" else "y_pred must not contain NaN"
    with pytest.raises(ValueError, match=message):
        metric.update((y_pred, y))
    assert str(metric.state_dict()) == before


# --------------------------------------------------------------------------- bad constructor / call arguments

BAD_TOP_K = [
    (True, TypeError),
    (0, ValueError),
    (-3, ValueError),
    ([], ValueError),
    ([1, 0], ValueError),
    ([2, -1], ValueError),
    (2.0, TypeError),
    ([1, 2.5], TypeError),
    ("5", TypeError),
    ([1, True], TypeError),
]


@pytest.mark.parametrize(("top_k", "error"), BAD_TOP_K, ids=[repr(t) for t, _ in BAD_TOP_K])
@pytest.mark.parametrize("cls", [MRR, HitRate, NDCG, Precision, Recall, MAP])
def test_bad_top_k_is_refused_by_classes(cls, top_k, error):
    with pytest.raises(error, match="top_k"):
        cls(top_k)


@pytest.mark.parametrize("cls", [MRR, HitRate, NDCG, Recall, MAP])  # Precision(None): whole queries
def test_top_k_none_is_refused_by_classes(cls):
    # No "every item" None (torchmetrics' meaning): the message says what to pass instead.
    with pytest.raises(TypeError, match=r"got None; there is no top_k=None .*at least the length"):
        cls(None)
    with pytest.raises(TypeError, match="there is no top_k=None"):
        functional_values("mrr", *GOOD, top_k=None)


@pytest.mark.parametrize(("top_k", "error"), BAD_TOP_K, ids=[repr(t) for t, _ in BAD_TOP_K])
@pytest.mark.parametrize("name", [m for m in METRIC_NAMES if m != "r_precision"])
def test_bad_top_k_is_refused_by_functionals(name, top_k, error):
    with pytest.raises(error, match="top_k"):
        functional_values(name, *GOOD, top_k=top_k)


def test_duplicate_cutoffs_are_dropped_and_sorted():
    metric = MRR([3, 1, 3, 10, 1])
    assert metric.top_k == [1, 3, 10]
    metric.update(GOOD)
    assert len(metric.compute()) == 3
    assert HitRate().top_k == [1]
    assert Precision((4, 2)).top_k == [2, 4]


BAD_THRESHOLDS = [(math.nan, ValueError), (True, TypeError), ("1", TypeError), (None, TypeError)]


@pytest.mark.parametrize(("threshold", "error"), BAD_THRESHOLDS, ids=repr)
@pytest.mark.parametrize("name", METRIC_NAMES)
def test_bad_relevance_threshold_is_refused(name, threshold, error):
    with pytest.raises(error, match="relevance_threshold"):
        build_metric(name, KS, relevance_threshold=threshold)
    with pytest.raises(error, match="relevance_threshold"):
        functional_values(name, *GOOD, top_k=KS, relevance_threshold=threshold)


@pytest.mark.parametrize("ties", ["middle", "First", None, 0])
@pytest.mark.parametrize("name", METRIC_NAMES)
def test_bad_ties_is_refused(name, ties):
    with pytest.raises(ValueError, match="ties"):
        build_metric(name, KS, ties=ties)
    with pytest.raises(ValueError, match="ties"):
        functional_values(name, *GOOD, top_k=KS, ties=ties)


@pytest.mark.parametrize("gain", ["exp", "log", None, "LINEAR_RANK"])
def test_bad_gain_function_is_refused(gain):
    with pytest.raises(ValueError, match="gain_function"):
        NDCG(KS, gain_function=gain)
    with pytest.raises(ValueError, match="gain_function"):
        F.ndcg(*GOOD, KS, gain_function=gain)


@pytest.mark.parametrize("value", [1, None, "yes"])
def test_ignore_zero_hits_must_be_a_bool(value):
    with pytest.raises(TypeError, match="ignore_zero_hits"):
        MRR(KS, ignore_zero_hits=value)


def test_group_refuses_mixed_settings_and_bad_members():
    with pytest.raises(ValueError, match="relevance_threshold"):
        RankingMetrics(a=MRR([1]), b=NDCG([1], relevance_threshold=2.0))
    with pytest.raises(ValueError, match="ties"):
        RankingMetrics(a=MRR([1]), b=Recall([1], ties="last"))
    with pytest.raises(ValueError):
        RankingMetrics()
    with pytest.raises(TypeError):
        RankingMetrics(a=MRR([1]), b="not a metric")
    m = MRR([1])
    with pytest.raises(ValueError):
        RankingMetrics(a=m, b=m)
    with pytest.raises(ValueError, match="twice"):
        RankingMetrics({"a": MRR([1])}, a=MRR([2]))


# --------------------------------------------------------------------------- valid edge cases


@pytest.mark.parametrize("name", [*METRIC_NAMES, "group"])
def test_empty_batch_is_a_no_op(name):
    metric = _all_metrics()[name]
    metric.update(GOOD)
    before = _state(metric)
    metric.update((torch.empty(0, 5), torch.empty(0, 5)))
    metric.update((torch.empty(0, 5, dtype=torch.float16), torch.empty(0, 5, dtype=torch.bool)))
    _assert_same_state(before, _state(metric))


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_empty_batch_in_functionals(name):
    out = functional_values(name, torch.empty(0, 4), torch.empty(0, 4), top_k=KS)
    assert out.shape[0] == 0 and out.dtype == torch.float64


@pytest.mark.parametrize("name", [*METRIC_NAMES, "group"])
def test_rows_without_items_have_no_relevant_item(name):
    metric = _all_metrics()[name]
    metric.update(GOOD)
    before = _state(metric)
    metric.update((torch.empty(3, 0), torch.empty(3, 0)))  # ignore_zero_hits=True: left out
    _assert_same_state(before, _state(metric))
    counting = (
        RankingMetrics({n: build_metric(n, KS, ignore_zero_hits=False) for n in METRIC_NAMES})
        if name == "group"
        else build_metric(name, KS, ignore_zero_hits=False)
    )
    counting.update((torch.empty(3, 0), torch.empty(3, 0)))
    result = counting.compute()
    values = list(result.values()) if isinstance(result, dict) else result
    assert values == ([0.0] * len(values) if isinstance(values, list) else 0.0)


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_zero_item_rows_in_functionals(name):
    out = functional_values(name, torch.empty(2, 0), torch.empty(2, 0), top_k=KS)
    assert (out == 0).all() and out.shape[0] == 2


def test_k_beyond_the_catalog():
    y_pred = torch.tensor([[0.1, 0.3, 0.2]])
    y = torch.tensor([[1, 1, 0]])
    ks = [2, 3, 10, 100]
    assert F.precision(y_pred, y, ks).tolist() == [[0.5, 2 / 3, 0.2, 0.02]]
    assert F.recall(y_pred, y, ks).tolist() == [[0.5, 1.0, 1.0, 1.0]]
    assert F.hit_rate(y_pred, y, ks).tolist() == [[1.0] * 4]
    assert F.reciprocal_rank(y_pred, y, ks).tolist() == [[1.0] * 4]
    assert F.average_precision(y_pred, y, ks)[0, -1].item() == pytest.approx((1 + 2 / 3) / 2, rel=1e-15)
    assert F.ndcg(y_pred, y, ks)[0, 2:].tolist() == F.ndcg(y_pred, y, [3])[0].tolist() * 2
    assert HitRate(1000).top_k == [1000]


@pytest.mark.parametrize("ties", ["first", "last"])
def test_infinite_scores_rank_first_and_last(ties):
    y_pred = torch.tensor([[-math.inf, 1.0, math.inf, math.inf, -math.inf]])
    y = torch.tensor([[1, 0, 0, 1, 0]])
    rr = F.reciprocal_rank(y_pred, y, [1, 5], ties=ties).tolist()
    # +inf items (2, 3) come first; "first" puts 2 before 3, "last" 3 before 2.
    assert rr == ([[0.0, 0.5]] if ties == "first" else [[1.0, 1.0]])
    # -inf items (0, 4) come last; "first" puts 0 before 4, "last" 4 before 0.
    assert F.r_precision(y_pred, y, ties=ties).tolist() == [0.5]
    ap = F.average_precision(y_pred, y, [5], ties=ties).item()
    assert ap == pytest.approx((1 / 2 + 2 / 4) / 2 if ties == "first" else (1 + 2 / 5) / 2, rel=1e-15)
    assert F.hit_rate(torch.full((1, 3), -math.inf), torch.tensor([[0, 0, 1]]), [1, 3]).tolist() == [[0, 1]]


@pytest.mark.parametrize("n", [1, 4, 7])
def test_all_relevant_rows(n):
    y_pred = torch.rand(3, n, dtype=torch.float64)
    y = torch.ones(3, n)
    ks = [1, 2, 5, 9]
    for k, column in zip(ks, F.precision(y_pred, y, ks).T, strict=True):
        assert (column == min(k, n) / k).all()
    for k, column in zip(ks, F.recall(y_pred, y, ks).T, strict=True):
        assert (column == min(k, n) / n).all()
    for k, column in zip(ks, F.average_precision(y_pred, y, ks).T, strict=True):
        assert torch.allclose(column, torch.full((3,), min(k, n) / n, dtype=torch.float64), rtol=1e-14)
    assert (F.ndcg(y_pred, y, ks) == 1).all()
    assert (F.r_precision(y_pred, y) == 1).all()
    assert (F.reciprocal_rank(y_pred, y, ks) == 1).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_large_graded_labels_do_not_overflow_exp_gain(dtype):
    y_pred = torch.tensor([[0.0, 1.0, 0.5]])
    y = torch.tensor([[20.0, 0.0, 19.0]], dtype=dtype)
    got = F.ndcg(y_pred, y, [1, 2, 3]).tolist()[0]
    g20, g19 = 2.0**20 - 1, 2.0**19 - 1
    idcg = [g20, g20 + g19 / math.log2(3), g20 + g19 / math.log2(3)]
    dcg = [0.0, g19 / math.log2(3), g19 / math.log2(3) + g20 / 2]
    assert got == pytest.approx([d / i for d, i in zip(dcg, idcg, strict=True)], rel=1e-12)
    metric = NDCG([3])
    metric.update((y_pred.to(dtype), y))
    assert metric.compute()[0] == pytest.approx(dcg[2] / idcg[2], rel=1e-12)


def test_scores_that_require_grad_are_accepted():
    y_pred = torch.rand(2, 5, requires_grad=True)
    y = torch.randint(0, 2, (2, 5))
    F.ndcg(y_pred, y, [3])
    metric = MRR([3], ignore_zero_hits=False)
    metric.update((y_pred, y))
    assert len(metric.compute()) == 1


def test_no_query_counted_is_not_computable():
    for name in METRIC_NAMES:
        metric = build_metric(name, KS)
        with pytest.raises(NotComputableError):
            metric.compute()
        metric.update((torch.rand(2, 3), torch.zeros(2, 3)))  # no relevant item anywhere
        with pytest.raises(NotComputableError):
            metric.compute()


# --------------------------------------------------------------------------- thresholds on integer labels


@pytest.mark.parametrize(
    ("dtype", "threshold"),
    [
        (torch.uint8, 0.5),
        (torch.uint8, 255),
        (torch.uint8, 256),
        (torch.int32, -7.5),
        (torch.int8, -0.5),
        (torch.bool, 0.0),
        (torch.bool, 1.5),
        (torch.int64, math.inf),
        (torch.int64, -math.inf),
        (torch.float16, 0.1),
        (torch.bfloat16, 0.1),
        (torch.float16, 65510.0),
        (torch.float16, 1e10),
        (torch.uint8, -3),
        (torch.bool, -1.0),
        (torch.int8, 200),
        (torch.int64, 1e30),
    ],
    ids=str,
)
def test_relevance_is_float64_label_at_least_threshold(dtype, threshold):
    values = {
        torch.bool: [0, 1, 1, 0],
        torch.uint8: [0, 1, 255, 3],
        torch.int8: [0, -1, 127, 3],
        torch.int32: [-8, -7, 0, 5],
        torch.int64: [0, 1, 2, 3],
        torch.float16: [0.1, 65504.0, math.inf, 0.0],
        torch.bfloat16: [0.1, 1.0, 0.0, 0.0],
    }[dtype]
    y = torch.tensor([values]).to(dtype)
    y_pred = torch.tensor([[0.4, 0.3, 0.2, 0.1]])
    expected = per_query(y_pred, y, "recall", [1, 2, 3, 4], threshold)
    num_rel = sum(float(v) >= threshold for v in y.to(torch.float64)[0].tolist())
    assert F.recall(y_pred, y, [1, 2, 3, 4], threshold).tolist() == expected
    assert F.hit_rate(y_pred, y, [4], threshold).item() == float(num_rel > 0)
    assert F.precision(y_pred, y, [4], threshold).item() == num_rel / 4


def test_random_thresholds_on_every_label_dtype():
    rng = np.random.default_rng(99)
    for dtype in (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        for threshold in (0.0, 0.25, 1, 1.5, 2, 3.999, 4, 5):
            y_pred, y = tied_batch(rng, 6, 7)
            y = (y >= 1) if dtype == torch.bool else y.to(dtype)
            got = F.recall(y_pred, y, [1, 3, 7], threshold).tolist()
            assert got == per_query(y_pred, y, "recall", [1, 3, 7], threshold)


def test_rprecision_has_no_top_k():
    metric = RPrecision()
    assert metric.top_k is None
    metric.update(GOOD)
    assert isinstance(metric.compute(), float)
