"""Relevant items among each row's top R, without ranking the row (R-Precision).

R-Precision reads one number per row: how many of the ``R`` best-ranked items are relevant, ``R``
the row's number of relevant items. That needs no order, only the ``R``-th best score ``v``: the
items above ``v`` are all within the top R, and ``m = R - (items above v)`` of the block of items
scoring exactly ``v`` fill the remaining ranks, chosen by the tie policy:

- ``"first"`` / ``"last"``: the ``m`` tied items of lowest / highest index;
- ``"optimistic"`` / ``"pessimistic"``: relevant / non-relevant tied items first, so
  ``min(m, r)`` / ``max(0, m - (n - r))`` of them are relevant (``n`` tied items, ``r`` relevant);
- ``"average"``: ``m r / n`` in expectation over the orders of the block.

Finding ``v`` is a selection (linear time, ``numpy.partition`` a row at a time for long rows
on CPU; a sort of a few rows at a time for short rows and on other devices), and the rest are
comparisons and counts over a few rows at a time, so the cost is a fraction of sorting the rows
and the temporaries stay small however deep R is.
"""

from __future__ import annotations

import numpy as np
import torch

from .backend import host_tuned
from .boundary import row_chunks
from .chunks import rows_per_chunk

__all__ = ["relevant_within_r"]

# Rows at least this long are partitioned one at a time on CPU; shorter rows are sorted a few
# thousand at a time (a Python loop over many short rows would cost more than their sort).
_PARTITION_FROM = 4096
# numpy selects in these dtypes directly; others (bfloat16) are widened to float32, exactly.
_NUMPY_SCORES = (torch.float16, torch.float32, torch.float64)


def relevant_within_r(
    scores: torch.Tensor,
    labels: torch.Tensor,
    threshold: float | int,
    num_relevant: torch.Tensor,
    ties: str,
) -> torch.Tensor:
    """Relevant items at ranks ``1..R`` of each row, ``R = num_relevant``: ``(batch,)`` float64.

    Args:
        scores: ``(batch, num_items)`` floating scores without NaN.
        labels: ``(batch, num_items)`` labels; an item is relevant iff its label is ``>= threshold``.
        threshold: see ``labels``.
        num_relevant: ``(batch,)`` float64 count of each row's relevant items.
        ties: a tie policy; under ``"average"`` the value is the expected count.

    Example:
        >>> import torch
        >>> scores = torch.tensor([[0.9, 0.5, 0.5, 0.5, 0.1]])
        >>> labels = torch.tensor([[0, 0, 1, 0, 1]])
        >>> R = torch.tensor([2.0])  # rank 1: 0.9; rank 2: one of the three 0.5s
        >>> [relevant_within_r(scores, labels, 1, R, t).item() for t in ("first", "last", "average")]
        [0.0, 0.0, 0.3333333333333333]
        >>> [relevant_within_r(scores, labels, 1, R, t).item() for t in ("optimistic", "pessimistic")]
        [1.0, 0.0]
    """
    batch, num_items = scores.shape
    if batch == 0 or num_items == 0:
        return torch.zeros(batch, dtype=torch.float64, device=scores.device)
    r = num_relevant.to(torch.int64).clamp(min=1)  # a row without relevant items scores 0 below
    value = _rth_largest(scores, r)
    above, relevant_above, tied, relevant_tied = _counts(scores, labels, threshold, value)
    m = r.to(torch.float64) - above  # tied slots within the top R, 1 <= m <= tied
    if ties == "average":
        inside = m * relevant_tied / tied
    elif ties == "optimistic":
        inside = torch.minimum(m, relevant_tied)
    elif ties == "pessimistic":
        inside = (m - (tied - relevant_tied)).clamp(min=0.0)
    else:
        inside = _by_index(scores, labels, threshold, value, m, tied, relevant_tied, ties == "last")
    return torch.where(num_relevant > 0, relevant_above + inside, torch.zeros_like(inside))


