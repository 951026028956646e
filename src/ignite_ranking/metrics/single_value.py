"""The base of the metrics with one value per query and no cutoffs (R-Precision, bpref, AUC)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import RankingMetric
from .options import given_options

if TYPE_CHECKING:
    from .options import RankingOptions, Unpack

__all__ = ["SingleValueMetric"]


class SingleValueMetric(RankingMetric):
    """A metric with one value per query and no cutoffs (R-Precision, bpref, AUC): the
    positional arguments of :class:`~ignite_ranking.MRR` without ``top_k``."""

    takes_top_k = False
    options_offered = RankingMetric.options_offered - {"judged_only"}

    def __init__(self, *args, **options: Unpack[RankingOptions]):
        super().__init__(None, **given_options(type(self), args, options))  # top_k=... is refused
