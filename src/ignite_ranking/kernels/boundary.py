"""The tied block at a cutoff: rows whose k-th best score ties with items below the cutoff.

In such a row the boundary score has more items than slots left for it above the cutoff; which
of them fill the slots is the tie policy's choice, and ``ties="average"`` needs the whole
block's size, relevant items and gains. A block can be the whole row, so nothing here sorts the
tied items of a row, and large blocks are never listed: :func:`fill_tied_slots` compares the
crossing rows once (a boolean mask, a quarter of float32 scores) and lists the tied items only
when at most a sixteenth of the mask is set (quantized scores: a few dozen items a row);
otherwise, and for the ``"average"`` statistics, each step is a comparison and a ``torch.topk``
over a key, run a few rows at a time (about ``2**21`` elements), which bounds the temporaries
whatever the tie pattern. The generic kernels (:mod:`.backend`) rank every row's top items in
static shapes instead under ``"first"``/``"last"`` (:func:`top_k_by_index`) and the label
policies (:func:`top_k_by_label`), and under ``"average"`` count every row's block in one pass
(:func:`whole_row_blocks`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from . import constants
from .chunks import row_parts, rows_per_chunk
from .selection import top_k_rows

__all__ = [
    "BoundaryBlocks",
    "GainOf",
    "boundary_blocks",
    "fill_tied_slots",
    "row_chunks",
    "top_k_by_index",
    "top_k_by_label",
    "whole_row_blocks",
]

# ``gain_of(labels, relevant, rows)``: float64 gains of ``labels`` (0 where not ``relevant``);
# ``rows``, broadcastable to ``labels``, holds the batch row of each label (gains may be scaled
# per row, see kernels.batch.gain).
GainOf = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def row_chunks(scores: torch.Tensor, boundary: torch.Tensor, rows: torch.Tensor) -> Iterator[tuple]:
    """Yields ``(chunk_rows, take, target)`` over ``rows``, a few rows at a time.

    ``take(tensor)`` gives the chunk's rows of a ``(batch, ...)`` tensor, and ``target`` their
    ``(chunk, 1)`` boundary values (``boundary`` holds one per row of ``scores``), so that
    ``take(scores) == target`` marks their tied items. When most rows are wanted, consecutive
    rows are read in place (views; the rows not wanted get NaN, equal to nothing) instead of
    copied.
    """
    batch, num_items = scores.shape
    step = rows_per_chunk(num_items)
    if 2 * rows.numel() > batch:
        target = torch.full_like(boundary, math.nan).index_copy(0, rows, boundary[rows])
        for start in range(0, batch, step):
            window = slice(start, min(start + step, batch))
            chunk_rows = torch.arange(window.start, window.stop, device=scores.device)
            yield chunk_rows, (lambda t, w=window: t[w]), target[window, None]
    else:
        for start in range(0, rows.numel(), step):
            chunk_rows = rows[start : start + step]
            take = lambda t, r=chunk_rows: t.index_select(0, r)  # noqa: E731
            yield chunk_rows, take, boundary[chunk_rows, None]


def _first_of(mask: torch.Tensor, wanted: torch.Tensor, width: int, from_end: bool = False):
    """The ``wanted[r]`` lowest (``from_end``: highest) column indices where ``mask`` is True.

    Returns ``(columns, valid)``, both ``(rows, width)``; ``valid`` marks the first ``wanted[r]``
    entries of row ``r``, which are its chosen columns. A top-k over the key ``num_items - 1 -
    column`` (-1 off the mask) finds them: the key decreases along the row, the order in which
    ``torch.topk``'s selection on CPU does least work (long rows: through the maxima of groups
    of items, :func:`~ignite_ranking.kernels.selection.top_k_rows`).
    """
    num_items = mask.shape[1]
    if from_end:
        mask = mask.flip(1)
    descending = torch.arange(num_items - 1, -1, -1, dtype=torch.int32, device=mask.device)
    key = torch.where(mask, descending, -1)
    values, columns = top_k_rows(key, width)
    if from_end:
        columns = num_items - 1 - columns
    valid = (values >= 0) & (torch.arange(width, device=mask.device) < wanted[:, None])
    return columns, valid


def _label_sentinel(labels: torch.Tensor, largest: bool) -> float | int:
    """A value no label beats: the dtype's lowest (``largest``) or highest value."""
    if labels.is_floating_point():
        return -math.inf if largest else math.inf
    info = torch.iinfo(labels.dtype)
    return info.min if largest else info.max


