"""Expected values over the orders of tied blocks (``ties="average"``): the scorers that read
:class:`~ignite_ranking.kernels.ties.TieBlocks` whole.

Ranked by descending score, a block of ``n`` items, ``r`` of them relevant, fills the ranks
``a + 1 .. a + n`` where ``a`` counts the items with a higher score. Over all ``n!`` orders of
the block, equally likely:

- each of its ranks holds a relevant item with probability ``r / n`` and has expected gain
  ``G / n`` (``G`` the block's total gain), so precision, recall, R-Precision and DCG take their
  expected values by reading those at each rank (:meth:`TieBlocks.read_back`);
- two of its ranks both hold relevant items with probability ``r (r - 1) / (n (n - 1))``, which
  gives the expected average precision;
- the first relevant item of the first block holding one is at offset ``j`` with probability
  ``P(first j - 1 not relevant) * r / (n - j + 1)``, which gives expected reciprocal rank and hit
  rate.

These are the closed forms of McSherry and Najork, "Computing Information Retrieval Performance
Measures Efficiently in the Presence of Tied Scores", ECIR 2008.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from . import constants
from .backend import host_tuned
from .ties import TieBlocks

__all__ = ["expected_average_precision", "expected_hit_rate", "expected_reciprocal_rank"]


def _first_relevant_block(blocks: TieBlocks):
    """Whether each row has a relevant item, and the start, size and relevant count of its first
    block holding one (computed once per blocks, in ``blocks.cache``).

    It holds the first relevant ranked item, or where none is ranked, it is the last ranked
    block if that one continues below the depth with relevant items there.
    """
    if "first" not in blocks.cache:
        blocks.cache["first"] = _first_relevant(blocks)
    return blocks.cache["first"]


def _first_relevant(blocks: TieBlocks):
    ranked, block_id = blocks.ranked_relevant, blocks.block_id
    first = ranked.to(torch.uint8).argmax(dim=1, keepdim=True)
    slot = torch.where(ranked.any(dim=1, keepdim=True), block_id.gather(1, first), block_id[:, -1:])
    pick = lambda values: values.gather(1, slot).squeeze(1)  # noqa: E731
    sizes = blocks.block_size
    if host_tuned(sizes) and slot.numel():  # only the slots up to the first relevant
        sizes = sizes[:, : int(slot.max()) + 1]
    relevant = pick(blocks.block_relevant)
    return relevant > 0, pick(torch.cumsum(sizes, dim=1).sub_(sizes)), pick(blocks.block_size), relevant


def _none_relevant_yet(blocks: TieBlocks, depth: int) -> torch.Tensor:
    """``(batch, depth + 1)``: P(the first j ranks of the first relevant block hold no relevant
    item), j = 0..depth (computed once per blocks and depth)."""
    key = ("none relevant yet", depth)
    if key not in blocks.cache:
        _, _, size, relevant = _first_relevant_block(blocks)
        blocks.cache[key] = _none_relevant(size, relevant, depth)
    return blocks.cache[key]


def _none_relevant(size: torch.Tensor, relevant: torch.Tensor, depth: int) -> torch.Tensor:
    j = constants.arange(0, depth, 1, torch.float64, size.device)
    n, r = size[:, None], relevant[:, None]
    factor = ((n - r - j) / (n - j).clamp(min=1)).clamp(min=0.0)
    return torch.nn.functional.pad(factor.cumprod(dim=1), (1, 0), value=1.0)


def _offsets_within(cutoffs: Sequence[int], start: torch.Tensor, size: torch.Tensor) -> torch.Tensor:
    """``(batch, len(cutoffs))`` int64: how many ranks of the block lie within each cutoff."""
    k = constants.listed(tuple(cutoffs), torch.float64, start.device)
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
    found, start, size, _ = _first_relevant_block(blocks)
    depth = _offsets_wanted(blocks, found, size)
    within = _offsets_within(cutoffs, start, size).clamp(max=depth)
    miss = _none_relevant_yet(blocks, depth).gather(1, within)
    return torch.where(found[:, None], 1.0 - miss, constants.scalar(0.0, torch.float64, miss.device))


def expected_reciprocal_rank(blocks: TieBlocks, cutoffs: Sequence[int]) -> torch.Tensor:
    """E[RR@k], summing ``P(first relevant at start + j) / (start + j)`` over ranks within k."""
    found, start, size, relevant = _first_relevant_block(blocks)
    depth = _offsets_wanted(blocks, found, size)
    miss = _none_relevant_yet(blocks, depth)[:, :-1]
    j = constants.arange(0, depth, 1, torch.float64, start.device)
    hit_next = relevant[:, None] / (size[:, None] - j).clamp(min=1)
    terms = miss * hit_next / (start[:, None] + j + 1.0)
    summed = torch.nn.functional.pad(terms.cumsum(dim=1), (1, 0))
    within = _offsets_within(cutoffs, start, size).clamp(max=depth)
    values = summed.gather(1, within)
    return torch.where(found[:, None], values, constants.scalar(0.0, torch.float64, values.device))


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
    ranks = constants.arange(1, depth + 1, 1, torch.float64, device)
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
    slot = blocks.block_id[:, constants.listed(tuple(k - 1 for k in limits), torch.int64, device)]
    pick = lambda t: t.gather(1, slot)  # noqa: E731
    end = constants.listed(tuple(limits), torch.float64, device)
    partial = (harmonic[end.long()] - pick(h_start)) * pick(slope) + pick(q) * (end - pick(starts))
    summed = pick(before) + partial
    one, zero = (constants.scalar(v, torch.float64, device) for v in (1.0, 0.0))
    safe = torch.where(num_relevant > 0, num_relevant, one)
    return torch.where(num_relevant[:, None] > 0, summed / safe[:, None], zero)
