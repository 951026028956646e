"""P(r' | r): the law of the sampled rank given the full rank, in float64 log-space.

A query's relevant item has full rank ``r`` among ``n`` items, so ``r - 1`` of the ``n - 1``
other items score above it. Of ``m`` negatives drawn uniformly from those ``n - 1`` items,
``J = r' - 1`` score above it, where ``r'`` is its rank among the ``m + 1`` candidates:

- without replacement, ``J`` is hypergeometric:
  ``P(J = j | r) = C(r - 1, j) C(n - r, m - j) / C(n - 1, m)``;
- with replacement, ``J`` is binomial: ``P(J = j | r) = C(m, j) t^j (1 - t)^(m - j)``,
  ``t = (r - 1) / (n - 1)``.

Both are polynomials in ``r`` of degree ``m`` (which :mod:`._quadrature` relies on), and both are
evaluated here for real ``r`` too (the quadrature nodes are not integers).

``lgamma(n)`` of ``n = 10**8`` is about ``1.7e9``: a difference of two such values keeps only
about 7 correct digits of the probability. The log binomial coefficients are therefore taken as
``log C(a, b) = log(a (a - 1) ... (a - b + 1)) - lgamma(b + 1)``, with the falling factorial
written through Stirling's series (``b <= m`` is small, ``a`` may be huge) so that no large
number is ever subtracted from another: the result keeps about 12 correct digits for
``n <= 10**8`` and ``m`` in the thousands.
"""

from __future__ import annotations

import math

import torch

__all__ = ["log_falling", "log_sampled_rank_pmf", "sampled_rank_pmf"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Below this, lgamma's own values are small enough that their difference is exact to ~1e-13.
_DIRECT = 16.0


def _stirling_tail(x: torch.Tensor) -> torch.Tensor:
    """``lgamma(x + 1) - ((x + 1/2) log x - x + log(2 pi) / 2)`` for ``x >= 16`` (error < 1e-17)."""
    inv = 1.0 / x
    inv2 = inv * inv
    return inv * (1 / 12 - inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 * (1 / 1680 - inv2 / 1188))))


def log_falling(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``log(a (a - 1) ... (a - b + 1)) = lgamma(a + 1) - lgamma(a - b + 1)`` for ``a - b > -1``.

    ``b`` holds non-negative integers; ``a`` any reals with ``a - b > -1`` (so every factor is
    positive). Where ``a - b`` is large the difference is written as
    ``b log a - (a - b + 1/2) log1p(-b / a) - b + s(a) - s(a - b)`` with Stirling's remainder
    ``s``, which subtracts nothing large.

    Example:
        >>> import torch
        >>> values = log_falling(torch.tensor([5.0, 1e8]), torch.tensor([2.0, 1.0])).exp()
        >>> [round(v, 6) for v in values.tolist()]
        [20.0, 100000000.0]
    """
    a, b = torch.broadcast_tensors(a.to(torch.float64), b.to(torch.float64))
    rest = a - b
    direct = rest < _DIRECT
    # Both branches on every entry (elementwise, no gathers); each is fed safe arguments where
    # its value is not used.
    near = torch.lgamma(a + 1) - torch.lgamma(rest + 1)
    af = torch.where(direct, _DIRECT, a)
    bf = torch.where(direct, 0.0, b)
    rf = af - bf
    far = bf * torch.log(af) - (rf + 0.5) * torch.log1p(-bf / af) - bf
    far += _stirling_tail(af) - _stirling_tail(rf)
    return torch.where(direct, near, far)


def _log_choose(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``log C(a, b)``, ``-inf`` where ``a - b <= -1`` (an integer ``a < b``: no such subset)."""
    a, b = torch.broadcast_tensors(a.to(torch.float64), b.to(torch.float64))
    valid = a - b > -0.5
    value = log_falling(torch.where(valid, a, b), b) - torch.lgamma(b + 1)
    return torch.where(valid, value, -math.inf)


def log_sampled_rank_pmf(
    ranks: torch.Tensor, num_items: int, num_negatives: int, replacement: bool
) -> torch.Tensor:
    """``log P(r' = j + 1 | r)`` as a ``(len(ranks), m + 1)`` float64 tensor (``-inf`` for 0).

    Args:
        ranks: full ranks ``r`` in ``[1, n]`` (reals allowed: the polynomial in ``r``; without
            replacement they must lie in ``[m + 1, n - m]`` or be integers).
        num_items: ``n``.
        num_negatives: ``m``.
        replacement: binomial (True) or hypergeometric (False) sampling.

    Example:
        >>> import torch
        >>> log_sampled_rank_pmf(torch.tensor([1.0, 3.0]), 3, 2, False).exp()
        tensor([[1., 0., 0.],
                [0., 0., 1.]], dtype=torch.float64)
    """
    n, m = num_items, num_negatives
    r = ranks.to(torch.float64).reshape(-1, 1)
    j = torch.arange(m + 1, dtype=torch.float64).reshape(1, -1)
    if replacement:
        t = (r - 1) / (n - 1)
        return (
            _log_choose(torch.tensor(float(m), dtype=torch.float64), j)
            + torch.xlogy(j, t)
            + torch.special.xlog1py(m - j, -t)
        )
    total = _log_choose(torch.tensor(float(n - 1), dtype=torch.float64), torch.tensor(float(m)))
    return _log_choose(r - 1, j) + _log_choose(n - r, m - j) - total


def sampled_rank_pmf(
    ranks: torch.Tensor, num_items: int, num_negatives: int, replacement: bool
) -> torch.Tensor:
    """``P(r' = j + 1 | r)``, ``(len(ranks), m + 1)`` float64: :func:`log_sampled_rank_pmf`'s exp."""
    return log_sampled_rank_pmf(ranks, num_items, num_negatives, replacement).exp()