def top_k_by_label(
    scores: torch.Tensor, k: int, ties: str, labels: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(scores, k)``'s values and the ``(batch, k)`` columns ranked under
    ``"optimistic"``/``"pessimistic"`` (equal scores by label, best or worst first, then by
    column), in static shapes (the generic kernels): nothing listed or read on the host.

    With ``b`` the ``k``-th value of a row, a top-``k`` over the labels of the items equal to
    ``b`` (those above ``b`` given a label no other beats) finds ``cut``, the label of the row's
    ``k``-th ranked item. A second top-``k`` over an integer key then takes the items above
    ``b`` and those tied at ``b`` whose label beats ``cut`` (their column's rank plus twice the
    row's length), and then the tied items of label ``cut`` (their rank plus the row's length),
    each part in column order; two stable sorts, by label and then by descending score, rank
    them. The values hold a row's NaN (the caller refuses it from them).
    """
    values = torch.topk(scores, k, dim=1).values
    boundary = values[:, -1:]
    num_items, device = scores.shape[1], scores.device
    if labels.dtype == torch.bool:
        labels = labels.view(torch.uint8)
    largest = ties == "optimistic"
    best, worst = (
        constants.scalar(_label_sentinel(labels, s), labels.dtype, device) for s in (not largest, largest)
    )
    above, tied = scores > boundary, scores == boundary
    key = torch.where(above, best, torch.where(tied, labels, worst))
    cut = torch.topk(key, k, dim=1, largest=largest).values[:, -1:]
    taken = above | (key > cut if largest else key < cut)
    dtype = torch.int32 if 3 * num_items < 2**31 else torch.int64
    rank = [constants.arange((p + 1) * num_items - 1, p * num_items - 1, -1, dtype, device) for p in range(3)]
    chosen_key = torch.where(taken, rank[2], torch.where(tied & (key == cut), rank[1], rank[0]))
    chosen = torch.topk(chosen_key, k, dim=1).indices
    chosen = chosen.gather(1, labels.gather(1, chosen).sort(dim=1, descending=largest, stable=True).indices)
    order = scores.gather(1, chosen).sort(dim=1, descending=True, stable=True).indices
    return values, chosen.gather(1, order)


def _listed_in_order(rows, columns, wanted, ties, label_of):
    """``(row, ordinal, column)`` of the listed tied items the policy puts first, ``wanted[r]`` a
    row; ``rows``/``columns`` list them row-major, columns ascending, and ``label_of(rows,
    columns)`` gives their labels (label policies only)."""
    if ties in ("optimistic", "pessimistic"):
        by_label = label_of(rows, columns).argsort(descending=ties == "optimistic", stable=True)
        order = by_label[rows[by_label].argsort(stable=True)]
        rows, columns = rows[order], columns[order]
    per_row = torch.bincount(rows, minlength=wanted.shape[0])
    ordinal = torch.arange(rows.numel(), device=rows.device) - (per_row.cumsum(0) - per_row)[rows]
    if ties == "last":
        ordinal = per_row[rows] - 1 - ordinal
    keep = ordinal < wanted[rows]
    return rows[keep], ordinal[keep], columns[keep]


def _chosen_in_chunk(tied, wanted, ties, labels):
    """``(row, ordinal, column)`` of the tied items the policy puts first, ``wanted[r]`` a row.

    Small blocks (a sixteenth of the chunk or less) are listed and ordered; larger ones are never
    listed: a top-k over a key picks the wanted items.
    """
    if 16 * int(torch.count_nonzero(tied)) <= tied.numel():
        rows, columns = tied.nonzero(as_tuple=True)
        return _listed_in_order(rows, columns, wanted, ties, lambda r, c: labels[r, c])
    width = int(wanted.max())
    rows = torch.arange(tied.shape[0], device=tied.device)[:, None].expand(-1, width)
    ordinal = torch.arange(width, device=tied.device).expand(tied.shape[0], -1)
    if ties in ("first", "last", "average"):
        columns, valid = _first_of(tied, wanted, width, from_end=ties == "last")
        return rows[valid], ordinal[valid], columns[valid]
    # By label, then lowest index: the labels strictly better than the wanted[r]-th best label
    # of the block are all taken; the remaining slots go to the lowest indices of that label.
    largest = ties == "optimistic"
    key = torch.where(tied, labels, _label_sentinel(labels, largest))
    values, better_columns = torch.topk(key, width, dim=1, largest=largest)
    cut = values.gather(1, (wanted - 1).clamp(min=0)[:, None])
    # The top-k's entries before the cut value are exactly the strictly better tied items.
    better_valid = (ordinal < wanted[:, None]) & ((values > cut) if largest else (values < cut))
    num_better = better_valid.sum(dim=1)
    level = tied & (key == cut)
    level_columns, level_valid = _first_of(level, wanted - num_better, width)
    level_ordinal = ordinal + num_better[:, None]
    return (
        torch.cat([rows[better_valid], rows[level_valid]]),
        torch.cat([ordinal[better_valid], level_ordinal[level_valid]]),
        torch.cat([better_columns[better_valid], level_columns[level_valid]]),
    )


def _tied_mask(scores: torch.Tensor, boundary: torch.Tensor, crossing: torch.Tensor):
    """``(rows, tied)``: int64 rows and the ``(rows, num_items)`` mask of their items equal to
    their boundary value.

    When most rows cross, one comparison of the whole batch (rows without a crossing tie compare
    with NaN, equal to nothing); otherwise the crossing rows are copied a few at a time into one
    mask. Few large operations: on a loaded machine every thread hand-off of a small one waits.
    """
    batch, num_items = scores.shape
    if 2 * crossing.numel() > batch:
        target = torch.full_like(boundary, math.nan).index_copy(0, crossing, boundary[crossing])
        return torch.arange(batch, device=scores.device), scores == target[:, None]
    tied = torch.empty(crossing.numel(), num_items, dtype=torch.bool, device=scores.device)
    step = rows_per_chunk(num_items)
    for start in range(0, crossing.numel(), step):
        rows = crossing[start : start + step]
        torch.eq(scores.index_select(0, rows), boundary[rows, None], out=tied[start : start + step])
    return crossing, tied


def _list_sparse(tied: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``tied.nonzero(as_tuple=True)`` when at most a sixteenth of ``tied`` is set, else None.

    The mask is read as int64 words of 8 items: only the words that hold a tied item are listed
    and read item by item (an eighth of the work of listing the mask), and their number bounds
    the tied items before any is listed.
    """
    flat = tied.reshape(-1)
    whole = flat.numel() // 8 * 8
    words = flat[:whole].view(torch.int64).nonzero().squeeze(1)
    if 16 * 8 * words.numel() > flat.numel():
        return None
    steps = torch.arange(8, device=tied.device)
    at = (words[:, None] * 8 + steps).reshape(-1)
    if whole < flat.numel():
        at = torch.cat([at, torch.arange(whole, flat.numel(), device=tied.device)])
    at = at[flat[at]]
    num_items = tied.shape[1]
    return at.div(num_items, rounding_mode="floor"), at.remainder(num_items)


def fill_tied_slots(
    scores: torch.Tensor,
    values: torch.Tensor,
    indices: torch.Tensor,
    crossing: torch.Tensor,
    ties: str,
    labels: torch.Tensor | None,
) -> torch.Tensor:
    """Refills the boundary slots of ``torch.topk``'s choice in the rows with a crossing tie.

    Small tied blocks (a sixteenth of the rows' items or less, as when scores are quantized) are
    listed and ordered by the policy at once; larger ones are never listed whole: a top-k over a
    key picks the wanted items a few rows at a time.

    Args:
        scores: ``(batch, num_items)`` scores.
        values / indices: ``torch.topk(scores, k)``'s sorted values and indices.
        crossing: int64 rows whose k-th value also occurs below the cutoff.
        ties: ``"first"`` / ``"average"`` (lowest indices), ``"last"`` (highest indices),
            ``"optimistic"`` / ``"pessimistic"`` (highest / lowest labels, then lowest indices).
        labels: ``(batch, num_items)`` labels for the label policies, else unused.

    Returns:
        ``indices``, written in place: the slots holding the boundary value refilled by the
        policy's items; the items above the boundary are already the right ones. The order
        within a row is unspecified (the caller sorts).
    """
    k = values.shape[1]
    boundary = values[:, -1]
    # topk's values are sorted, so a row's boundary slots are its last ``slots`` columns.
    slots = (values[crossing] == boundary[crossing, None]).sum(dim=1)
    if labels is not None and labels.dtype == torch.bool:
        labels = labels.view(torch.uint8)
    rows, tied = _tied_mask(scores, boundary, crossing)
    # The slots each of ``rows`` refills: those of a crossing row, none in the others.
    wanted = slots
    if rows.numel() != crossing.numel():
        wanted = torch.zeros_like(rows).index_copy(0, crossing, slots)
    listed = _list_sparse(tied)
    if listed is not None:
        row, ordinal, column = _listed_in_order(*listed, wanted, ties, lambda r, c: labels[rows[r], c])
        chosen = [(rows[row], k - wanted[row] + ordinal, column)]
    else:
        chosen = []
        by_label = ties in ("optimistic", "pessimistic")
        step = rows_per_chunk(scores.shape[1])
        for start in range(0, rows.numel(), step):
            part = slice(start, start + step)
            if not bool(wanted[part].any()):
                continue
            chunk_labels = labels.index_select(0, rows[part]) if by_label else None
            row, ordinal, column = _chosen_in_chunk(tied[part], wanted[part], ties, chunk_labels)
            chosen.append((rows[part][row], k - wanted[part][row] + ordinal, column))
    if chosen:
        indices[torch.cat([c[0] for c in chosen]), torch.cat([c[1] for c in chosen])] = torch.cat(
            [c[2] for c in chosen]
        )
    return indices


def top_k_by_index(scores: torch.Tensor, k: int, last: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(scores, k)``'s values and the ``(batch, k)`` columns ranked under
    ``ties="first"`` (``last``: ``"last"``), in static shapes (the generic kernels): nothing
    listed, nothing read on the host, the same launches whatever the ties.

    With ``b`` the ``k``-th value of a row, a second top-``k`` over an integer key takes every
    item above ``b`` (its column's rank in the policy's index order, plus the row's length) and
    then the items equal to ``b`` that the policy puts first (the rank alone; -1 below ``b``),
    in index order within each part; a stable sort by descending score then ranks them. The
    values are the first top-``k``'s, which hold a row's NaN (the caller refuses it from them).
    """
    values = torch.topk(scores, k, dim=1).values
    boundary = values[:, -1:]
    num_items = scores.shape[1]
    dtype = torch.int32 if 2 * num_items < 2**31 else torch.int64
    if last:
        rank = constants.arange(0, num_items, 1, dtype, scores.device)
    else:
        rank = constants.arange(num_items - 1, -1, -1, dtype, scores.device)
    key = rank.add(scores > boundary, alpha=num_items).masked_fill_(scores < boundary, -1)
    chosen = torch.topk(key, k, dim=1).indices
    order = scores.gather(1, chosen).sort(dim=1, descending=True, stable=True).indices
    return values, chosen.gather(1, order)


@dataclass
class BoundaryBlocks:
    """The whole tied block at the cutoff of each crossing row (``ties="average"``).

    Attributes:
        rows: int64 rows whose last ranked block continues below the ranked depth; every row
            under the generic kernels (:func:`whole_row_blocks`), ``crossing`` telling which.
        size: float64 items of the block, over the whole row.
        relevant: float64 relevant items of the block, over the whole row.
        crossing: None, or ``(batch,)`` bool: the rows whose block continues below the depth
            (in the others, ``size`` and ``relevant`` are those of the ranked block).
    """

    rows: torch.Tensor
    size: torch.Tensor
    relevant: torch.Tensor
    _scores: torch.Tensor
    _labels: torch.Tensor
    _threshold: float | int
    _boundary: torch.Tensor
    crossing: torch.Tensor | None = None

    def gain_sums(self, gain_of: GainOf, ranked: torch.Tensor | None = None) -> torch.Tensor:
        """float64 total gain of each block: ``gain_of(labels, relevant, rows)`` summed over it
        (every item is read here, so the gain of the ranked ones, ``ranked``, is not needed but
        where ``crossing`` says a block is all ranked)."""
        if self.crossing is not None:
            return torch.where(self.crossing, self._whole_gain_sums(gain_of), ranked)
        sums = torch.zeros(self.rows.numel(), dtype=torch.float64, device=self.rows.device)
        position = _position_of(self.rows, self._scores.shape[0])
        for chunk_rows, take, target in row_chunks(self._scores, self._boundary, self.rows):
            labels = take(self._labels)
            # Only the relevant items of a block have a gain: compute it for them alone.
            hits = (take(self._scores) == target) & (labels >= self._threshold)
            row, column = hits.nonzero(as_tuple=True)
            gains = gain_of(labels[row, column], torch.ones_like(row, dtype=torch.bool), chunk_rows[row])
            sums.index_add_(0, position[chunk_rows][row], gains)
        return sums

    def _whole_gain_sums(self, gain_of: GainOf) -> torch.Tensor:
        """:meth:`gain_sums` of every row's block, in :func:`row_parts` (nothing listed)."""
        sums = torch.empty(self.rows.numel(), dtype=torch.float64, device=self.rows.device)
        for part in row_parts(self.rows.numel()):
            labels = self._labels[part]
            hits = (self._scores[part] == self._boundary[part, None]) & (labels >= self._threshold)
            torch.sum(gain_of(labels, hits, self.rows[part, None]), dim=1, out=sums[part])
        return sums


def _position_of(rows: torch.Tensor, batch: int) -> torch.Tensor:
    """``(batch,)`` int64: each row's position in ``rows``, -1 for rows not in it."""
    position = torch.full((batch,), -1, dtype=torch.int64, device=rows.device)
    return position.index_copy(0, rows, torch.arange(rows.numel(), device=rows.device))


def boundary_blocks(
    scores: torch.Tensor,
    labels: torch.Tensor,
    threshold: float | int,
    boundary: torch.Tensor,
    rows: torch.Tensor,
) -> BoundaryBlocks:
    """Size and relevant count of the block of value ``boundary[r]`` in each row ``r`` of ``rows``."""
    size = torch.zeros(rows.numel(), dtype=torch.float64, device=scores.device)
    relevant = torch.zeros_like(size)
    position = _position_of(rows, scores.shape[0])
    # Counting in a floating buffer: summing a boolean mask casts it to int64 first. float32
    # counts are exact up to 2**24 items a row.
    num_items = scores.shape[1]
    dtype = torch.float32 if num_items <= 2**24 else torch.float64
    shape = (min(rows_per_chunk(num_items), scores.shape[0]), num_items)
    tied_buffer = torch.empty(shape, dtype=dtype, device=scores.device)
    hit_buffer = torch.empty_like(tied_buffer)
    for chunk_rows, take, target in row_chunks(scores, boundary, rows):
        tied = torch.eq(take(scores), target, out=tied_buffer[: chunk_rows.numel()])
        hits = torch.ge(take(labels), threshold, out=hit_buffer[: chunk_rows.numel()]).mul_(tied)
        inside = position[chunk_rows] >= 0
        at = position[chunk_rows][inside]
        size.index_add_(0, at, tied.sum(dim=1)[inside].to(torch.float64))
        relevant.index_add_(0, at, hits.sum(dim=1)[inside].to(torch.float64))
    return BoundaryBlocks(rows, size, relevant, scores, labels, threshold, boundary)


def whole_row_blocks(
    scores: torch.Tensor,
    labels: torch.Tensor,
    threshold: float | int,
    boundary: torch.Tensor,
    crossing: torch.Tensor,
) -> BoundaryBlocks:
    """:func:`boundary_blocks` of every row (the generic kernels), ``crossing`` (``(batch,)``
    bool) marking those whose block continues below the depth: nothing listed, the same
    launches whatever the ties, batch and row length.

    The tied items and the relevant tied items of every row are flagged in one ``(2, batch,
    num_items)`` bool buffer (half the bytes of float32 scores) and counted in one pass. A row
    without a crossing tie counts its ranked block: the items of its boundary value are all
    ranked.
    """
    batch, num_items = scores.shape
    flags = torch.empty(2, batch, num_items, dtype=torch.bool, device=scores.device)
    tied = torch.eq(scores, boundary[:, None], out=flags[0])
    torch.ge(labels, threshold, out=flags[1]).bitwise_and_(tied)
    size, relevant = flags.sum(dim=2).to(torch.float64)
    rows = constants.arange(0, batch, 1, torch.int64, scores.device)
    return BoundaryBlocks(rows, size, relevant, scores, labels, threshold, boundary, crossing)
