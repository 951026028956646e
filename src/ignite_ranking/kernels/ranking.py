"""The ranking kernel: select and order the top items of every row once, exactly.

Order: descending score; equal scores by the tie policy.

- ``"first"`` (the contract's default): lower index first, the order of
  ``torch.argsort(y_pred, descending=True, stable=True)``.
- ``"last"``: higher index first.
- ``"optimistic"`` / ``"pessimistic"``: higher / lower label first, then lower index first.
- ``"average"``: ranked as ``"first"``, then every metric takes its expected value over all
  orders of each tied block (see :mod:`ignite_ranking.kernels.ties`).

The kernel never sorts a whole row unless the cutoff covers it. ``torch.topk`` with one item
more than the cutoff finds the best values; a row whose value after the cutoff equals the value
at the cutoff has a tie across the boundary, and only those rows take an extra pass that keeps
the tied items the policy prefers. The selected items are then ordered with stable sorts of
``(batch, k)`` values.
"""

from __future__ import annotations

import math

import torch

from .batch import RankedBatch, ideal_order
from .inputs import comparable_labels, count_relevant
from .ties import tie_blocks

__all__ = ["TIE_POLICIES", "check_ties", "rank_batch", "top_indices"]

TIE_POLICIES = ("first", "last", "average", "optimistic", "pessimistic")
_BY_LABEL = ("optimistic", "pessimistic")


def check_ties(ties: object) -> str:
    """Returns ``ties`` if it names a tie policy, else raises ``ValueError``."""
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties must be one of {', '.join(map(repr, TIE_POLICIES))}, got {ties!r}.")
    return ties  # type: ignore[return-value]


def top_indices(
    scores: torch.Tensor, k: int, ties: str = "first", labels: torch.Tensor | None = None
) -> torch.Tensor:
    """Indices of the ``min(k, num_items)`` best items of each row, in ranking order.

    Args:
        scores: ``(batch, num_items)`` floating scores without NaN.
        k: how many items to return per row.
        ties: a tie policy; ``"average"`` orders as ``"first"``.
        labels: ``(batch, num_items)`` labels, needed by ``"optimistic"`` and ``"pessimistic"``.

    Returns:
        ``(batch, min(k, num_items))`` int64 indices.
    """
    return _select(scores, k, ties, labels)[0]


def _select(scores, k, ties, labels):
    """``top_indices`` and the rows whose k-th value is tied with an item below the cutoff."""
    if ties in _BY_LABEL and labels is None:
        raise ValueError(f"ties={ties!r} orders tied items by label, so labels are needed.")
    batch, num_items = scores.shape
    none = torch.zeros(0, dtype=torch.int64, device=scores.device)
    if k >= num_items:
        every = torch.arange(num_items, device=scores.device).expand(batch, num_items)
        return _in_rank_order(scores, every, ties, labels), none
    values, indices = torch.topk(scores, k + 1, dim=1)
    boundary = values[:, k - 1]
    indices = indices[:, :k]
    crossing = (values[:, k] == boundary).nonzero().squeeze(1)
    if crossing.numel():
        indices = _refill_tied_slots(scores, values[:, :k], indices, crossing, ties, labels)
    return _in_rank_order(scores, indices, ties, labels), crossing


def _refill_tied_slots(scores, values, indices, crossing, ties, labels):
    """Fixes rows whose k-th value is tied with items below the cutoff.

    In such a row the slots of ``topk`` holding the boundary value hold arbitrary items of that
    value; they are refilled with the tied items the policy puts first: lowest indices
    (``"first"``), highest (``"last"``), or highest / lowest labels then lowest indices
    (``"optimistic"`` / ``"pessimistic"``). Items above the boundary are already right.
    """
    batch = scores.shape[0]
    boundary = values[:, -1]
    if 2 * crossing.numel() > batch:
        # Most rows: compare in place, with NaN (equal to nothing) for rows without a crossing tie.
        target = torch.full_like(boundary, math.nan).index_copy(0, crossing, boundary[crossing])
        rows, cols = (scores == target[:, None]).nonzero(as_tuple=True)
    else:
        rows, cols = (scores[crossing] == boundary[crossing, None]).nonzero(as_tuple=True)
        rows = crossing[rows]
    if ties in _BY_LABEL:
        # Order each row's tied items by label (stable: index order within a label), then by row.
        by_label = labels[rows, cols].argsort(descending=ties == "optimistic", stable=True)
        by_row = rows[by_label].argsort(stable=True)
        rows, cols = rows[by_label][by_row], cols[by_label][by_row]
    per_row = torch.bincount(rows, minlength=batch)
    ordinal = torch.arange(rows.numel(), device=rows.device) - (per_row.cumsum(0) - per_row)[rows]
    if ties == "last":
        ordinal = per_row[rows] - 1 - ordinal
    is_crossing = torch.zeros(batch, dtype=torch.bool, device=scores.device).index_fill(0, crossing, True)
    slots = (values == boundary[:, None]) & is_crossing[:, None]
    chosen = ordinal < slots.sum(dim=1)[rows]
    # Both sides are in row order with as many entries per row, so they pair up.
    indices = indices.clone()
    indices[slots] = cols[chosen]
    return indices


