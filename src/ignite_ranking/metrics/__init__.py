"""Ignite metrics, one module each, sharing :class:`~ignite_ranking.metrics.base.RankingMetric`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _lazy

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

# Each metric loads, with ignite, on first use. tests/test_imports.py checks that this table,
# __all__ and the imports for type checkers below name the same things.
__getattr__, __dir__ = _lazy.attach(
    __name__,
    names={
        "AUC": ".auc",
        "GAUC": ".auc",
        "MAP": ".average_precision",
        "RankingMetric": ".base",
        "AveragePopularity": ".beyond",
        "ExpectedExposure": ".expected_exposure",
        "IntraListDiversity": ".beyond",
        "LongTailShare": ".beyond",
        "Novelty": ".beyond",
        "Serendipity": ".beyond",
        **{name: ".diversity" for name in ("AlphaNDCG", "ERRIA", "NRBP", "PrecisionIA", "SubtopicRecall")},
        "Coverage": ".exposure",
        "GiniIndex": ".exposure",
        "ShannonEntropy": ".exposure",
        "RankingMetrics": ".group",
        "HitRate": ".hit_rate",
        "Bpref": ".judged",
        "Judged": ".judged",
        "FractionalLabelWarning": ".label_notes",
        "MRR": ".mrr",
        "NDCG": ".ndcg",
        "PerQuery": ".per_query",
        "ERR": ".persistence",
        "NERR": ".persistence",
        "RBP": ".persistence",
        "RBPResidual": ".persistence",
        "Precision": ".precision",
        "RPrecision": ".r_precision",
        "Recall": ".recall",
    },
)

if TYPE_CHECKING:  # what a type checker and an IDE see; at run time __getattr__ does this
    from .auc import AUC, GAUC
    from .average_precision import MAP
    from .base import RankingMetric
    from .beyond import AveragePopularity, IntraListDiversity, LongTailShare, Novelty, Serendipity
    from .diversity import ERRIA, NRBP, AlphaNDCG, PrecisionIA, SubtopicRecall
    from .expected_exposure import ExpectedExposure
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
