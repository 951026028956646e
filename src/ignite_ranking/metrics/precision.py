"""Precision@k."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from ..kernels import RankedBatch, check_flag, scoring
from .base import _WHOLE_ROW, RankingMetric

if TYPE_CHECKING:
    from .options import RankingOptions, Unpack

__all__ = ["Precision"]


class Precision(RankingMetric):
    r"""Mean precision at k: relevant items among the top k, divided by k.

    .. math:: \text{P}@k = \frac{1}{|Q|} \sum_{q \in Q} \frac{|\{\text{relevant items of } q
        \text{ at ranks} \le k\}|}{k}

    The divisor is k even when a query has fewer than k items (as trec_eval's ``P_k`` and ranx's
    ``precision@k``); ``adaptive_k=True`` divides by ``min(k, n)`` instead, n the items of the
    query's ranking (torchmetrics' ``adaptive_k``). ``top_k=None`` gives the precision of each
    query's whole ranking, relevant items over n (torchmetrics' default): one value, no cutoff,
    and the whole row is ranked. Other arguments as :class:`~ignite_ranking.MRR`.

    Args:
        top_k: a positive int or a list of them, or None for each query's whole ranking.
        adaptive_k: divide by ``min(k, n)`` instead of k (keyword only).

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import Precision
        >>> metric = Precision(top_k=[1, 2, 4])
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[0, 1, 1]])))
        >>> metric.compute()
        [0.0, 0.5, 0.5]
        >>> metric = Precision(top_k=[1, 2, 4], adaptive_k=True)  # P@4 divides by the 3 items
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[0, 1, 1]])))
        >>> [round(v, 4) for v in metric.compute()]
        [0.0, 0.5, 0.6667]
        >>> metric = Precision(top_k=None)  # each query's whole list: (2 / 3 + 1 / 2) / 2
        >>> metric.update((torch.tensor([0.9, 0.8, 0.1, 0.4, 0.3]), torch.tensor([0, 1, 1, 1, 0]),
        ...                torch.tensor([0, 0, 0, 1, 1])))
        >>> round(metric.compute(), 4)
        0.5833
    """

    value_range = (0.0, 1.0)
    name = "precision"
    needs_labels = False

    def __init__(
        self,
        top_k: int | list[int] | None,
        *args,
        adaptive_k: bool = False,
        **options: Unpack[RankingOptions],
    ):
        self.adaptive_k = check_flag("adaptive_k", adaptive_k)
        super().__init__(top_k, *args, **options)

    def _cutoffs(self, top_k: object) -> list[int] | None:
        return None if top_k is None else super()._cutoffs(top_k)

    @property
    def depth(self) -> int:
        return _WHOLE_ROW if self.top_k is None else super().depth

    def settings(self) -> dict:
        settings = super().settings()
        if self.adaptive_k:  # only when set, so that states saved before the option still load
            settings["adaptive_k"] = True
        return settings

    @property
    def cutoff_tail(self) -> str:
        """Past the ranked depth P@k is hits / k; under ``adaptive_k``, hits / n: it repeats."""
        return "repeat" if self.adaptive_k else "divide"

    def score(self, ranked: RankedBatch):
        if self.top_k is None:
            return scoring.list_precision(ranked)
        return self.score_at(ranked, self.top_k)

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        return scoring.precision(ranked, cutoffs, self.adaptive_k)

    def numerators_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        return ranked.hits(cutoffs)
