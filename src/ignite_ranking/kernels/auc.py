"""AUC per query, the Mann-Whitney statistic, over one whole-row :class:`~.batch.RankedBatch`.

``AUC = (pairs (relevant, non-relevant) with the relevant item scored higher + 1/2 * pairs
scored equal) / (P * N)``, over the judged items of the row: P relevant, N judged non-relevant.
It equals ``sklearn.metrics.roc_auc_score`` on the row. It needs every item of the row ranked
(O(n log n) per row) and the ranked scores (``RankedBatch.scores``); ties count one half
whatever the ranking's tie policy, since equal scores form one block here.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch

from .batch import RankedBatch
from .judged import judged_flags

__all__ = ["auc", "auc_at", "auc_pairs", "check_max_fpr"]


def check_max_fpr(max_fpr: object) -> float | None:
    """``max_fpr`` as a float in (0, 1], or None; refuses anything else (bools too)."""
    if max_fpr is None:
        return None
    if isinstance(max_fpr, bool) or not isinstance(max_fpr, numbers.Real):
        raise TypeError(
            f"max_fpr must be None or a float in (0, 1], got {max_fpr!r} of type {type(max_fpr).__name__}."
        )
    if not 0 < float(max_fpr) <= 1:
        raise ValueError(f"max_fpr must be in (0, 1], such as 0.1, got {max_fpr!r}.")
    return float(max_fpr)


def auc_pairs(ranked: RankedBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(AUC, P, N)`` of every row, each ``(batch,)`` float64; AUC is 0 where ``P * N`` is 0.

    Example:
        >>> import torch
        >>> from ignite_ranking.kernels import RankedBatch
        >>> ranked = RankedBatch(labels=torch.tensor([[1.0, 0.0, 1.0, 0.0]]),
        ...     relevant=torch.tensor([[1.0, 0.0, 1.0, 0.0]]), num_relevant=torch.tensor([2.0]),
        ...     scores=torch.tensor([[0.9, 0.5, 0.5, 0.1]]))
        >>> value, p, n = auc_pairs(ranked)  # pairs won: 2 + (1/2 + 1) of 4
        >>> value.tolist(), p.tolist(), n.tolist()
        ([0.875], [2.0], [2.0])
    """
    if ranked.blocks is not None:
        raise ValueError("AUC counts ties as one half itself; rank with ties other than 'average'.")
    if ranked.scores is None:
        raise ValueError("AUC needs the ranked scores (RankedBatch.scores)")
    judged = judged_flags(ranked)
    positive = ((ranked.relevant > 0) & judged).to(torch.float64)
    negative = (judged & (ranked.relevant <= 0)).to(torch.float64)
    s = ranked.scores
    if s.shape[1] == 0:
        zero = torch.zeros(s.shape[0], dtype=torch.float64, device=s.device)
        return zero, zero, zero
    # Blocks of equal scores, in rank (descending score) order.
    starts = torch.nn.functional.pad(s[:, 1:] != s[:, :-1], (1, 0), value=True)
    block = starts.to(torch.int64).cumsum(dim=1) - 1
    pos_in = torch.zeros_like(positive).scatter_add_(1, block, positive)
    neg_in = torch.zeros_like(negative).scatter_add_(1, block, negative)
    p, n = positive.sum(dim=1), negative.sum(dim=1)
    neg_above = neg_in.cumsum(dim=1) - neg_in
    won = (pos_in * (n[:, None] - neg_above - 0.5 * neg_in)).sum(dim=1)
    pairs = p * n
    value = torch.where(
        pairs > 0, won / torch.where(pairs > 0, pairs, torch.ones_like(pairs)), torch.zeros_like(won)
    )
    return value, p, n


def auc(ranked: RankedBatch) -> torch.Tensor:
    """AUC of every row: ``(batch, 1)`` (0 for a row without relevant or non-relevant items)."""
    return auc_pairs(ranked)[0][:, None]


