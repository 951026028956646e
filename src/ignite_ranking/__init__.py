"""Exact, fast, distributed ranking metrics for PyTorch-Ignite."""

from . import catalog, distributed, functional
from .kernels.forms import Retrieved
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
    Coverage,
    GiniIndex,
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
    "Coverage",
    "GiniIndex",
    "HitRate",
    "Judged",
    "PerQuery",
    "Precision",
    "RBPResidual",
    "RPrecision",
    "RankingMetric",
    "RankingMetrics",
    "Recall",
    "Retrieved",
    "catalog",
    "distributed",
    "functional",
]
__version__ = "0.1.0"
