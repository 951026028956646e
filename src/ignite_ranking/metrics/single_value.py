"""The base of the metrics with one value per query and no cutoffs (R-Precision, bpref, AUC)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .base import RankingMetric

__all__ = ["SingleValueMetric"]


class SingleValueMetric(RankingMetric):
    """A metric with one value per query and no cutoffs (R-Precision, bpref, AUC): the
    positional arguments of :class:`~ignite_ranking.MRR` without ``top_k``."""

    takes_top_k = False

    def __init__(
        self,
        ignore_zero_hits: bool = True,
        relevance_threshold: float = 1.0,
        output_transform: Callable = lambda x: x,
        device: str | torch.device = "cpu",
        skip_unrolling: bool = False,
        *,
        ties: str = "first",
        per_query: bool = False,
        ignore_index: int | None = None,
        confidence: float | None = None,
        empty_target_action: str | None = None,
        aggregation: str | Callable = "mean",
    ):
        super().__init__(
            None,
            ignore_zero_hits,
            relevance_threshold,
            output_transform,
            device,
            skip_unrolling,
            ties=ties,
            per_query=per_query,
            ignore_index=ignore_index,
            confidence=confidence,
            empty_target_action=empty_target_action,
            aggregation=aggregation,
        )
