"""Tie-aware expected values (``ties="average"``).

A block is the set of items of a row that share one score. Ranked by descending score, a block
of ``n`` items, ``r`` of them relevant, fills the ranks ``a + 1 .. a + n`` where ``a`` counts the
items with a higher score. Over all ``n!`` orders of the block, equally likely:

- each of its ranks holds a relevant item with probability ``r / n`` and has expected gain
  ``G / n`` (``G`` the block's total gain), so precision, recall, R-Precision and DCG take their
  expected values by reading those at each rank;
- two of its ranks both hold relevant items with probability ``r (r - 1) / (n (n - 1))``, which
  gives the expected average precision;
- the first relevant item of the first block holding one is at offset ``j`` with probability
  ``P(first j - 1 not relevant) * r / (n - j + 1)``, which gives expected reciprocal rank and hit
  rate.

These are the closed forms of McSherry and Najork, "Computing Information Retrieval Performance
Measures Efficiently in the Presence of Tied Scores", ECIR 2008. A cutoff that falls inside a
block is exact: only the ranks up to the cutoff are summed, and the block statistics count the
whole block, also its items beyond the ranked depth.

Each block is held once, in a slot of :class:`TieBlocks` (its size and relevant items), and
each rank knows its block's slot. Sums to a cutoff are taken over the slots: each whole block
at once, and the part of the cutoff's block within it (average precision always; hits and DCG
when a row has few blocks, else per-rank means read back through the slots and summed along
the ranks, which then costs less).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from .backend import host_tuned
from .boundary import GainOf

__all__ = [
    "AskedCutoffs",
    "BlockTail",
    "SortedTail",
    "TieBlocks",
    "block_slots",
    "expected_average_precision",
    "expected_hit_rate",
    "expected_reciprocal_rank",
    "sorted_blocks",
    "tie_blocks",
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
    """

    block_id: torch.Tensor
    block_size: torch.Tensor
    block_relevant: torch.Tensor
    ranked_labels: torch.Tensor
    ranked_relevant: torch.Tensor
    tail: BlockTail

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
        limits = torch.tensor([min(k, depth) for k in cutoffs], dtype=torch.float64, device=device)
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
    if tail.rows.numel():
        last = block_id[tail.rows, -1]
        size[tail.rows, last] = tail.size
        relevant[tail.rows, last] = tail.relevant
    return TieBlocks(block_id, size, relevant, ranked_labels, ranked_relevant, tail)


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
        positions among the rows.
    """
    block_id, size, hits = out
    top = values[:, :k]
    new_block = torch.ones_like(top, dtype=torch.bool)
    torch.ne(top[:, 1:], top[:, :-1], out=new_block[:, 1:])
    torch.cumsum(new_block, dim=1, out=block_id).sub_(1)
    size, hits = _count_blocks(block_id, new_block, relevant, size, hits)
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


def _first_relevant_block(blocks: TieBlocks):
    """Start, size and relevant count of each row's first block holding a relevant item.

    It holds the first relevant ranked item, or where none is ranked, it is the last ranked
    block if that one continues below the depth with relevant items there.
    """
    ranked, block_id = blocks.ranked_relevant, blocks.block_id
    first = ranked.to(torch.uint8).argmax(dim=1, keepdim=True)
    slot = torch.where(ranked.any(dim=1, keepdim=True), block_id.gather(1, first), block_id[:, -1:])
    pick = lambda values: values.gather(1, slot).squeeze(1)  # noqa: E731
    sizes = blocks.block_size
    if host_tuned(sizes) and slot.numel():  # only the slots up to the first relevant
        sizes = sizes[:, : int(slot.max()) + 1]
    relevant = pick(blocks.block_relevant)
    return relevant > 0, pick(torch.cumsum(sizes, dim=1).sub_(sizes)), pick(blocks.block_size), relevant


def _none_relevant_yet(size: torch.Tensor, relevant: torch.Tensor, depth: int) -> torch.Tensor:
    """``(batch, depth + 1)``: P(the first j ranks of a block hold no relevant item), j = 0..depth."""
    j = torch.arange(depth, dtype=torch.float64, device=size.device)
    n, r = size[:, None], relevant[:, None]
    factor = ((n - r - j) / (n - j).clamp(min=1)).clamp(min=0.0)
    return torch.nn.functional.pad(factor.cumprod(dim=1), (1, 0), value=1.0)


def _offsets_within(cutoffs: Sequence[int], start: torch.Tensor, size: torch.Tensor) -> torch.Tensor:
    """``(batch, len(cutoffs))`` int64: how many ranks of the block lie within each cutoff."""
    k = torch.tensor(cutoffs, dtype=torch.float64, device=start.device)
    return (k[None, :] - start[:, None]).clamp(min=0).minimum(size[:, None]).to(torch.int64)


def _offsets_wanted(blocks: TieBlocks, found: torch.Tensor, size: torch.Tensor) -> int:
    """How many offsets into the first relevant blocks matter: the ranked depth, or on CPU the
    largest such block (usually far smaller; a device would synchronize to read it)."""
    depth = blocks.block_id.shape[1]
    if not host_tuned(size) or size.numel() == 0:
        return depth
    return max(1, min(depth, int(torch.where(found, size, 0.0).max())))


def expected_hit_rate(blocks: TieBlocks, cutoffs: Sequence[int]) -> torch.Tensor:
    """E[Hit@k]: 1 - P(no relevant item of the first relevant block within the cutoff)."""
    found, start, size, relevant = _first_relevant_block(blocks)
    depth = _offsets_wanted(blocks, found, size)
    within = _offsets_within(cutoffs, start, size).clamp(max=depth)
    miss = _none_relevant_yet(size, relevant, depth).gather(1, within)
    return torch.where(found[:, None], 1.0 - miss, torch.zeros_like(miss))


def expected_reciprocal_rank(blocks: TieBlocks, cutoffs: Sequence[int]) -> torch.Tensor:
    """E[RR@k], summing ``P(first relevant at start + j) / (start + j)`` over ranks within k."""
    found, start, size, relevant = _first_relevant_block(blocks)
    depth = _offsets_wanted(blocks, found, size)
    miss = _none_relevant_yet(size, relevant, depth)[:, :-1]
    j = torch.arange(depth, dtype=torch.float64, device=start.device)
    hit_next = relevant[:, None] / (size[:, None] - j).clamp(min=1)
    terms = miss * hit_next / (start[:, None] + j + 1.0)
    summed = torch.nn.functional.pad(terms.cumsum(dim=1), (1, 0))
    within = _offsets_within(cutoffs, start, size).clamp(max=depth)
    values = summed.gather(1, within)
    return torch.where(found[:, None], values, torch.zeros_like(values))


def expected_average_precision(
    blocks: TieBlocks, num_relevant: torch.Tensor, cutoffs: Sequence[int]
) -> torch.Tensor:
    """E[AP@k] = (1/R) sum_{i <= k} E[rel_i * hits_i] / i, summed block by block.

    At a rank ``i`` of a block of ``n`` items, ``r`` of them relevant, at ranks ``s + 1 .. s + n``
    below ``H`` relevant items, ``E[rel_i * hits_i] = p (1 + H) + (i - s - 1) q`` with ``p = r / n``
    and ``q = r (r - 1) / (n (n - 1))``. Over its ranks ``s + 1 .. e``, dividing by ``i`` sums to
    ``(p (1 + H) - q (s + 1)) (h(e) - h(s)) + q (e - s)``, ``h`` the harmonic numbers. Whole
    blocks are summed once; a cutoff adds the part of its block within it.
    """
    batch, depth = blocks.block_id.shape
    device = num_relevant.device
    if depth == 0:
        return torch.zeros(batch, len(cutoffs), dtype=torch.float64, device=device)
    sizes, r = blocks.block_size, blocks.block_relevant  # 0 past each row's last block
    ranks = torch.arange(1, depth + 1, dtype=torch.float64, device=device)
    harmonic = torch.nn.functional.pad(ranks.reciprocal().cumsum(dim=0), (1, 0))
    # Blocks are consecutive: each starts where the one before ends (the last is cut at the depth).
    ends = sizes.cumsum(dim=1).clamp_(max=depth)
    starts = torch.nn.functional.pad(ends[:, :-1], (1, 0))
    h_end = harmonic[ends.long()]
    h_start = torch.nn.functional.pad(h_end[:, :-1], (1, 0))
    n = sizes.clamp(min=1.0)
    q = (r - 1.0).mul_(r).div_((n - 1.0).mul_(n).clamp_(min=1.0))
    # p (1 + H) - q (s + 1), with p = r / n and H the relevant items of the blocks above.
    slope = r.cumsum(dim=1).sub_(r).add_(1.0).mul_(r).div_(n).sub_((starts + 1.0).mul_(q))
    whole = (h_end - h_start).mul_(slope).add_((ends - starts).mul_(q))
    before = torch.nn.functional.pad(whole.cumsum(dim=1), (1, 0))
    # Each cutoff: the whole blocks above its block, and the part of its block within it.
    limits = [min(k, depth) for k in cutoffs]
    slot = blocks.block_id[:, [k - 1 for k in limits]]
    pick = lambda t: t.gather(1, slot)  # noqa: E731
    end = torch.tensor(limits, dtype=torch.float64, device=device)
    partial = (harmonic[end.long()] - pick(h_start)) * pick(slope) + pick(q) * (end - pick(starts))
    summed = pick(before) + partial
    safe = torch.where(num_relevant > 0, num_relevant, torch.ones_like(num_relevant))
    return torch.where(num_relevant[:, None] > 0, summed / safe[:, None], torch.zeros_like(summed))
