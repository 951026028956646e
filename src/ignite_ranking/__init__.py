"""Exact, fast, distributed ranking metrics for PyTorch-Ignite."""

from . import functional
from .metrics import (
    MAP,
    MRR,
    NDCG,
    HitRate,
    PerQuery,
    Precision,
    RankingMetric,
    RankingMetrics,
    Recall,
    RPrecision,
)

__all__ = [
    "MAP",
    "MRR",
    "NDCG",
    "HitRate",
    "PerQuery",
    "Precision",
    "RPrecision",
    "RankingMetric",
    "RankingMetrics",
    "Recall",
    "functional",
]
__version__ = "0.1.0"
