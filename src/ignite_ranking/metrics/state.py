"""A metric's saved state: what ``state_dict`` saves, and the checks made before any of it is loaded.

``state_dict()`` saves the sums, the count, the metric's ``settings()`` (what the sums mean), the
kept per-query values and the flat form's held-back rows (:func:`saved_state`).

``load_state_dict`` (a metric's, and a group's for all its members) first checks every entry
against what the metric's own updates can produce (:func:`checked_state`), then assigns them
all (:func:`assign_state`), so that a refused state leaves the metric exactly as it was (docs:
contract, "state checks"):

- every tensor is a dense tensor with data (not on the ``meta`` device);
- the count is an integer in ``[0, 2**63)``;
- the limbs are carried (each fraction limb in ``[0, 2**32)``), and each sum is what ``count``
  values can give: values in the metric's ``value_range`` (``[0, 1]`` for most), their squares
  in ``[0, max(low**2, high**2)]``, to within 2**-40 a query for rounding, and no flag (a
  range open above, such as Novelty's ``[0, inf)``, allows up to ``count`` flags); without a
  declared range, values below 2**31 in magnitude (squares below 2**31) and at most ``count``
  flags;
- per-query values: one row per counted query, in the range, with unique integer keys.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from ..kernels.exact_sum import LIMBS, from_floats, limb_totals
from ..kernels.forms import FlatRows
from ..kernels.held import held_from_state, held_to_state

__all__ = [
    "LoadedState",
    "assign_state",
    "check_limbs",
    "check_settings",
    "check_tensors",
    "checked_state",
    "loaded_count",
    "loaded_per_query",
    "loaded_sums",
    "saved_state",
    "settings_of",
]

# The key of a saved state that says what it is a state of (see RankingMetric.settings).
_SETTINGS = "_settings"

_INT64 = 2**63
_UNIT = 2**64  # a limb total counts 2**-64 units
_SLACK = 2**24  # 2**-40 a query, in units: rounding of values computed in float64
_WIDE = 2.0**31  # values of at least this magnitude are flagged, not summed (exact_sum)


@dataclass(frozen=True)
class PerQueryState:
    """The checked per-query entries of a state."""

    values: torch.Tensor
    keys: torch.Tensor
    arrived: int
    user_keys: bool | None


@dataclass(frozen=True)
class LoadedState:
    """A state whose every entry has been checked, ready to be assigned."""

    sums: torch.Tensor
    count: int
    per_query: PerQueryState | None
    held: FlatRows | None


def check_tensors(state: Mapping) -> None:
    """Refuses a tensor entry without data to read: on the ``meta`` device, or not dense."""
    for key, value in state.items():
        if isinstance(value, torch.Tensor) and (value.is_meta or value.layout != torch.strided):
            raise ValueError(
                f"state_dict[{key!r}] must be a dense tensor with data, as state_dict() saves it; got "
                f"a {value.layout} tensor on device {value.device}."
            )


def loaded_count(count: object, key: str = "_num_examples") -> int:
    """A saved count as an int, refusing anything but an integer in ``[0, 2**63)``."""
    expected = f"state_dict[{key!r}] must be a non-negative int64 count"
    if isinstance(count, torch.Tensor):
        integral = count.numel() == 1 and not count.is_floating_point() and not count.is_complex()
        if not integral or count.dtype == torch.bool:
            raise TypeError(f"{expected}, got a {count.dtype} tensor of shape {tuple(count.shape)}.")
        count = int(count.item())
    elif isinstance(count, numbers.Integral) and not isinstance(count, bool):
        count = int(count)
    else:
        raise TypeError(f"{expected}, got {count!r} of type {type(count).__name__}.")
    if not 0 <= count < _INT64:
        raise ValueError(f"{expected} (in [0, 2**63)), got {count}.")
    return count


def _units(count: int, value: float, slack: int) -> int:
    """``count`` times ``value`` in 2**-64 units (rounded outwards by ``slack`` units a query)."""
    scaled = value * _UNIT  # exact: a power-of-two scaling of a finite float
    return count * ((math.ceil(scaled) + slack) if slack > 0 else (math.floor(scaled) + slack))


def check_limbs(sums: torch.Tensor, count: int, value_range: tuple[float, float] | None, rows: int) -> None:
    """Refuses limbs that no ``count`` values can sum to (see the module docstring).

    ``sums`` are ``(2 * rows, LIMBS)`` under confidence (the values' rows, then their squares'),
    else ``(rows, LIMBS)``.
    """
    fractions = sums[:, 1:3]
    if bool(((fractions < 0) | (fractions >= 2**32)).any()):
        row = int(((fractions < 0) | (fractions >= 2**32)).any(dim=1).nonzero()[0, 0])
        raise ValueError(
            f"state_dict['_sum_per_k'] must hold carried limbs, each fraction limb in [0, 2**32); "
            f"row {row} holds {sums[row].tolist()}."
        )
    low, high = (-_WIDE, _WIDE) if value_range is None else value_range
    square = max(low * low, high * high)
    bounds = [(low, high)] * rows + [(0.0, min(square, _WIDE))] * (sums.shape[0] - rows)
    described = "values below 2**31 in magnitude" if value_range is None else f"values in [{low}, {high}]"
    for row, (total, flags, (least, most)) in enumerate(
        zip(limb_totals(sums), sums[:, LIMBS - 1].tolist(), bounds, strict=True)
    ):
        kind = "sum" if row < rows else "sum of squares"
        flagless = least > -_WIDE and most < _WIDE  # a value in range is never flagged
        if not 0 <= flags <= (0 if flagless else count):
            allowed = "0: values in range are never flagged" if flagless else f"at most the count, {count}"
            raise ValueError(
                f"state_dict['_sum_per_k'] row {row} holds a flag count of {flags}; expected {allowed}."
            )
        if total is None:  # flagged: the mean is NaN, the other limbs are not defined
            continue
        least, most = max(least, -_WIDE), min(most, _WIDE)  # wider values are flagged, not summed
        lowest, highest = _units(count, least, -_SLACK), _units(count, most, _SLACK)
        if not lowest <= total <= highest:
            raise ValueError(
                f"state_dict['_sum_per_k'] row {row} holds a {kind} of {total / _UNIT!r} over "
                f"{count} queries; {described} give one in [{count * least!r}, {count * most!r}] "
                "(to within 2**-40 a query)."
            )


def loaded_per_query(
    state: Mapping, num_values: int, count: int, value_range: tuple[float, float] | None
) -> PerQueryState:
    """The per-query entries of a state, checked against its count (copies)."""
    values, keys = state["_query_values"], state["_query_keys"]
    for key, value in (("_query_values", values), ("_query_keys", keys)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"state_dict[{key!r}] must be a tensor, got {type(value).__name__}.")
    integral = not (keys.is_floating_point() or keys.is_complex()) and keys.dtype != torch.bool
    if not values.is_floating_point() or not integral:
        raise TypeError(
            "state_dict['_query_values'] must be floating and state_dict['_query_keys'] integer, got "
            f"{values.dtype} and {keys.dtype}."
        )
    if values.ndim != 2 or values.shape[1] != num_values or keys.shape != (values.shape[0],):
        raise ValueError(
            f"state_dict holds per-query values of shape {tuple(values.shape)} and keys of shape "
            f"{tuple(keys.shape)}; expected (n, {num_values}) and (n,)."
        )
    rows = values.shape[0]
    if rows != count:
        raise ValueError(
            f"state_dict['_query_values'] holds {rows} per-query rows but state_dict['_num_examples'] "
            f"counts {count} queries; a saved state holds one row per counted query."
        )
    if value_range is not None:
        low, high = value_range
        inside = (values >= low - 2.0**-40) & (values <= high + 2.0**-40)  # False for NaN
        if not bool(inside.all()):
            shown = values[~inside][:5].tolist()
            raise ValueError(f"state_dict['_query_values'] must lie in [{low}, {high}], got {shown}.")
    arrived, user_keys = state["_queries_arrived"], state["_user_keys"]
    arrived = loaded_count(arrived, "_queries_arrived")
    if user_keys is not None and not isinstance(user_keys, bool):
        raise TypeError(f"state_dict['_user_keys'] must be None, True or False, got {user_keys!r}.")
    if arrived < rows or (user_keys is None and arrived):
        raise ValueError(
            f"state_dict['_queries_arrived'] must count every query kept (at least {rows}, and 0 "
            f"before any update, when state_dict['_user_keys'] is None), got {arrived}."
        )
    keys = keys.to(torch.int64)
    if user_keys is False and rows and not (int(keys.min()) >= 0 and int(keys.max()) < arrived):
        raise ValueError(
            f"state_dict['_query_keys'] are arrival indices (state_dict['_user_keys'] is False): they "
            f"must lie in [0, {arrived}), got [{int(keys.min())}, {int(keys.max())}]."
        )
    distinct = keys.unique()
    if user_keys is False and distinct.numel() != rows:  # given ids may repeat; arrivals never do
        repeated = distinct[torch.bincount(torch.searchsorted(distinct, keys)) > 1][:5].tolist()
        raise ValueError(
            f"state_dict['_query_keys'] are arrival indices (state_dict['_user_keys'] is False), one "
            f"per query: {repeated} come more than once."
        )
    return PerQueryState(values.detach().to(torch.float64).clone(), keys.detach().clone(), arrived, user_keys)


def saved_state(metric) -> OrderedDict:
    """What ``metric.state_dict()`` saves of one process: copies of the sums and count, its
    ``settings()``, the kept per-query values and the held-back rows of the flat form."""
    # Copies, so that later updates never change a state the user saved.
    state = OrderedDict((key, getattr(metric, key).clone()) for key in metric._state_dict_all_req_keys)
    state[_SETTINGS] = metric.settings()
    if metric._keeps_values:
        state["_query_values"] = (
            torch.cat(metric._query_values) if metric._query_values else torch.zeros((0, metric.num_values))
        ).to(torch.float64)
        state["_query_keys"] = (
            torch.cat(metric._query_keys) if metric._query_keys else torch.zeros(0, dtype=torch.int64)
        )
        state["_queries_arrived"] = metric._queries_arrived
        state["_user_keys"] = metric._user_keys
    state.update(held_to_state(metric._held))
    return state


def checked_state(metric, state_dict: Mapping) -> LoadedState:
    """What ``state_dict`` loads, every entry checked first (:mod:`~ignite_ranking.metrics.state`);
    changes nothing, so that a refused state leaves the metric (or a group) as it was."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"state_dict must be a mapping, got {type(state_dict).__name__}.")
    missing = [key for key in (*metric._state_dict_all_req_keys, _SETTINGS) if key not in state_dict]
    if missing:
        raise ValueError(
            f"state_dict lacks {missing}; pass what {type(metric).__name__}.state_dict() returned."
        )
    check_tensors(state_dict)
    metric._check_settings(state_dict[_SETTINGS])
    count = loaded_count(state_dict["_num_examples"])
    sums = metric._loaded_sums(state_dict["_sum_per_k"])
    metric._check_sums(sums, count)
    per_query = None
    if metric._keeps_values:
        kept = ("_query_values", "_query_keys", "_queries_arrived", "_user_keys")
        if any(key not in state_dict for key in kept):
            raise ValueError(
                f"state_dict lacks the per-query values that this {type(metric).__name__} keeps "
                "(per_query=True, or an aggregation other than 'mean'); pass what such a "
                "metric's state_dict() returned."
            )
        per_query = loaded_per_query(state_dict, metric.num_values, count, metric.value_range)
        if per_query.user_keys and not metric._per_query:
            raise ValueError(
                "state_dict['_user_keys'] says the queries came with query_ids, which only a metric "
                f"created with per_query=True takes; it is not a saved state of this {type(metric).__name__}."
            )
    held = held_from_state(state_dict)
    if held is not None and not metric.takes_flat:
        raise ValueError(
            f"state_dict holds held-back rows of the flat form, which {type(metric).__name__} does "
            "not take; it is not a saved state of this metric."
        )
    return LoadedState(sums, count, per_query, held)


