"""The metrics of a full rank ``r`` among ``n`` items, and the law of the sampled rank that full
ranks give (the protocol of :mod:`ignite_ranking.sampled.estimators`)."""

from __future__ import annotations

import numpy as np
import torch

from ._pmf import sampled_rank_pmf
from .arguments import _check_flag, _is_int, check_metric, check_sizes


def metric_values(ranks: torch.Tensor, num_items: int, metric: str, k: int | None) -> torch.Tensor:
    """The metric of a query whose relevant item has (real) rank ``ranks`` among ``num_items``."""
    r = ranks.to(torch.float64)
    if metric == "auc":
        return (num_items - r) / (num_items - 1)
    inside = torch.ones_like(r) if k is None else (r <= k).to(torch.float64)
    if metric in ("hit_rate", "recall"):
        return inside
    if metric == "precision":
        return inside / k
    if metric == "mrr":
        return inside / r
    return inside / torch.log2(r + 1)  # ndcg


def full_metric(ranks: object, num_items: int, metric: str, k: int | None = None) -> float:
    """The exact metric of full-catalog ranks: the mean over queries of ``M(r)``.

    Args:
        ranks: each query's full rank ``r`` of its one relevant item, integers in ``1 .. n``.
        num_items: ``n``, the catalog size.
        metric: ``"mrr"``, ``"hit_rate"``, ``"recall"``, ``"precision"``, ``"ndcg"`` or ``"auc"``.
        k: the cutoff (required by hit_rate, recall and precision; refused by auc).

    Example:
        >>> from ignite_ranking import sampled
        >>> sampled.full_metric([1, 2, 50], 100, "mrr", 10)  # (1 + 1/2 + 0) / 3
        0.5
        >>> sampled.full_metric([1, 100], 100, "auc")
        0.5
    """
    metric, k = check_metric(metric, k)
    if not _is_int(num_items) or num_items < 2:
        raise ValueError(f"num_items must be an int >= 2, got {num_items!r}.")
    values = torch.as_tensor(np.asarray(ranks.cpu() if isinstance(ranks, torch.Tensor) else ranks))
    if values.is_floating_point() and bool((values != values.round()).any()):
        raise ValueError("ranks must be whole numbers in 1 .. num_items.")
    values = values.reshape(-1).to(torch.float64)
    if values.numel() == 0:
        raise ValueError("ranks must hold at least one query's rank.")
    if bool((values < 1).any()) or bool((values > num_items).any()):
        raise ValueError(
            f"ranks must lie in 1 .. num_items = {num_items}, got values from {values.min().item():g} "
            f"to {values.max().item():g}."
        )
    return float(metric_values(values, int(num_items), metric, k).mean())


def expected_histogram(
    ranks: object,
    num_items: int,
    num_negatives: int,
    *,
    weights: object = None,
    replacement: bool = False,
) -> torch.Tensor:
    """The law of the sampled rank: ``sum_i w_i P(r' = j + 1 | r_i) / sum_i w_i``, float64.

    ``estimate(expected_histogram(...), ..., estimator="sampled")`` is then the expected
    sampled metric ``E[M(r')]`` of a system whose full ranks are ``ranks`` (weighted by
    ``weights``, default 1 each): the closed form of Krichene and Rendle's Section 3.

    Example:
        >>> from ignite_ranking import sampled
        >>> law = sampled.expected_histogram([100], 10_000, 99, replacement=True)
        >>> round(sampled.estimate(law, 10_000, 99, "mrr", estimator="sampled"), 4)  # system A's AP
        0.6366
    """
    n, m = check_sizes(num_items, num_negatives)
    replacement = _check_flag("replacement", replacement)
    r = torch.as_tensor(np.asarray(ranks.cpu() if isinstance(ranks, torch.Tensor) else ranks))
    r = r.reshape(-1).to(torch.float64)
    if r.numel() == 0 or bool((r < 1).any()) or bool((r > n).any()) or bool((r != r.round()).any()):
        raise ValueError(f"ranks must be whole numbers in 1 .. num_items = {n}.")
    if weights is None:
        w = torch.ones_like(r)
    else:
        w = torch.as_tensor(np.asarray(weights.cpu() if isinstance(weights, torch.Tensor) else weights))
        w = w.reshape(-1).to(torch.float64)
        if w.shape != r.shape or not bool(torch.isfinite(w).all()) or bool((w < 0).any()) or w.sum() <= 0:
            raise ValueError("weights must be finite, non-negative, one per rank, with a positive sum.")
    law = torch.zeros(m + 1, dtype=torch.float64)
    for start in range(0, r.numel(), 4096):
        part = slice(start, start + 4096)
        law += w[part] @ sampled_rank_pmf(r[part], n, m, replacement)
    return law / w.sum()
