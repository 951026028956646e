"""Estimators of full-catalog metrics from sampled ranks.

The protocol: each query has one relevant item, with full rank ``r`` in ``1 .. n`` among all
``n`` items, and sampled rank ``r'`` in ``1 .. m + 1`` among itself and ``m`` negatives drawn
uniformly from the ``n - 1`` other items. A histogram ``h`` counts the queries at each sampled
rank (``h[j]``: the queries with ``r' = j + 1``). ``P(r' | r)`` is hypergeometric (negatives drawn
without replacement) or binomial (with replacement); :mod:`._pmf` computes it in float64
log-space.

Every estimator but ``"mle"`` is linear in the histogram: it maps each sampled rank to a value,
a *correction* ``x`` of length ``m + 1``, and estimates the metric by ``sum_j h[j] x[j] / sum(h)``
(:func:`correction`). With one relevant item, the metrics of a full rank are
``hit_rate@k = recall@k = 1[r <= k]``, ``precision@k = 1[r <= k] / k``,
``mrr@k = 1[r <= k] / r`` (equal to AP@k here), ``ndcg@k = 1[r <= k] / log2(r + 1)`` and
``auc = (n - r) / (n - 1)``; without ``k``, MRR and NDCG have no cutoff.

Estimators (Krichene and Rendle, "On Sampled Metrics for Item Recommendation", KDD 2020 and
CACM 65(7), 2022: sampled, cls, bv; Jin et al., "On Estimating Recommendation Evaluation
Metrics under Sampling", AAAI 2021: mle):

- ``"sampled"``: the uncorrected sampled metric, the metric of ``r'`` in a catalog of ``m + 1``
  items: ``x[j] = M_{m+1}(j + 1)`` (AUC: ``(m - j) / m``).
- ``"rank"``: each sampled rank mapped to a full rank by the linear inverse
  ``r_hat = 1 + (r' - 1)(n - 1) / m``, the moment estimate (``E[r' - 1 | r] = m (r - 1) / (n - 1)``
  under both samplings, so ``r_hat`` is unbiased for ``r``), then ``x[j] = M_n(r_hat)`` at that real
  rank. For AUC this is the sampled AUC, which is unbiased; for the metrics@k every
  ``r' >= 2`` maps beyond rank ``(n - 1) / m + 1``, so only ``r' = 1`` can score at small k.
  (The other reading, the posterior mean ``E[M(r) | r']``, is ``"bv"`` with ``gamma = 1``.)
- ``"cls"``: constrained least squares, the minimal-bias correction of the paper: ``x`` minimizes
  ``sum_r p(r) (E[x[r' - 1] | r] - M(r))^2`` over a uniform ``p`` on ``1 .. n``, subject to
  ``M(1) >= x[0] >= x[1] >= ... >= x[m] >= 0`` (monotone in the rank and within the metric's
  range, ``[0, 1]``, or ``[0, 1/k]`` for precision). Solved exactly by an active-set method
  (Lawson and Hanson's NNLS, generalized to the simplex) on the differences ``x[j] - x[j + 1]``.
- ``"bv"``: the bias-variance trade-off. Reading of the paper: ``x`` minimizes
  ``sum_r p(r) [(E[x | r] - M(r))^2 + gamma Var(x | r)]``, whose minimizer is
  ``x = ((1 - gamma) A^T A + gamma diag(c))^-1 A^T b`` with ``A = sqrt(p) P(r' | r)``,
  ``b = sqrt(p) M(r)``, ``c = P^T p``, ``p`` uniform on ``1 .. n`` (the bias term keeps weight one
  and only the variance is scaled by gamma: ``bias^2 + gamma Var = (1 - gamma) E[x|r]^2 - ...``).
  ``gamma = 1`` minimizes the expected squared error, whose solution is the posterior mean
  ``x[j] = E[M(r) | r' = j + 1]`` under the uniform prior; ``gamma = 0`` is the unconstrained
  least-squares (minimal-bias) correction, ill-posed for large ``m``: its minimum-norm solution
  is returned.
- ``"mle"``: Jin et al.'s maximum-likelihood estimate of the distribution ``pi`` of full ranks,
  ``max_pi sum_j h[j] log sum_r pi(r) P(r' = j + 1 | r)``, by plain expectation-maximization
  from the uniform distribution over ranks, stopped when an iteration raises the mean
  log-likelihood per query by less than ``tol = 1e-8`` (at most 100,000 iterations); the metric
  is then ``sum_r pi(r) M(r)`` (:func:`fit_rank_distribution`). The maximum is unique in
  ``P^T pi`` but not, when ``n > m + 1``, in ``pi``, and EM approaches it slowly while moving
  mass between ranks the sampled ranks cannot tell apart: the estimate depends on the stopping
  rule (run to a smaller ``tol``, EM drifts towards a few atoms and the metrics@k degrade; see
  docs/sampled.md). The tolerance is part of the estimator. Where ``m = n - 1`` the maximum is
  unique (``P`` is square and invertible) and is solved for instead: ``pi = P^-T w`` (``w = h /
  sum(h)``) where that lies in the simplex; else, when every sampled rank was seen, Newton's
  method on the simplex to a KKT point (no probability moved by more than ``1e-13`` in a step,
  the gradient within ``1e-9`` of its multiplier); EM as above only where that fails.

What is exact and what is approximated: ``P(r' | r)`` is a polynomial of degree ``m`` in ``r``,
so every sum over ``r = 1 .. n`` that ``"cls"`` and ``"bv"`` need is computed exactly (to
rounding) with a discrete Gauss rule of about ``m`` nodes per segment of ranks
(:mod:`._quadrature`), whatever ``n``: ranks ``1 .. m + 1`` (where the metrics@k live, for
``k <= m + 1``) and the last ``m`` ranks are visited one by one. Sums of ``P(r' | r) / r`` (MRR
without cutoff) and ``P(r' | r) / log2(r + 1)`` (NDCG without cutoff, and the metrics@k for
``k > m + 1``) are approximated on segments ``[a, 2a)`` to about ``1e-13`` relative (measured in
the tests against the sums over every rank). ``"mle"`` visits every rank when
``n (m + 1) <= 2**22``; above, it restricts ``pi`` to the ranks ``1 .. max(m + 1, 1024)`` and a
grid of ranks spaced evenly in ``arcsin(sqrt((r - 1) / (n - 1)))`` (the variance-stabilizing
scale of ``r'``), 16 points per standard deviation of ``r'``: an approximation of the MLE
(see docs/sampled.md for its measured effect).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ._pmf import sampled_rank_pmf
from ._quadrature import rank_nodes

__all__ = [
    "ESTIMATORS",
    "METRICS",
    "RankDistribution",
    "correction",
    "estimate",
    "expected_histogram",
    "fit_rank_distribution",
    "full_metric",
]

ESTIMATORS = ("sampled", "rank", "cls", "bv", "mle")
METRICS = ("mrr", "hit_rate", "recall", "precision", "ndcg", "auc")
_NEEDS_K = ("hit_rate", "recall", "precision")
# Metrics that are neither 0 nor a polynomial in r up to their cutoff (quadrature segments).
_CURVED = ("mrr", "ndcg")
# Above this many entries of P, the MLE works on a grid of ranks instead of every rank.
_MLE_EXACT_ENTRIES = 2**22
_MLE_HEAD = 1024
_MLE_POINTS_PER_SD = 16
# Where m = n - 1 (P square, the MLE unique): a Newton step moving no probability by more than
# this ends the search; KKT then holds to _KKT_TOL (no rank off the support raises the likelihood).
_STEP_TOL = 1e-13
_KKT_TOL = 1e-9


# ------------------------------------------------------------------------------------ arguments


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_sizes(num_items: object, num_negatives: object) -> tuple[int, int]:
    """``(n, m)`` as ints, refusing anything but ``1 <= m < n``."""
    if not _is_int(num_items):
        raise TypeError(f"num_items (the catalog size n) must be an int, got {type(num_items).__name__}.")
    if not _is_int(num_negatives):
        raise TypeError(
            f"num_negatives (m, the sampled negatives per query) must be an int, got "
            f"{type(num_negatives).__name__}."
        )
    n, m = int(num_items), int(num_negatives)
    if n < 2:
        raise ValueError(f"num_items (the catalog size n) must be at least 2, got {n}.")
    if not 1 <= m < n:
        raise ValueError(
            f"num_negatives must satisfy 1 <= m < num_items (m negatives are drawn from the "
            f"n - 1 = {n - 1} other items), got m={m} for n={n}."
        )
    return n, m


def check_metric(metric: object, k: object) -> tuple[str, int | None]:
    """``(metric, k)`` checked: a known name, and a cutoff where the metric needs or allows one."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(map(repr, METRICS))}, got {metric!r}.")
    if k is not None:
        if not _is_int(k):
            raise TypeError(f"k must be a positive int or None, got {type(k).__name__}.")
        if k < 1:
            raise ValueError(f"k must be a positive int or None, got {k}.")
        k = int(k)
    if metric in _NEEDS_K and k is None:
        raise ValueError(f"metric={metric!r} needs a cutoff k, got k=None.")
    if metric == "auc" and k is not None:
        raise ValueError(f"metric='auc' has no cutoff; pass k=None, got k={k}.")
    return metric, k  # type: ignore[return-value]


