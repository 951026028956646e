"""Ignite metrics, one module each, sharing :class:`~ignite_ranking.metrics.base.RankingMetric`."""

from .auc import AUC, GAUC
from .average_precision import MAP
from .base import RankingMetric
from .beyond import (
    AveragePopularity,
    ExpectedExposure,
    IntraListDiversity,
    LongTailShare,
    Novelty,
    Serendipity,
)
from .diversity import ERRIA, NRBP, AlphaNDCG, PrecisionIA, SubtopicRecall
from .exposure import Coverage, GiniIndex, ShannonEntropy
from .group import RankingMetrics
from .hit_rate import HitRate
from .judged import Bpref, Judged
from .label_notes import FractionalLabelWarning
from .mrr import MRR
from .ndcg import NDCG
from .per_query import PerQuery
from .persistence import ERR, NERR, RBP, RBPResidual
from .precision import Precision
from .r_precision import RPrecision
from .recall import Recall

__all__ = [
    "AUC",
    "ERR",
    "ERRIA",
    "GAUC",
    "MAP",
    "MRR",
    "NDCG",
    "NERR",
    "NRBP",
    "RBP",
    "AlphaNDCG",
    "AveragePopularity",
    "Bpref",
    "Coverage",
    "ExpectedExposure",
    "FractionalLabelWarning",
    "GiniIndex",
    "HitRate",
    "IntraListDiversity",
    "Judged",
    "LongTailShare",
    "Novelty",
    "PerQuery",
    "Precision",
    "PrecisionIA",
    "RBPResidual",
    "RPrecision",
    "RankingMetric",
    "RankingMetrics",
    "Recall",
    "Serendipity",
    "ShannonEntropy",
    "SubtopicRecall",
]
