"""R-Precision."""

from __future__ import annotations

import torch

from ..kernels import RankedBatch, scoring
from .base import RankingMetric

__all__ = ["RPrecision"]


class RPrecision(RankingMetric):
    r"""Mean R-Precision: precision at each query's own number R of relevant items.

    .. math:: \text{R-Prec}_q = \frac{|\{\text{relevant items of } q \text{ at ranks} \le R_q\}|}{R_q}

    There is no ``top_k``; ``compute`` returns one float. The kernel ranks as deep as the largest R
    of the batch. Other arguments as :class:`~ignite_ranking.MRR`.

    Example:
        >>> import torch
        >>> from ignite_ranking import RPrecision
        >>> metric = RPrecision()
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[1, 0, 1]])))
        >>> metric.compute()
        0.5
    """

    name = "r_precision"
    takes_top_k = False
    covers_relevant = True

    def __init__(
        self,
        ignore_zero_hits: bool = True,
        relevance_threshold: float = 1.0,
        output_transform=lambda x: x,
        device: str | torch.device = "cpu",
        skip_unrolling: bool = False,
        *,
        ties: str = "first",
        per_query: bool = False,
        ignore_index: int | None = None,
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
        )

    def score(self, ranked: RankedBatch) -> torch.Tensor:
        return scoring.r_precision(ranked)
