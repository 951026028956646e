"""Exact, fast, distributed ranking metrics for PyTorch-Ignite."""

from . import catalog, functional
from .metrics import MAP, MRR, NDCG, HitRate, Precision, RankingMetric, RankingMetrics, Recall, RPrecision

__all__ = [
    "MAP",
    "MRR",
    "NDCG",
    "HitRate",
    "Precision",
    "RPrecision",
    "RankingMetric",
    "RankingMetrics",
    "Recall",
    "catalog",
    "functional",
]
__version__ = "0.1.0"