def auc_at(
    ranked: RankedBatch, cutoffs: Sequence[int] | None = None, max_fpr: float | None = None
) -> torch.Tensor:
    """AUC of every row over its top k ranked items, for each cutoff (``(batch, len(cutoffs))``;
    ``cutoffs=None``: the whole row, ``(batch, 1)``), or with ``max_fpr`` the McClish-standardized
    partial AUC over false positive rates ``[0, max_fpr]``, as ``sklearn.metrics.roc_auc_score``
    and torchmetrics compute it: ``(1 + (A - m^2 / 2) / (m - m^2 / 2)) / 2``, A the area under
    the ROC curve (equal scores one diagonal step) up to ``m = max_fpr``, the curve's value there
    interpolated linearly. A row whose top k lacks a relevant or a non-relevant judged item
    scores 0. Equal scores split by a cutoff count as tied among the items kept.

    Example:
        >>> import torch
        >>> from ignite_ranking.kernels import RankedBatch
        >>> ranked = RankedBatch(labels=torch.tensor([[1.0, 0.0, 1.0, 0.0]]),
        ...     relevant=torch.tensor([[1.0, 0.0, 1.0, 0.0]]), num_relevant=torch.tensor([2.0]),
        ...     scores=torch.tensor([[0.9, 0.5, 0.4, 0.1]]))
        >>> auc_at(ranked, [2, 3, 4]).tolist()  # top 2: 1 of 1 pair; top 3: 1 of 2; all: 3 of 4
        [[1.0, 0.5, 0.75]]
        >>> # area 1/4 up to fpr 1/2, standardized: (1 + (1/4 - 1/8) / (1/2 - 1/8)) / 2
        >>> round(auc_at(ranked, None, max_fpr=0.5).item(), 4)
        0.6667
    """
    if ranked.blocks is not None:
        raise ValueError("AUC counts ties as one half itself; rank with ties other than 'average'.")
    if ranked.scores is None:
        raise ValueError("AUC needs the ranked scores (RankedBatch.scores)")
    judged = judged_flags(ranked)
    s = ranked.scores
    batch, depth = s.shape
    cutoffs = [depth] if cutoffs is None else list(cutoffs)
    if depth == 0:
        return torch.zeros(batch, len(cutoffs), dtype=torch.float64, device=s.device)
    positive = ((ranked.relevant > 0) & judged).to(torch.float64)
    negative = (judged & (ranked.relevant <= 0)).to(torch.float64)
    # Blocks of equal scores, in rank (descending score) order.
    starts = torch.nn.functional.pad(s[:, 1:] != s[:, :-1], (1, 0), value=True)
    block = starts.to(torch.int64).cumsum(dim=1) - 1
    position = torch.arange(depth, device=s.device)
    values = []
    for k in cutoffs:
        within = (position < k).to(torch.float64)[None, :]
        pos_in = torch.zeros_like(positive).scatter_add_(1, block, positive * within)
        neg_in = torch.zeros_like(negative).scatter_add_(1, block, negative * within)
        values.append(_area(pos_in, neg_in, max_fpr))
    return torch.stack(values, dim=1)


def _area(pos_in: torch.Tensor, neg_in: torch.Tensor, max_fpr: float | None) -> torch.Tensor:
    """``(batch,)`` (partial) AUC from each block's relevant and non-relevant counts (0 for a
    row without both)."""
    p, n = pos_in.sum(dim=1), neg_in.sum(dim=1)
    both = (p > 0) & (n > 0)
    p_safe, n_safe = torch.where(both, p, 1.0), torch.where(both, n, 1.0)
    if max_fpr is None or max_fpr == 1.0:
        neg_above = neg_in.cumsum(dim=1) - neg_in
        won = (pos_in * (n[:, None] - neg_above - 0.5 * neg_in)).sum(dim=1)
        return torch.where(both, won / (p_safe * n_safe), 0.0)
    # The ROC curve: block j steps from (x0, y0) to (x1, y1), clipped at x = max_fpr.
    x1 = neg_in.cumsum(dim=1) / n_safe[:, None]
    y1 = pos_in.cumsum(dim=1) / p_safe[:, None]
    x0, y0 = x1 - neg_in / n_safe[:, None], y1 - pos_in / p_safe[:, None]
    step = x1 - x0
    width = torch.clamp(torch.minimum(x1, torch.full_like(x1, max_fpr)) - x0, min=0.0)
    rise = torch.where(step > 0, (y1 - y0) * width / torch.where(step > 0, step, 1.0), 0.0)
    partial = (width * (2 * y0 + rise) / 2).sum(dim=1)
    low = max_fpr * max_fpr / 2
    standardized = 0.5 * (1 + (partial - low) / (max_fpr - low))
    return torch.where(both, standardized, 0.0)