def assign_state(metric, state: LoadedState) -> None:
    """Loads a state that :func:`checked_state` returned (nothing here can fail)."""
    metric._sum_per_k = state.sums.to(metric._device)
    metric._num_examples = torch.tensor(state.count, dtype=torch.int64, device=metric._device)
    metric._reset_per_query()
    if state.per_query is not None:
        metric._query_values = [state.per_query.values]
        metric._query_keys = [state.per_query.keys]
        metric._queries_arrived = state.per_query.arrived
        metric._user_keys = state.per_query.user_keys
    metric._held = state.held


def loaded_sums(sums: object, rows: int) -> torch.Tensor:
    """The sums of a saved state as limbs (a copy), refusing a wrong type or shape.

    A state saved before the sums were exact holds float64 sums, one per cutoff: they are
    converted (exactly, for sums whose bits stop at 2**-64, which covers every sum of values
    that are multiples of 2**-64; otherwise to the nearest multiple of it).
    """
    if not isinstance(sums, torch.Tensor) or sums.is_complex() or sums.dtype == torch.bool:
        shown = sums.dtype if isinstance(sums, torch.Tensor) else type(sums).__name__
        raise TypeError(f"state_dict['_sum_per_k'] must be a tensor of sums, got {shown}.")
    if sums.is_floating_point():  # saved before the exact sums
        if sums.shape != (rows,):
            raise ValueError(
                f"state_dict['_sum_per_k'] must have shape ({rows}, {LIMBS}) (or "
                f"({rows},) from an older version), got {tuple(sums.shape)}."
            )
        if not torch.isfinite(sums).all():
            raise ValueError(f"state_dict['_sum_per_k'] must be finite, got {sums.tolist()}.")
        return from_floats(sums.detach())
    if sums.dtype != torch.int64 or sums.shape != (rows, LIMBS):
        raise ValueError(
            f"state_dict['_sum_per_k'] must be int64 limbs of shape ({rows}, {LIMBS}), "
            f"one row per cutoff (and per cutoff's squares under confidence), got {sums.dtype} "
            f"of shape {tuple(sums.shape)}."
        )
    return sums.detach().clone()


