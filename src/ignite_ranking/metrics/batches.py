"""A batch of any input form, normalized once for one ranking metric or all of a group's.

:func:`split_extras` takes the extras (``query_ids``, the ``judged`` mask) off an update's
output; :func:`normalize_judged` is :func:`~ignite_ranking.kernels.forms.normalize` plus what the
unjudged-aware metrics read (the dense form's ``judged`` mask), after the checks of what the
metrics need of the form (catalog items, every item's score, item statistics).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import torch
from ignite.metrics.metric import Metric

from ..kernels import beyond, check_inputs
from ..kernels.forms import FlatRows, Normalized, Ranking, normalize
from ..kernels.judged import mark_judgements, mask_unjudged

__all__ = ["normalize_judged", "split_extras"]


def split_extras(output: object) -> tuple[object, object, object]:
    """``(output without extras, ids or None, judged mask or None)``.

    Extras come as a third element ``(y_pred, y, {"query_ids": ids, "judged": mask})``, either
    key optional.
    """
    if (
        isinstance(output, Sequence)
        and not isinstance(output, (str, bytes))
        and len(output) == 3
        and isinstance(output[2], Mapping)
    ):
        extra = output[2]
        if not extra or not set(extra) <= {"query_ids", "judged"}:
            raise ValueError(
                "the third element of an update must be a dict with 'query_ids' and/or 'judged', "
                f"got keys {sorted(extra)}"
            )
        return tuple(output[:2]), extra.get("query_ids"), extra.get("judged")
    return output, None, None


def normalize_judged(
    output: object,
    ranking: Ranking,
    judged: object,
    metrics: Sequence[Metric],
    *,
    held: FlatRows | None,
    first_query: int | None = None,
    query_ids: object = None,
) -> Normalized:
    """:func:`~ignite_ranking.kernels.forms.normalize` plus what the unjudged-aware metrics read.

    ``judged`` is the dense form's optional mask (bool, the shape of ``y``, True = judged);
    the other forms tell unjudged items by their absence from the labels. The batch is ranked
    once for all ``metrics``; their judged flags, N and ranked scores are read off that ranking.
    """
    dense = (
        isinstance(output, Sequence)
        and not isinstance(output, (str, bytes))
        and len(output) == 2
        and isinstance(output[1], torch.Tensor)
        and output[1].layout == torch.strided
    )
    if judged is not None and not dense:
        raise ValueError(
            "judged masks go with the dense (y_pred, y) form; in the sparse-label and Retrieved forms "
            "an item absent from the labels is unjudged, and flat rows are all judged."
        )
    flat = isinstance(output, Sequence) and not isinstance(output, (str, bytes)) and len(output) == 3
    if flat and any(m.needs_items for m in metrics):
        names = ", ".join(sorted({type(m).__name__ for m in metrics if m.needs_items}))
        raise ValueError(
            f"{names} read catalog items: pass (y_pred, y) or a Retrieved, whose "
            "columns or ids are items; flat (preds, target, indexes) rows name none."
        )
    y = None
    if dense:
        y_pred, y = output
        if judged is not None:  # without a mask the batch goes through as it is (checked once)
            check_inputs(y_pred, y)
            output = (y_pred, mask_unjudged(y.detach(), judged))
            ranking = replace(ranking, labels=True)  # the judged flags are read off the labels
    normalized = normalize(
        output, ranking, held=held, hold_last=True, first_query=first_query, query_ids=query_ids
    )
    ranked = normalized.ranked
    _check_item_statistics(output, metrics)
    threshold = ranking.relevance_threshold
    if y is not None:
        nonrelevant = any(m.needs_nonrelevant for m in metrics)
        mark_judgements(ranked, y.detach(), judged, threshold, nonrelevant, ranking.ignore_index)
    if any(m.needs_scores for m in metrics) and y is None and not flat:
        raise ValueError(
            "AUC and GAUC read every item's score: pass the dense (y_pred, y) or the flat "
            "(preds, target, indexes) form."
        )
    return normalized


def _check_item_statistics(output: object, metrics: Sequence[Metric]) -> None:
    """Refuses a batch that is not over the items of a metric's item statistics (see
    :func:`~ignite_ranking.kernels.beyond.check_catalog`), before any state changes."""
    for metric in metrics:
        if metric.item_statistics is not None:
            argument, size = metric.item_statistics
            beyond.check_catalog(output, size, argument, type(metric).__name__)