def _in_rank_order(scores, indices, ties, labels):
    """Orders each row's ``indices`` by descending score, equal scores by the tie policy."""
    indices = indices.sort(dim=1, descending=ties == "last").values
    if ties in _BY_LABEL:
        by_label = labels.gather(1, indices).argsort(dim=1, descending=ties == "optimistic", stable=True)
        indices = indices.gather(1, by_label)
    order = scores.gather(1, indices).argsort(dim=1, descending=True, stable=True)
    return indices.gather(1, order)


def rank_batch(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    depth: int,
    *,
    relevance_threshold: float = 1.0,
    ties: str = "first",
    ideal: bool = False,
    cover_relevant: bool = False,
    count: bool = True,
) -> RankedBatch:
    """Ranks a checked batch once and gathers what every scorer needs.

    Args:
        y_pred: ``(batch, num_items)`` scores, already checked by
            :func:`~ignite_ranking.kernels.inputs.check_inputs`.
        y: ``(batch, num_items)`` labels.
        depth: the largest cutoff asked for; K is ``min(depth, num_items)``.
        relevance_threshold: an item is relevant iff its label is ``>=`` this.
        ties: the tie policy.
        ideal: also gather each row's K largest labels (for IDCG).
        cover_relevant: make K at least each row's number of relevant items (for R-Precision).
        count: count each row's relevant items (recall, AP and R-Precision divide by it). If
            False, ``num_relevant`` only tells whether a row has one (1.0) or not (0.0), which is
            all the other scorers and ``ignore_zero_hits`` need, at a fraction of the cost.
    """
    labels, threshold = comparable_labels(y, relevance_threshold)
    num_relevant = None
    if cover_relevant:
        num_relevant = count_relevant(y, relevance_threshold)
        if num_relevant.numel():
            depth = max(depth, int(num_relevant.max().item()))
    depth = min(depth, y.shape[1])
    best = None
    if ideal:
        # One label more than the depth shows which rows have relevant items beyond it.
        best = torch.topk(labels, min(depth + 1, y.shape[1]), dim=1).values
    if num_relevant is None:
        num_relevant = _relevant_per_row(y, labels, threshold, relevance_threshold, depth, best, count)
    indices, crossing = _select(y_pred, depth, ties, labels)
    ranked_labels = labels.gather(1, indices)
    relevant = ranked_labels >= threshold
    batch = RankedBatch(
        labels=ranked_labels.to(torch.float64),
        relevant=relevant.to(torch.float64),
        num_relevant=num_relevant,
        indices=indices,
    )
    if best is not None:
        batch.ideal_labels, batch.ideal_relevant = ideal_order(labels, threshold, best[:, :depth])
    if ties == "average":
        blocks = tie_blocks(y_pred, labels, threshold, indices, relevant, crossing)
        batch.blocks = blocks
        batch.relevant = blocks.relevant / blocks.size
    return batch


def _relevant_per_row(y, labels, threshold, relevance_threshold, depth, best, count):
    """``num_relevant`` of :func:`rank_batch`, as cheaply as what is already known allows.

    With the row's largest labels at hand (``best``, ``depth + 1`` of them unless the row is
    shorter), the count is read off them for every row whose relevant items they all show, and
    only the other rows are counted in full.
    """
    if best is not None:
        flags = best >= threshold
        counts = flags.sum(dim=1).to(torch.float64)
        if not count:
            return (counts > 0).to(torch.float64)
        if best.shape[1] > depth:
            beyond = flags[:, depth].nonzero().squeeze(1)
            if beyond.numel():
                counts[beyond] = count_relevant(y[beyond], relevance_threshold)
        return counts
    if count:
        return count_relevant(y, relevance_threshold)
    if y.shape[1]:
        return (labels.amax(dim=1) >= threshold).to(torch.float64)
    return torch.zeros(y.shape[0], dtype=torch.float64, device=y.device)
