"""Checks on ``(y_pred, y)`` and the arguments, and exact relevance tests on labels of any real dtype."""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np
import torch

from . import constants

__all__ = [
    "NAN_MESSAGES",
    "ArgumentTypeError",
    "check_flag",
    "check_inputs",
    "check_threshold",
    "comparable_labels",
    "count_relevant",
    "equal_to",
    "nan_code",
    "nan_rows",
    "normalize_top_k",
    "refuse_nan",
]

_F64 = torch.float64
_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_LABEL_DTYPES = (
    torch.bool,
    torch.uint8,
    torch.uint16,
    torch.uint32,
    torch.uint64,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    *_FLOAT_DTYPES,
)
# Few CPU kernels (comparison, topk, gather) take these: their labels are compared as the next
# wider signed dtype, which holds every value.
_WIDER = {torch.uint16: torch.int32, torch.uint32: torch.int64}


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type: a ``TypeError`` that is also a ``ValueError``.

    Where Ignite's own metrics raise ``ValueError`` for a wrong type (``HitRate``'s ``top_k``)
    and others ``TypeError`` (``NDCG``'s), ``except`` clauses written for either keep working.
    """


def check_inputs(y_pred: object, y: object, *, nan: bool = True) -> None:
    """Refuses anything that is not a pair of same-shaped 2-D real tensors without NaN scores.

    ``nan=False`` leaves the NaN checks to the caller (the ranking kernel makes them on passes
    it makes anyway, see :func:`refuse_nan`).

    Raises:
        TypeError: an argument is not a dense tensor, or has a dtype we cannot rank or score.
        ValueError: the shapes, dimensions or devices differ from ``(batch, num_items)`` pairs,
            a tensor is on the ``meta`` device, ``y_pred`` or ``y`` holds NaN, or ``uint64``
            labels reach 2**63.
    """
    for name, value in (("y_pred", y_pred), ("y", y)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of shape (batch, num_items), got {type(value)}.")
        check_readable(name, value)
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
    if nan:
        refuse_nan(y_pred, y)
    if y.dtype == torch.uint64 and (y.view(torch.int64) < 0).any():
        raise ValueError(
            "y must hold uint64 labels below 2**63 (they are compared as int64), got larger ones."
        )


def refuse_nan(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    *,
    scores_seen: torch.Tensor | None = None,
    labels_seen: torch.Tensor | None = None,
    defer: bool = False,
) -> torch.Tensor | None:
    """Raises ``ValueError`` if ``y_pred`` or floating labels ``y`` hold NaN (scores first).

    ``scores_seen`` / ``labels_seen``: a tensor the caller already computed from the scores /
    labels that holds a NaN whenever they do (``torch.topk``'s best value of each row, which a
    NaN takes; the labels' row maxima): read instead of the whole tensor. Otherwise one
    reduction per row reads it (``amax`` propagates NaN).

    With ``defer``, nothing is read on the host and nothing raised: the :func:`nan_rows` codes
    are returned for the caller to refuse later (:data:`NAN_MESSAGES`); otherwise None.
    """
    if y_pred.numel() == 0:
        return None
    if defer:
        return nan_rows(y_pred, y, scores_seen=scores_seen, labels_seen=labels_seen)
    labels_nan = y.is_floating_point() and bool(
        torch.isnan(y.amax(dim=1) if labels_seen is None else labels_seen).any()
    )
    # A NaN label found on the way: the scores are read whole first, so that the message is the
    # one a full check gives.
    if bool(torch.isnan(y_pred.amax(dim=1) if scores_seen is None or labels_nan else scores_seen).any()):
        raise ValueError(NAN_MESSAGES[2])
    if labels_nan:
        raise ValueError(NAN_MESSAGES[1])
    return None


NAN_MESSAGES = {
    2: "y_pred must not contain NaN; mask items with -inf instead.",
    1: "y must not contain NaN labels.",
}
"""The refusals of :func:`refuse_nan` by the code :func:`nan_rows` gives them."""


def nan_rows(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    *,
    scores_seen: torch.Tensor | None = None,
    labels_seen: torch.Tensor | None = None,
) -> torch.Tensor:
    """``(batch,)`` int64 codes, read on the device: 2 for a row with a NaN score, else 1 for a
    row with a NaN label, else 0 (``scores_seen``, ``labels_seen`` as :func:`refuse_nan`). Where
    the labels cannot be NaN (not floating), bool flags of the NaN scores, each standing for
    code 2 (:func:`nan_code`): one launch less."""
    scores = torch.isnan(y_pred.amax(dim=1) if scores_seen is None else scores_seen)
    if not y.is_floating_point():
        return scores
    labels = torch.isnan(y.amax(dim=1) if labels_seen is None else labels_seen)
    return torch.where(scores, constants.scalar(2, torch.int64, scores.device), labels)


def nan_code(codes: torch.Tensor) -> int:
    """What one :func:`nan_rows` flag or code of ``codes``' dtype stands for: 2 for a bool flag."""
    return 2 if codes.dtype == torch.bool else 1


def check_readable(name: str, value: torch.Tensor) -> None:
    """Refuses tensors whose values the kernels cannot read: sparse layouts and the meta device."""
    if value.layout != torch.strided:
        raise TypeError(
            f"{name} must be a dense (strided) tensor, got layout {value.layout}; use .to_dense()."
        )
    if value.is_meta:
        raise ValueError(f"{name} is on the meta device, which holds no values; pass a tensor with data.")


def comparable_labels(y: torch.Tensor, relevance_threshold: float) -> tuple[torch.Tensor, float | int]:
    """Labels and a threshold such that ``labels >= threshold`` is exactly ``y >= relevance_threshold``
    on the labels' stored values, comparing in the labels' own dtype where possible.

    Floating labels get the smallest value of their dtype that is ``>= relevance_threshold``;
    integer labels get its ceiling, so they compare exactly also past 2**53. Bool labels are
    viewed as uint8 and uint64 as int64 (no copy; :func:`check_inputs` refuses values of 2**63
    or more), uint16/uint32 labels are widened to int32/int64. Only a threshold above an integer
    dtype's range (nothing is relevant) makes a float64 copy of the labels.
    """
    labels = y.view(torch.uint8) if y.dtype == torch.bool else y
    if labels.dtype == torch.uint64:
        labels = labels.view(torch.int64)
    elif labels.dtype in _WIDER:
        labels = labels.to(_WIDER[labels.dtype])
    if labels.is_floating_point():
        return labels, _float_threshold(relevance_threshold, labels.dtype)
    info = torch.iinfo(labels.dtype)
    if relevance_threshold <= info.min:
        return labels, info.min  # everything is relevant
    if relevance_threshold > info.max:
        return labels.to(torch.float64), math.inf  # nothing is
    return labels, math.ceil(relevance_threshold)


def equal_to(y: torch.Tensor, value: int) -> torch.Tensor:
    """``(y == value)`` as numbers (``ignore_index``'s test): all False where no value of ``y``'s
    dtype equals ``value`` (-1 or 256 for uint8 labels, 2**24 + 1 for float32), where torch's
    ``y == value`` would compare with ``value`` cast to the dtype, wrapped or rounded."""
    if not _holds(y.dtype, value):
        return torch.zeros_like(y, dtype=torch.bool)
    return y == value


@functools.lru_cache(maxsize=64)
def _holds(dtype: torch.dtype, value: int) -> bool:
    """Whether ``dtype`` stores the integer ``value`` exactly (worked out on the host)."""
    if dtype == torch.bool:
        return value in (0, 1)
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        return info.min <= value <= info.max
    magnitude = abs(value)
    if magnitude == 0:
        return True
    odd = magnitude >> ((magnitude & -magnitude).bit_length() - 1)  # without its trailing zeros
    digits = 1 - int(math.log2(torch.finfo(dtype).eps))  # significand bits: 11 for float16
    return magnitude <= torch.finfo(dtype).max and odd.bit_length() <= digits


@functools.lru_cache(maxsize=64)
def _float_threshold(relevance_threshold: float, dtype: torch.dtype) -> float:
    """The smallest value of ``dtype`` that is ``>= relevance_threshold`` (worked out on the host,
    once per threshold and dtype)."""
    t = torch.tensor(relevance_threshold, dtype=dtype)
    if t.item() < relevance_threshold:
        t = torch.nextafter(t, torch.tensor(math.inf, dtype=dtype))
    return t.item()


def count_relevant(y: torch.Tensor, relevance_threshold: float, whole: bool = False) -> torch.Tensor:
    """Number of relevant labels per row, as float64 ``(batch,)``.

    Summing a boolean mask is slow on CPU, and a floating mask of the whole batch costs a large
    allocation, so the comparison is written into a small floating buffer a few rows at a time
    (about 2 MiB) and summed there. float32 counts are exact up to 2**24 items a row. With
    ``whole`` (the generic kernels: a device sums a mask as fast as anything), one comparison and
    one sum of the whole batch, two launches whatever its size.
    """
    labels, threshold = comparable_labels(y, relevance_threshold)
    batch, num_items = labels.shape
    if whole:
        return torch.ge(labels, threshold).sum(dim=1, dtype=torch.float64)
    dtype = torch.float32 if num_items <= 2**24 else torch.float64
    rows = max(1, 2**19 // max(num_items, 1))
    buffer = torch.empty(min(rows, batch), num_items, dtype=dtype, device=labels.device)
    counts = torch.empty(batch, dtype=dtype, device=labels.device)
    for start in range(0, batch, rows):
        flags = buffer[: min(rows, batch - start)]
        torch.ge(labels[start : start + rows], threshold, out=flags)
        torch.sum(flags, dim=1, out=counts[start : start + rows])
    return counts.to(torch.float64)


def _is_int(value: object) -> bool:
    """A Python or NumPy integer, not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def normalize_top_k(top_k: object) -> list[int]:
    """Cutoffs as an ascending list of distinct positive ints.

    Python and NumPy integers are accepted, bools are not. There is no ``top_k=None`` ("every
    item", as torchmetrics has it): a metric's cutoffs name its values (``mrr@10``) and set how
    deep it ranks, so a k at least as long as the longest ranking stands for every item (and
    P@k still divides by that k). None is refused with a message saying so.

    Raises:
        ArgumentTypeError: ``top_k`` is not an int or a list/tuple of ints (a ``TypeError``,
            and a ``ValueError`` as Ignite's ``HitRate`` raises).
        ValueError: it is empty, or holds a value below 1.
    """
    if top_k is None:
        raise ArgumentTypeError(
            "top_k must be a positive int or a list of positive ints, got None; there is no "
            "top_k=None ('every item'): pass a k at least the length of the longest ranking, which "
            "sees every item (Precision@k still divides by k: Precision(None) is the precision of "
            "each whole ranking), or use RPrecision for R-Precision."
        )
    values = [top_k] if _is_int(top_k) else top_k
    if not isinstance(values, (list, tuple)):
        raise ArgumentTypeError(
            f"top_k must be a positive int or a list of positive ints, got {type(top_k).__name__}."
        )
    if not values:
        raise ValueError("top_k must hold at least one positive int, got an empty list.")
    for k in values:
        if not _is_int(k):
            raise ArgumentTypeError(
                f"top_k must hold positive ints only, got {k!r} of type {type(k).__name__}."
            )
        if k < 1:
            raise ValueError(f"top_k must hold positive ints only, got {k}.")
    return sorted({int(k) for k in values})


def check_threshold(relevance_threshold: object) -> float:
    """``relevance_threshold`` as a float; takes Python and NumPy numbers, refuses bools and NaN."""
    if isinstance(relevance_threshold, (bool, np.bool_)) or not isinstance(relevance_threshold, numbers.Real):
        raise TypeError(
            f"relevance_threshold must be a real number, got {type(relevance_threshold).__name__}."
        )
    if math.isnan(relevance_threshold):
        raise ValueError("relevance_threshold must be a real number, got nan.")
    return float(relevance_threshold)


def check_confidence(confidence: object) -> float | None:
    """A confidence level for intervals: None (no interval) or a real number in (0, 1)."""
    if confidence is None:
        return None
    if isinstance(confidence, (bool, np.bool_)) or not isinstance(confidence, numbers.Real):
        raise TypeError(f"confidence must be None or a float in (0, 1), got {confidence!r}.")
    if not 0 < float(confidence) < 1:
        raise ValueError(f"confidence must be in (0, 1), such as 0.95, got {confidence!r}.")
    return float(confidence)


def check_flag(name: str, value: object) -> bool:
    """``value`` as a bool; takes Python and NumPy bools only (not 0/1, which may be a mistake)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r} of type {type(value).__name__}.")
    return bool(value)
