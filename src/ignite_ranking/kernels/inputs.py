"""Checks on ``(y_pred, y)`` and exact relevance tests on labels of any real dtype."""

from __future__ import annotations

import math

import torch

__all__ = [
    "as_label_tensor",
    "check_inputs",
    "check_threshold",
    "count_relevant",
    "normalize_top_k",
    "relevance_mask",
    "threshold_for",
]

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_LABEL_DTYPES = (
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    *_FLOAT_DTYPES,
)


def check_inputs(y_pred: object, y: object) -> None:
    """Refuses anything that is not a pair of same-shaped 2-D real tensors without NaN scores.

    Raises:
        TypeError: an argument is not a tensor, or has a dtype we cannot rank or score.
        ValueError: the shapes, dimensions or devices differ from ``(batch, num_items)`` pairs,
            or ``y_pred`` or ``y`` holds NaN.
    """
    for name, value in (("y_pred", y_pred), ("y", y)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of shape (batch, num_items), got {type(value)}.")
    assert isinstance(y_pred, torch.Tensor) and isinstance(y, torch.Tensor)
    if y_pred.dtype not in _FLOAT_DTYPES:
        raise TypeError(
            f"y_pred must hold floating scores (float16, bfloat16, float32 or float64), got {y_pred.dtype}."
        )
    if y.dtype not in _LABEL_DTYPES:
        raise TypeError(f"y must hold real labels (bool, integer or floating), got {y.dtype}.")
    if y_pred.ndim != 2:
        raise ValueError(
            f"y_pred must be 2-D with shape (batch, num_items), got shape {tuple(y_pred.shape)}."
        )
    if y.shape != y_pred.shape:
        raise ValueError(
            f"y must have the same shape as y_pred, got y_pred {tuple(y_pred.shape)} and y {tuple(y.shape)}."
        )
    if y.device != y_pred.device:
        raise ValueError(f"y_pred and y must be on one device, got {y_pred.device} and {y.device}.")
    if y_pred.numel() == 0:
        return
    # amax propagates NaN, so one cheap reduction per row finds any NaN.
    if torch.isnan(y_pred.amax(dim=1)).any():
        raise ValueError("y_pred must not contain NaN; mask items with -inf instead.")
    if y.is_floating_point() and torch.isnan(y.amax(dim=1)).any():
        raise ValueError("y must not contain NaN labels.")


def threshold_for(y: torch.Tensor, relevance_threshold: float) -> float | int:
    """The smallest value of ``y``'s dtype that is ``>= relevance_threshold``.

    Comparing labels to it in their own dtype gives exactly ``float64(y) >= relevance_threshold``,
    without casting the label tensor.
    """
    if y.is_floating_point():
        t = torch.tensor(relevance_threshold, dtype=y.dtype)
        if t.item() < relevance_threshold:
            t = torch.nextafter(t, torch.tensor(math.inf, dtype=y.dtype))
        return t.item()
    if math.isinf(relevance_threshold):
        return relevance_threshold
    return math.ceil(relevance_threshold)


def as_label_tensor(y: torch.Tensor) -> torch.Tensor:
    """Labels in a dtype that ``topk`` and comparisons accept (bool becomes uint8, no copy)."""
    return y.view(torch.uint8) if y.dtype == torch.bool else y


def relevance_mask(y: torch.Tensor, relevance_threshold: float) -> torch.Tensor:
    """Boolean mask of relevant labels: ``float64(y) >= relevance_threshold``."""
    return as_label_tensor(y) >= threshold_for(y, relevance_threshold)


def count_relevant(y: torch.Tensor, relevance_threshold: float) -> torch.Tensor:
    """Number of relevant labels per row, as float64 ``(batch,)``.

    Writing the comparison straight into a floating buffer and summing that is several times
    faster on CPU than summing a boolean mask; float32 counts are exact up to 2**24 items a row.
    """
    labels = as_label_tensor(y)
    dtype = torch.float32 if labels.shape[1] <= 2**24 else torch.float64
    flags = torch.empty(labels.shape, dtype=dtype, device=labels.device)
    torch.ge(labels, threshold_for(y, relevance_threshold), out=flags)
    return flags.sum(dim=1, dtype=torch.float64)


def normalize_top_k(top_k: object) -> list[int]:
    """Cutoffs as an ascending list of distinct positive ints.

    Raises:
        TypeError: ``top_k`` is not an int or a list/tuple of ints (bools are refused).
        ValueError: it is empty, or holds a value below 1.
    """
    values = [top_k] if isinstance(top_k, int) and not isinstance(top_k, bool) else top_k
    if not isinstance(values, (list, tuple)):
        raise TypeError(
            f"top_k must be a positive int or a list of positive ints, got {type(top_k).__name__}."
        )
    if not values:
        raise ValueError("top_k must hold at least one positive int, got an empty list.")
    for k in values:
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"top_k must hold positive ints only, got {k!r} of type {type(k).__name__}.")
        if k < 1:
            raise ValueError(f"top_k must hold positive ints only, got {k}.")
    return sorted(set(values))


def check_threshold(relevance_threshold: object) -> float:
    """``relevance_threshold`` as a float; refuses bools, non-numbers and NaN."""
    if isinstance(relevance_threshold, bool) or not isinstance(relevance_threshold, (int, float)):
        raise TypeError(
            f"relevance_threshold must be a real number, got {type(relevance_threshold).__name__}."
        )
    if math.isnan(relevance_threshold):
        raise ValueError("relevance_threshold must be a real number, got nan.")
    return float(relevance_threshold)
