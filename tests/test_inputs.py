"""Inputs at the edges: unsigned and huge integer labels, NumPy scalars as arguments, tensors
whose values cannot be read, and the exception types Ignite's own metrics raise."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from ignite.metrics import NDCG as IgniteNDCG
from ignite.metrics import HitRate as IgniteHitRate
from reference import DEVICES, METRIC_NAMES, build_metric, functional_values, tied_batch

import ignite_ranking as ir
from ignite_ranking import MRR, NDCG, HitRate, RankingMetrics, catalog, retrieval
from ignite_ranking import functional as F

KS = [1, 3, 10]
GOOD = (torch.tensor([[0.5, 0.2, 0.9]]), torch.tensor([[1, 0, 1]]))

# --------------------------------------------------------------------------- unsigned labels


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
@pytest.mark.parametrize("ties", ["first", "optimistic", "average"])
@pytest.mark.parametrize("threshold", [1.0, 2.5, 0.0, -1.0, 1e30])
def test_unsigned_labels_give_the_values_of_the_same_int64_labels(dtype, ties, threshold, device):
    rng = np.random.default_rng(5)
    y_pred, y = tied_batch(rng, 7, 9)
    y_pred, y = y_pred.to(device), y.to(device=device, dtype=torch.int64)
    for name in METRIC_NAMES:
        got = functional_values(name, y_pred, y.to(dtype), KS, threshold, ties)
        assert torch.equal(got, functional_values(name, y_pred, y, KS, threshold, ties)), name
    group = RankingMetrics({name: build_metric(name, KS, ties=ties) for name in METRIC_NAMES})
    same = RankingMetrics({name: build_metric(name, KS, ties=ties) for name in METRIC_NAMES})
    group.update((y_pred, y.to(dtype)))
    same.update((y_pred, y))
    if threshold <= 1.0:
        assert group.compute() == same.compute()


def test_unsigned_labels_beyond_the_signed_range_of_their_width():
    y_pred = torch.tensor([[0.9, 0.5, 0.1]])
    # (label, the next float64 threshold above it); thresholds are float64 numbers.
    big = {
        torch.uint16: (60000, 60001),
        torch.uint32: (4_000_000_000, 4_000_000_001),
        torch.uint64: (2**62, 2**62 + 1024),
    }
    for dtype, (value, above) in big.items():
        y = torch.tensor([[0, value, 1]]).to(dtype)
        assert F.reciprocal_rank(y_pred, y, [3], relevance_threshold=value).tolist() == [[0.5]]
        assert F.reciprocal_rank(y_pred, y, [3], relevance_threshold=above).tolist() == [[0.0]]


def test_uint64_labels_from_2_to_the_63_are_refused():
    y = torch.tensor([[0, 2**63, 1]], dtype=torch.uint64)
    metric = MRR([3])
    with pytest.raises(ValueError, match="uint64"):
        metric.update((torch.rand(1, 3), y))
    with pytest.raises(ValueError, match="uint64"):
        F.ndcg(torch.rand(1, 3), y, [3])


# --------------------------------------------------------------------------- exact relevance of integers


@pytest.mark.parametrize(
    ("label", "threshold", "relevant"),
    [
        (2**53 + 3, float(2**53 + 4), False),  # float64(2**53 + 3) is 2**53 + 4
        (2**53 + 4, float(2**53 + 4), True),
        (2**53 + 1, float(2**53), True),
        (2**63 - 1, float(2**63), False),  # float64(2**63 - 1) is 2**63
        (-(2**63), -float(2**63), True),
        (-(2**63), -1e30, True),
        (2**63 - 1, 1e30, False),
        (2**63 - 1, math.inf, False),
        (-(2**63), -math.inf, True),
    ],
)
def test_integer_labels_compare_exactly_past_2_to_the_53(label, threshold, relevant):
    y = torch.tensor([[label, 0]], dtype=torch.int64)
    y_pred = torch.tensor([[0.9, 0.1]])
    got = F.hit_rate(y_pred, y, [1], relevance_threshold=threshold).item()
    assert got == float(relevant)
    # The test is on the integer itself, not on its float64 value:
    assert relevant == (label >= threshold if math.isinf(threshold) else label >= int(threshold))


# --------------------------------------------------------------------------- NumPy scalars


def test_numpy_scalars_are_accepted_where_python_ones_are():
    y_pred, y = tied_batch(np.random.default_rng(2), 6, 8)
    plain = NDCG([1, 3], ignore_zero_hits=False, relevance_threshold=2.0)
    numpy = NDCG(
        [np.int64(1), np.int32(3)], ignore_zero_hits=np.bool_(False), relevance_threshold=np.float32(2)
    )
    assert numpy.top_k == [1, 3] and all(type(k) is int for k in numpy.top_k)
    assert numpy.ignore_zero_hits is False and type(numpy.relevance_threshold) is float
    for metric in (plain, numpy):
        metric.update((y_pred, y))
    assert numpy.compute() == plain.compute()
    assert HitRate(np.int64(3)).top_k == [3]
    assert torch.equal(F.recall(y_pred, y, np.uint8(3), np.int16(2)), F.recall(y_pred, y, 3, 2))
    numpy.load_state_dict(plain.state_dict())  # the settings are plain Python values


@pytest.mark.parametrize(
    ("make", "numpy_args", "python_args"),
    [
        (lambda *a: ir.Coverage([2], *a), (np.int64(9),), (9,)),
        (lambda *a: ir.GiniIndex([2], *a), (np.int32(9),), (9,)),
        (lambda *a: ir.ShannonEntropy([2], num_items=a[0]), (np.int64(9),), (9,)),
        (
            lambda *a: ir.ExpectedExposure([2], patience=a[0], num_items=a[1]),
            (np.float32(0.5), np.int64(9)),
            (0.5, 9),
        ),
        (lambda *a: ir.RBP([2], *a), (np.float32(0.5),), (0.5,)),
        (lambda *a: ir.RBPResidual([2], *a), (np.float64(0.5),), (0.5,)),
        (lambda *a: ir.ERR([2], *a), (np.int64(3),), (3,)),
        (lambda *a: ir.NERR([2], *a), (np.int64(3),), (3,)),
        (lambda *a: ir.MRR([2], ignore_index=a[0]), (np.int64(-1),), (-1,)),
    ],
)
def test_numpy_scalars_are_accepted_by_every_numeric_option(make, numpy_args, python_args):
    """Regression: these options took only Python numbers (the contract accepts NumPy scalars)."""
    y_pred, y = tied_batch(np.random.default_rng(3), 5, 9)
    numpy, plain = make(*numpy_args), make(*python_args)
    for metric in (numpy, plain):
        metric.update((y_pred, y))
    assert numpy.compute() == plain.compute() and numpy.settings() == plain.settings()
    numpy.load_state_dict(plain.state_dict())


def test_numpy_scalars_are_accepted_by_the_catalog_and_retrieval():
    queries, items = torch.eye(2), torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    expected = catalog.top_k(queries, items, 2, chunk_size=2)
    for got in (
        catalog.top_k(queries, items, np.int64(2), chunk_size=np.int32(2)),
        catalog.top_k(queries, lambda a, b: queries @ items[a:b].T, 2, num_items=np.int64(3)),
    ):
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
    kwargs = {"query_ids": ["a", "b"], "corpus_ids": ["x", "y", "z"], "measures": ["mrr@10"]}
    qrels = {"a": {"y": 1}}
    assert retrieval.evaluate_embeddings(
        queries, items, qrels, batch_size=np.int64(1), chunk_size=np.int64(1), **kwargs
    ) == retrieval.evaluate_embeddings(queries, items, qrels, **kwargs)


@pytest.mark.parametrize("value", [np.bool_(True), np.array([1]), np.float64(1.0)])
def test_numpy_values_that_are_not_numbers_are_refused_as_thresholds(value):
    if isinstance(value, np.floating):
        assert MRR(KS, relevance_threshold=value).relevance_threshold == 1.0
        return
    with pytest.raises(TypeError, match="relevance_threshold"):
        MRR(KS, relevance_threshold=value)


# --------------------------------------------------------------------------- unreadable tensors


def _meta(t):
    return torch.empty(t.shape, dtype=t.dtype, device="meta")


UNREADABLE = [
    ("meta-scores", lambda: (_meta(GOOD[0]), GOOD[1]), ValueError, "y_pred.*meta"),
    ("meta-both", lambda: (_meta(GOOD[0]), _meta(GOOD[1])), ValueError, "y_pred.*meta"),
    ("meta-labels", lambda: (GOOD[0], _meta(GOOD[1])), ValueError, "y .*meta"),
    ("sparse-scores", lambda: (GOOD[0].to_sparse(), GOOD[1]), TypeError, "y_pred.*dense"),
    ("csr-scores", lambda: (GOOD[0].to_sparse_csr(), GOOD[1]), TypeError, "y_pred.*dense"),
]


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
@pytest.mark.parametrize(
    ("make", "error", "pattern"), [c[1:] for c in UNREADABLE], ids=[c[0] for c in UNREADABLE]
)
@pytest.mark.parametrize("name", [*METRIC_NAMES, "group"])
def test_unreadable_tensors_are_refused_naming_the_argument(name, make, error, pattern):
    if name == "group":
        metric = RankingMetrics({n: build_metric(n, KS) for n in METRIC_NAMES})
    else:
        metric = build_metric(name, KS)
    with pytest.raises(error, match=pattern):
        metric.update(make())
    if name != "group":
        with pytest.raises(error, match=pattern):
            functional_values(name, *make(), top_k=KS)


# --------------------------------------------------------------------------- Ignite's exception types


def _raised(make):
    try:
        make()
    except Exception as error:
        return error
    return None


BAD_ARGUMENTS = {
    "top_k-str": {"top_k": "3"},
    "top_k-float": {"top_k": 3.0},
    "top_k-none": {"top_k": None},
    "top_k-empty": {"top_k": []},
    "top_k-zero": {"top_k": [0]},
    "top_k-negative": {"top_k": [2, -1]},
    "top_k-str-element": {"top_k": ["a"]},
    "gain": {"top_k": [1], "gain_function": "exp"},
    "gain-none": {"top_k": [1], "gain_function": None},
}


@pytest.mark.parametrize(
    "ours, theirs", [(HitRate, IgniteHitRate), (NDCG, IgniteNDCG)], ids=["HitRate", "NDCG"]
)
@pytest.mark.parametrize("kwargs", BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS.keys())
def test_a_bad_argument_raises_what_ignite_raises(ours, theirs, kwargs):
    if "gain_function" in kwargs and ours is HitRate:
        pytest.skip("HitRate has no gain_function")
    expected = _raised(lambda: theirs(**kwargs))
    error = _raised(lambda: ours(**kwargs))
    assert isinstance(error, (ValueError, TypeError)), error
    if isinstance(expected, (ValueError, TypeError)):
        assert isinstance(error, type(expected)), (error, expected)


BAD_OUTPUTS = {
    "none": None,
    "triple": (torch.rand(2, 3), torch.rand(2, 3), torch.rand(2, 3)),
    "single": (torch.rand(2, 3),),
    "shapes": (torch.rand(2, 3), torch.rand(2, 4)),
}


@pytest.mark.parametrize(
    "ours, theirs", [(HitRate, IgniteHitRate), (NDCG, IgniteNDCG)], ids=["HitRate", "NDCG"]
)
@pytest.mark.parametrize("output", BAD_OUTPUTS.values(), ids=BAD_OUTPUTS.keys())
def test_a_bad_update_raises_what_ignite_raises(ours, theirs, output):
    expected = _raised(lambda: theirs(top_k=[1]).update(output))
    error = _raised(lambda: ours(top_k=[1]).update(output))
    assert isinstance(expected, (ValueError, TypeError)), expected
    assert isinstance(error, type(expected)), (error, expected)


def test_a_dense_row_of_ignored_items_alone_is_no_query():
    """Regression: such a row counted as a query without a relevant item (0 under "neg", 1
    under "pos", refused under "error"); the flat form has no such query."""
    y_pred = torch.tensor([[0.2, 0.9], [0.8, 0.1], [0.3, 0.4]])
    y = torch.tensor([[1, 0], [-100, -100], [0, 1]])
    flat = (y_pred.reshape(-1), y.reshape(-1), torch.arange(3).repeat_interleave(2))
    for action in ("neg", "pos", "error", "skip"):
        dense_metric, flat_metric = (MRR(10, ignore_index=-100, empty_target_action=action) for _ in range(2))
        dense_metric.update((y_pred, y))
        flat_metric.update(flat)
        assert dense_metric.compute() == flat_metric.compute() == [0.75], action


def test_retrieved_without_scores_leaves_out_the_ignored_items():
    """Regression: without scores the ignored item kept its rank, so the items below it ranked
    one lower than in the dense, flat and scored forms."""
    labels = torch.tensor([[-100, 0, 1]])
    forms = [
        (torch.tensor([[0.9, 0.5, 0.1]]), labels),
        ir.Retrieved(torch.tensor([[0, 1, 2]]), torch.tensor([[0, 1, 2]]), grades=labels),
        ir.Retrieved(torch.tensor([[2, 0, 1]]), torch.tensor([[0, 1, 2]]), grades=labels,
                     scores=torch.tensor([[0.1, 0.9, 0.5]])),
        ir.Retrieved(torch.tensor([[0, 1, 2]]), labels.double().to_sparse()),
    ]  # fmt: skip
    for batch in forms:
        metric = MRR(3, ignore_index=-100)
        metric.update(batch)
        assert metric.compute() == [0.5]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.uint16, torch.uint32, torch.uint64])
def test_unsigned_labels_of_updates_without_a_relevant_item(dtype):
    """Regression: the label notes took amax of uint16/32/64 labels, which CPU torch lacks."""
    flat, dense = MRR(5), MRR(5, empty_target_action="neg")
    flat.update((torch.tensor([0.2, 0.9]), torch.tensor([1, 0], dtype=dtype), torch.tensor([3, 3])))
    dense.update((torch.tensor([[0.2, 0.9]]), torch.tensor([[0, 0]], dtype=dtype)))
    assert flat.compute() == [0.5] and dense.compute() == [0.0]
