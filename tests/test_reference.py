"""The library against the brute-force reference, on random batches full of ties."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from ignite.exceptions import NotComputableError
from reference import (
    DEVICES,
    EXACT_PER_QUERY,
    LABEL_DTYPES,
    METRIC_NAMES,
    SCORE_DTYPES,
    build_metric,
    cast_labels,
    functional_values,
    mean_values,
    per_query,
    random_k_list,
    rank_order,
    tied_batch,
)

from ignite_ranking import RankingMetrics
from ignite_ranking.kernels import top_indices

# (metric, gain_function): NDCG runs once per gain.
VARIANTS = [(m, "exp_rank") for m in METRIC_NAMES] + [("ndcg", "linear_rank")]
VARIANT_IDS = [f"{m}-{g}" if m == "ndcg" else m for m, g in VARIANTS]
THRESHOLDS = (1.0, 0.5, 2.0, 3, 2.5, 0.0)


def seed_of(*parts) -> int:
    """A seed that is the same in every run (unlike hash() of strings)."""
    return zlib.crc32(repr(parts).encode())


def _flat(rows):
    return [v for row in rows for v in row]


def assert_per_query(got: torch.Tensor, expected: list[list[float]], metric: str) -> None:
    assert got.dtype == torch.float64
    assert list(got.shape) == [len(expected), len(expected[0]) if expected else got.shape[1]]
    if metric in EXACT_PER_QUERY:
        assert got.tolist() == expected
    else:
        assert _flat(got.tolist()) == pytest.approx(_flat(expected), rel=1e-12, abs=1e-15)


def assert_means(got, expected) -> None:
    got = [got] if isinstance(got, float) else got
    assert all(isinstance(v, float) for v in got)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)


# --------------------------------------------------------------------------- the ranking kernel


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ties", ["first", "last"])
@pytest.mark.parametrize("dtype", SCORE_DTYPES)
def test_top_indices_is_a_stable_argsort_prefix(ties, dtype, device):
    rng = np.random.default_rng(7)
    for _ in range(30):
        batch, n = int(rng.integers(1, 9)), int(rng.integers(1, 13))
        scores, _ = tied_batch(rng, batch, n)
        scores = scores.to(dtype=dtype, device=device)
        orders = [rank_order(row, ties) for row in scores.to(torch.float64).tolist()]
        for k in range(1, n + 3):
            got = top_indices(scores, k, ties).tolist()
            assert got == [order[:k] for order in orders], (k, scores)


# --------------------------------------------------------------------------- functional API


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("score_dtype", SCORE_DTYPES, ids=str)
@pytest.mark.parametrize("ties", ["first", "last"])
@pytest.mark.parametrize(("metric", "gain"), VARIANTS, ids=VARIANT_IDS)
def test_functional_matches_reference(metric, gain, ties, score_dtype, device):
    rng = np.random.default_rng(seed_of(metric, gain, ties, score_dtype))
    for label_dtype in LABEL_DTYPES:
        for _ in range(3):
            batch, n = int(rng.integers(0, 12)), int(rng.integers(1, 16))
            y_pred, y = tied_batch(rng, batch, n)
            y_pred, y = y_pred.to(score_dtype), cast_labels(y, label_dtype)
            top_k = random_k_list(rng, n)
            threshold = THRESHOLDS[int(rng.integers(len(THRESHOLDS)))]
            got = functional_values(metric, y_pred.to(device), y.to(device), top_k, threshold, ties, gain)
            assert got.device.type == device
            expected = per_query(y_pred, y, metric, top_k, threshold, ties, gain)
            if batch == 0:
                assert got.shape[0] == 0
                continue
            assert_per_query(got, expected, metric)


def test_functional_accepts_an_int_top_k_and_drops_duplicates():
    rng = np.random.default_rng(3)
    y_pred, y = tied_batch(rng, 6, 9)
    for metric, gain in VARIANTS:
        if metric == "r_precision":
            continue
        single = functional_values(metric, y_pred, y, 4, gain_function=gain)
        listed = functional_values(metric, y_pred, y, [4, 2, 4, 7, 2], gain_function=gain)
        assert single.shape == (6, 1)
        assert listed.shape == (6, 3)
        assert torch.equal(single[:, 0], listed[:, 1])


# --------------------------------------------------------------------------- metric classes


def _random_updates(rng, score_dtypes=SCORE_DTYPES, label_dtypes=LABEL_DTYPES, device="cpu"):
    label_dtype = label_dtypes[int(rng.integers(len(label_dtypes)))]
    updates = []
    for _ in range(int(rng.integers(1, 5))):
        batch, n = int(rng.integers(0, 10)), int(rng.integers(1, 14))
        y_pred, y = tied_batch(rng, batch, n)
        score_dtype = score_dtypes[int(rng.integers(len(score_dtypes)))]
        updates.append((y_pred.to(score_dtype).to(device), cast_labels(y, label_dtype).to(device)))
    return updates


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ignore_zero_hits", [True, False])
@pytest.mark.parametrize("ties", ["first", "last"])
@pytest.mark.parametrize(("metric", "gain"), VARIANTS, ids=VARIANT_IDS)
def test_metric_matches_reference(metric, gain, ties, ignore_zero_hits, device):
    rng = np.random.default_rng(seed_of(metric, gain, ties, ignore_zero_hits))
    for _ in range(12):
        updates = _random_updates(rng, device=device)
        top_k = random_k_list(rng, 8)
        threshold = THRESHOLDS[int(rng.integers(len(THRESHOLDS)))]
        m = build_metric(
            metric,
            top_k,
            gain,
            ignore_zero_hits=ignore_zero_hits,
            relevance_threshold=threshold,
            ties=ties,
            device=device,
        )
        for output in updates:
            m.update(output)
        assert m._sum_per_k.device.type == device
        expected = mean_values(updates, metric, top_k, threshold, ignore_zero_hits, ties, gain)
        assert m._sum_per_k.dtype == torch.int64
        assert m._num_examples.dtype == torch.int64
        if expected is None:
            with pytest.raises(NotComputableError):
                m.compute()
            continue
        got = m.compute()
        if metric == "r_precision":
            assert isinstance(got, float)
        else:
            assert isinstance(got, list)
            assert len(got) == len(set(top_k))
        assert_means(got, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ties", ["first", "last"])
@pytest.mark.parametrize("ignore_zero_hits", [True, False])
def test_group_matches_reference(ignore_zero_hits, ties, device):
    rng = np.random.default_rng(11 + ignore_zero_hits)
    for _ in range(6):
        updates = _random_updates(rng, device=device)
        threshold = THRESHOLDS[int(rng.integers(len(THRESHOLDS)))]
        ks = {name: random_k_list(rng, 8) for name in METRIC_NAMES}
        common = {"ignore_zero_hits": ignore_zero_hits, "relevance_threshold": threshold, "ties": ties}
        common["device"] = device
        members = {name: build_metric(name, ks[name], **common) for name in METRIC_NAMES}
        members["ndcg_lin"] = build_metric("ndcg", ks["ndcg"], "linear_rank", **common)
        group = RankingMetrics(members)
        for output in updates:
            group.update(output)
        any_counted = mean_values(updates, "hit_rate", [1], threshold, ignore_zero_hits) is not None
        if not any_counted:
            with pytest.raises(NotComputableError):
                group.compute()
            continue
        got = group.compute()
        expected = {}
        for name in [*METRIC_NAMES, "ndcg_lin"]:
            metric = "ndcg" if name == "ndcg_lin" else name
            gain = "linear_rank" if name == "ndcg_lin" else "exp_rank"
            means = mean_values(updates, metric, ks[metric], threshold, ignore_zero_hits, ties, gain)
            if metric == "r_precision":
                expected[name] = means[0]
            else:
                expected.update(
                    {f"{name}@{k}": v for k, v in zip(sorted(set(ks[metric])), means, strict=True)}
                )
        assert got.keys() == expected.keys()
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key


# --------------------------------------------------------------------------- properties

SCORE_VALUES = st.sampled_from([-math.inf, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, math.inf])


@st.composite
def batches(draw, max_rows=5, max_items=8):
    rows = draw(st.integers(1, max_rows))
    items = draw(st.integers(1, max_items))
    scores = draw(
        st.lists(st.lists(SCORE_VALUES, min_size=items, max_size=items), min_size=rows, max_size=rows)
    )
    labels = draw(
        st.lists(st.lists(st.integers(0, 4), min_size=items, max_size=items), min_size=rows, max_size=rows)
    )
    return torch.tensor(scores, dtype=torch.float64), torch.tensor(labels, dtype=torch.float64)


top_ks = st.lists(st.integers(1, 10), min_size=1, max_size=4)
thresholds = st.sampled_from(THRESHOLDS)
tie_policies = st.sampled_from(["first", "last"])


@settings(max_examples=50, deadline=None)
@given(batch=batches(), top_k=top_ks, threshold=thresholds, ties=tie_policies)
def test_property_every_functional_matches_reference(batch, top_k, threshold, ties):
    y_pred, y = batch
    for metric, gain in VARIANTS:
        got = functional_values(metric, y_pred, y, top_k, threshold, ties, gain)
        assert_per_query(got, per_query(y_pred, y, metric, top_k, threshold, ties, gain), metric)


@settings(max_examples=50, deadline=None)
@given(batch=batches(), top_k=top_ks, threshold=thresholds)
def test_property_last_is_first_on_mirrored_items(batch, top_k, threshold):
    y_pred, y = batch
    for metric, gain in VARIANTS:
        last = functional_values(metric, y_pred, y, top_k, threshold, "last", gain)
        mirrored = functional_values(metric, y_pred.flip(1), y.flip(1), top_k, threshold, "first", gain)
        assert torch.equal(last, mirrored), metric


@settings(max_examples=50, deadline=None)
@given(batch=batches(), top_k=top_ks, threshold=thresholds, ties=tie_policies)
def test_property_bounds_monotonicity_and_identities(batch, top_k, threshold, ties):
    y_pred, y = batch
    ks = sorted(set(top_k))
    values = {m: functional_values(m, y_pred, y, top_k, threshold, ties) for m in METRIC_NAMES}
    for m, v in values.items():
        assert ((v >= 0) & (v <= 1 + 1e-12)).all(), m
    for m in ("mrr", "hit_rate", "recall", "map"):
        assert (values[m].diff(dim=1) >= 0).all(), m
    # A hit at k is exactly a non-zero reciprocal rank at k.
    assert torch.equal(values["hit_rate"], (values["mrr"] > 0).to(torch.float64))
    # P@k * k and R@k * R both count the relevant items of the top k.
    num_rel = (y >= threshold).sum(dim=1, keepdim=True).to(torch.float64)
    hits_p = values["precision"] * torch.tensor(ks, dtype=torch.float64)
    hits_r = values["recall"] * num_rel
    assert torch.allclose(hits_p[num_rel[:, 0] > 0], hits_r[num_rel[:, 0] > 0], rtol=0, atol=1e-12)
    # Queries with no relevant item score 0 everywhere.
    for v in values.values():
        assert (v[num_rel[:, 0] == 0] == 0).all()
    # Once the cutoff covers the whole row, recall is 1 for every query with a relevant item.
    n = y.shape[1]
    full = functional_values("recall", y_pred, y, [n], threshold, ties)[:, 0]
    assert torch.equal(full, (num_rel[:, 0] > 0).to(torch.float64))


@settings(max_examples=30, deadline=None)
@given(
    parts=st.lists(batches(max_rows=4), min_size=1, max_size=4),
    top_k=top_ks,
    ignore_zero_hits=st.booleans(),
)
def test_property_updates_split_anywhere_give_the_same_means(parts, top_k, ignore_zero_hits):
    # Same number of items in every part, so that the parts can also be concatenated.
    n = min(p[0].shape[1] for p in parts)
    parts = [(p[0][:, :n], p[1][:, :n]) for p in parts]
    whole = (torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts]))
    for metric, gain in VARIANTS:
        split = build_metric(metric, top_k, gain, ignore_zero_hits=ignore_zero_hits)
        joined = build_metric(metric, top_k, gain, ignore_zero_hits=ignore_zero_hits)
        for part in parts:
            split.update(part)
        joined.update(whole)
        assert int(split._num_examples) == int(joined._num_examples)
        if int(joined._num_examples) == 0:
            continue
        got, expected = split.compute(), joined.compute()
        assert_means(got, [expected] if isinstance(expected, float) else expected)
