"""Exact, fast, distributed ranking metrics for PyTorch-Ignite."""

from . import catalog, functional
from .kernels.forms import Retrieved
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
    "Retrieved",
    "catalog",
    "functional",
]
__version__ = "0.1.0"
