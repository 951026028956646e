"""The checks of a metric's options: each returns the normalized value or raises naming the argument.

The options' combinations (:func:`checked_settings`) are checked here too, before a metric or a
group sets any of them, and the refusal that ``empty_target_action="error"`` makes of a batch
(:func:`refuse_empty_rows`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..kernels import check_confidence, check_flag, check_threshold, check_ties

__all__ = [
    "AGGREGATIONS",
    "EMPTY_TARGET_ACTIONS",
    "check_aggregation",
    "check_empty_target_action",
    "checked_settings",
    "refuse_empty_rows",
    "resolve_empty_target_action",
]

# What to do with a query that ``ignore_zero_hits=True`` would leave out (torchmetrics' names):
# leave it out, count it as 0, count it as 1, or refuse the update.
EMPTY_TARGET_ACTIONS = ("skip", "neg", "pos", "error")
# The named aggregations of the per-query values; a callable is the other choice.
AGGREGATIONS = ("mean", "median", "min", "max")


def check_empty_target_action(action: object) -> str | None:
    """``empty_target_action`` if it is None or one of :data:`EMPTY_TARGET_ACTIONS`, else raises."""
    if action is None:
        return None
    if not isinstance(action, str):
        raise TypeError(
            f"empty_target_action must be None or one of {list(EMPTY_TARGET_ACTIONS)}, got {action!r} "
            f"of type {type(action).__name__}."
        )
    if action not in EMPTY_TARGET_ACTIONS:
        raise ValueError(f"empty_target_action must be one of {list(EMPTY_TARGET_ACTIONS)}, got {action!r}.")
    return action


def check_aggregation(aggregation: object) -> str | Callable:
    """``aggregation`` if it is one of :data:`AGGREGATIONS` or a callable, else raises."""
    if isinstance(aggregation, str):
        if aggregation not in AGGREGATIONS:
            raise ValueError(
                f"aggregation must be one of {list(AGGREGATIONS)} or a callable, got {aggregation!r}."
            )
        return aggregation
    if not callable(aggregation):
        raise TypeError(
            f"aggregation must be one of {list(AGGREGATIONS)} or a callable over a 1-D tensor of "
            f"per-query values, got {aggregation!r} of type {type(aggregation).__name__}."
        )
    return aggregation


def resolve_empty_target_action(ignore_zero_hits: bool | None, action: str | None) -> str:
    """The action that ``ignore_zero_hits`` and ``empty_target_action`` (either may be None: not
    given; both checked) say together, refusing two that disagree: True is "skip", False "neg"."""
    implied = None if ignore_zero_hits is None else ("skip" if ignore_zero_hits else "neg")
    if action is None:
        if implied is None:
            raise ValueError("give ignore_zero_hits or empty_target_action")
        return implied
    if implied is not None and implied != action:
        raise ValueError(
            f"ignore_zero_hits={ignore_zero_hits} and empty_target_action={action!r} disagree: "
            "ignore_zero_hits=True is empty_target_action='skip' and False is 'neg'; pass "
            "empty_target_action alone."
        )
    return action


def checked_settings(metric, settings: dict) -> dict:
    """The checked ``settings`` of ``metric`` (a :class:`~ignite_ranking.metrics.base.RankingMetric`;
    see its ``_set_settings``), refusing a combination the metric does not define; sets nothing."""
    checks = {
        "ignore_zero_hits": lambda v: check_flag("ignore_zero_hits", v),
        "empty_target_action": check_empty_target_action,
        "relevance_threshold": check_threshold,
        "ties": check_ties,
        "confidence": check_confidence,
        "aggregation": check_aggregation,
    }
    checked = {key: checks[key](value) for key, value in settings.items()}
    if "ignore_zero_hits" in checked or "empty_target_action" in checked:
        action = resolve_empty_target_action(
            checked.pop("ignore_zero_hits", None), checked.pop("empty_target_action", None)
        )
        checked["empty_target_action"] = action
        checked["ignore_zero_hits"] = action == "skip"
    aggregation = checked.get("aggregation", metric.__dict__.get("aggregation", "mean"))
    confidence = checked.get("confidence", metric.__dict__.get("confidence"))
    if not (isinstance(aggregation, str) and aggregation == "mean"):
        if not metric.has_per_query_values:
            raise ValueError(
                f"{type(metric).__name__} pools its queries: it has no per-query values to "
                f"aggregate; got aggregation={aggregation!r}."
            )
        if confidence is not None:
            raise ValueError(
                f"confidence gives intervals of the mean; it does not go with "
                f"aggregation={aggregation!r} (got confidence={confidence!r})."
            )
    ties = checked.get("ties", metric.__dict__.get("ties", "first"))
    if ties == "average" and metric.judged_only:
        raise ValueError("judged_only=True is not defined under ties='average'; got ties='average'.")
    if ties == "average" and metric.without_average:
        raise ValueError(f"{type(metric).__name__} {metric.without_average}; got ties='average'.")
    if checked.get("confidence") is not None and not metric.has_per_query_values:
        raise ValueError(
            f"{type(metric).__name__} pools its queries: it has no per-query values to give an "
            f"interval of; got confidence={checked['confidence']!r}."
        )
    return checked


def refuse_empty_rows(metric, empty, flat_query_ids) -> None:
    """Raises ``ValueError`` if a row of the ``(batch,)`` mask ``empty`` is set (a query that
    ``metric.counted`` rejects), naming the first by its id (``flat_query_ids``), else by its row
    in the batch: the refusal that ``empty_target_action="error"`` asks for."""
    if not bool(empty.any()):
        return
    row = int(empty.nonzero()[0, 0])
    where = (
        f"the query at row {row} of the batch"
        if flat_query_ids is None
        else f"query {int(flat_query_ids[row])} (its indexes value)"
    )
    raise ValueError(
        f"{type(metric).__name__} was created with empty_target_action='error', and {where} "
        f"{metric.empty_rule.format(threshold=metric.relevance_threshold)}; nothing was added. "
        "Pass empty_target_action='skip', 'neg' or 'pos' to accept such queries."
    )