def check_settings(own: Mapping, saved: object, name: str) -> None:
    """Refuses ``saved`` settings other than ``own``, those of the metric class ``name``."""
    if not isinstance(saved, Mapping):
        raise TypeError(f"state_dict['{_SETTINGS}'] must be a mapping, got {type(saved).__name__}.")
    differ = [
        f"{key} (saved {saved[key]!r}, here {own[key]!r})" if key in saved else f"{key} (not saved)"
        for key in own
        if key not in saved or saved[key] != own[key]
    ]
    differ += [f"{key} (saved {saved[key]!r}, not set here)" for key in saved if key not in own]
    if differ:
        raise ValueError(
            f"state_dict was saved by a metric with other settings than this {name}, "
            f"so its sums mean something else; differing: {', '.join(differ)}. Load it into a "
            "metric built with the same arguments."
        )


def settings_of(metric) -> dict:
    """``metric.settings()`` of a :class:`~ignite_ranking.metrics.base.RankingMetric`: its ``name``
    and the arguments that change its numbers (new ones only when set away from their default)."""
    settings = {
        "metric": metric.name,
        **{key: copy.copy(getattr(metric, key)) for key in metric._settings_keys},
    }
    if metric.judged_only:  # only when set, so that states saved before the option still load
        settings["judged_only"] = True
    if metric.confidence is not None:  # the state then holds the sums of squares too
        settings["confidence"] = metric.confidence
    if metric.empty_target_action in ("pos", "error"):  # "skip" and "neg" are ignore_zero_hits
        settings["empty_target_action"] = metric.empty_target_action
    return settings
