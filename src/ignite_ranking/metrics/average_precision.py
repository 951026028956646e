"""MAP@k, mean average precision."""

from __future__ import annotations

from collections.abc import Sequence

from ..kernels import RankedBatch, scoring
from .base import RankingMetric

__all__ = ["MAP"]


class MAP(RankingMetric):
    r"""Mean average precision at k.

    .. math:: \text{AP}_q@k = \frac{1}{R_q} \sum_{i \le k,\; \text{item at } i \text{ relevant}}
        \text{P}_q@i

    The divisor is the query's number of relevant items R, not ``min(k, R)`` (trec_eval's
    ``map_cut_k`` and ranx's ``map@k``). Arguments as :class:`~ignite_ranking.MRR`.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import MAP
        >>> metric = MAP(top_k=[2, 3])
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[1, 0, 1]])))
        >>> [round(v, 4) for v in metric.compute()]
        [0.5, 0.8333]
    """

    needs_counts = True
    value_range = (0.0, 1.0)
    name = "map"
    cutoff_tail = "repeat"
    needs_labels = False

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]):
        return scoring.average_precision(ranked, cutoffs)
