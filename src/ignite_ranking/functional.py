"""Per-query ranking metrics as plain functions of ``(y_pred, y)``.

Each function checks its inputs, ranks the batch once with the contract's tie rule and returns
float64 values, one row per query and one column per cutoff in ascending order; a query without
relevant items scores 0. The metric classes use the same kernel.

Example:
    >>> import torch
    >>> from ignite_ranking.functional import reciprocal_rank
    >>> y_pred = torch.tensor([[4.0, 2.0, 3.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    >>> y = torch.tensor([[0, 0, 1, 1], [0, 0, 1, 0]])
    >>> reciprocal_rank(y_pred, y, top_k=[1, 2, 3])
    tensor([[0.0000, 0.5000, 0.5000],
            [0.0000, 0.0000, 0.3333]], dtype=torch.float64)
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .kernels import (
    RankedBatch,
    check_gain_function,
    check_inputs,
    check_threshold,
    check_ties,
    normalize_top_k,
    rank_batch,
    scoring,
)

__all__ = [
    "average_precision",
    "hit_rate",
    "ndcg",
    "precision",
    "r_precision",
    "recall",
    "reciprocal_rank",
]


def _per_query(
    score: Callable[[RankedBatch, list[int]], torch.Tensor],
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float,
    ties: str,
    ideal: bool = False,
    count: bool = False,
) -> torch.Tensor:
    cutoffs = normalize_top_k(top_k)
    threshold = check_threshold(relevance_threshold)
    check_ties(ties)
    check_inputs(y_pred, y)
    ranked = rank_batch(
        y_pred.detach(),
        y.detach(),
        cutoffs[-1],
        relevance_threshold=threshold,
        ties=ties,
        ideal=ideal,
        count=count,
    )
    return score(ranked, cutoffs)


def reciprocal_rank(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
) -> torch.Tensor:
    """RR@k: ``1 / rank`` of the first relevant item if that rank is ``<= k``, else 0.

    Returns:
        ``(batch, len(top_k))`` float64.
    """
    return _per_query(scoring.reciprocal_rank, y_pred, y, top_k, relevance_threshold, ties)


def hit_rate(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
) -> torch.Tensor:
    """Hit@k: 1 if any relevant item is in the top k, else 0; ``(batch, len(top_k))``."""
    return _per_query(scoring.hit_rate, y_pred, y, top_k, relevance_threshold, ties)


def precision(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
) -> torch.Tensor:
    """P@k: relevant items in the top k divided by k (not by ``min(k, num_items)``)."""
    return _per_query(scoring.precision, y_pred, y, top_k, relevance_threshold, ties)


def recall(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
) -> torch.Tensor:
    """R@k: relevant items in the top k divided by the query's number of relevant items."""
    return _per_query(scoring.recall, y_pred, y, top_k, relevance_threshold, ties, count=True)


def average_precision(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
) -> torch.Tensor:
    """AP@k: sum of P@i over the ranks ``i <= k`` of relevant items, divided by R (trec_eval's map_cut)."""
    return _per_query(scoring.average_precision, y_pred, y, top_k, relevance_threshold, ties, count=True)


def ndcg(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    gain_function: str = "exp_rank",
    *,
    ties: str = "first",
) -> torch.Tensor:
    """NDCG@k with gain ``2**label - 1`` (``"exp_rank"``) or ``label`` (``"linear_rank"``).

    Gains are computed in float64 from the labels of relevant items (others gain 0); IDCG@k is the
    DCG@k of the row's own labels in descending order.
    """
    check_gain_function(gain_function, check_threshold(relevance_threshold))

    def score(ranked: RankedBatch, cutoffs: list[int]) -> torch.Tensor:
        return scoring.ndcg(ranked, cutoffs, gain_function)

    return _per_query(score, y_pred, y, top_k, relevance_threshold, ties, ideal=True)


def r_precision(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
) -> torch.Tensor:
    """R-Precision: relevant items in the top R divided by R, R the query's relevant count; ``(batch,)``."""
    threshold = check_threshold(relevance_threshold)
    check_ties(ties)
    check_inputs(y_pred, y)
    ranked = rank_batch(
        y_pred.detach(), y.detach(), 1, relevance_threshold=threshold, ties=ties, cover_relevant=True
    )
    return scoring.r_precision(ranked)[:, 0]
