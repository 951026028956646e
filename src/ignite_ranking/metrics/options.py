"""The options the metrics share, declared once, and their checks.

:class:`RankingOptions` declares the shared keyword options and :data:`OPTION_DEFAULTS` their
defaults; each metric class says which of them it offers (``options_offered``) and which it
takes by position after its own arguments (``positional_options``, ignite's order), and
:func:`given_options` reads a call by those two, refusing the rest as Python would.
:func:`documented_signature` spells them out for ``help()`` and the API pages.

Each check returns the normalized value or raises naming the argument. The options'
combinations (:func:`checked_settings`) are checked here too, before a metric or a group sets
any of them, and the refusal that ``empty_target_action="error"`` makes of a batch
(:func:`refuse_empty_rows`).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ForwardRef, TypedDict

from ..kernels import check_confidence, check_flag, check_threshold, check_ties

if TYPE_CHECKING:
    import torch

    # For type checkers only (nothing here runs): typing has Unpack from Python 3.11.
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack  # noqa: F401 (for the metrics' **options)

__all__ = [
    "AGGREGATIONS",
    "EMPTY_TARGET_ACTIONS",
    "OPTION_DEFAULTS",
    "RankingOptions",
    "check_aggregation",
    "check_empty_target_action",
    "checked_settings",
    "documented_signature",
    "given_options",
    "refuse_empty_rows",
    "resolve_empty_target_action",
]


class RankingOptions(TypedDict, total=False):
    """The options the ranking metrics share (a metric's ``**options``); each class offers some.

    Their meaning is given once, on :class:`~ignite_ranking.MRR`.
    """

    ignore_zero_hits: bool
    relevance_threshold: float
    output_transform: Callable
    device: str | torch.device
    skip_unrolling: bool
    ties: str
    per_query: bool
    ignore_index: int | None
    judged_only: bool
    confidence: float | None
    empty_target_action: str | None
    aggregation: str | Callable


# The default of each shared option, in the order of RankingOptions.
OPTION_DEFAULTS: Mapping[str, object] = {
    "ignore_zero_hits": True,
    "relevance_threshold": 1.0,
    "output_transform": lambda x: x,
    "device": "cpu",
    "skip_unrolling": False,
    "ties": "first",
    "per_query": False,
    "ignore_index": None,
    "judged_only": False,
    "confidence": None,
    "empty_target_action": None,
    "aggregation": "mean",
}


def given_options(cls: type, args: tuple, options: Mapping[str, object]) -> dict[str, object]:
    """The options that a call of ``cls`` gave, by name: ``args`` (the positional arguments past
    the class's own) in the order of ``cls.positional_options``, then the keywords ``options``.

    Refuses in Python's words a keyword the class does not offer, an option given twice and
    too many positional arguments, in Python's order (the keywords first).
    """
    where = f"{cls.__qualname__}.__init__()"
    given = dict(zip(cls.positional_options, args, strict=False))  # too many: refused below
    for name, value in options.items():
        if name not in cls.options_offered:
            raise TypeError(f"{where} got an unexpected keyword argument '{name}'")
        if name in given:
            raise TypeError(f"{where} got multiple values for argument '{name}'")
        given[name] = value
    if len(args) > len(cls.positional_options):
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        positional = [p for p in cls.__signature__.parameters.values() if p.kind is kind]
        required = sum(p.default is inspect.Parameter.empty for p in positional)
        most, took = len(positional) + 1, len(positional) - len(cls.positional_options) + len(args) + 1
        takes = f"from {required + 1} to {most}" if required + 1 < most else most  # self counts
        raise TypeError(f"{where} takes {takes} positional arguments but {took} were given")
    return given


def documented_signature(cls: type) -> inspect.Signature:
    """The signature of ``cls(...)`` that ``help()`` and the API pages show: its ``__init__``'s own
    arguments with ``*args`` spelled out as its ``positional_options`` and ``**options`` as the
    other options it offers (keyword only, before its own keyword-only arguments)."""
    kind = inspect.Parameter
    own = list(inspect.signature(cls.__init__).parameters.values())[1:]
    positional = cls.positional_options if any(p.kind is kind.VAR_POSITIONAL for p in own) else ()
    defaults = {**OPTION_DEFAULTS, **cls.option_defaults}
    keyword = [name for name in defaults if name in cls.options_offered and name not in positional]

    def option(name: str, how: inspect._ParameterKind) -> inspect.Parameter:
        annotation = RankingOptions.__annotations__.get(name, kind.empty)
        if isinstance(annotation, ForwardRef):
            annotation = annotation.__forward_arg__
        return kind(name, how, default=defaults[name], annotation=annotation)

    return inspect.Signature(
        [
            *(p for p in own if p.kind is kind.POSITIONAL_OR_KEYWORD),
            *(option(name, kind.POSITIONAL_OR_KEYWORD) for name in positional),
            *(option(name, kind.KEYWORD_ONLY) for name in keyword),
            *(p for p in own if p.kind is kind.KEYWORD_ONLY),
        ]
    )


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
