"""Precision@k."""

from __future__ import annotations

from ..kernels import RankedBatch, scoring
from .base import RankingMetric

__all__ = ["Precision"]


class Precision(RankingMetric):
    r"""Mean precision at k: relevant items among the top k, divided by k.

    .. math:: \text{P}@k = \frac{1}{|Q|} \sum_{q \in Q} \frac{|\{\text{relevant items of } q
        \text{ at ranks} \le k\}|}{k}

    The divisor is k even when a query has fewer than k items (as trec_eval's ``P_k`` and ranx's
    ``precision@k``). Arguments as :class:`~ignite_ranking.MRR`.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import Precision
        >>> metric = Precision(top_k=[1, 2, 4])
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[0, 1, 1]])))
        >>> metric.compute()
        [0.0, 0.5, 0.5]
    """

    name = "precision"
    needs_labels = False

    def score(self, ranked: RankedBatch):
        return scoring.precision(ranked, self.top_k)
