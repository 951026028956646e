"""What a ranking metric publishes in ``engine.state.metrics``, and the handlers that read it.

A metric alone publishes its result under the name it is attached with (a list, one value
per cutoff); a :class:`~ignite_ranking.RankingMetrics` group one scalar per member and cutoff
(``"mrr@10"``) and, as ignite does for every mapping result, the whole dict under its name
(``metrics_result_mode``: ``"both"``, ``"flatten"`` or ``"named"``). Two metrics attached to
one engine that would write the same key are refused at attach, and ignite's
``RunningAverage``, whose arithmetic takes one number, is refused a metric of several values
at its first iteration with what to use instead.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping

from ignite.engine import Engine
from ignite.metrics import Metric

__all__ = ["RESULT_MODES", "check_keys", "check_result_mode", "published_keys", "refuse_running_average"]

RESULT_MODES = ("both", "flatten", "named")  # ignite's Metric(metrics_result_mode=...)

# engine -> [(metric, name, keys)] of the ranking metrics attached to it
_ATTACHED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def check_result_mode(mode: object) -> str:
    """``metrics_result_mode`` as ignite's ``Metric`` takes it."""
    if not isinstance(mode, str) or mode not in RESULT_MODES:
        raise ValueError(f"metrics_result_mode must be one of {RESULT_MODES}, got {mode!r}.")
    return mode


def _renamed(metric, name: str) -> list[str]:
    """``metric``'s value names with its own name replaced by ``name`` ("mrr@10" -> "name@10")."""
    return [name + own[len(metric.name) :] for own in metric.value_names]


def _bounds(names: list[str]) -> list[str]:
    return [f"{name}_{side}" for name in names for side in ("low", "high")]


def published_keys(metric, name: str) -> set[str]:
    """The keys of ``engine.state.metrics`` that ``metric`` attached as ``name`` writes."""
    members = metric.__dict__.get("metrics")
    if not isinstance(members, Mapping):  # a metric alone: its list under its name
        keys = {name}
        if metric.confidence is not None:
            keys.update(_bounds(_renamed(metric, name)))
        return keys
    mode = metric._metrics_result_mode
    keys = {name} if mode in ("both", "named") else set()
    for member, m in members.items():
        own = _renamed(m, member)
        if mode != "named":
            keys.update(own)
            if m.confidence is not None:
                keys.update(_bounds(own))
    return keys


def check_keys(metric, engine: Engine, name: str) -> None:
    """Refuses to attach ``metric`` as ``name`` if another ranking metric attached to ``engine``
    publishes one of its keys (the last one to complete would silently win)."""
    keys = published_keys(metric, name)
    attached = [
        (other, other_name, other_keys)
        for other, other_name, other_keys in _ATTACHED.get(engine, [])
        if other is not metric and engine.has_event_handler(other.completed)
    ]
    for other, other_name, other_keys in attached:
        common = sorted(keys & other_keys)
        if common:
            raise ValueError(
                f"{type(metric).__name__} attached as {name!r} would publish {common} in state.metrics, "
                f"which {type(other).__name__} attached as {other_name!r} publishes too, and the last to "
                "complete would silently win. Give the members other names (RankingMetrics(val_mrr=MRR(...)) "
                "publishes 'val_mrr@10'), or build the groups with metrics_result_mode='named', which "
                "publishes each group's values only under its name (loggers log them as "
                f"'{name}/mrr@10')."
            )
    _ATTACHED[engine] = [*attached, (metric, name, keys)]


def refuse_running_average(metric: Metric, engine: Engine) -> None:
    """Refuses updates from an engine on which ``metric`` is not started, as when ignite's
    ``RunningAverage`` wraps it: it adds and scales one number per iteration, and the metric
    gives a list (or a group a dict)."""
    group = isinstance(metric.__dict__.get("metrics"), Mapping)
    if engine.has_event_handler(metric.started) or not (group or metric.top_k):  # one number: fine
        return
    several = "a dict of values" if group else "a list of values"
    raise TypeError(
        f"{type(metric).__name__} is updated by an engine it is not attached to, as by ignite's "
        f"RunningAverage, which averages one number and gets {several}. For a running value of one "
        "cutoff, wrap that value: RunningAverage(MRR([10])[0]), or RunningAverage(group['mrr@10']) for a "
        "group's key; for the exact mean of the batches so far, attach the metric with "
        "usage=SingleEpochRunningBatchWise() (not with the flat form, whose open query each compute() "
        "closes)."
    )
