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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .boundary import BoundaryBlocks, GainOf

__all__ = [
    "TieBlocks",
    "expected_average_precision",
    "expected_hit_rate",
    "expected_reciprocal_rank",
    "sorted_blocks",
    "tie_blocks",
]


@dataclass
class TieBlocks:
    """The tied block seen at each ranked position; ``(batch, K)`` float64 unless noted.

    Attributes:
        start: items ranked above the block (its first rank is ``start + 1``).
        size: items in the block, counted over the whole row.
        relevant: relevant items in the block, over the whole row.
        block_id: ``(batch, K)`` int64 index of the block among the row's ranked blocks.
        ranked_labels / ranked_relevant: labels and relevance of the ranked items.
        tail: the rows whose last ranked block continues below the ranked depth, with that
            whole block's statistics.
    """

    start: torch.Tensor
    size: torch.Tensor
    relevant: torch.Tensor
    block_id: torch.Tensor
    ranked_labels: torch.Tensor
    ranked_relevant: torch.Tensor
    tail: BoundaryBlocks

    def _per_block(self, values: torch.Tensor) -> torch.Tensor:
        """Sums ``values`` over each block of the ranked positions, read back at every position."""
        sums = torch.zeros_like(values).scatter_add_(1, self.block_id, values)
        return sums.gather(1, self.block_id)

    def _last_block(self) -> torch.Tensor:
        """``(len(tail.rows), K)`` mask of the positions in each crossing row's last block."""
        ids = self.block_id[self.tail.rows]
        return ids == ids[:, -1:]

    def _set_last_block(self, values: torch.Tensor, per_row: torch.Tensor) -> None:
        """Writes ``per_row`` over the last block of each crossing row of ``values``, in place.

        When most rows cross (deep cutoffs of tied scores), the whole batch is written in one
        pass instead of copying the crossing rows out and back.
        """
        rows = self.tail.rows
        batch, depth = values.shape
        if 2 * rows.numel() <= batch:
            values[rows] = torch.where(self._last_block(), per_row[:, None], values[rows])
            return
        full = torch.zeros(batch, dtype=values.dtype, device=values.device).index_copy(0, rows, per_row)
        crossing = torch.zeros(batch, dtype=torch.bool, device=values.device).index_fill(0, rows, True)
        positions = torch.arange(depth, device=values.device)
        # A block is contiguous: the last one holds the positions from its start on.
        in_last = crossing[:, None] & (positions >= self.start[:, -1:])
        torch.where(in_last, full[:, None], values, out=values)

    def mean_gains(self, gain_of: GainOf) -> torch.Tensor:
        """Expected gain at each rank: the block's total gain over its size.

        ``gain_of(labels, relevant, rows)`` gives the float64 gains of labels (0 where not
        relevant); ``rows``, broadcastable to ``labels``, holds the batch row of each label.
        """
        rows = torch.arange(self.ranked_labels.shape[0], device=self.ranked_labels.device)[:, None]
        sums = self._per_block(gain_of(self.ranked_labels, self.ranked_relevant, rows))
        if self.tail.rows.numel():
            self._set_last_block(sums, self.tail.gain_sums(gain_of))
        return sums / self.size


def tie_blocks(
    scores: torch.Tensor,
    indices: torch.Tensor,
    ranked_labels: torch.Tensor,
    ranked_relevant: torch.Tensor,
    tail: BoundaryBlocks,
) -> TieBlocks:
    """Block statistics of ranked positions ``indices`` (ordered by descending score).

    ``ranked_labels`` (float64) and ``ranked_relevant`` (bool) describe the ranked items.

    ``tail`` gives the whole last block of the rows where it continues below the ranked depth.
    """
    batch, depth = indices.shape
    ranked_scores = scores.gather(1, indices)
    new_block = torch.ones_like(ranked_scores, dtype=torch.bool)
    new_block[:, 1:] = ranked_scores[:, 1:] != ranked_scores[:, :-1]
    block_id = new_block.to(torch.int64).cumsum(dim=1) - 1
    positions = torch.arange(depth, device=scores.device).expand(batch, depth)
    start = torch.where(new_block, positions, torch.zeros_like(positions)).cummax(dim=1).values
    ones = torch.ones(batch, depth, dtype=torch.float64, device=scores.device)
    blocks = TieBlocks(
        start=start.to(torch.float64),
        size=ones,
        relevant=ranked_relevant.to(torch.float64),
        block_id=block_id,
        ranked_labels=ranked_labels,
        ranked_relevant=ranked_relevant,
        tail=tail,
    )
    blocks.size = blocks._per_block(ones)
    blocks.relevant = blocks._per_block(blocks.relevant)
    if tail.rows.numel():
        blocks._set_last_block(blocks.size, tail.size)
        blocks._set_last_block(blocks.relevant, tail.relevant)
    return blocks