def _rth_largest(scores: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """``(batch,)``: the ``r[i]``-th largest score of each row ``i`` (``1 <= r[i] <= num_items``)."""
    if host_tuned(scores) and scores.shape[1] >= _PARTITION_FROM:
        return _by_partition(scores, r)
    return _by_sort(scores, r)


def _by_partition(scores: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """``_rth_largest`` on CPU: ``numpy.partition`` of each row, a linear-time selection."""
    ascending = (scores.shape[1] - r).tolist()  # 0-based position in ascending order
    widen = scores.dtype not in _NUMPY_SCORES
    found = []
    for row, k in zip(scores, ascending, strict=True):
        values = (row.to(torch.float32) if widen else row).numpy()
        found.append(np.partition(values, k)[k])
    return torch.from_numpy(np.asarray(found)).to(scores.dtype)


def _by_sort(scores: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """``_rth_largest`` by sorting a few rows at a time (short rows, and devices, where sorting
    is fast and a loop over rows is not)."""
    batch, num_items = scores.shape
    value = torch.empty(batch, dtype=scores.dtype, device=scores.device)
    step = rows_per_chunk(num_items)
    for start in range(0, batch, step):
        rows = slice(start, start + step)
        ordered = scores[rows].sort(dim=1, descending=True).values
        value[rows] = ordered.gather(1, (r[rows] - 1)[:, None]).squeeze(1)
    return value


def _counts(scores, labels, threshold, value):
    """Items above ``value``, relevant ones among them, items equal to it, relevant ones among
    them: four ``(batch,)`` float64 counts, summed in small floating buffers (a boolean sum casts
    to int64 first; float32 counts are exact up to 2**24 items a row)."""
    batch, num_items = scores.shape
    dtype = torch.float32 if num_items <= 2**24 else torch.float64
    step = min(rows_per_chunk(num_items), batch)
    flags = torch.empty(step, num_items, dtype=dtype, device=scores.device)
    hits = torch.empty_like(flags)
    counts = torch.empty(4, batch, dtype=dtype, device=scores.device)
    for start in range(0, batch, step):
        rows = slice(start, start + step)
        size = min(step, batch - start)
        row_scores, target = scores[rows], value[rows, None]
        torch.ge(labels[rows], threshold, out=hits[:size])
        for at, compare in ((0, torch.gt), (2, torch.eq)):
            mask = compare(row_scores, target, out=flags[:size])
            torch.sum(mask, dim=1, out=counts[at, rows])
            torch.sum(mask.mul_(hits[:size]), dim=1, out=counts[at + 1, rows])
    return counts.to(torch.float64).unbind(0)


def _by_index(scores, labels, threshold, value, m, tied, relevant_tied, from_end):
    """Relevant items among the ``m`` tied items of lowest (``from_end``: highest) index.

    Only rows where the choice matters (the block is cut, and holds relevant and non-relevant
    items) count along the row; in the others it is all or none of the tied relevant items.
    """
    inside = torch.where(m >= tied, relevant_tied, torch.where(relevant_tied == tied, m, 0.0))
    rows = ((m < tied) & (relevant_tied > 0) & (relevant_tied < tied)).nonzero().squeeze(1)
    if not rows.numel():
        return inside
    num_items = scores.shape[1]
    dtype = torch.float32 if num_items <= 2**24 else torch.float64
    shape = (min(rows_per_chunk(num_items), scores.shape[0]), num_items)
    flags = torch.empty(shape, dtype=dtype, device=scores.device)
    counted = torch.empty_like(flags)
    # The tied items taken: those whose count of tied items up to them (inclusive) is <= m, or
    # from the end, > tied - m.
    last_left_out = (tied - m) if from_end else m
    found = torch.zeros_like(inside)
    for chunk_rows, take, target in row_chunks(scores, value, rows):
        size = chunk_rows.numel()
        is_tied = torch.eq(take(scores), target, out=flags[:size])
        taken = torch.cumsum(is_tied, dim=1, out=counted[:size])
        bound = last_left_out[chunk_rows, None].to(dtype)
        (torch.gt if from_end else torch.le)(taken, bound, out=taken).mul_(is_tied)
        hits = torch.ge(take(labels), threshold, out=flags[:size])
        found[chunk_rows] = taken.mul_(hits).sum(dim=1).to(torch.float64)
    return torch.where(torch.zeros_like(inside, dtype=torch.bool).index_fill(0, rows, True), found, inside)
