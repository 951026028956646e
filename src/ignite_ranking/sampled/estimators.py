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
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ._pmf import sampled_rank_pmf
from ._quadrature import rank_nodes
from .arguments import (
    ESTIMATORS,
    METRICS,
    _check_flag,
    check_estimator,
    check_histogram,
    check_metric,
    check_sizes,
)
from .full_rank import expected_histogram, full_metric, metric_values
from .mle import RankDistribution, fit_rank_distribution

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

# Metrics that are neither 0 nor a polynomial in r up to their cutoff (quadrature segments).
_CURVED = ("mrr", "ndcg")


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
