"""Recall@k."""

from __future__ import annotations

from collections.abc import Sequence

from ..kernels import RankedBatch, scoring
from .base import RankingMetric

__all__ = ["Recall"]


class Recall(RankingMetric):
    r"""Mean recall at k: relevant items among the top k, divided by the query's R relevant items.

    .. math:: \text{R}@k = \frac{1}{|Q|} \sum_{q \in Q} \frac{|\{\text{relevant items of } q
        \text{ at ranks} \le k\}|}{R_q}

    R counts every relevant item of the row, so recall stays below 1 when R > k (trec_eval's
    ``recall_k``). Arguments as :class:`~ignite_ranking.MRR`.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import Recall
        >>> metric = Recall(top_k=[1, 2])
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[0, 1, 1]])))
        >>> metric.compute()
        [0.0, 0.5]
    """

    needs_counts = True
    value_range = (0.0, 1.0)
    name = "recall"
    cutoff_tail = "repeat"
    needs_labels = False

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]):
        return scoring.recall(ranked, cutoffs)
