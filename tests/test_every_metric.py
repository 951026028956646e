"""Properties of every exported metric, walked from ``ignite_ranking.__all__`` (issue 32's guard).

``metric_zoo.ZOO`` builds each metric; a new metric without an entry there fails
:func:`test_the_table_names_every_exported_metric`. For each of them, on small random batches
with tied scores, graded labels and a query without a relevant item:

(a) each cutoff's value alone equals its value among the others, on every form the metric takes
    (lists shorter than most cutoffs, ``-1`` padding, flat queries of a few rows);
(b) the forms of one ranking agree;
(c) a refused update or ``load_state_dict`` leaves ``state_dict()`` (bitwise) and ``compute()``
    as they were;
(d) bad statistics and shapes are refused with a ValueError or TypeError naming the argument.
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import pytest
import torch
from metric_zoo import (
    DENSE,
    FLAT,
    KS,
    NUM_ITEMS,
    RETRIEVED,
    SPARSE,
    SUBTOPIC_DENSE,
    SUBTOPIC_FORMS,
    SUBTOPIC_SPARSE,
    ZOO,
    Variant,
    batches_of,
    dense_batch,
    exported_metrics,
    leaf_states,
    outcome,
    same_ranking_forms,
    same_state,
    statistics,
    subtopic_forms,
    variants,
)

import ignite_ranking as ir

VARIANTS = variants()
IDS = [name for name, _ in VARIANTS]
REFUSED = (ValueError, TypeError)


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= 1e-12


def _assert_close(got: dict, want: dict, where: str) -> None:
    assert list(got) == list(want), where
    bad = {name: (got[name], want[name]) for name in got if not _close(got[name], want[name])}
    assert not bad, f"{where}: {bad}"


def test_the_table_names_every_exported_metric():
    """A metric exported without an entry in metric_zoo.ZOO (or an entry left for a removed one)."""
    assert set(ZOO) == exported_metrics()


# --------------------------------------------------------------------------- (a) cutoffs


@pytest.mark.parametrize(
    ("name", "variant"), [v for v in VARIANTS if v[1].cutoffs], ids=[n for n, v in VARIANTS if v.cutoffs]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_each_cutoff_alone_equals_its_value_among_the_others(name, variant: Variant, seed):
    for form in variant.forms:
        for position, batch in enumerate(batches_of(form, seed)):
            where = f"{name} on {form} batch {position}"
            together = variant.make(KS)
            together.update(batch)
            among = outcome(together)
            for k in together_cutoffs(together):
                alone = variant.make([k])
                alone.update(batch)
                got = outcome(alone)
                if isinstance(among, type):
                    assert got is among, f"{where} @{k}"
                    continue
                assert not isinstance(got, type), f"{where} @{k}: {got}"
                _assert_close(got, {n: among[n] for n in got}, f"{where} @{k}")


def together_cutoffs(metric) -> list[int]:
    """The cutoffs of a metric or group (every member's)."""
    members = metric.metrics.values() if isinstance(metric, ir.RankingMetrics) else [metric]
    return sorted({k for m in members for k in m.top_k})


# --------------------------------------------------------------------------- (b) forms


@pytest.mark.parametrize(("name", "variant"), VARIANTS, ids=IDS)
def test_the_forms_of_one_ranking_agree(name, variant: Variant):
    for seed in (0, 1):
        forms = (
            {form: batch[0] for form, batch in subtopic_forms(seed).items()}
            if variant.forms == SUBTOPIC_FORMS
            else same_ranking_forms(seed)
        )
        first = variant.forms[0]
        results = {}
        for form in variant.forms:
            metric = variant.make(KS)
            metric.update(forms[form])
            results[form] = outcome(metric)
        for form, result in results.items():
            if isinstance(results[first], type):
                assert result is results[first], f"{name}: {form} vs {first}"
            else:
                _assert_close(result, results[first], f"{name}: {form} vs {first}")


# --------------------------------------------------------------------------- (c) refusals keep the state


def _bad_updates(variant: Variant) -> list[tuple[str, object]]:
    """Batches every metric of ``variant`` must refuse, each named."""
    if variant.forms == SUBTOPIC_FORMS:
        y_pred, y = subtopic_forms(5)[SUBTOPIC_DENSE][0]
        nan = y_pred.clone()
        nan[1, 2] = math.nan
        return [
            ("shape", (y_pred, y[:, :-1])),
            ("nan score", (nan, y)),
            ("integer scores", (y_pred.to(torch.int64), y)),
        ]
    y_pred, y = dense_batch(5)
    nan = y_pred.clone()
    nan[1, 2] = math.nan
    bad = [
        ("shape", (y_pred, y[:, :-1])),
        ("nan score", (nan, y)),
        ("integer scores", (y_pred.to(torch.int64), y)),
        ("complex labels", (y_pred, y.to(torch.complex64))),
        ("float ids", ir.Retrieved(torch.zeros(2, 3), torch.zeros(2, 1, dtype=torch.int64))),
    ]
    if variant.statistic is not None:
        wide_pred, wide = dense_batch(5, NUM_ITEMS + 1)
        wide_pred[:, -1] = -math.inf  # the extra item ranked last: below every cutoff but 30
        narrow_pred, narrow = dense_batch(5, NUM_ITEMS - 1)
        bad += [
            ("statistics of fewer items", (wide_pred, wide)),
            ("statistics of more items", (narrow_pred, narrow)),
            ("sparse statistics of more items", (narrow_pred, narrow.to_sparse())),
            (
                "item id past the statistics",
                ir.Retrieved(torch.tensor([[NUM_ITEMS, 0]]), torch.tensor([[0]])),
            ),
        ]
    return bad


def _good_batch(variant: Variant, later: bool = False):
    """A valid batch in the variant's forms; the flat form's last query is then held back
    (``later``: queries that follow those of the first)."""
    if FLAT not in variant.forms:
        return batches_of(variant.forms[0], 3)[-1]
    preds, target, indexes = batches_of(FLAT, 3)[-1]
    return preds, target, indexes + 100 if later else indexes


@pytest.mark.parametrize(("name", "variant"), VARIANTS, ids=IDS)
def test_a_refused_update_leaves_the_state_as_it_was(name, variant: Variant):
    # After a batch of the first form, and after a flat query held back (a later batch of
    # another form is refused for that alone: the first state shows the other refusals).
    first = batches_of(variant.forms[0], 3)[-1]
    for good in [first] + ([_good_batch(variant)] if FLAT in variant.forms else []):
        metric = variant.make(KS)
        metric.update(good)
        state, result = copy.deepcopy(metric.state_dict()), outcome(metric)
        for what, batch in _bad_updates(variant):
            with pytest.raises(REFUSED):
                metric.update(batch)
            assert same_state(metric.state_dict(), state), f"{name}: {what}"
            assert outcome(metric) == result, f"{name}: {what}"


def _tampered(variant: Variant, state) -> list[tuple[str, object]]:
    """Saved states that ``load_state_dict`` must refuse, each named."""
    tampered = []

    def edit(what, change):
        copied = copy.deepcopy(state)
        change(leaf_states(copied)[0])
        tampered.append((what, copied))

    if variant.cutoffs:
        other = variant.make(KS[:3])
        other.update(_good_batch(variant))
        tampered.append(("other cutoffs", other.state_dict()))
    edit("other settings", lambda leaf: leaf["_settings"].update(metric="another"))
    edit("missing sums", lambda leaf: leaf.pop("_sum_per_k"))
    edit("renamed count", lambda leaf: leaf.__setitem__("count", leaf.pop("_num_examples")))
    edit("negative count", lambda leaf: leaf.__setitem__("_num_examples", torch.tensor(-1)))
    edit("float count", lambda leaf: leaf.__setitem__("_num_examples", torch.tensor(2.0)))
    more = variant.make(KS)  # other sums, so that a half-applied load shows
    more.update(_good_batch(variant))
    more.update(_good_batch(variant, later=True))
    held = copy.deepcopy(more.state_dict())
    leaf_states(held)[0]["_held_preds"] = torch.tensor([0.5])
    tampered.append(("held scores without labels", held))
    if "_query_values" in leaf_states(state)[0]:  # per-query values kept
        edit("more per-query rows than the count", _one_more_query)
        if leaf_states(state)[0]["_user_keys"] is False:  # given ids may repeat (a flat id that comes back)
            edit("duplicate arrival keys", _one_more_query_again)
        edit(
            "float per-query keys", lambda leaf: leaf.__setitem__("_query_keys", leaf["_query_keys"].double())
        )
    sums = leaf_states(state)[0]["_sum_per_k"]
    if sums.ndim == 2:  # fixed-point limbs (the exposure counts are 1-D)
        rows = sums.shape[0]
        edit("negative float sums", lambda leaf: leaf.__setitem__("_sum_per_k", torch.full((rows,), -5.0)))
        edit("negative whole limb", lambda leaf: leaf["_sum_per_k"][:, 0].fill_(-7))
        edit("flags past the count", lambda leaf: leaf["_sum_per_k"][:, -1].fill_(leaf["_num_examples"] + 1))
        edit("sums of another shape", lambda leaf: leaf.__setitem__("_sum_per_k", torch.cat([sums, sums])))
    else:
        edit("negative item counts", lambda leaf: leaf["_sum_per_k"].sub_(100))
    return tampered


def _one_more_query_again(leaf: dict) -> None:
    """A kept value repeated under the same key, counted as another query."""
    leaf["_query_values"] = torch.cat([leaf["_query_values"], leaf["_query_values"][:1]])
    leaf["_query_keys"] = torch.cat([leaf["_query_keys"], leaf["_query_keys"][:1]])
    leaf["_num_examples"] = leaf["_num_examples"] + 1
    leaf["_queries_arrived"] += 1


def _one_more_query(leaf: dict) -> None:
    """A kept value and key more than the state counts."""
    values, keys = leaf["_query_values"], leaf["_query_keys"]
    leaf["_query_values"] = torch.cat([values, values[:1]])
    leaf["_query_keys"] = torch.cat([keys, keys.max(dim=0, keepdim=True).values + 1])


@pytest.mark.parametrize(("name", "variant"), VARIANTS, ids=IDS)
def test_a_refused_load_leaves_the_state_as_it_was(name, variant: Variant):
    metric = variant.make(KS)
    metric.update(_good_batch(variant))
    state, result = copy.deepcopy(metric.state_dict()), outcome(metric)
    accepted = []
    for what, bad in _tampered(variant, state):
        try:
            metric.load_state_dict(bad)
        except REFUSED:
            if not same_state(metric.state_dict(), state) or outcome(metric) != result:
                accepted.append(f"{what} (refused, but half applied)")
        else:
            accepted.append(what)
        metric.load_state_dict(copy.deepcopy(state))
    assert not accepted, f"{name} loaded: {accepted}"


# --------------------------------------------------------------------------- (d) named refusals


_BAD_STATISTICS = {
    "item_popularity": [
        torch.ones(NUM_ITEMS, 2),
        torch.full((NUM_ITEMS,), -1.0),
        torch.full((NUM_ITEMS,), math.nan),
    ],
    "tail_items": [torch.ones(NUM_ITEMS), torch.ones(NUM_ITEMS, 2, dtype=torch.bool)],
    "item_embeddings": [
        torch.ones(NUM_ITEMS),
        torch.full((NUM_ITEMS, 2), math.inf),
        torch.zeros(NUM_ITEMS, 2),
    ],
    "groups": [
        torch.ones(NUM_ITEMS),
        torch.full((NUM_ITEMS,), -1),
        torch.ones(NUM_ITEMS, 2, dtype=torch.int64),
    ],
}
_FIELDS = {
    "item_popularity": "popularity",
    "tail_items": "tail",
    "item_embeddings": "embeddings",
    "groups": "groups",
}


@pytest.mark.parametrize(
    ("name", "variant"), [v for v in VARIANTS if v[1].statistic], ids=[n for n, v in VARIANTS if v.statistic]
)
def test_bad_statistics_are_refused_naming_the_argument(name, variant: Variant):
    good = statistics()
    if variant.statistic == "num_items":
        bad = [replace(good, popularity=torch.ones(0))]  # a catalog of no item
    else:
        bad = [
            replace(good, **{_FIELDS[variant.statistic]: value})
            for value in _BAD_STATISTICS[variant.statistic]
        ]
    for stats in bad:
        with pytest.raises(REFUSED, match=variant.statistic):
            variant.make(KS, stats)


@pytest.mark.parametrize(("name", "variant"), VARIANTS, ids=IDS)
def test_bad_shapes_are_refused_naming_the_argument(name, variant: Variant):
    metric = variant.make(KS)
    named = {
        "shape": r"\by\b",
        "nan score": "y_pred",
        "integer scores": "y_pred",
        "complex labels": r"\by\b",
        "float ids": "ids",
    }
    for what, batch in _bad_updates(variant):
        pattern = named.get(what, variant.statistic or "")
        with pytest.raises(REFUSED, match=pattern):
            metric.update(batch)


def test_forms_used_here_are_the_forms_the_table_names():
    """The table's forms are those this module feeds (a typo would skip a form silently)."""
    known = {DENSE, SPARSE, FLAT, RETRIEVED, *SUBTOPIC_FORMS}
    assert {form for vs in ZOO.values() for v in vs for form in v.forms} <= known
    assert SUBTOPIC_SPARSE in SUBTOPIC_FORMS
