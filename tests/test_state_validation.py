"""load_state_dict checks the whole state first: an impossible state is refused, naming its key,
and a refused load leaves state_dict() and compute() exactly as they were (issue 32, item 5)."""

from __future__ import annotations

import copy
import math
import re

import pytest
import torch

from ignite_ranking import ERRIA, MRR, NDCG, AlphaNDCG, Coverage, RankingMetrics

Y_PRED = torch.tensor(
    [[0.9, 0.1, 0.5, 0.3, 0.7, 0.2], [0.2, 0.8, 0.6, 0.1, 0.4, 0.3], [0.5, 0.4, 0.9, 0.8, 0.1, 0.6]]
)
Y = torch.tensor([[0, 1, 0, 2, 0, 0], [1, 0, 0, 0, 3, 0], [0, 0, 1, 0, 0, 1]])
SUBTOPICS = torch.stack([Y > 0, Y > 1, torch.roll(Y, 1, dims=1) > 0], dim=2).to(torch.int64)

BUILDERS = {
    "mrr": lambda: MRR([1, 3]),
    "ndcg": lambda: NDCG([2, 5]),
    "per_query": lambda: MRR([1, 3], per_query=True),
    "confidence": lambda: NDCG([2, 5], confidence=0.9),
    "diversity": lambda: ERRIA([2, 5]),
    "coverage": lambda: Coverage([2, 5], num_items=6),
    "group": lambda: RankingMetrics(mrr=MRR([1, 3]), ndcg=NDCG([2, 5])),
    "group_per_query": lambda: RankingMetrics(mrr=MRR([1, 3]), ndcg=NDCG([2, 5]), per_query=True),
}
BOUNDED = ("mrr", "ndcg", "per_query", "confidence", "diversity", "group", "group_per_query")
PER_QUERY = ("per_query", "group_per_query")


def _updated(name: str, rows: slice):
    metric = BUILDERS[name]()
    metric.update((Y_PRED[rows], SUBTOPICS[rows] if name == "diversity" else Y[rows]))
    return metric


def _snapshot(state: object, path: str = "") -> list:
    """Every entry of a state, tensors as (dtype, shape, bytes): equal lists are bitwise equal."""
    if isinstance(state, dict):
        return [entry for key in state for entry in _snapshot(state[key], f"{path}/{key}")]
    if isinstance(state, list):
        return [entry for i, item in enumerate(state) for entry in _snapshot(item, f"{path}/{i}")]
    if isinstance(state, torch.Tensor):
        return [(path, str(state.dtype), tuple(state.shape), state.cpu().numpy().tobytes())]
    return [(path, repr(state))]


def _result(metric) -> str:
    """compute() of a copy (compute counts a held-back query), as text (NaN equals NaN)."""
    return repr(copy.deepcopy(metric).compute())


def _own(name: str, state: dict) -> dict:
    """The per-rank state to corrupt: a group's second member's (its first would load first)."""
    inner = state["__metric_state_per_rank"][0]
    return inner["metrics"]["ndcg"] if name.startswith("group") else inner


def _top(state: dict) -> dict:
    return state["__metric_state_per_rank"][0]


def _refused(name: str, corrupt, error: type[Exception], match: str) -> None:
    """A metric of the first rows refuses the corrupted state of the others, unchanged."""
    metric = _updated(name, slice(0, 2))
    saved = copy.deepcopy(_updated(name, slice(1, 3)).state_dict())
    corrupt(saved)
    before, value = _snapshot(metric.state_dict()), _result(metric)
    with pytest.raises(error, match=match):
        metric.load_state_dict(saved)
    assert _snapshot(metric.state_dict()) == before
    assert _result(metric) == value


def _set(key: str, value, *, top: bool = False):
    def corrupt(name, state):
        (_top(state) if top else _own(name, state))[key] = value() if callable(value) else value

    return corrupt


def _held(preds, target, indexes):
    def corrupt(name, state):
        _top(state).update(_held_preds=preds, _held_target=target, _held_indexes=indexes)

    return corrupt


