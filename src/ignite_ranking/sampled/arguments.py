"""The arguments of the sampled-rank estimators: the names they offer and the checks that return
each argument normalized or raise naming it."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import torch

ESTIMATORS = ("sampled", "rank", "cls", "bv", "mle")
METRICS = ("mrr", "hit_rate", "recall", "precision", "ndcg", "auc")
_NEEDS_K = ("hit_rate", "recall", "precision")


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_sizes(num_items: object, num_negatives: object) -> tuple[int, int]:
    """``(n, m)`` as ints, refusing anything but ``1 <= m < n``."""
    if not _is_int(num_items):
        raise TypeError(f"num_items (the catalog size n) must be an int, got {type(num_items).__name__}.")
    if not _is_int(num_negatives):
        raise TypeError(
            f"num_negatives (m, the sampled negatives per query) must be an int, got "
            f"{type(num_negatives).__name__}."
        )
    n, m = int(num_items), int(num_negatives)
    if n < 2:
        raise ValueError(f"num_items (the catalog size n) must be at least 2, got {n}.")
    if not 1 <= m < n:
        raise ValueError(
            f"num_negatives must satisfy 1 <= m < num_items (m negatives are drawn from the "
            f"n - 1 = {n - 1} other items), got m={m} for n={n}."
        )
    return n, m


def check_metric(metric: object, k: object) -> tuple[str, int | None]:
    """``(metric, k)`` checked: a known name, and a cutoff where the metric needs or allows one."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(map(repr, METRICS))}, got {metric!r}.")
    if k is not None:
        if not _is_int(k):
            raise TypeError(f"k must be a positive int or None, got {type(k).__name__}.")
        if k < 1:
            raise ValueError(f"k must be a positive int or None, got {k}.")
        k = int(k)
    if metric in _NEEDS_K and k is None:
        raise ValueError(f"metric={metric!r} needs a cutoff k, got k=None.")
    if metric == "auc" and k is not None:
        raise ValueError(f"metric='auc' has no cutoff; pass k=None, got k={k}.")
    return metric, k  # type: ignore[return-value]


def check_estimator(estimator: object, gamma: object) -> tuple[str, float]:
    """``(estimator, gamma)`` checked: a known estimator and ``0 <= gamma <= 1``."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(map(repr, ESTIMATORS))}, got {estimator!r}.")
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
        raise TypeError(f"gamma must be a real number in [0, 1], got {type(gamma).__name__}.")
    if not 0.0 <= float(gamma) <= 1.0:  # also refuses NaN
        raise ValueError(f"gamma must be in [0, 1], got {gamma!r}.")
    return estimator, float(gamma)  # type: ignore[return-value]


def _check_flag(name: str, value: object) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r} of type {type(value).__name__}.")
    return bool(value)


def check_histogram(histogram: object, num_negatives: int) -> torch.Tensor:
    """The histogram as float64 ``(m + 1,)``: non-negative, finite counts with a positive sum."""
    if isinstance(histogram, torch.Tensor):
        values = histogram.detach().to(device="cpu")
    elif isinstance(histogram, (np.ndarray, Sequence)) and not isinstance(histogram, (str, bytes)):
        values = torch.as_tensor(np.asarray(histogram))
    else:
        raise TypeError(
            f"histogram must be a tensor, array or list of m + 1 = {num_negatives + 1} counts, got "
            f"{type(histogram).__name__}."
        )
    if values.dtype == torch.bool or values.is_complex():
        raise TypeError(f"histogram must hold real counts, got dtype {values.dtype}.")
    if values.ndim != 1 or values.shape[0] != num_negatives + 1:
        raise ValueError(
            f"histogram must have m + 1 = {num_negatives + 1} entries (one per sampled rank "
            f"1 .. m + 1), got shape {tuple(values.shape)}."
        )
    values = values.to(torch.float64)
    if not bool(torch.isfinite(values).all()) or bool((values < 0).any()):
        raise ValueError("histogram must hold finite, non-negative counts.")
    if float(values.sum()) <= 0:
        raise ValueError("histogram must count at least one query, got only zeros.")
    return values
