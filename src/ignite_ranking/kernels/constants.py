"""Read-only tensors built once per device and reused by every update.

An update on an accelerator launches a kernel for every tensor it builds, however small (a
Python scalar made a tensor, an ``arange`` of the batch's rows), and a tensor of Python values
(the cutoffs) is copied from the host. These are built on first use and cached per (values,
dtype, device); callers must not write to them.
"""

from __future__ import annotations

import functools
import math

import torch

__all__ = ["arange", "listed", "scalar"]


def scalar(value: float | int | bool, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A 0-dim tensor holding ``value`` (read only)."""
    return _scalar(value, math.copysign(1.0, value), dtype, device)  # the sign tells -0.0 from 0.0


@functools.lru_cache(maxsize=64)
def _scalar(value: float | int | bool, sign: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.tensor(value, dtype=dtype, device=device)


@functools.lru_cache(maxsize=16)
def arange(start: int, end: int, step: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``torch.arange(start, end, step)`` (read only): a batch's rows, a row's columns."""
    return torch.arange(start, end, step, dtype=dtype, device=device)


@functools.lru_cache(maxsize=64)
def listed(values: tuple[float | int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``values`` as a 1-dim tensor (read only): a metric's cutoffs, or their columns."""
    return torch.tensor(values, dtype=dtype, device=device)