# Refused by every metric: entries without data, counts past int64, held rows no update holds.
EVERY = {
    "meta-sums": (
        lambda n, s: _own(n, s).update(_sum_per_k=_own(n, s)["_sum_per_k"].to("meta")),
        ValueError,
        r"\['_sum_per_k'\].*meta",
    ),
    "meta-count": (
        _set("_num_examples", lambda: torch.tensor(2, device="meta")),
        ValueError,
        r"\['_num_examples'\].*meta",
    ),
    "count-2**70": (_set("_num_examples", 2**70), ValueError, r"\['_num_examples'\].*2\*\*63"),
    "held-shapes": (
        _held(torch.zeros(2), torch.zeros(0), torch.zeros(0, dtype=torch.int64)),
        ValueError,
        "held-back rows",
    ),
    "held-lists": (_held([0.5], [1.0], [3]), TypeError, r"\['_held_preds'\] must be a tensor"),
    "held-meta": (
        _held(torch.zeros(1, device="meta"), torch.zeros(1), torch.zeros(1, dtype=torch.int64)),
        ValueError,
        r"\['_held_preds'\].*meta",
    ),
    "held-two-queries": (_held(torch.rand(2), torch.ones(2), torch.tensor([3, 4])), ValueError, "one query"),
    "held-nan": (_held(torch.tensor([math.nan]), torch.ones(1), torch.tensor([3])), ValueError, "NaN"),
    "held-float-ids": (
        _held(torch.rand(1), torch.ones(1), torch.tensor([3.0])),
        ValueError,
        "integer query ids",
    ),
}


@pytest.mark.parametrize("case", EVERY)
@pytest.mark.parametrize("name", BUILDERS)
def test_refused_state_leaves_the_metric_as_it_was(name, case):
    corrupt, error, match = EVERY[case]
    _refused(name, lambda state: corrupt(name, state), error, match)


def _float_sums(total: float):
    """Sums saved before the limbs (float64, one per row), each ``total``, over 2 queries."""

    def corrupt(name, state):
        own = _own(name, state)
        own.update(_sum_per_k=torch.full((own["_sum_per_k"].shape[0],), total, dtype=torch.float64))
        own["_num_examples"] = torch.tensor(2)

    return corrupt


def _limb(row: int, limb: int, value):
    def corrupt(name, state):
        sums = _own(name, state)["_sum_per_k"]
        sums[row, limb] = value(int(_own(name, state)["_num_examples"])) if callable(value) else value

    return corrupt


# Sums that no count of values in [0, 1] can give.
IMPOSSIBLE = {
    "float-sum-negative": (_float_sums(-5.0), "sum of -5.0 over 2 queries"),
    "float-sum-100": (_float_sums(100.0), "sum of 100.0 over 2 queries"),
    "sum-above-count": (_limb(0, 0, lambda count: count + 1), "row 0 holds a sum of"),
    "negative-fraction-limb": (_limb(0, 1, -7), "carried limbs"),
    "fraction-limb-too-large": (_limb(1, 2, 2**32), "carried limbs"),
    "flag-5": (_limb(1, 3, 5), "flag count of 5; expected 0"),
    "negative-flag": (_limb(0, 3, -1), "flag count of -1"),
}


@pytest.mark.parametrize("case", IMPOSSIBLE)
@pytest.mark.parametrize("name", BOUNDED)
def test_sums_beyond_what_the_count_can_give_are_refused(name, case):
    corrupt, match = IMPOSSIBLE[case]
    _refused(name, lambda state: corrupt(name, state), ValueError, r"\['_sum_per_k'\].*" + match)


def test_squares_beyond_what_the_count_can_give_are_refused():
    rows = NDCG([2, 5]).num_values  # the squares' rows follow the values'
    for value, match in ((lambda count: count + 1, "sum of squares of"), (-1, "sum of squares of -")):
        _refused(
            "confidence",
            lambda state, value=value: _limb(rows, 0, value)("confidence", state),
            ValueError,
            match,
        )


def test_item_counts_beyond_the_lists_are_refused():
    def corrupt(state):
        _top(state)["_sum_per_k"][3] = int(_top(state)["_num_examples"]) + 1

    _refused(
        "coverage", corrupt, ValueError, r"\['_sum_per_k'\] holds an item count of 3, more than the 2 lists"
    )


def _per_query(edit):
    def corrupt(name, state):
        edit(_own(name, state) if name == "per_query" else _top(state)["metrics"]["ndcg"])

    return corrupt