def sorted_blocks(
    values: torch.Tensor,
    order: torch.Tensor,
    k: int,
    ranked_relevant: torch.Tensor,
    labels: torch.Tensor,
    threshold: float | int,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The block statistics of :func:`tie_blocks` for rows sorted whole, a few rows at a time.

    Args:
        values / order: ``(rows, num_items)`` each row's scores (or any values equal exactly
            where the scores are, such as ``ranking.order_key``'s) sorted descending, stably, and
            their columns.
        k: the ranked depth, ``1 <= k <= num_items``.
        ranked_relevant: ``(rows, k)`` bool relevance of the items at ranks ``1..k``.
        labels: the rows' labels (for the items of a block that continues below rank ``k``);
            an item is relevant iff its label is ``>= threshold``.
        out: ``(rows, k)`` tensors that receive ``start``, ``size`` and ``relevant`` (float64)
            and ``block_id`` (int64), as :class:`TieBlocks` holds them.

    Returns:
        For the rows whose last ranked block continues below rank ``k``: their int64 positions
        among the rows, and that whole block's float64 size and relevant count.
    """
    start_out, size_out, relevant_out, block_id = out
    top = values[:, :k]
    new_block = torch.ones_like(ranked_relevant)
    torch.ne(top[:, 1:], top[:, :-1], out=new_block[:, 1:])
    torch.cumsum(new_block, dim=1, out=block_id).sub_(1)
    positions = torch.arange(k, device=values.device)
    start = torch.where(new_block, positions, 0).cummax(dim=1).values
    # Each block ends (exclusive) where the next one starts; the last one at k.
    new_block[:, :-1] = new_block[:, 1:].clone()
    new_block[:, -1] = True
    end = torch.where(new_block, positions + 1, k).flip(1).cummin(dim=1).values.flip(1)
    hits = torch.nn.functional.pad(ranked_relevant.cumsum(dim=1), (1, 0))
    torch.sub(hits.gather(1, end), hits.gather(1, start), out=relevant_out)
    torch.sub(end, start, out=size_out)
    start_out.copy_(start)
    if k == values.shape[1] or not bool((values[:, k] == values[:, k - 1]).any()):
        empty = torch.zeros(0, dtype=torch.float64, device=values.device)
        return torch.zeros(0, dtype=torch.int64, device=values.device), empty, empty
    # The last ranked block continues below rank k: count it whole. Sorted, its items below k
    # come first there, and their labels are read through the sort order.
    boundary = values[:, k - 1 : k]
    below = (values[:, k:] == boundary).sum(dim=1)
    crosses = below > 0
    width = int(below.max())
    more = (labels.gather(1, order[:, k : k + width]) >= threshold) & (
        torch.arange(width, device=values.device) < below[:, None]
    )
    last_start = start[:, -1]
    tail_size = (k - last_start + below).to(torch.float64)
    tail_relevant = (hits[:, k] - hits.gather(1, last_start[:, None]).squeeze(1) + more.sum(dim=1)).to(
        torch.float64
    )
    in_tail = crosses[:, None] & (positions >= last_start[:, None])
    size_out.copy_(torch.where(in_tail, tail_size[:, None], size_out))
    relevant_out.copy_(torch.where(in_tail, tail_relevant[:, None], relevant_out))
    crossing = crosses.nonzero().squeeze(1)
    return crossing, tail_size[crossing], tail_relevant[crossing]


def _first_relevant_block(blocks: TieBlocks):
    """Start, size and relevant count of each row's first block holding a relevant item."""
    holds = blocks.relevant > 0
    found = holds.any(dim=1)
    first = holds.to(torch.uint8).argmax(dim=1, keepdim=True)
    pick = lambda values: values.gather(1, first).squeeze(1)  # noqa: E731
    return found, pick(blocks.start), pick(blocks.size), pick(blocks.relevant)


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
    depth = blocks.start.shape[1]
    if size.device.type != "cpu" or size.numel() == 0:
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
    """E[AP@k] = (1/R) sum_{i <= k} E[rel_i * hits_i] / i.

    ``E[rel_i * hits_i] = p_i (1 + H) + (i - start - 1) r (r - 1) / (n (n - 1))`` where ``p_i``
    is the block's relevant share and ``H`` the relevant items of the blocks above it.
    """
    share = blocks.relevant / blocks.size
    above = torch.nn.functional.pad(share.cumsum(dim=1), (1, 0)).gather(1, blocks.start.to(torch.int64))
    n, r = blocks.size, blocks.relevant
    both = torch.where(n > 1, r * (r - 1) / (n * (n - 1)).clamp(min=1), torch.zeros_like(n))
    rank = torch.arange(1, share.shape[1] + 1, dtype=torch.float64, device=share.device)
    expected = (share * (1.0 + above) + (rank - blocks.start - 1.0) * both) / rank
    cumulative = torch.nn.functional.pad(expected.cumsum(dim=1), (1, 0))
    columns = torch.tensor([min(k, share.shape[1]) for k in cutoffs], device=share.device)
    safe = torch.where(num_relevant > 0, num_relevant, torch.ones_like(num_relevant))
    values = cumulative[:, columns] / safe[:, None]
    return torch.where(num_relevant[:, None] > 0, values, torch.zeros_like(values))
