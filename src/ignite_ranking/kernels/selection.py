"""The best ``k`` values of every row and their columns, and whole rows in descending order:
``torch.topk`` and ``torch.sort``, faster on CPU.

The CPU ``torch.topk`` costs a few nanoseconds an item. For rows of many thousand items,
:func:`top_k_rows` first takes the largest value of each group of a few items, one elementwise
pass over the row, keeps the ``k`` groups with the largest maxima, and takes the top ``k`` of
their items alone: an exact selection (below) at about the cost of reading the row once plus a
top-k of a tenth of it. Groups interleave (group ``j`` holds the columns ``j, j + G, j + 2G...``
of a row of ``G`` groups), so their maxima are a reduction across contiguous rows of ``G``
values, which vectorizes.

Why exact: let ``w`` be the ``k``-th largest value of a row. Every item of value ``> w`` lies in
a kept group: a group left out has ``k`` kept groups whose maxima are at least its own, each
holding an item at least that large, so an item of it above ``w`` would have ``k`` items above
it besides itself. And at most ``k`` groups hold an item ``>= w``, each with a maximum ``>= w``
that the groups without one cannot reach, so all of them are kept. The kept items thus hold
every value ``>= w``, and their top ``k`` values are the row's. NaN ranks above every value in
both ``torch.topk`` and ``amax``, so it stays selected (the kernel refuses it from the best
value of each row). Which of several equal values fill the last slots may differ from
``torch.topk``'s choice, which is unspecified too; the ranking kernel settles ties itself.
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from .backend import host_tuned
from .chunks import rows_per_chunk

__all__ = ["sort_descending", "top_k_rows"]

# Rows shorter than this take torch.topk as it is: the group pass costs as much as it saves.
_GROUPED_MIN_ITEMS = 8192
# Each kept group's items are read again: the groups are at least this many times k.
_GROUPS_PER_KEPT = 8


def top_k_rows(values: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(values, k, dim=1)`` (sorted values and their columns), on CPU through group
    maxima for long rows (module docstring) and reading rows that rise along their length
    backwards.

    For ``k <= num_items / 64`` the CPU ``torch.topk`` keeps a heap of the k best while it scans a
    row. Most items of a random row never enter it, but in a row that rises along its length
    almost every item replaces the heap's root, and the selection costs more than sorting the
    row; read backwards, the same row is the best case. A sample of about 32 evenly spaced items
    a row finds such rows; the other rows (and other devices, whose top-k has no such case) take
    ``torch.topk`` as it is.
    """
    batch, num_items = values.shape
    if not host_tuned(values) or batch == 0 or k == 0:
        return torch.topk(values, k, dim=1)
    size = _group_size(num_items, k)
    if size:
        return _by_group_maxima(values, k, size)
    if 64 * k > num_items:
        return torch.topk(values, k, dim=1)
    # Three rises in four steps of a 32-point sample: a random row rarely (0.2%, and a row read
    # backwards costs only a copy), a row sorted ascending or with a strong rising trend, always.
    # Few points: each one is a cache miss.
    sample = values[:, :: max(1, num_items // 32)]
    rising = 4 * (sample[:, 1:] > sample[:, :-1]).sum(dim=1) >= 3 * (sample.shape[1] - 1)
    if not bool(rising.any()):
        return torch.topk(values, k, dim=1)
    top_values = torch.empty(batch, k, dtype=values.dtype, device=values.device)
    top_indices = torch.empty(batch, k, dtype=torch.int64, device=values.device)
    step = rows_per_chunk(num_items)
    for start in range(0, batch, step):
        rows = slice(start, min(start + step, batch))
        flip = rising[rows]
        if not bool(flip.any()):
            top_values[rows], top_indices[rows] = torch.topk(values[rows], k, dim=1)
            continue
        chunk = torch.where(flip[:, None], values[rows].flip(1), values[rows])
        top_values[rows], found = torch.topk(chunk, k, dim=1)
        top_indices[rows] = torch.where(flip[:, None], num_items - 1 - found, found)
    return top_values, top_indices


def _group_size(num_items: int, k: int) -> int:
    """Items per group for :func:`_by_group_maxima`, or 0 where ``torch.topk`` alone is cheaper.

    Measured on CPU against ``torch.topk`` (rows of 1,000-1,000,000 items, k of 2-1,001;
    ``benchmarks/RESULTS.md``): 8 items a group up to a few hundred thousand items a row, 16
    beyond; rows shorter than ``_GROUPED_MIN_ITEMS`` gained nothing.
    """
    if num_items < _GROUPED_MIN_ITEMS:
        return 0
    size = 16 if num_items >= 1 << 18 else 8
    return size if num_items // size >= _GROUPS_PER_KEPT * k else 0


def _by_group_maxima(values: torch.Tensor, k: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The exact top ``k`` of each row from the items of its ``k`` groups of ``size`` items with
    the largest maxima (the columns past the last whole group are always read)."""
    batch, num_items = values.shape
    groups = num_items // size
    whole = groups * size
    row_stride, column_stride = values.stride()
    grouped = values.as_strided((batch, size, groups), (row_stride, groups * column_stride, column_stride))
    kept = torch.topk(grouped.amax(dim=1), k, dim=1, sorted=False).indices
    members = torch.arange(0, whole, groups, device=values.device)
    columns = (kept[:, :, None] + members).view(batch, k * size)
    if whole < num_items:
        rest = torch.arange(whole, num_items, device=values.device)
        columns = torch.cat((columns, rest.expand(batch, -1)), dim=1)
    top_values, at = torch.topk(values.gather(1, columns), k, dim=1)
    return top_values, columns.gather(1, at)


_NARROW_KEYS = (torch.int32, torch.int16, torch.int8, torch.uint8)


def sort_descending(key: torch.Tensor, stable: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """``key.sort(dim=1, descending=True, stable=stable)`` (sorted keys and their columns).

    On CPU, integer keys of at most 32 bits (the order keys of float32 and narrower scores) are
    packed with their column into one int64, ``~key << 32 | column``, whose ascending order is
    the stable descending order of the keys, and sorted by numpy without indices: its
    vectorized sort of 64-bit integers, with the packing, measured 0.7x ``torch.sort``'s time on
    rows of 100,000 items (and 0.8x of an unstable one); the order is then stable whatever
    ``stable`` says. Other keys and devices take ``torch.sort``.
    """
    num_items = key.shape[1]
    if not host_tuned(key) or key.dtype not in _NARROW_KEYS or key.numel() == 0 or num_items >= 1 << 32:
        return key.sort(dim=1, descending=True, stable=stable)
    columns = torch.arange(num_items, dtype=torch.int64)
    packed = torch.bitwise_not(key).to(torch.int64).contiguous().bitwise_left_shift_(32).bitwise_or_(columns)
    ordered = torch.from_numpy(np.sort(packed.numpy(), axis=1))
    # The high halves of the int64s: the odd int32 words on a little-endian machine, read in place.
    little = sys.byteorder == "little"
    high = ordered.view(torch.int32)[:, 1::2] if little else ordered.bitwise_right_shift(32)
    values = torch.bitwise_not(high).to(key.dtype)
    return values, ordered.bitwise_and_(0xFFFFFFFF)
