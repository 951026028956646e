"""Student t confidence intervals of a metric's mean, from its exact sums and sums of squares."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ignite.exceptions import NotComputableError

from ..kernels.exact_sum import limb_totals

__all__ = ["bounds_by_name", "t_intervals", "t_quantile"]


def bounds_by_name(intervals: Mapping[str, tuple[float, float]]) -> dict[str, float]:
    """``{"mrr@10": (low, high)}`` as an engine publishes it: ``{"mrr@10_low": low, ...}``."""
    bounds = {}
    for name, (low, high) in intervals.items():
        bounds[f"{name}_low"], bounds[f"{name}_high"] = low, high
    return bounds


def t_quantile(confidence: float, degrees: int) -> float:
    """The ``(1 + confidence) / 2`` quantile of Student's t (scipy, imported when needed)."""
    try:
        from scipy import stats
    except ImportError:
        raise ImportError("confidence intervals need scipy: pip install 'ignite-ranking[compare]'") from None
    return float(stats.t.ppf((1 + confidence) / 2, degrees)) if degrees > 0 else math.nan


def _t_interval(total: int | None, squares: int | None, count: int, quantile: float) -> tuple[float, float]:
    """``mean -/+ quantile * s / sqrt(n)`` from exact sums in 2**-64 units.

    Each square was rounded (to float64, then to the sums' grid of 2**-64), so ``n * sum(v^2) -
    (sum v)^2`` is off by at most ``n * (2**-52 * sum(v^2) + n * 2**-64)``; a spread within that
    bound is taken as 0 (equal values give ``(mean, mean)``, not a width of ~1e-9).
    """
    if total is None or squares is None or count < 2:
        return math.nan, math.nan
    mean = total / (count << 64)
    spread = (count * squares << 64) - total * total  # in 2**-128 units
    rounding = (count * squares << 12) + (count * count << 64)
    spread = spread if spread > rounding else 0
    sem = math.sqrt(spread / ((count * (count - 1) * count) << 128))
    return mean - quantile * sem, mean + quantile * sem


def t_intervals(metric) -> list[tuple[float, float]] | tuple[float, float]:
    """``metric``'s intervals from its (reduced) sums and count (see ``RankingMetric.interval``),
    after a refusal recorded on the device path (:mod:`.refusal`)."""
    metric._refusal.check()
    count = int(metric._num_examples.item())
    if count == 0:
        raise NotComputableError(f"{type(metric).__name__} must have at least one query before interval().")
    quantile = t_quantile(metric.confidence, count - 1)
    totals = limb_totals(metric._sum_per_k)
    intervals = [
        _t_interval(total, squares, count, quantile)
        for total, squares in zip(totals[: metric.num_values], totals[metric.num_values :], strict=True)
    ]
    return intervals if metric.top_k is not None else intervals[0]
