"""HitRate@k."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from ..kernels import RankedBatch, scoring
from .base import RankingMetric

if TYPE_CHECKING:
    from .options import RankingOptions, Unpack

__all__ = ["HitRate"]


class HitRate(RankingMetric):
    r"""Fraction of queries with at least one relevant item in the top k.

    .. math:: \text{HitRate}@k = \frac{1}{|Q|} \sum_{q \in Q} \mathbb{1}[r_q \le k]

    with :math:`r_q` the rank of the first relevant item. Argument names and defaults follow
    :class:`ignite.metrics.HitRate` (``top_k=1``), plus ``relevance_threshold`` and ``ties`` as in
    :class:`~ignite_ranking.MRR`, whose docstring states the tie rule and input forms. As in MRR,
    ``relevance_threshold`` is the third positional argument, so pass ``output_transform`` and
    later arguments by keyword. Ignite's HitRate counts ``label > 0`` as relevant; ours uses
    ``label >= relevance_threshold`` (the same for binary labels).

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import HitRate
        >>> metric = HitRate(top_k=[1, 2])
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[0, 1, 0]])))
        >>> metric.compute()
        [0.0, 1.0]
    """

    value_range = (0.0, 1.0)
    name = "hit_rate"
    cutoff_tail = "repeat"
    needs_labels = False

    options_offered = RankingMetric.options_offered - {"judged_only"}

    def __init__(self, top_k: int | list[int] = 1, *args, **options: Unpack[RankingOptions]):
        super().__init__(top_k, *args, **options)

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        return scoring.hit_rate(ranked, cutoffs)
