"""The CPU's selection method of :func:`~ignite_ranking.catalog.top_k`: a filter by group maxima.

Each row keeps its current k-th best score; one pass over a chunk reads the maximum of every
32 consecutive scores, and only the groups above the row's k-th score (a few per row once the
top k has settled) are compared entry by entry. Candidates are merged in batches, not after
every chunk. The host reads counts back (``nonzero``), which costs nothing on the CPU.
"""

from __future__ import annotations

import math

import torch

from .running import NAN_MESSAGE, RunningTop

__all__ = ["Pending", "filter_chunk"]


class Pending:
    """Candidates found but not yet merged: flat ``(rows, ids, scores)`` parts, each with its
    rows in ascending order (any order of the ids within a row)."""

    def __init__(self):
        self.parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
        self.size = 0
        self.needs_validity_sort = False

    def add(self, rows, ids, scores, from_open_rows: bool) -> None:
        if not rows.numel():
            return
        self.parts.append((rows, ids, scores))
        self.size += rows.numel()
        self.needs_validity_sort |= from_open_rows

    def merge_into(self, state: RunningTop) -> None:
        if not self.parts:
            return
        parts, plain = self.parts, not self.needs_validity_sort
        self.parts, self.size, self.needs_validity_sort = [], 0, False
        if not state.keyed:  # the stable sort of the merge wants each row's newcomers in tie order
            rows, ids, scores = (torch.cat(column) for column in zip(*parts, strict=True))
            tie = ids if state.ties == "first" else state.num_items - 1 - ids
            order = (rows * state.num_items + tie).argsort()
            parts = [(rows[order], ids[order], scores[order])]
        block_scores, block_ids = _dense(parts, state.batch)
        state.merge(block_scores, block_ids, block_ids >= 0, plain)
        state.all_full = bool(state.full().all())


