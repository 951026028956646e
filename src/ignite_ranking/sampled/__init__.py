"""Sampled-negative evaluation and its corrections: estimate full-catalog metrics from ranks among
sampled negatives.

Prefer the full catalog (:func:`ignite_ranking.catalog.top_k`): it has no bias and fits in memory
at any catalog size. When only sampled ranks are available, :class:`SampledMetrics` keeps a
histogram of them and reports the full-catalog metrics estimated by one of the corrections of
:mod:`ignite_ranking.sampled.estimators`; :func:`estimate` does the same for a histogram from
anywhere, and :func:`sample_negatives` draws the negatives. See :doc:`/sampled`.

Example:
    >>> from ignite_ranking import sampled
    >>> h = [90, 6, 3, 1]  # 100 queries: 90 had their held-out item first among it and 3 negatives
    >>> sampled.estimate(h, 10_000, 3, "hit_rate", 10, estimator="sampled")  # naive: every r' <= 4
    1.0
    >>> round(sampled.estimate(h, 10_000, 3, "hit_rate", 10, estimator="bv", gamma=1.0), 4)
    0.0036
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _lazy

__all__ = [
    "ESTIMATORS",
    "METRICS",
    "RankDistribution",
    "SampledMetrics",
    "correction",
    "estimate",
    "expected_histogram",
    "fit_rank_distribution",
    "full_metric",
    "sample_negatives",
    "sampled_ranks",
]

# Loaded on first use: the estimators need torch alone, SampledMetrics needs ignite too.
# tests/test_imports.py checks that this table, __all__ and the imports below name the same things.
__getattr__, __dir__ = _lazy.attach(
    __name__,
    names={
        "ESTIMATORS": ".estimators",
        "METRICS": ".estimators",
        "RankDistribution": ".estimators",
        "correction": ".estimators",
        "estimate": ".estimators",
        "expected_histogram": ".estimators",
        "fit_rank_distribution": ".estimators",
        "full_metric": ".estimators",
        "SampledMetrics": ".metric",
        "sampled_ranks": ".metric",
        "sample_negatives": ".negatives",
    },
)

if TYPE_CHECKING:  # what a type checker and an IDE see; at run time __getattr__ does this
    from .estimators import (
        ESTIMATORS,
        METRICS,
        RankDistribution,
        correction,
        estimate,
        expected_histogram,
        fit_rank_distribution,
        full_metric,
    )
    from .metric import SampledMetrics, sampled_ranks
    from .negatives import sample_negatives
