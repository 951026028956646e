"""Tied blocks (``ties="average"``): each block of equal scores held once, in a slot.

A block is the set of items of a row that share one score. Ranked by descending score, a block
of ``n`` items, ``r`` of them relevant, fills the ranks ``a + 1 .. a + n`` where ``a`` counts the
items with a higher score; the expected values over all ``n!`` orders of a block read its size
and relevant items only (:mod:`~ignite_ranking.kernels.expected` for reciprocal rank, hit rate
and average precision). A cutoff that falls inside a block is exact: only the ranks up to the
cutoff are summed, and the block statistics count the whole block, also its items beyond the
ranked depth.

Each block is held once, in a slot of :class:`TieBlocks` (its size and relevant items), and
each rank knows its block's slot. Sums to a cutoff are taken over the slots: each whole block
at once, and the part of the cutoff's block within it (average precision always; hits and DCG
when a row has few blocks, else per-rank means read back through the slots and summed along
the ranks, which then costs less).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from . import constants
from .backend import host_tuned
from .boundary import GainOf

__all__ = [
    "AskedCutoffs",
    "BlockTail",
    "SortedTail",
    "TieBlocks",
    "block_slots",
    "sorted_blocks",
    "tie_blocks",
    "whole_last_blocks",
]


class BlockTail(Protocol):
    """The whole last ranked block of the rows where it continues below the ranked depth.

    Attributes:
        rows: int64 rows whose last ranked block continues below the ranked depth.
        size / relevant: float64 items and relevant items of that whole block.
    """

    rows: torch.Tensor
    size: torch.Tensor
    relevant: torch.Tensor

    def gain_sums(self, gain_of: GainOf, ranked: torch.Tensor) -> torch.Tensor:
        """Total gain of each whole block, given the gain of its ranked items (``ranked``)."""


@dataclass
class SortedTail:
    """:class:`BlockTail` of rows sorted whole: the labels of each block's items below the depth.

    Attributes:
        below_labels: ``(len(rows), width)`` their labels, in the labels' dtype.
        below_relevant: ``(len(rows), width)`` bool, relevant (False past a row's block).
    """

    rows: torch.Tensor
    size: torch.Tensor
    relevant: torch.Tensor
    below_labels: torch.Tensor
    below_relevant: torch.Tensor

    def gain_sums(self, gain_of: GainOf, ranked: torch.Tensor) -> torch.Tensor:
        gains = gain_of(self.below_labels.to(torch.float64), self.below_relevant, self.rows[:, None])
        return ranked + gains.sum(dim=1)

    @classmethod
    def concat(cls, parts: list[SortedTail], device: torch.device) -> SortedTail:
        """One tail of the parts (of consecutive row chunks), their labels padded to one width."""
        if not parts:
            empty = torch.zeros(0, dtype=torch.float64, device=device)
            none = torch.zeros(0, 0, dtype=torch.bool, device=device)
            return cls(torch.zeros(0, dtype=torch.int64, device=device), empty, empty, none, none)
        width = max(part.below_labels.shape[1] for part in parts)
        pad = lambda t: torch.nn.functional.pad(t, (0, width - t.shape[1]))  # noqa: E731
        return cls(
            torch.cat([part.rows for part in parts]),
            torch.cat([part.size for part in parts]),
            torch.cat([part.relevant for part in parts]),
            torch.cat([pad(part.below_labels) for part in parts]),
            torch.cat([pad(part.below_relevant) for part in parts]),
        )


class AskedCutoffs(list):
    """Some of a metric's cutoffs, ascending, that remember how many it asked for: a metric that
    scores only the first of those at or past the ranked depth (their values repeat) passes them
    so, and :meth:`TieBlocks.few_blocks` chooses the same summation as for all of them."""

    def __init__(self, cutoffs: Sequence[int], asked: int):
        super().__init__(cutoffs)
        self.asked = asked


@dataclass
class TieBlocks:
    """The tied blocks of the ranked positions: one slot per block, and each position's block.

    Attributes:
        block_id: ``(batch, K)`` int64 index of each ranked position's block among the row's
            ranked blocks (0 for the first).
        block_size / block_relevant: ``(batch, S)`` float64 items and relevant items of block
            ``b`` of each row in column ``b``, counted over the whole row (also below the ranked
            depth). ``S`` is the most blocks a row has (on CPU; K elsewhere, which would have
            to synchronize to read it); the columns past a row's last block are 0.
        ranked_labels / ranked_relevant: labels (float64) and relevance (bool) of the ranked items.
        tail: the rows whose last ranked block continues below the ranked depth, with that
            whole block's statistics.
        cache: what scorers derive from the blocks, kept for the others that read it (the
            expected hit rate and reciprocal rank of a group share the first relevant block).
    """

    block_id: torch.Tensor
    block_size: torch.Tensor
    block_relevant: torch.Tensor
    ranked_labels: torch.Tensor
    ranked_relevant: torch.Tensor
    tail: BlockTail
    cache: dict = field(default_factory=dict, repr=False)

    def totals(self, values: torch.Tensor, whole_last: Callable | None = None) -> torch.Tensor:
        """``(batch, S)``: ``values`` (``(batch, K)``) summed over each block, in its slot.

        ``whole_last(ranked)`` gives the sums over the whole last block of the tail's rows from
        their sums over its ranked positions; without it those blocks sum their ranked values.
        """
        sums = values.new_zeros(self.block_size.shape).scatter_add_(1, self.block_id, values)
        rows = self.tail.rows
        if whole_last is not None and rows.numel():
            last = self.block_id[rows, -1]
            sums[rows, last] = whole_last(sums[rows, last])
        return sums

    def means(self, values: torch.Tensor) -> torch.Tensor:
        """The mean of ``values`` (``(batch, K)``) over each ranked block, at every position."""
        return self.totals(values).div_(self.block_size).gather(1, self.block_id)

    def gain_totals(self, gain_of: GainOf) -> torch.Tensor:
        """``(batch, S)``: the total gain of each block, in its slot.

        ``gain_of(labels, relevant, rows)`` gives the float64 gains of labels (0 where not
        relevant); ``rows``, broadcastable to ``labels``, holds the batch row of each label.
        """
        rows = torch.arange(self.ranked_labels.shape[0], device=self.ranked_labels.device)[:, None]
        gains = gain_of(self.ranked_labels, self.ranked_relevant, rows)
        return self.totals(gains, lambda ranked: self.tail.gain_sums(gain_of, ranked))

    def read_back(self, totals: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """``(batch, K)``: each position's share of its block's total (``totals``: ``(batch, S)``,
        such as ``block_relevant``), written into ``out`` if given."""
        return torch.gather(totals / self.block_size, 1, self.block_id, out=out)

    def few_blocks(self, cutoffs: Sequence[int]) -> bool:
        """Whether :meth:`sums_to_cutoffs` over the block slots costs less than a cumulative sum
        over the ranks (a few dozen passes over ``(batch, S, len(cutoffs))`` against a few over
        ``(batch, K)``), as with quantized scores. For :class:`AskedCutoffs`, as for all the
        cutoffs asked (the two sums can differ in the last bits)."""
        asked = cutoffs.asked if isinstance(cutoffs, AskedCutoffs) else len(cutoffs)
        return 16 * self.block_size.shape[1] * asked <= self.block_id.shape[1]

    def sums_to_cutoffs(
        self, totals: torch.Tensor, cutoffs: Sequence[int], weights: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``(batch, len(cutoffs))``: the sum over ranks ``i <= k`` of ``w_i`` times the share of
        its block's total that rank ``i`` holds, from the block slots.

        A block of ``n`` items and total ``T`` at ranks ``s + 1 .. s + n`` adds ``T / n`` times
        the weights of its ranks within the cutoff; ``w_i = 1`` without ``weights``.
        """
        depth = self.block_id.shape[1]
        device = totals.device
        sizes = self.block_size
        ends = sizes.cumsum(dim=1)
        limits = constants.listed(tuple(min(k, depth) for k in cutoffs), torch.float64, device)
        high = ends[:, :, None].minimum(limits)
        low = (ends - sizes)[:, :, None].minimum(limits)
        if weights is not None:
            summed = torch.nn.functional.pad(weights.cumsum(dim=0), (1, 0))
            high, low = summed[high.long()], summed[low.long()]
        share = totals / sizes.clamp(min=1.0)  # 0 past the last block
        return (share[:, :, None] * (high - low)).sum(dim=1)


def block_slots(block_id: torch.Tensor) -> int:
    """How many block slots the rows of ``block_id`` use: their most blocks on CPU, else K."""
    if not host_tuned(block_id) or block_id.numel() == 0:
        return block_id.shape[1]
    return int(block_id[:, -1].max()) + 1


def _count_blocks(block_id, new_block, relevant, size_out=None, relevant_out=None):
    """Items and relevant items (``relevant``: float64 1.0/0.0) of each block, in its slot:
    ``(rows, S)``, written into the first ``S`` columns of the outputs if given.

    ``new_block`` marks the first position of each block. Few blocks (a sixteenth of the
    positions or less) are counted from where each one starts and ends; otherwise every
    position is added to its block's slot.
    """
    rows, depth = block_id.shape
    slots = block_slots(block_id)
    size_out = relevant.new_zeros(rows, slots) if size_out is None else size_out[:, :slots].zero_()
    relevant_out = torch.zeros_like(size_out) if relevant_out is None else relevant_out[:, :slots].zero_()
    if 16 * slots > depth or block_id.numel() == 0:
        ones = torch.ones(1, dtype=torch.float64, device=relevant.device).expand_as(relevant)
        return size_out.scatter_add_(1, block_id, ones), relevant_out.scatter_add_(1, block_id, relevant)
    row, start = new_block.nonzero(as_tuple=True)  # row by row, each row's blocks in order
    end = torch.empty_like(start)
    end[:-1] = start[1:]
    end[torch.cat([row[1:] != row[:-1], torch.ones(1, dtype=torch.bool, device=row.device)])] = depth
    slot = block_id[row, start]
    hits = torch.nn.functional.pad(relevant.cumsum(dim=1), (1, 0))
    size_out[row, slot] = (end - start).to(size_out.dtype)
    relevant_out[row, slot] = hits[row, end] - hits[row, start]
    return size_out, relevant_out


def tie_blocks(
    scores: torch.Tensor,
    indices: torch.Tensor,
    ranked_labels: torch.Tensor,
    ranked_relevant: torch.Tensor,
    tail: BlockTail,
) -> TieBlocks:
    """Block statistics of ranked positions ``indices`` (ordered by descending score).

    ``ranked_labels`` (float64) and ``ranked_relevant`` (bool) describe the ranked items.

    ``tail`` gives the whole last block of the rows where it continues below the ranked depth.
    """
    ranked_scores = scores.gather(1, indices)
    new_block = torch.ones_like(ranked_scores, dtype=torch.bool)
    new_block[:, 1:] = ranked_scores[:, 1:] != ranked_scores[:, :-1]
    block_id = new_block.to(torch.int64).cumsum(dim=1) - 1
    size, relevant = _count_blocks(block_id, new_block, ranked_relevant.to(torch.float64))
    whole_last_blocks(block_id, size, relevant, tail)
    return TieBlocks(block_id, size, relevant, ranked_labels, ranked_relevant, tail)


def whole_last_blocks(block_id, size, relevant, tail: BlockTail) -> None:
    """Writes the whole block's items and relevant items (``tail``'s) into the slot of the last
    ranked block of each of its rows (``size``, ``relevant``: ``(batch, S)``)."""
    if tail.rows.numel():
        last = block_id[tail.rows, -1]
        size[tail.rows, last] = tail.size
        relevant[tail.rows, last] = tail.relevant


def sorted_blocks(
    values: torch.Tensor,
    order: torch.Tensor,
    k: int,
    relevant: torch.Tensor,
    labels: torch.Tensor,
    threshold: float | int,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
) -> SortedTail:
    """The block statistics of :func:`tie_blocks` for rows sorted whole, a few rows at a time.

    A block that continues below rank ``k`` is counted whole from the sorted row.

    Args:
        values / order: ``(rows, num_items)`` each row's scores (or any values equal exactly
            where the scores are, such as ``ranking.order_key``'s) sorted descending, stably, and
            their columns.
        k: the ranked depth, ``1 <= k <= num_items``.
        relevant: ``(rows, k)`` float64 1.0/0.0 relevance of the items at ranks ``1..k``.
        labels: the rows' labels (for the items of a block that continues below rank ``k``);
            an item is relevant iff its label is ``>= threshold``.
        out: ``(rows, k)`` tensors that receive ``block_id``, ``block_size`` and
            ``block_relevant``, as :class:`TieBlocks` holds them (the block counts in the first
            columns, as many as the rows have blocks).

    Returns:
        The tail of the rows whose last ranked block continues below rank ``k``, with their
        positions among the rows; None under the generic kernels, which count it from the
        whole rows (:func:`~.boundary.whole_row_blocks`).
    """
    block_id, size, hits = out
    top = values[:, :k]
    new_block = torch.ones_like(top, dtype=torch.bool)
    torch.ne(top[:, 1:], top[:, :-1], out=new_block[:, 1:])
    torch.cumsum(new_block, dim=1, out=block_id).sub_(1)
    size, hits = _count_blocks(block_id, new_block, relevant, size, hits)
    if not host_tuned(values):
        return None
    return _sorted_tail(values, order, k, labels, threshold, size, hits, block_id)


def _sorted_tail(values, order, k, labels, threshold, sizes, hits, block_id) -> SortedTail:
    """The tail of :func:`sorted_blocks`; adds the items of each block below rank ``k`` to its
    slot in ``sizes`` and ``hits``."""
    device = values.device
    if k == values.shape[1] or not bool((values[:, k] == values[:, k - 1]).any()):
        return SortedTail.concat([], device)
    # Sorted, the block's items below k come first there: a window that grows until it ends
    # past every row's block counts them, and their labels are read through the sort order.
    boundary = values[:, k - 1 : k]
    width = 64
    while k + width < values.shape[1] and bool((values[:, k + width - 1] == boundary[:, 0]).any()):
        width *= 4
    below = (values[:, k : k + width] == boundary).sum(dim=1)
    rows = (below > 0).nonzero().squeeze(1)
    below = below[rows]
    width = int(below.max())
    below_labels = labels.gather(1, order[:, k : k + width])[rows]
    below_relevant = (below_labels >= threshold) & (torch.arange(width, device=device) < below[:, None])
    last = block_id[rows, -1]
    sizes[rows, last] += below.to(sizes.dtype)
    hits[rows, last] += below_relevant.sum(dim=1).to(hits.dtype)
    return SortedTail(rows, sizes[rows, last], hits[rows, last], below_labels, below_relevant)