def _dense(parts, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(batch, width)`` scores and ids of the parts' entries, each row's from column 0 on
    (parts in order, each part's entries in order); ``-inf`` and ``-1`` after them.

    The entries of one part's row are a run; an entry's slot is its place in its run plus the
    row's entries in earlier parts, found for every part at once (in place, to hold little)."""
    rows, ids, scores = (torch.cat(column) for column in zip(*parts, strict=True))
    count, device = rows.numel(), rows.device
    sizes = torch.tensor([part[0].numel() for part in parts], device=device)
    run = torch.repeat_interleave(torch.arange(len(parts), device=device), sizes, output_size=count)
    run.mul_(batch).add_(rows)  # part * batch + row: ascending, one value per run
    counts = torch.bincount(run, minlength=len(parts) * batch)
    per_part = counts.view(len(parts), batch)
    # (entries of the row in earlier parts) - (entries before the run), each less its own count
    shift = per_part.cumsum(0).view(-1) - counts.cumsum(0)
    slot = shift.index_select(0, run).add_(torch.arange(count, device=device))
    del run
    width = int(per_part.sum(0).max())
    block_scores = torch.full((batch, width), -math.inf, dtype=scores.dtype, device=device)
    block_ids = torch.full((batch, width), -1, dtype=torch.int64, device=device)
    flat = rows.mul_(width).add_(slot)  # distinct slots: a copy by index, not an accumulating put
    block_scores.view(-1).index_copy_(0, flat, scores)
    block_ids.view(-1).index_copy_(0, flat, ids)
    return block_scores, block_ids


def filter_chunk(scores, start, ex_rows, ex_cols, state: RunningTop, pending: Pending) -> None:
    """Finds the chunk's entries that can still enter a row's top k; merges now and then."""
    width = scores.shape[1]
    if not state.all_full:
        open_rows = (~state.full()).nonzero().squeeze(1)
        for rows, cols, values in _open_row_candidates(scores, open_rows, ex_rows, ex_cols, state.depth):
            pending.add(rows, cols + start, values, from_open_rows=True)
    for rows, cols, values in _above(scores, state.kth()):
        if rows.numel() and ex_rows is not None:
            # Excluded entries never become candidates: drop those that passed the filter.
            keep = ~torch.isin(rows * width + cols, ex_rows * width + ex_cols)
            rows, cols, values = rows[keep], cols[keep], values[keep]
        pending.add(rows, cols + start, values, from_open_rows=False)
    if not state.all_full or pending.size >= state.batch * state.depth:
        pending.merge_into(state)


_SHIFT = 5
_GROUP = 1 << _SHIFT  # columns summarized by one maximum in the filter's single pass (int64
# shifts and masks by a power of two, where a division or a remainder would not vectorize)


Candidates = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # (rows, cols, values)


def _above(scores: torch.Tensor, threshold: torch.Tensor) -> list[Candidates]:
    """``(rows, cols, values)`` of the entries ``> threshold[row]``, in parts whose rows ascend.

    One pass reads the block: the maximum of every 32 consecutive scores of a row (reading
    memory once, writing 1/32 of it). Only the groups whose maximum is above the row's
    threshold, a few per row once the top k has settled, are read again, by their flat offsets
    in the block, and compared entry by entry; the last ``width % 32`` columns are compared
    directly. NaN, which every maximum it enters propagates, is refused.
    """
    width = scores.shape[1]
    whole = width - width % _GROUP
    maxima = scores[:, :whole].unflatten(1, (-1, _GROUP)).amax(-1)
    tail = scores[:, whole:]
    if (maxima.numel() and maxima.amax().isnan()) or (tail.numel() and tail.isnan().any()):
        raise ValueError(NAN_MESSAGE)
    hits = (maxima > threshold[:, None]).view(-1).nonzero().squeeze(1)  # row * groups + group
    hit_rows = hits.div(max(1, maxima.shape[1]), rounding_mode="floor")
    first = hits << _SHIFT if whole == width else (hits << _SHIFT) + hit_rows * (width - whole)
    if whole == width and scores.is_contiguous():  # each hit group is a row of the block's view
        entries = scores.view(-1, _GROUP).index_select(0, hits)
    else:
        offsets = (first[:, None] + torch.arange(_GROUP, device=scores.device)).view(-1)
        entries = scores.reshape(-1).index_select(0, offsets).view(-1, _GROUP)
    passed = (entries > threshold.index_select(0, hit_rows)[:, None]).view(-1).nonzero().squeeze(1)
    values = entries.view(-1).index_select(0, passed)
    flat = first.index_select(0, passed >> _SHIFT) + (passed & (_GROUP - 1))
    rows = flat.div(width, rounding_mode="floor")
    parts = [(rows, flat - rows * width, values)]
    if whole < width:
        passed = tail > threshold[:, None]
        tail_rows, tail_cols = passed.nonzero(as_tuple=True)
        parts.append((tail_rows, tail_cols + whole, tail[passed]))
    return parts


def _open_row_candidates(scores, open_rows, ex_rows, ex_cols, depth) -> list[Candidates]:
    """``(rows, cols, values)`` of the entries of rows holding fewer than k items that may
    enter: at least their chunk's top k (in parts whose rows ascend).

    With excluded entries set to ``-inf``, a lower bound of the ``min(k, width)``-th best score
    of the row is at most its k-th best candidate's, so every candidate of the chunk's top k
    scores at least that. (Group maxima, as in :func:`_above`, do not pay here: most groups of
    a first block hold a candidate, and reading them back takes a copy of the block.)
    """
    block = scores if open_rows.numel() == scores.shape[0] else scores[open_rows]
    valid = None
    if ex_rows is not None:
        valid = torch.ones_like(block, dtype=torch.bool)
        position = torch.full((scores.shape[0],), -1, dtype=torch.int64, device=scores.device)
        position[open_rows] = torch.arange(open_rows.numel(), device=scores.device)
        mine = position[ex_rows]
        inside = mine >= 0
        valid[mine[inside], ex_cols[inside]] = False
        block = block.masked_fill(~valid, -math.inf)
    bound = _kth_lower_bound(block, min(depth, block.shape[1]))
    wanted = block >= bound
    if valid is not None:
        wanted &= valid
    flat = wanted.reshape(-1).nonzero().squeeze(1)  # one pass finds the entries
    rows = flat.div(block.shape[1], rounding_mode="floor")
    cols = flat - rows * block.shape[1]
    values = block.view(-1).index_select(0, flat) if block.is_contiguous() else block[rows, cols]
    return [(open_rows[rows], cols, values)]


def _kth_lower_bound(block: torch.Tensor, depth: int) -> torch.Tensor:
    """``(rows, 1)``, at most each row's ``depth``-th best score, and close to it.

    The ``depth``-th best of the maxima of disjoint groups of a row's scores: each of the
    ``depth`` best groups holds a score at least that. A top k over about ``8 * depth`` maxima
    instead of the whole row (the slowest step of a first chunk). A group is every
    ``groups``-th column (any partition bounds it), so the maxima are one vectorized pass.
    """
    size = block.shape[1] // (8 * depth)
    if size < 2:
        return block.topk(depth, dim=1, sorted=False).values.amin(1, keepdim=True)
    groups = block.shape[1] // size
    maxima = block[:, : groups * size].unflatten(1, (size, groups)).amax(1)
    return maxima.topk(depth, dim=1, sorted=False).values.amin(1, keepdim=True)
