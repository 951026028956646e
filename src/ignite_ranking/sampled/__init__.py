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

__getattr__, __dir__, __all__ = _lazy.attach_listed(__name__, __file__)

# The public names, written once: what a type checker and an IDE see, and what _lazy.attach_listed
# reads to load each on first use and to build __all__. ``A as A`` marks a re-export of a typed
# package; isort would split such imports one name a line.
# isort: off
if TYPE_CHECKING:
    from .estimators import (
        ESTIMATORS as ESTIMATORS,
        METRICS as METRICS,
        RankDistribution as RankDistribution,
        correction as correction,
        estimate as estimate,
        expected_histogram as expected_histogram,
        fit_rank_distribution as fit_rank_distribution,
        full_metric as full_metric,
    )
    from .metric import SampledMetrics as SampledMetrics, sampled_ranks as sampled_ranks
    from .negatives import sample_negatives as sample_negatives
# isort: on
