"""Checks on ``(y_pred, y)`` and exact relevance tests on labels of any real dtype."""

from __future__ import annotations

import math

import torch

__all__ = [
    "check_inputs",
    "check_threshold",
    "comparable_labels",
    "count_relevant",
    "normalize_top_k",
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


def comparable_labels(y: torch.Tensor, relevance_threshold: float) -> tuple[torch.Tensor, float | int]:
    """Labels and a threshold such that ``labels >= threshold`` is exactly
    ``float64(y) >= relevance_threshold``, comparing in the labels' own dtype where possible.

    Floating labels get the smallest value of their dtype that is ``>= relevance_threshold``;
    integer labels get its ceiling. Bool labels are viewed as uint8 (no copy). Only a threshold
    outside an integer dtype's range makes a float64 copy of the labels.
    """
    labels = y.view(torch.uint8) if y.dtype == torch.bool else y
    if labels.is_floating_point():
        t = torch.tensor(relevance_threshold, dtype=labels.dtype)
        if t.item() < relevance_threshold:
            t = torch.nextafter(t, torch.tensor(math.inf, dtype=labels.dtype))
        return labels, t.item()
    info = torch.iinfo(labels.dtype)
    if math.isinf(relevance_threshold) or not info.min <= math.ceil(relevance_threshold) <= info.max:
        return labels.to(torch.float64), relevance_threshold
    return labels, math.ceil(relevance_threshold)


def count_relevant(y: torch.Tensor, relevance_threshold: float) -> torch.Tensor:
    """Number of relevant labels per row, as float64 ``(batch,)``.

    Summing a boolean mask is slow on CPU, and a floating mask of the whole batch costs a large
    allocation, so the comparison is written into a small floating buffer a few rows at a time
    (about 2 MiB) and summed there. float32 counts are exact up to 2**24 items a row.
    """
    labels, threshold = comparable_labels(y, relevance_threshold)
    batch, num_items = labels.shape
    dtype = torch.float32 if num_items <= 2**24 else torch.float64
    rows = max(1, 2**19 // max(num_items, 1))
    buffer = torch.empty(min(rows, batch), num_items, dtype=dtype, device=labels.device)
    counts = torch.empty(batch, dtype=dtype, device=labels.device)
    for start in range(0, batch, rows):
        flags = buffer[: min(rows, batch - start)]
        torch.ge(labels[start : start + rows], threshold, out=flags)
        torch.sum(flags, dim=1, out=counts[start : start + rows])
    return counts.to(torch.float64)


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
