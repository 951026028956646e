"""Jin et al.'s maximum-likelihood distribution of full ranks from a sampled-rank histogram: EM,
and where ``m = n - 1`` the direct solve or Newton's method on the simplex."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

from ._pmf import sampled_rank_pmf
from .arguments import _check_flag, _is_int, check_histogram, check_metric, check_sizes
from .full_rank import metric_values

# Above this many entries of P, the MLE works on a grid of ranks instead of every rank.
_MLE_EXACT_ENTRIES = 2**22
_MLE_HEAD = 1024
_MLE_POINTS_PER_SD = 16
# Where m = n - 1 (P square, the MLE unique): a Newton step moving no probability by more than
# this ends the search; KKT then holds to _KKT_TOL (no rank off the support raises the likelihood).
_STEP_TOL = 1e-13
_KKT_TOL = 1e-9


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