def check_estimator(estimator: object, gamma: object) -> tuple[str, float]:
    """``(estimator, gamma)`` checked: a known estimator and ``0 <= gamma <= 1``."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(map(repr, ESTIMATORS))}, got {estimator!r}.")
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
        raise TypeError(f"gamma must be a real number in [0, 1], got {type(gamma).__name__}.")
    if not 0.0 <= float(gamma) <= 1.0:  # also refuses NaN
        raise ValueError(f"gamma must be in [0, 1], got {gamma!r}.")
    return estimator, float(gamma)  # type: ignore[return-value]


def _check_flag(name: str, value: object) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r} of type {type(value).__name__}.")
    return bool(value)


def check_histogram(histogram: object, num_negatives: int) -> torch.Tensor:
    """The histogram as float64 ``(m + 1,)``: non-negative, finite counts with a positive sum."""
    if isinstance(histogram, torch.Tensor):
        values = histogram.detach().to(device="cpu")
    elif isinstance(histogram, (np.ndarray, Sequence)) and not isinstance(histogram, (str, bytes)):
        values = torch.as_tensor(np.asarray(histogram))
    else:
        raise TypeError(
            f"histogram must be a tensor, array or list of m + 1 = {num_negatives + 1} counts, got "
            f"{type(histogram).__name__}."
        )
    if values.dtype == torch.bool or values.is_complex():
        raise TypeError(f"histogram must hold real counts, got dtype {values.dtype}.")
    if values.ndim != 1 or values.shape[0] != num_negatives + 1:
        raise ValueError(
            f"histogram must have m + 1 = {num_negatives + 1} entries (one per sampled rank "
            f"1 .. m + 1), got shape {tuple(values.shape)}."
        )
    values = values.to(torch.float64)
    if not bool(torch.isfinite(values).all()) or bool((values < 0).any()):
        raise ValueError("histogram must hold finite, non-negative counts.")
    if float(values.sum()) <= 0:
        raise ValueError("histogram must count at least one query, got only zeros.")
    return values


# ------------------------------------------------------------------------------------- metrics


def metric_values(ranks: torch.Tensor, num_items: int, metric: str, k: int | None) -> torch.Tensor:
    """The metric of a query whose relevant item has (real) rank ``ranks`` among ``num_items``."""
    r = ranks.to(torch.float64)
    if metric == "auc":
        return (num_items - r) / (num_items - 1)
    inside = torch.ones_like(r) if k is None else (r <= k).to(torch.float64)
    if metric in ("hit_rate", "recall"):
        return inside
    if metric == "precision":
        return inside / k
    if metric == "mrr":
        return inside / r
    return inside / torch.log2(r + 1)  # ndcg


def full_metric(ranks: object, num_items: int, metric: str, k: int | None = None) -> float:
    """The exact metric of full-catalog ranks: the mean over queries of ``M(r)``.

    Args:
        ranks: each query's full rank ``r`` of its one relevant item, integers in ``1 .. n``.
        num_items: ``n``, the catalog size.
        metric: ``"mrr"``, ``"hit_rate"``, ``"recall"``, ``"precision"``, ``"ndcg"`` or ``"auc"``.
        k: the cutoff (required by hit_rate, recall and precision; refused by auc).

    Example:
        >>> from ignite_ranking import sampled
        >>> sampled.full_metric([1, 2, 50], 100, "mrr", 10)  # (1 + 1/2 + 0) / 3
        0.5
        >>> sampled.full_metric([1, 100], 100, "auc")
        0.5
    """
    metric, k = check_metric(metric, k)
    if not _is_int(num_items) or num_items < 2:
        raise ValueError(f"num_items must be an int >= 2, got {num_items!r}.")
    values = torch.as_tensor(np.asarray(ranks.cpu() if isinstance(ranks, torch.Tensor) else ranks))
    if values.is_floating_point() and bool((values != values.round()).any()):
        raise ValueError("ranks must be whole numbers in 1 .. num_items.")
    values = values.reshape(-1).to(torch.float64)
    if values.numel() == 0:
        raise ValueError("ranks must hold at least one query's rank.")
    if bool((values < 1).any()) or bool((values > num_items).any()):
        raise ValueError(
            f"ranks must lie in 1 .. num_items = {num_items}, got values from {values.min().item():g} "
            f"to {values.max().item():g}."
        )
    return float(metric_values(values, int(num_items), metric, k).mean())


def expected_histogram(
    ranks: object,
    num_items: int,
    num_negatives: int,
    *,
    weights: object = None,
    replacement: bool = False,
) -> torch.Tensor:
    """The law of the sampled rank: ``sum_i w_i P(r' = j + 1 | r_i) / sum_i w_i``, float64.

    ``estimate(expected_histogram(...), ..., estimator="sampled")`` is then the expected
    sampled metric ``E[M(r')]`` of a system whose full ranks are ``ranks`` (weighted by
    ``weights``, default 1 each): the closed form of Krichene and Rendle's Section 3.

    Example:
        >>> from ignite_ranking import sampled
        >>> law = sampled.expected_histogram([100], 10_000, 99, replacement=True)
        >>> round(sampled.estimate(law, 10_000, 99, "mrr", estimator="sampled"), 4)  # system A's AP
        0.6366
    """
    n, m = check_sizes(num_items, num_negatives)
    replacement = _check_flag("replacement", replacement)
    r = torch.as_tensor(np.asarray(ranks.cpu() if isinstance(ranks, torch.Tensor) else ranks))
    r = r.reshape(-1).to(torch.float64)
    if r.numel() == 0 or bool((r < 1).any()) or bool((r > n).any()) or bool((r != r.round()).any()):
        raise ValueError(f"ranks must be whole numbers in 1 .. num_items = {n}.")
    if weights is None:
        w = torch.ones_like(r)
    else:
        w = torch.as_tensor(np.asarray(weights.cpu() if isinstance(weights, torch.Tensor) else weights))
        w = w.reshape(-1).to(torch.float64)
        if w.shape != r.shape or not bool(torch.isfinite(w).all()) or bool((w < 0).any()) or w.sum() <= 0:
            raise ValueError("weights must be finite, non-negative, one per rank, with a positive sum.")
    law = torch.zeros(m + 1, dtype=torch.float64)
    for start in range(0, r.numel(), 4096):
        part = slice(start, start + 4096)
        law += w[part] @ sampled_rank_pmf(r[part], n, m, replacement)
    return law / w.sum()


# -------------------------------------------------------------------------------------- design


@dataclass(frozen=True)
class _Design:
    """The weighted least-squares system shared by ``"cls"`` and ``"bv"`` (module docstring).

    ``rows`` are the quadrature nodes' ranks; ``a = sqrt(w / n) P(r' | rank)`` (so that
    ``a^T a = A^T A`` and ``a^T (sqrt(w / n) M) = A^T b`` exactly), ``c = P^T p``.
    """

    ranks: torch.Tensor
    root_weights: torch.Tensor
    a: torch.Tensor
    c: torch.Tensor

    @functools.cached_property
    def gram(self) -> torch.Tensor:
        return self.a.T @ self.a

    def target(self, num_items: int, metric: str, k: int | None) -> torch.Tensor:
        return self.root_weights * metric_values(self.ranks, num_items, metric, k)


@functools.lru_cache(maxsize=4)
def _design(n: int, m: int, replacement: bool, breaks: tuple[int, ...], smooth_until: int) -> _Design:
    ranks, weights = rank_nodes(n, m, breaks, smooth_until)
    pmf = sampled_rank_pmf(ranks, n, m, replacement)
    p = weights / n
    return _Design(ranks, p.sqrt(), p.sqrt()[:, None] * pmf, p @ pmf)


def design_for(n: int, m: int, replacement: bool, cutoffs: Sequence[int | None], curved: bool) -> _Design:
    """The design whose quadrature is exact or converged for these cutoffs and metric shapes."""
    breaks = tuple(sorted({k for k in cutoffs if k is not None}))
    if not curved:
        smooth = 0
    elif any(k is None for k in cutoffs):
        smooth = n
    else:
        smooth = max(breaks)
    return _design(n, m, replacement, breaks, smooth)


# ---------------------------------------------------------------------------------- estimators


def correction(
    num_items: int,
    num_negatives: int,
    metric: str,
    k: int | None = None,
    *,
    estimator: str = "bv",
    gamma: float = 0.01,
    replacement: bool = False,
) -> torch.Tensor:
    """The value ``x[j]`` a linear estimator gives a query of sampled rank ``j + 1``, float64.

    ``estimate(h, ...) = sum_j h[j] x[j] / sum(h)``. Not defined for ``"mle"``, whose estimate
    is not linear in the histogram. See the module docstring for each estimator.

    Example:
        >>> from ignite_ranking import sampled
        >>> sampled.correction(1000, 9, "hit_rate", 1, estimator="sampled").tolist()[:3]
        [1.0, 0.0, 0.0]
        >>> sampled.correction(1000, 9, "auc", estimator="rank").tolist()[:3]  # 1 - j / m
        [1.0, 0.888..., 0.777...]
    """
    n, m = check_sizes(num_items, num_negatives)
    metric, k = check_metric(metric, k)
    estimator, gamma = check_estimator(estimator, gamma)
    replacement = _check_flag("replacement", replacement)
    if estimator == "mle":
        raise ValueError(
            "estimator='mle' has no per-rank correction: its estimate depends on the whole histogram; "
            "call estimate() or fit_rank_distribution()."
        )
    return _correction(n, m, metric, k, estimator, gamma, replacement)


def _correction(
    n: int,
    m: int,
    metric: str,
    k: int | None,
    estimator: str,
    gamma: float,
    replacement: bool,
    design: _Design | None = None,
) -> torch.Tensor:
    j = torch.arange(m + 1, dtype=torch.float64)
    if estimator == "sampled":
        return metric_values(j + 1, m + 1, metric, k)
    if estimator == "rank":
        return metric_values(1 + j * (n - 1) / m, n, metric, k)
    if design is None:
        design = design_for(n, m, replacement, [k], metric in _CURVED)
    target = design.target(n, metric, k)
    if estimator == "bv":
        return _bias_variance(design, target, gamma)
    upper = float(metric_values(torch.ones(1), n, metric, k)[0])
    return _constrained_least_squares(design.a, target, upper)


def _bias_variance(design: _Design, target: torch.Tensor, gamma: float) -> torch.Tensor:
    """``((1 - gamma) A^T A + gamma diag(c))^-1 A^T b``; minimum-norm least squares at gamma 0."""
    if gamma == 0.0:
        return torch.linalg.lstsq(design.a, target[:, None], driver="gelsd").solution[:, 0]
    system = (1.0 - gamma) * design.gram + gamma * torch.diag(design.c)
    rhs = design.a.T @ target
    factor, info = torch.linalg.cholesky_ex(system)
    if int(info) == 0:
        return torch.cholesky_solve(rhs[:, None], factor)[:, 0]
    return torch.linalg.lstsq(system, rhs[:, None], driver="gelsd").solution[:, 0]


def _constrained_least_squares(a: torch.Tensor, target: torch.Tensor, upper: float) -> torch.Tensor:
    """``argmin ||a x - target||`` subject to ``upper >= x[0] >= ... >= x[m] >= 0``.

    With ``x[j] = upper * sum_{i >= j} d[i]`` the constraints read ``d >= 0, sum(d) <= 1``; a
    slack ``s = 1 - sum(d)`` makes them a simplex, and the columns of ``a`` become the
    cumulative sums ``upper * sum_{i <= j} a[:, i]`` (the sampled rank's CDF). The simplex
    problem is solved by a primal active-set method (Lawson and Hanson, "Solving Least Squares
    Problems", 1974, ch. 23, with the sum constraint eliminated on the passive set), which ends
    at an exact KKT point: optimal, since the problem is convex.
    """
    columns = upper * torch.cumsum(a, dim=1)
    d = _simplex_least_squares(columns, target)
    return upper * torch.flip(torch.cumsum(torch.flip(d[:-1], [0]), 0), [0])


def _simplex_least_squares(columns: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``argmin ||[columns, 0] d - target||`` over the simplex ``d >= 0, sum(d) = 1``.

    The last entry of the result is the slack (a zero column).
    """
    rows, p = columns.shape
    full = torch.cat([columns, torch.zeros(rows, 1, dtype=columns.dtype)], dim=1)
    d = torch.zeros(p + 1, dtype=torch.float64)
    d[p] = 1.0
    passive = [p]
    scale = float(torch.linalg.norm(full)) * float(torch.linalg.norm(target)) + 1e-300
    tol = 1e-13 * scale
    for _ in range(4 * (p + 1)):
        gradient = full.T @ (target - full @ d)  # minus half the objective's gradient
        level = gradient[passive].mean()
        gain = gradient - level
        gain[passive] = -math.inf
        best = int(torch.argmax(gain))
        if float(gain[best]) <= tol:
            break
        passive.append(best)
        for _ in range(len(passive) + 1):
            z = _on_simplex_face(full[:, passive], target)
            if bool((z > 0).all()):
                d.zero_()
                d[passive] = z
                break
            current = d[passive]
            falling = z <= 0
            steps = current[falling] / (current[falling] - z[falling])
            step = float(steps.min())
            moved = current + step * (z - current)
            keep = [i for i, value in zip(passive, moved.tolist(), strict=True) if value > 1e-15]
            d.zero_()
            if not keep:  # numerically degenerate: restart from the slack vertex
                keep = [p]
                d[p] = 1.0
            else:
                kept = torch.tensor([passive.index(i) for i in keep])
                d[keep] = moved[kept] / moved[kept].sum()
            passive = keep
    return d


def _on_simplex_face(columns: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``argmin ||columns z - target||`` subject to ``sum(z) = 1`` (no sign constraint)."""
    if columns.shape[1] == 1:
        return torch.ones(1, dtype=torch.float64)
    first = columns[:, :1]
    reduced = columns[:, 1:] - first
    rest = torch.linalg.lstsq(reduced, (target - first[:, 0])[:, None], driver="gelsd").solution[:, 0]
    return torch.cat([(1.0 - rest.sum()).reshape(1), rest])


# ------------------------------------------------------------------------------------------ MLE


@dataclass(frozen=True)
class RankDistribution:
    """The maximum-likelihood distribution of full ranks (:func:`fit_rank_distribution`).

    Attributes:
        ranks: the ranks it may put mass on (every rank, or the head and a grid), float64.
        probabilities: the estimated probability of each of ``ranks``, float64, summing to 1.
        log_likelihood: ``sum_j h[j] log P(r' = j + 1)`` at the estimate.
        start_log_likelihood: the same at EM's start (the uniform distribution over ranks).
        iterations: EM iterations run (where ``m = n - 1``: 1 for the direct solve, or Newton's
            iterations).
        converged: whether the gain per iteration fell below ``tol`` before ``max_iter`` (or the
            direct solve or Newton's method reached the maximum).
    """

    ranks: torch.Tensor
    probabilities: torch.Tensor
    log_likelihood: float
    start_log_likelihood: float
    iterations: int
    converged: bool

    def metric(self, num_items: int, metric: str, k: int | None = None) -> float:
        """``sum_r pi(r) M(r)``: the metric of the estimated distribution."""
        metric, k = check_metric(metric, k)
        return float(self.probabilities @ metric_values(self.ranks, num_items, metric, k))


def _mle_support(n: int, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Ranks the MLE may use and how many ranks each stands for (its start mass)."""
    if n * (m + 1) <= _MLE_EXACT_ENTRIES:
        ranks = torch.arange(1, n + 1, dtype=torch.float64)
        return ranks, torch.ones(n, dtype=torch.float64)
    head = min(n, max(m + 1, _MLE_HEAD))
    step = 1.0 / (_MLE_POINTS_PER_SD * 2.0 * math.sqrt(m))  # sd of arcsin(sqrt(r'/m)) ~ 1/(2 sqrt(m))
    phi = torch.arange(0.0, math.pi / 2, step, dtype=torch.float64)
    grid = torch.round(1 + (n - 1) * torch.sin(phi) ** 2)
    grid = torch.unique(torch.cat([grid, torch.tensor([float(n)])]))
    grid = grid[grid > head]
    ranks = torch.cat([torch.arange(1, head + 1, dtype=torch.float64), grid])
    # Each rank stands for the integers nearer to it than to its neighbours.
    edges = torch.cat([torch.tensor([0.5]), (ranks[1:] + ranks[:-1]) / 2, torch.tensor([n + 0.5])])
    edges = torch.floor(edges) + 0.5
    return ranks, edges[1:] - edges[:-1]


def fit_rank_distribution(
    histogram: object,
    num_items: int,
    num_negatives: int,
    *,
    replacement: bool = False,
    tol: float = 1e-8,
    max_iter: int = 100_000,
) -> RankDistribution:
    """Jin et al.'s MLE of the distribution of full ranks from a sampled-rank histogram, by EM.

    EM for the mixture weights ``pi`` of the fixed components ``P(r' | r)``:
    ``pi(r) <- pi(r) sum_j (h[j] / N) P(j | r) / q[j]`` with ``q = P^T pi``, from the uniform
    distribution over ranks, until an iteration raises the mean log-likelihood per query by
    less than ``tol`` (or ``max_iter`` iterations). Each iteration never lowers the likelihood.

    Where ``m = n - 1``, ``P`` is square and invertible and the maximum is unique; it is then
    computed, not approached: ``pi = P^-T w`` (``w = h / sum(h)``, so that ``P^T pi = w``) when that
    lies in the simplex; otherwise, if every sampled rank was seen (the likelihood is then
    strictly concave in ``pi``), the constrained maximum by Newton's method on the simplex, to a
    KKT point: a step moves no probability by more than ``1e-13`` and the gradient is within
    ``1e-9`` of the multiplier of the sum on the support and below it off it (measured against
    ``P^-T w`` and a generic solver: agreement to about ``1e-13`` for ``n <= 8``). ``tol`` does not
    apply there; where Newton's method reaches no KKT point (the binomial ``P`` is
    ill-conditioned from about ``n = 25``) or a sampled rank was never seen, EM as above.

    Example:
        >>> from ignite_ranking import sampled
        >>> fit = sampled.fit_rank_distribution([3, 1, 0, 0], 4, 3)  # m = n - 1: r' = r
        >>> fit.probabilities.tolist(), fit.metric(4, "hit_rate", 1)
        ([0.75, 0.25, 0.0, 0.0], 0.75)
    """
    n, m = check_sizes(num_items, num_negatives)
    replacement = _check_flag("replacement", replacement)
    h = check_histogram(histogram, m)
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not tol > 0:
        raise ValueError(f"tol must be a positive number, got {tol!r}.")
    if not _is_int(max_iter) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}.")
    ranks, mass = _mle_support(n, m)
    pmf = sampled_rank_pmf(ranks, n, m, replacement)
    seen = h > 0
    pmf_seen, share = pmf[:, seen], h[seen] / h.sum()
    pi = mass / mass.sum()
    total = float(h.sum())

    fitted = pi @ pmf_seen
    start = current = float(share @ torch.log(fitted))
    if m == n - 1:  # P is square and invertible: the maximum is unique, solved for
        solved = _inverse_law(pmf, h / h.sum())
        if solved is not None:
            solved = (solved, 1)
        elif bool(seen.all()):  # every r' seen: the likelihood is strictly concave in pi
            solved = _simplex_newton(pmf, share, pi, min(max_iter, 50 * n))  # steps: ~n adds and drops
        if solved is not None:
            current = float(share @ torch.log(solved[0] @ pmf_seen))
            return RankDistribution(ranks, solved[0], current * total, start * total, solved[1], True)
    converged = False
    iterations = 0
    while iterations < max_iter:
        pi = pi * (pmf_seen @ (share / fitted))
        pi = pi / pi.sum()
        fitted = pi @ pmf_seen
        iterations += 1
        previous, current = current, float(share @ torch.log(fitted))
        if current - previous < tol:
            converged = True
            break
    return RankDistribution(ranks, pi, current * total, start * total, iterations, converged)


def _inverse_law(pmf: torch.Tensor, law: torch.Tensor) -> torch.Tensor | None:
    """``pi = P^-T w`` for a square ``P`` (``w`` the histogram's law), or None unless it lies in
    the simplex: then ``P^T pi = w``, the largest likelihood any law of ``r'`` has."""
    pi = torch.linalg.solve(pmf.T, law)
    if not bool(torch.isfinite(pi).all()) or float(pi.min()) < -_STEP_TOL:
        return None
    pi = pi.clamp(min=0.0)
    pi = pi / pi.sum()
    return pi if float((pi @ pmf - law).abs().max()) <= _STEP_TOL else None


def _simplex_newton(
    pmf: torch.Tensor, share: torch.Tensor, pi: torch.Tensor, max_iter: int
) -> tuple[torch.Tensor, int] | None:
    """``argmax_pi sum_j share[j] log (pi @ pmf)[j]`` over the simplex from ``pi`` (uniform), by
    Newton's method on the face of the current support (a primal active set); ``(pi,
    iterations)``, or None where it reaches no KKT point (a Hessian too ill-conditioned to factor,
    as that of the binomial ``P`` becomes for large ``n``).

    A step that would make a probability negative stops where the first one reaches 0, and that
    rank leaves the support (a backtracking line search keeps every step uphill). Once a step
    moves no probability by more than ``_STEP_TOL``, the gradient ``g`` must be 1 on the support
    (the multiplier of the sum: ``sum_r pi(r) g(r) = 1``) to ``_KKT_TOL``, and the rank off the
    support whose ``g(r)`` most exceeds 1 joins it, until none exceeds 1 by ``_KKT_TOL``: a KKT
    point, the maximum of this concave function.
    """

    def value(candidate: torch.Tensor) -> float:
        fitted = candidate @ pmf
        return float(share @ torch.log(fitted)) if bool((fitted > 0).all()) else -math.inf

    current = value(pi)
    support = pi > 0
    for iteration in range(1, max_iter + 1):
        fitted = pi @ pmf
        gradient = pmf @ (share / fitted)
        face = support.nonzero().squeeze(1)
        rows = pmf[face]
        factor, info = torch.linalg.cholesky_ex((rows * (share / fitted**2)) @ rows.T)  # -Hessian
        if int(info) != 0:
            return None
        # maximize g.d - d.H.d / 2 subject to sum(d) = 0: d = H^-1 (g - lambda 1)
        both = torch.cholesky_solve(torch.stack([gradient[face], torch.ones_like(gradient[face])], 1), factor)
        step = both[:, 0] - (both[:, 0].sum() / both[:, 1].sum()) * both[:, 1]
        falling = step < 0
        if bool((falling & (pi[face] <= 0)).any()):  # the rank just added would fall: degenerate
            return None
        reach = pi[face][falling] / -step[falling]
        longest = min(1.0, float(reach.min())) if bool(falling.any()) else 1.0
        slope, t, moved, dropped = float(gradient[face] @ step), longest, 0.0, False
        for _ in range(60):  # backtracking (Armijo, to the rounding of the likelihood near the top)
            candidate = pi.clone()
            candidate[face] = (pi[face] + t * step).clamp(min=0.0)
            dropped = t == longest < 1.0
            if dropped:  # at the boundary: the rank that reached 0 leaves the support
                candidate[face[falling][reach <= longest]] = 0.0
            candidate /= candidate.sum()
            found = value(candidate)
            if found - current >= 1e-4 * t * slope - 1e-14 * abs(current):
                pi, current, moved = candidate, found, t * float(step.abs().max())
                break
            t /= 2
        else:
            dropped = False
        support = pi > 0
        if moved > _STEP_TOL or dropped:
            continue
        gradient = pmf @ (share / (pi @ pmf))
        if float((gradient[support] - 1.0).abs().max()) > _KKT_TOL:
            return None
        excess = torch.where(support, -math.inf, gradient - 1.0)
        best = int(torch.argmax(excess))
        if float(excess[best]) <= _KKT_TOL:
            return pi, iteration
        support[best] = True
    return None


# ------------------------------------------------------------------------------------- estimate


def estimate(
    histogram: object,
    num_items: int,
    num_negatives: int,
    metric: str,
    k: int | None = None,
    *,
    estimator: str = "bv",
    gamma: float = 0.01,
    replacement: bool = False,
) -> float:
    """The full-catalog metric estimated from a histogram of sampled ranks.

    Args:
        histogram: ``m + 1`` non-negative counts; ``histogram[j]`` queries had sampled rank
            ``j + 1`` (their relevant item was beaten by ``j`` of its ``m`` negatives).
        num_items: ``n``, the catalog size, from which the negatives were drawn (``n - 1``
            candidates per query).
        num_negatives: ``m``, negatives per query, ``1 <= m < n``.
        metric: ``"mrr"``, ``"hit_rate"``, ``"recall"``, ``"precision"``, ``"ndcg"`` or ``"auc"``.
        k: the cutoff (required by hit_rate, recall and precision; refused by auc; optional for
            mrr and ndcg).
        estimator: ``"sampled"``, ``"rank"``, ``"cls"``, ``"bv"`` or ``"mle"`` (module docstring).
        gamma: the variance weight of ``"bv"``, in ``[0, 1]``.
        replacement: whether the negatives were drawn with replacement (binomial) or without
            (hypergeometric, the default).

    Example:
        >>> from ignite_ranking import sampled
        >>> h = [60, 25, 10, 5]  # 100 queries, m = 3 negatives from a catalog of n = 1000
        >>> sampled.estimate(h, 1000, 3, "hit_rate", 10, estimator="sampled")  # r' <= 10 always
        1.0
        >>> round(sampled.estimate(h, 1000, 3, "hit_rate", 10, estimator="bv", gamma=1.0), 4)
        0.0238
    """
    n, m = check_sizes(num_items, num_negatives)
    metric, k = check_metric(metric, k)
    estimator, gamma = check_estimator(estimator, gamma)
    replacement = _check_flag("replacement", replacement)
    h = check_histogram(histogram, m)
    if estimator == "mle":
        return fit_rank_distribution(h, n, m, replacement=replacement).metric(n, metric, k)
    x = _correction(n, m, metric, k, estimator, gamma, replacement)
    return float(h @ x / h.sum())