def _extra_row(own):
    own["_query_values"] = torch.cat([own["_query_values"], own["_query_values"][:1]])
    own["_query_keys"] = torch.cat([own["_query_keys"], own["_query_keys"][-1:] + 1])
    own["_queries_arrived"] += 1


PER_QUERY_CASES = {
    "rows-vs-count": (
        _extra_row,
        ValueError,
        r"\['_query_values'\] holds 3 per-query rows.*counts 2 queries",
    ),
    "float-keys": (
        lambda own: own.update(_query_keys=own["_query_keys"].double()),
        TypeError,
        "integer, got .*float64",
    ),
    "keys-past-arrivals": (lambda own: own["_query_keys"].add_(5), ValueError, r"arrival indices.*\[0, 2\)"),
    "value-out-of-range": (
        lambda own: own["_query_values"].fill_(5.0),
        ValueError,
        r"must lie in \[0.0, 1.0\]",
    ),
    "value-nan": (lambda own: own["_query_values"].fill_(math.nan), ValueError, r"must lie in \[0.0, 1.0\]"),
    "arrived-short": (lambda own: own.update(_queries_arrived=1), ValueError, r"\['_queries_arrived'\]"),
    "arrived-2**70": (lambda own: own.update(_queries_arrived=2**70), ValueError, r"\['_queries_arrived'\]"),
    "user-keys-int": (lambda own: own.update(_user_keys=1), TypeError, r"\['_user_keys'\]"),
    "values-meta": (
        lambda own: own.update(_query_values=own["_query_values"].to("meta")),
        ValueError,
        "meta",
    ),
}


@pytest.mark.parametrize("case", PER_QUERY_CASES)
@pytest.mark.parametrize("name", PER_QUERY)
def test_per_query_rows_must_match_the_count(name, case):
    edit, error, match = PER_QUERY_CASES[case]
    _refused(name, lambda state: _per_query(edit)(name, state), error, match)


def test_user_query_ids_load_and_their_repeats_are_refused_by_per_query_values():
    """Repeated ids are a state that updates make (a flat query id that comes back after its
    query closed is a new query): it loads, compute() counts each query, and only the per-query
    values, which could not tell them apart, are refused."""
    metric = MRR([3], per_query=True)
    metric.update((Y_PRED, Y, {"query_ids": [40, 7, 12]}))
    restored = MRR([3], per_query=True)
    restored.load_state_dict(metric.state_dict())
    assert restored.per_query_values().keys.tolist() == [7, 12, 40]
    saved = metric.state_dict()
    _top(saved)["_query_keys"][0] = 7
    restored.load_state_dict(saved)
    assert restored.compute() == metric.compute()
    with pytest.raises(ValueError, match=r"unique across updates and processes; \[7\] came more than once"):
        restored.per_query_values()


def test_a_flat_query_id_that_comes_back_is_a_new_query_with_per_query_values():
    """Regression: with per_query=True, a flat id that came back after its query closed made
    compute() and every later load refuse the metric for good."""
    stream = [
        (torch.tensor([0.2, 0.9, 0.4]), torch.tensor([1, 0, 1]), torch.tensor([5, 5, 6])),
        (torch.tensor([0.3, 0.8]), torch.tensor([1, 1]), torch.tensor([7, 5])),  # 5 again
    ]
    kept, plain = MRR([3], per_query=True), MRR([3])
    for metric in (kept, plain):
        for batch in stream:
            metric.update(batch)
    assert kept.compute() == plain.compute() == [0.875]
    reloaded = MRR([3], per_query=True)
    reloaded.load_state_dict(kept.state_dict())
    assert reloaded.compute() == [0.875]
    with pytest.raises(ValueError, match=r"\[5\] came more than once"):
        kept.per_query_values()


def test_a_group_checks_every_member_before_it_loads_any():
    group = _updated("group", slice(0, 2))
    saved = copy.deepcopy(_updated("group", slice(1, 3)).state_dict())
    _top(saved)["metrics"]["ndcg"]["_num_examples"] = -1
    before = _snapshot(group.state_dict())
    with pytest.raises(ValueError, match=r"metric 'ndcg': state_dict\['_num_examples'\]"):
        group.load_state_dict(saved)
    assert _snapshot(group.state_dict()) == before  # mrr, checked first, was not loaded either
    del _top(saved)["metrics"]["ndcg"]
    with pytest.raises(ValueError, match=r"members \['mrr'\]; this group's members are \['mrr', 'ndcg'\]"):
        group.load_state_dict(saved)
    assert _snapshot(group.state_dict()) == before


