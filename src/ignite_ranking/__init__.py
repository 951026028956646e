"""Exact, fast, distributed ranking metrics for PyTorch-Ignite."""

from . import functional
from .metrics import (
    AUC,
    ERR,
    GAUC,
    MAP,
    MRR,
    NDCG,
    NERR,
    RBP,
    Bpref,
    HitRate,
    Judged,
    PerQuery,
    Precision,
    RankingMetric,
    RankingMetrics,
    RBPResidual,
    Recall,
    RPrecision,
)

__all__ = [
    "AUC",
    "ERR",
    "GAUC",
    "MAP",
    "MRR",
    "NDCG",
    "NERR",
    "RBP",
    "Bpref",
    "HitRate",
    "Judged",
    "PerQuery",
    "Precision",
    "RBPResidual",
    "RPrecision",
    "RankingMetric",
    "RankingMetrics",
    "Recall",
    "functional",
]
__version__ = "0.1.0"
