"""Ignite metrics, one module each, sharing :class:`~ignite_ranking.metrics.base.RankingMetric`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _lazy

__getattr__, __dir__, __all__ = _lazy.attach_listed(__name__, __file__)

# The public names, written once: what a type checker and an IDE see, and what _lazy.attach_listed
# reads to load each on first use and to build __all__. ``A as A`` marks a re-export of a typed
# package; isort would split such imports one name a line.
# isort: off
if TYPE_CHECKING:
    from .auc import AUC as AUC, GAUC as GAUC
    from .average_precision import MAP as MAP
    from .base import RankingMetric as RankingMetric
    from .beyond import (
        AveragePopularity as AveragePopularity,
        IntraListDiversity as IntraListDiversity,
        LongTailShare as LongTailShare,
        Novelty as Novelty,
        Serendipity as Serendipity,
    )
    from .diversity import (
        ERRIA as ERRIA,
        NRBP as NRBP,
        AlphaNDCG as AlphaNDCG,
        PrecisionIA as PrecisionIA,
        SubtopicRecall as SubtopicRecall,
    )
    from .devices import DeviceWarning as DeviceWarning
    from .expected_exposure import ExpectedExposure as ExpectedExposure
    from .exposure import Coverage as Coverage, GiniIndex as GiniIndex, ShannonEntropy as ShannonEntropy
    from .group import RankingMetrics as RankingMetrics
    from .hit_rate import HitRate as HitRate
    from .judged import Bpref as Bpref, Judged as Judged
    from .label_notes import FractionalLabelWarning as FractionalLabelWarning
    from .mrr import MRR as MRR
    from .ndcg import NDCG as NDCG
    from .per_query import PerQuery as PerQuery
    from .persistence import ERR as ERR, NERR as NERR, RBP as RBP, RBPResidual as RBPResidual
    from .precision import Precision as Precision
    from .r_precision import RPrecision as RPrecision
    from .recall import Recall as Recall
# isort: on
