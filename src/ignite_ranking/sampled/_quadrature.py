"""Sums over all full ranks ``r = 1 .. n`` without visiting them: discrete Gauss quadrature.

The corrections need sums such as ``sum_r P(j | r) P(l | r)`` over every rank of a catalog of
up to ``10**8`` items. As functions of ``r``, ``P(j | r)`` is a polynomial of degree ``m``
(:mod:`._pmf`) and ``P(j | r) P(l | r)`` one of degree ``2m``. The Gauss rule of ``q`` nodes for
the uniform measure on the integers ``{0, ..., N - 1}`` (the zeros of the discrete Chebyshev, or
Gram, polynomials) sums every polynomial of degree ``<= 2q - 1`` over those ``N`` integers exactly;
with ``q > m`` the sums above are exact up to rounding, whatever ``N``.

The ranks are cut into segments (:func:`rank_nodes`):

- the head ``1 .. m + 1`` and the foot ``n - m + 1 .. n`` are enumerated rank by rank: there the
  hypergeometric polynomial changes sign between integers, so its log cannot be taken at real
  nodes, and the head holds the small cutoffs where the metrics@k live;
- the middle is one segment, split after every cutoff ``k`` (a metric@k is a polynomial on each
  side of its cutoff: 0 after it) and, up to ``smooth_until`` (where a metric such as ``1 / r`` is
  not a polynomial), into segments ``[a, 2a)``, on which ``1 / r`` and ``1 / log2(r + 1)`` are
  approximated by polynomials of degree ``2q - 1 - m >= m + 49`` to far below float64 precision
  (their nearest singularity, ``r = 0`` or ``r = -1``, is a segment's length away);
- a segment of at most ``2q`` ranks is enumerated; a longer one takes ``q = m + 25`` nodes.

The rule of a segment comes from the eigenvalues of the Jacobi matrix of the discrete Chebyshev
polynomials (Golub and Welsch, "Calculation of Gauss quadrature rules", Math. Comp. 23, 1969;
the recurrence coefficients are in Gautschi, "Orthogonal Polynomials: Computation and
Approximation", 2004, section 1.5), scaled to ``[0, 1]`` so that its entries stay of order one.
"""

from __future__ import annotations

import functools

import torch

__all__ = ["discrete_gauss", "nodes_per_segment", "rank_nodes"]

_EXTRA_NODES = 24


def nodes_per_segment(num_negatives: int) -> int:
    """``q``: the nodes of one segment's rule, exact for polynomials of degree ``2q - 1 > 2m``."""
    return num_negatives + 1 + _EXTRA_NODES


@functools.lru_cache(maxsize=16)
def discrete_gauss(count: int, nodes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``nodes``-point Gauss rule of the uniform measure on ``{0, ..., count - 1}``.

    Returns ``(x, w)``, float64: ``sum_i w_i f(x_i) = sum_{t=0}^{count-1} f(t)`` for every
    polynomial ``f`` of degree ``<= 2 nodes - 1``. Needs ``nodes <= count``.

    Example:
        >>> x, w = discrete_gauss(1000, 3)
        >>> round(float((w * x**5).sum()) / sum(t**5 for t in range(1000)), 12)
        1.0
    """
    if not 1 <= nodes <= count:
        raise ValueError(f"a rule of {nodes} nodes needs 1 <= nodes <= count, got count={count}.")
    big_n = float(count)
    k = torch.arange(1, nodes, dtype=torch.float64)
    # Monic recurrence of the discrete Chebyshev polynomials on {0..N-1}: alpha_k = (N - 1) / 2,
    # beta_k = k^2 (N^2 - k^2) / (4 (4 k^2 - 1)); on t / N, so that the entries stay O(1).
    alpha = (big_n - 1.0) / (2.0 * big_n)
    root_beta = (k**2 * (1.0 - (k / big_n) ** 2) / (4.0 * (4.0 * k**2 - 1.0))).sqrt()
    jacobi = torch.diag(torch.full((nodes,), alpha, dtype=torch.float64))
    jacobi += torch.diag(root_beta, 1) + torch.diag(root_beta, -1)
    values, vectors = torch.linalg.eigh(jacobi)
    # Golub-Welsch: the weights are the squared first components of the normalized eigenvectors
    # (the Christoffel sums over the orthonormal polynomials overflow near the ends of the range
    # once nodes**2 exceeds count, where the weights become tiny).
    return (values * big_n).clamp(0.0, big_n - 1.0), vectors[0] ** 2 * big_n


def _segments(lo: int, hi: int, breaks: list[int], smooth_until: int) -> list[tuple[int, int]]:
    """``[a, b]`` integer segments covering ``lo .. hi``: cut after each break, and geometrically
    (``[a, 2a)``) up to ``smooth_until``."""
    cuts = {lo, hi + 1}
    cuts.update(k + 1 for k in breaks if lo <= k < hi)
    a = lo
    while a <= min(smooth_until, hi):
        a *= 2
        if a <= hi:
            cuts.add(a)
    bounds = sorted(cuts)
    return [(bounds[i], bounds[i + 1] - 1) for i in range(len(bounds) - 1)]


def rank_nodes(
    num_items: int, num_negatives: int, breaks: tuple[int, ...] = (), smooth_until: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Ranks and weights such that ``sum_i w_i f(r_i)`` is ``sum_{r=1}^{n} f(r)`` (module doc).

    Args:
        num_items: ``n``.
        num_negatives: ``m``; each segment's rule is exact for polynomials of degree ``2m + 49``.
        breaks: ranks after which the summand may jump (the cutoffs ``k``).
        smooth_until: the largest rank up to which the summand is smooth but not a polynomial
            (``1 / r`` for MRR); 0 if it is a polynomial on every segment.

    Returns:
        ``(ranks, weights)``, float64, ranks ascending; ``weights`` sum to ``n``.

    Example:
        >>> ranks, weights = rank_nodes(10**8, 9)
        >>> len(ranks), round(float(weights.sum()))  # 10 + 33 nodes + 9 + ... for 10**8 ranks
        (53, 100000000)
    """
    n, m = num_items, num_negatives
    q = nodes_per_segment(m)
    head_end = min(n, m + 1)
    foot_start = max(head_end + 1, n - m + 1)
    ranks = [torch.arange(1, head_end + 1, dtype=torch.float64)]
    weights = [torch.ones(head_end, dtype=torch.float64)]
    if foot_start > head_end + 1:
        for a, b in _segments(head_end + 1, foot_start - 1, sorted(breaks), smooth_until):
            size = b - a + 1
            if size <= 2 * q:
                ranks.append(torch.arange(a, b + 1, dtype=torch.float64))
                weights.append(torch.ones(size, dtype=torch.float64))
            else:
                x, w = discrete_gauss(size, q)
                ranks.append(a + x)
                weights.append(w.clone())
    if foot_start <= n:
        ranks.append(torch.arange(foot_start, n + 1, dtype=torch.float64))
        weights.append(torch.ones(n - foot_start + 1, dtype=torch.float64))
    return torch.cat(ranks), torch.cat(weights)
