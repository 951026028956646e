"""Properties every ranking must have, over random inputs drawn by Hypothesis: invariance of
"average" to the order of items, monotonicity when a relevant item is promoted, the tie
policies' bounds, the group equal to its members, and batches split any way."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from reference import METRIC_NAMES, build_metric, functional_values

from ignite_ranking import RankingMetrics

# Few distinct scores, so that ties are common; +-inf included.
SCORES = st.sampled_from([-math.inf, -1.0, 0.0, 0.5, 1.0, 2.0, math.inf])
TIES = ["first", "last", "optimistic", "pessimistic", "average"]


@st.composite
def batches(draw, max_rows=5, max_items=7, max_label=3):
    """``(y_pred, y, cutoffs, threshold)``: float64 scores, float64 graded labels."""
    rows = draw(st.integers(1, max_rows))
    items = draw(st.integers(1, max_items))
    scores = draw(st.lists(st.lists(SCORES, min_size=items, max_size=items), min_size=rows, max_size=rows))
    labels = draw(
        st.lists(
            st.lists(st.integers(0, max_label), min_size=items, max_size=items), min_size=rows, max_size=rows
        )
    )
    cutoffs = draw(st.lists(st.integers(1, items + 2), min_size=1, max_size=3))
    threshold = draw(st.sampled_from([1.0, 2.0, 0.5]))
    y_pred = torch.tensor(scores, dtype=torch.float64)
    y = torch.tensor(labels, dtype=torch.float64)
    return y_pred, y, cutoffs, threshold


def _all(y_pred, y, cutoffs, threshold, ties, gain_function="exp_rank"):
    """Every metric's per-query values: {name: (batch, len(cutoffs)) tensor}."""
    return {
        name: functional_values(name, y_pred, y, cutoffs, threshold, ties, gain_function)
        for name in METRIC_NAMES
    }


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.allclose(a, b, rtol=1e-12, atol=1e-12)


@given(batches(), st.randoms(use_true_random=False), st.sampled_from(["exp_rank", "linear_rank"]))
def test_average_does_not_depend_on_the_order_of_items(batch, rng, gain_function):
    y_pred, y, cutoffs, threshold = batch
    permutation = list(range(y.shape[1]))
    rng.shuffle(permutation)
    before = _all(y_pred, y, cutoffs, threshold, "average", gain_function)
    after = _all(y_pred[:, permutation], y[:, permutation], cutoffs, threshold, "average", gain_function)
    for name in METRIC_NAMES:
        assert _close(before[name], after[name]), name


@given(batches(), st.sampled_from(TIES), st.data())
def test_promoting_a_relevant_item_never_lowers_rr_hit_or_ndcg(batch, ties, data):
    y_pred, y, cutoffs, threshold = batch
    row = data.draw(st.integers(0, y.shape[0] - 1))
    # NDCG can drop when an item is lifted above one of higher gain, so lift a row's best label.
    best = (y[row] == y[row].max()) & (y[row] >= threshold)
    if not best.any():
        return
    item = data.draw(st.sampled_from(best.nonzero().squeeze(1).tolist()))
    higher = [s for s in (-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, math.inf) if s > y_pred[row, item]]
    if not higher:
        return
    promoted = y_pred.clone()
    promoted[row, item] = data.draw(st.sampled_from(higher))
    for name in ("mrr", "hit_rate", "ndcg"):
        before = functional_values(name, y_pred, y, cutoffs, threshold, ties)[row]
        after = functional_values(name, promoted, y, cutoffs, threshold, ties)[row]
        assert (after >= before - 1e-12).all(), (name, before, after)


@given(batches())
def test_optimistic_bounds_average_bounds_pessimistic(batch):
    y_pred, y, cutoffs, threshold = batch
    optimistic = _all(y_pred, y, cutoffs, threshold, "optimistic")
    average = _all(y_pred, y, cutoffs, threshold, "average")
    pessimistic = _all(y_pred, y, cutoffs, threshold, "pessimistic")
    for name in METRIC_NAMES:
        assert (optimistic[name] >= average[name] - 1e-12).all(), name
        assert (average[name] >= pessimistic[name] - 1e-12).all(), name


@given(batches(), st.sampled_from(TIES), st.booleans())
def test_the_group_equals_its_members(batch, ties, ignore_zero_hits):
    y_pred, y, cutoffs, threshold = batch
    settings = {"ties": ties, "ignore_zero_hits": ignore_zero_hits, "relevance_threshold": threshold}
    group = RankingMetrics({name: build_metric(name, cutoffs, **settings) for name in METRIC_NAMES})
    alone = {name: build_metric(name, cutoffs, **settings) for name in METRIC_NAMES}
    group.update((y_pred, y))
    for metric in alone.values():
        metric.update((y_pred, y))
    if not any(m._num_examples for m in alone.values()):
        return  # nothing counted: both raise NotComputableError
    results = group.compute()
    for name, metric in alone.items():
        value = metric.compute()
        if metric.top_k is None:
            assert results[name] == value
        else:
            assert [results[f"{name}@{k}"] for k in metric.top_k] == value


@given(batches(max_rows=8), st.sampled_from(TIES), st.data())
def test_splitting_a_batch_any_way_gives_the_same_compute(batch, ties, data):
    y_pred, y, cutoffs, threshold = batch
    cuts = sorted(data.draw(st.sets(st.integers(0, y.shape[0]), max_size=4)))
    bounds = [0, *cuts, y.shape[0]]
    settings = {"ties": ties, "ignore_zero_hits": False, "relevance_threshold": threshold}
    whole = RankingMetrics({name: build_metric(name, cutoffs, **settings) for name in METRIC_NAMES})
    split = RankingMetrics({name: build_metric(name, cutoffs, **settings) for name in METRIC_NAMES})
    whole.update((y_pred, y))
    for start, end in itertools.pairwise(bounds):
        split.update((y_pred[start:end], y[start:end]))  # empty pieces included
    expected, got = whole.compute(), split.compute()
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