def test_unbounded_metric_may_hold_flags_up_to_its_count():
    """alpha-nDCG's greedy ideal can be beaten: its values are only bounded below, so a flagged
    (non-finite) sum loads, as an update can make it, but never more flags than queries."""
    metric = AlphaNDCG([2, 5])
    metric.update((Y_PRED, SUBTOPICS))
    saved = metric.state_dict()
    _top(saved)["_sum_per_k"][1, 3] = 3
    restored = AlphaNDCG([2, 5])
    restored.load_state_dict(saved)
    assert math.isnan(restored.compute()[1])
    _top(saved)["_sum_per_k"][1, 3] = 4
    with pytest.raises(ValueError, match="flag count of 4; expected at most the count, 3"):
        AlphaNDCG([2, 5]).load_state_dict(saved)
    _top(saved)["_sum_per_k"][1] = torch.tensor([3 * 2**31 + 1, 0, 0, 0])
    with pytest.raises(ValueError, match=re.escape("values in [0.0, inf] give one in [0.0, 6442450944.0]")):
        AlphaNDCG([2, 5]).load_state_dict(saved)
    _top(saved)["_sum_per_k"][1] = torch.tensor([-1, 0, 0, 0])
    with pytest.raises(ValueError, match=re.escape("values in [0.0, inf]")):
        AlphaNDCG([2, 5]).load_state_dict(saved)


@pytest.mark.parametrize("name", [*BUILDERS, "flat_held"])
def test_a_valid_state_still_loads_bitwise(name):
    if name == "flat_held":  # a query held back by the flat form: its rows are saved
        metric = RankingMetrics(mrr=MRR([1, 3]), ndcg=NDCG([2]), per_query=True)
        metric.update((torch.rand(5), torch.tensor([1, 0, 0, 1, 1]), torch.tensor([0, 0, 2, 2, 2])))
        fresh = RankingMetrics(mrr=MRR([1, 3]), ndcg=NDCG([2]), per_query=True)
    else:
        metric, fresh = _updated(name, slice(0, 3)), BUILDERS[name]()
    saved = metric.state_dict()
    fresh.load_state_dict(saved)
    assert _snapshot(fresh.state_dict()) == _snapshot(saved)
    assert _result(fresh) == _result(metric)


@pytest.mark.parametrize(
    ("metric", "sums", "count", "expected"),
    [
        (MRR([1, 3]), [2.0, 2.0], 2, [1.0, 1.0]),  # every query's value at the top of the range
        (MRR([1, 3]), [0.0, 0.0], 2, [0.0, 0.0]),
        (NDCG([2, 5], relevance_threshold=-1.0), [-5.0, 100.0], 2, [-2.5, 50.0]),  # no range
    ],
    ids=["mrr-all-ones", "mrr-zeros", "ndcg-negative-threshold"],
)
def test_float_states_of_older_versions_load_within_the_range(metric, sums, count, expected):
    state = {"_sum_per_k": torch.tensor(sums, dtype=torch.float64), "_num_examples": count}
    metric.load_state_dict({"__metric_state_per_rank": [{**state, "_settings": metric.settings()}]})
    assert metric.compute() == expected


@pytest.mark.parametrize("name", ["diversity", "coverage", "group_of_coverage"])
def test_held_rows_are_refused_by_a_metric_without_the_flat_form(name):
    make = (
        (lambda: RankingMetrics(mrr=MRR([1]), coverage=Coverage([2], num_items=6)))
        if name == "group_of_coverage"
        else BUILDERS[name]
    )
    metric = make()
    metric.update((Y_PRED, SUBTOPICS if name == "diversity" else Y))
    saved = metric.state_dict()
    _held(torch.rand(2), torch.ones(2), torch.tensor([4, 4]))(name, saved)
    before = _snapshot(metric.state_dict())
    with pytest.raises(ValueError, match="held-back rows of the flat form"):
        metric.load_state_dict(saved)
    assert _snapshot(metric.state_dict()) == before
