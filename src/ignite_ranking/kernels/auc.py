"""AUC per query, the Mann-Whitney statistic, over one whole-row :class:`~.batch.RankedBatch`.

``AUC = (pairs (relevant, non-relevant) with the relevant item scored higher + 1/2 * pairs
scored equal) / (P * N)``, over the judged items of the row: P relevant, N judged non-relevant.
It equals ``sklearn.metrics.roc_auc_score`` on the row. It needs every item of the row ranked
(O(n log n) per row) and the ranked scores (``RankedBatch.scores``); ties count one half
whatever the ranking's tie policy, since equal scores form one block here.
"""

from __future__ import annotations

import torch

from .batch import RankedBatch
from .judged import judged_flags

__all__ = ["auc", "auc_pairs"]


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
