"""Paired statistics on per-query values: tests, multiple-testing corrections, bootstrap intervals.

Every function takes the per-query values of the two systems of each comparison as the columns
of two ``(num_queries, num_comparisons)`` arrays ``a`` and ``b`` (or their difference
``d = b - a``), so that one call serves every pair and metric. scipy does the t-test and the
Wilcoxon test; the resampling tests share their random draws across columns, which is what makes
many comparisons on many queries cheap:

- randomization (sign-flip): the statistic is the mean difference; each resample flips the sign
  of every query's difference with probability 1/2. With at most :data:`EXACT_MAX` non-zero
  differences in a column, all ``2**n`` sign patterns are enumerated (a zero difference is the
  same under both signs); otherwise ``resamples`` random patterns are drawn, and the p-value is
  ``(1 + hits) / (1 + resamples)`` (Phipson & Smyth 2010). A permuted statistic within a float
  tolerance of the observed one counts as at least as extreme.
- bootstrap: queries are resampled with replacement; the resampled mean differences give the
  percentile and BCa intervals (Efron & Tibshirani 1993, ch. 13-14) and, shifted to mean zero,
  the null distribution of the paired bootstrap test (Sakai 2006, with the mean as statistic).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ALTERNATIVES",
    "CORRECTIONS",
    "EXACT_MAX",
    "ROUNDING",
    "TESTS",
    "Bootstrap",
    "adjust",
    "bootstrap",
    "effect_size",
    "magnitude",
    "randomization_test",
    "t_interval",
    "t_test",
    "wilcoxon_test",
]

TESTS = ("t-test", "wilcoxon", "randomization", "bootstrap")
CORRECTIONS = ("none", "bonferroni", "holm", "bh")
ALTERNATIVES = ("two-sided", "greater", "less")
EXACT_MAX = 20  # the randomization test enumerates every sign pattern up to 2**20 of them
_CHUNK_CELLS = 1 << 22  # resampled cells (resamples x queries) drawn at once: bounds the memory
_TOLERANCE = 1e-10  # relative to the largest possible |statistic|: ties within it count as extreme


def _scipy_stats():
    try:
        import scipy.stats
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "ignite_ranking.compare needs scipy for its tests and intervals; "
            "install it with: pip install 'ignite-ranking[compare]'"
        ) from err
    return scipy.stats


def _check_alternative(alternative: str) -> str:
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    return alternative


def _as_columns(x) -> np.ndarray:
    array = np.asarray(x, dtype=np.float64)
    return array[:, None] if array.ndim == 1 else array


ROUNDING = 2.0**-50
"""Four units in the last place of float64 (relative): differences ``b - a`` that spread no
more than this times the largest ``|a|``, ``|b|`` of their column differ by the rounding of the
values alone (``0.8 - 0.7`` and ``0.2 - 0.1``), and count as all equal."""


def _varies(d: np.ndarray, scale: np.ndarray | float) -> np.ndarray:
    """Per column: whether the differences ``d`` spread past the rounding of values of ``scale``."""
    return d.max(axis=0) - d.min(axis=0) > ROUNDING * np.asarray(scale)


def magnitude(a, b) -> np.ndarray:
    """Per column, the largest ``|a|`` or ``|b|``: the ``scale`` of :func:`t_interval` and
    :func:`effect_size` for the differences ``b - a``."""
    return np.maximum(np.abs(_as_columns(a)).max(axis=0), np.abs(_as_columns(b)).max(axis=0))


def t_test(a, b, alternative: str = "two-sided") -> np.ndarray:
    """Paired t-test p-values per column: ``scipy.stats.ttest_rel(b, a)`` (mean of ``b - a`` vs 0).

    NaN, without scipy's ``RuntimeWarning``, for a column whose differences are all equal (no
    spread to test against; equal within :data:`ROUNDING`) and for fewer than two queries.

    Example:
        >>> t_test([0.1, 0.4, 0.3, 0.5], [0.3, 0.5, 0.6, 0.5]).round(4)
        array([0.1027])
    """
    a, b = _as_columns(a), _as_columns(b)
    _check_alternative(alternative)
    out = np.full(a.shape[1], np.nan)
    if a.shape[0] < 2:
        return out
    spread = np.flatnonzero(_varies(b - a, magnitude(a, b)))
    if spread.size:
        result = _scipy_stats().ttest_rel(b[:, spread], a[:, spread], axis=0, alternative=alternative)
        out[spread] = np.atleast_1d(np.asarray(result.pvalue, dtype=np.float64))
    return out


def t_interval(d, alpha: float = 0.05, scale: np.ndarray | float = 0.0) -> np.ndarray:
    """Student's t-interval of the mean of each column of ``d``: ``(2, columns)`` bounds.

    ``scipy.stats.t.interval(1 - alpha, n - 1, loc=mean, scale=scipy.stats.sem(column))``, the
    standard error being ``sd / sqrt(n)`` with ``sd`` the standard deviation (ddof 1) of the
    ``n`` rows: the confidence interval that goes with the paired t-test. A column without
    spread (none past :data:`ROUNDING` times ``scale``, the :func:`magnitude` of the values
    whose differences ``d`` are) gets the point ``[mean, mean]``; fewer than two rows give NaN.

    Example:
        >>> t_interval([0.2, 0.1, 0.3, 0.0, 0.2, 0.4]).round(4).ravel().tolist()
        [0.0516, 0.3484]
    """
    d = _as_columns(d)
    n, columns = d.shape
    out = np.full((2, columns), np.nan)
    if n < 2:
        return out
    stats = _scipy_stats()
    rows = np.ascontiguousarray(d.T)  # one contiguous row per column: the sums of a 1-D array
    mean = rows.mean(axis=1)
    sem = stats.sem(rows, axis=1)
    spread = (sem > 0) & _varies(d, scale)
    out[:, ~spread] = mean[~spread]
    if spread.any():
        low, high = stats.t.interval(1 - alpha, n - 1, loc=mean[spread], scale=sem[spread])
        out[0, spread], out[1, spread] = low, high
    return out


def wilcoxon_test(a, b, alternative: str = "two-sided") -> np.ndarray:
    """Wilcoxon signed-rank p-values per column: ``scipy.stats.wilcoxon(b, a)`` with its defaults.

    scipy's defaults: zero differences dropped (``zero_method="wilcox"``), the exact distribution
    for small samples without ties or zeros, else the normal approximation. A column whose
    differences are all zero gets NaN.

    Example:
        >>> wilcoxon_test([0.1, 0.4, 0.3, 0.5, 0.2], [0.3, 0.5, 0.6, 0.7, 0.6])
        array([0.0625])
    """
    a, b = _as_columns(a), _as_columns(b)
    stats = _scipy_stats()
    _check_alternative(alternative)
    out = np.full(a.shape[1], np.nan)
    for j in range(a.shape[1]):
        if np.any(b[:, j] != a[:, j]):
            out[j] = stats.wilcoxon(b[:, j], a[:, j], alternative=alternative).pvalue
    return out


def _extreme(stats: np.ndarray, observed: np.ndarray, tol: np.ndarray, alternative: str) -> np.ndarray:
    """How many of ``stats`` (rows: resamples) are at least as extreme as ``observed``, per column."""
    if alternative == "two-sided":
        return (np.abs(stats) >= np.abs(observed) - tol).sum(axis=0)
    if alternative == "greater":
        return (stats >= observed - tol).sum(axis=0)
    return (stats <= observed + tol).sum(axis=0)


def _sign_sums(d: np.ndarray) -> np.ndarray:
    """``sum(s * d)`` for every sign vector ``s`` in {-1, 1}^n, as ``2**n`` values."""
    sums = np.zeros(1)
    for value in d:
        sums = np.concatenate((sums + value, sums - value))
    return sums


def _exact_randomization(d: np.ndarray, alternative: str) -> float:
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    half = d.size // 2
    # Every sign pattern's sum, as the outer sum of the two halves' (2**20 values at most).
    sums = (_sign_sums(d[:half])[:, None] + _sign_sums(d[half:])[None, :]).ravel()
    observed, tol = d.sum(), _TOLERANCE * np.abs(d).sum()
    hits = _extreme(sums[:, None], np.array([observed]), np.array([tol]), alternative)[0]
    return float(hits / sums.size)


def _sign_chunks(rng: np.random.Generator, resamples: int, n: int):
    """Random 0/1 float matrices ``(rows, n)`` totalling ``resamples`` rows, from packed random bits."""
    rows = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, resamples, rows):
        count = min(rows, resamples - start)
        bits = np.unpackbits(rng.integers(0, 256, (count, -(-n // 8)), dtype=np.uint8), axis=1)
        yield bits[:, :n].astype(np.float64)


def randomization_test(
    d,
    *,
    resamples: int = 10_000,
    seed: int | np.random.Generator | None = None,
    alternative: str = "two-sided",
) -> np.ndarray:
    """Paired randomization (sign-flip) test p-values per column of the differences ``d``.

    Exact when a column has at most :data:`EXACT_MAX` non-zero differences, else Monte Carlo
    with ``resamples`` sign patterns shared by every column (see the module docstring).

    Example:
        >>> randomization_test([0.2, 0.1, 0.3, 0.0, 0.2])  # exact: 2 of 16 patterns as extreme
        array([0.125])
    """
    d = _as_columns(d)
    _check_alternative(alternative)
    n, columns = d.shape
    out = np.full(columns, np.nan)
    nonzero = (d != 0).sum(axis=0)
    for j in np.flatnonzero(nonzero <= EXACT_MAX):
        out[j] = _exact_randomization(d[:, j], alternative)
    sampled = np.flatnonzero(nonzero > EXACT_MAX)
    if sampled.size:
        rng = np.random.default_rng(seed)
        x = d[:, sampled]
        total = x.sum(axis=0)
        tol = _TOLERANCE * np.abs(x).sum(axis=0)
        hits = np.zeros(sampled.size, dtype=np.int64)
        for keep in _sign_chunks(rng, resamples, n):
            # sum(s * d) with s = 2 * keep - 1, as one matrix product.
            hits += _extreme(2.0 * (keep @ x) - total, total, tol, alternative)
        out[sampled] = (1 + hits) / (1 + resamples)
    return out


@dataclass(frozen=True)
class Bootstrap:
    """Paired bootstrap of the mean difference of each column.

    Attributes:
        p_value: the paired bootstrap test's p-values (null: the differences shifted to mean 0).
        percentile: ``(2, columns)`` lower and upper percentile interval bounds.
        bca: ``(2, columns)`` bias-corrected and accelerated interval bounds.
    """

    p_value: np.ndarray
    percentile: np.ndarray
    bca: np.ndarray


def _resampled_means(x: np.ndarray, resamples: int, rng: np.random.Generator, batch: int) -> np.ndarray:
    """``(resamples, columns)`` column means of ``x`` over rows drawn with replacement.

    Resample ``i`` draws ``rng.integers(0, n, n)`` row indices, ``batch`` resamples per call, as
    ``scipy.stats.bootstrap(..., batch=batch)`` does; the means come from index counts times
    ``x``, one product for every column.
    """
    n = x.shape[0]
    out = np.empty((resamples, x.shape[1]))
    for start in range(0, resamples, batch):
        count = min(batch, resamples - start)
        index = rng.integers(0, n, (count, n))
        index += np.arange(count)[:, None] * n
        counts = np.bincount(index.ravel(), minlength=count * n).reshape(count, n)
        out[start : start + count] = (counts.astype(np.float64) @ x) / n  # float: a BLAS product
    return out


def bootstrap_means(
    x, *, resamples: int = 10_000, seed: int | np.random.Generator | None = None, batch: int | None = None
) -> np.ndarray:
    """Bootstrap distribution ``(resamples, columns)`` of the column means of ``x``."""
    x = _as_columns(x)
    batch = batch or max(1, _CHUNK_CELLS // max(x.shape[0], 1))
    return _resampled_means(x, resamples, np.random.default_rng(seed), batch)


def bootstrap(
    d,
    *,
    alpha: float = 0.05,
    resamples: int = 10_000,
    seed: int | np.random.Generator | None = None,
    alternative: str = "two-sided",
    distribution: np.ndarray | None = None,
    batch: int | None = None,
) -> Bootstrap:
    """Bootstrap test and ``1 - alpha`` intervals of the mean of each column of ``d``.

    The intervals match ``scipy.stats.bootstrap((d,), np.mean, confidence_level=1 - alpha,
    method="percentile" | "BCa", batch=batch, rng=seed)`` for the same seed and batch (BCa's
    acceleration comes from the mean's closed-form jackknife). ``distribution`` may pass
    precomputed resampled means of ``d`` (see :func:`bootstrap_means`). With fewer than two
    rows every resample is the sample itself: the p-values and intervals are then NaN.

    Example:
        >>> result = bootstrap([0.2, 0.1, 0.3, 0.0, 0.2, 0.4], seed=0)
        >>> result.percentile.round(3).ravel().tolist()
        [0.1, 0.3]
    """
    d = _as_columns(d)
    _check_alternative(alternative)
    stats = _scipy_stats()
    if d.shape[0] < 2:
        nan = np.full((2, d.shape[1]), np.nan)
        return Bootstrap(p_value=nan[0].copy(), percentile=nan.copy(), bca=nan.copy())
    if distribution is None:
        distribution = bootstrap_means(d, resamples=resamples, seed=seed, batch=batch)
    observed = d.mean(axis=0)
    # Test: the resampled means minus the observed mean are the null distribution.
    tol = _TOLERANCE * np.abs(d).max(axis=0, initial=0.0)
    hits = _extreme(distribution - observed, observed, tol, alternative)
    p_value = (1 + hits) / (1 + distribution.shape[0])
    percentile = np.quantile(distribution, [alpha / 2, 1 - alpha / 2], axis=0)
    # BCa: bias from the share of resampled means below the observed one (ties count half),
    # acceleration from the jackknife, which for the mean is sum(u^3) / (6 sum(u^2)^1.5), u = d - mean.
    below = ((distribution < observed).sum(axis=0) + (distribution <= observed).sum(axis=0)) / (
        2 * distribution.shape[0]
    )
    z0 = stats.norm.ppf(below)
    u = d - observed
    spread = (u**2).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        accel = np.where(spread > 0, (u**3).sum(axis=0) / (6 * spread**1.5), 0.0)
        z = stats.norm.ppf([alpha / 2, 1 - alpha / 2])[:, None]
        levels = stats.norm.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
    bca = np.empty_like(percentile)
    for j in range(d.shape[1]):
        bca[:, j] = (
            np.quantile(distribution[:, j], levels[:, j]) if np.isfinite(levels[:, j]).all() else np.nan
        )
    return Bootstrap(p_value=p_value, percentile=percentile, bca=bca)


def effect_size(d, scale: np.ndarray | float = 0.0) -> np.ndarray:
    """Paired Cohen's d per column: mean difference / standard deviation of the differences (ddof 1).

    NaN when the differences do not vary (none past :data:`ROUNDING` times ``scale``, as for
    :func:`t_interval`) or there is one query.

    Example:
        >>> effect_size([0.1, 0.2, 0.3]).round(3)
        array([2.])
    """
    d = _as_columns(d)
    if d.shape[0] < 2:
        return np.full(d.shape[1], np.nan)
    sd = d.std(axis=0, ddof=1)
    spread = (sd > 0) & _varies(d, scale)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread, d.mean(axis=0) / np.where(spread, sd, 1.0), np.nan)


def adjust(p_values: Sequence[float] | np.ndarray, method: str) -> np.ndarray:
    """Adjusted p-values of one family: ``"none"``, ``"bonferroni"``, ``"holm"`` or ``"bh"``.

    Same values as ``statsmodels.stats.multitest.multipletests(p, method=...)`` (``"fdr_bh"``
    for ``"bh"``, computed by ``scipy.stats.false_discovery_control``). NaN p-values stay NaN and
    are not counted in the family.

    Example:
        >>> adjust([0.01, 0.04, 0.03], "holm").round(4).tolist()
        [0.03, 0.06, 0.06]
    """
    if method not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {method!r}")
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return out
    q = p[valid]
    if method == "none":
        adjusted = q
    elif method == "bonferroni":
        adjusted = np.minimum(q * m, 1.0)
    elif method == "bh":
        adjusted = _scipy_stats().false_discovery_control(q, method="bh")
    else:  # Holm's step-down (scipy has none)
        order = np.argsort(q, kind="stable")
        ranked = q[order]
        stepped = np.minimum(np.maximum.accumulate((m - np.arange(m)) * ranked), 1.0)
        adjusted = np.empty(m)
        adjusted[order] = stepped
    out[valid] = adjusted
    return out
