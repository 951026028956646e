"""The cutoffs at or past the ranked depth (a metric's ``cutoff_tail``), scored once for all.

A ranking read to depth K gives the same value at every cutoff at or past K for a metric whose
``cutoff_tail`` is ``"repeat"``, and a numerator that stops growing for ``"divide"`` (P@k =
hits / k). The first such cutoff is scored and stands for the rest, so such cutoffs cost O(1)
per query, not one value each: :func:`spread_tail` spreads the values over every cutoff (for
per-query values), :func:`tail_sums` the exact sums (the same limbs as those of every cutoff's
values summed).
"""

from __future__ import annotations

import bisect

import torch

from ..kernels.exact_sum import weighted_limb_sums

__all__ = ["cutoff_ks", "spread_tail", "tail_start", "tail_sums"]


def tail_start(metric, depth: int) -> int | None:
    """Where the cutoffs at or past the ranked ``depth`` start (the first of them is scored
    and stands for the rest), or None when fewer than two are (each cutoff is scored)."""
    if metric.cutoff_tail is None or metric.top_k is None:
        return None
    first = bisect.bisect_left(metric.top_k, depth)
    return first if first < len(metric.top_k) - 1 else None


def cutoff_ks(metric, device: torch.device) -> torch.Tensor:
    """The cutoffs as a float64 tensor on ``device``, built once per list and device (100,000
    of them take ~10 ms; on an accelerator, no copy from the host per update). Read only."""
    cached = metric.__dict__.get("_ks")
    if cached is None or cached[0] is not metric.top_k or cached[1] != device:
        ks = torch.tensor(metric.top_k, dtype=torch.float64, device=device)
        cached = metric._ks = (metric.top_k, device, ks)
    return cached[2]


def spread_tail(metric, values, tail, numerators, counted, fill, masked) -> torch.Tensor:
    """The ``(batch, len(top_k))`` values of every cutoff from those scored up to ``tail``."""
    rest = len(metric.top_k) - tail - 1
    if numerators is None:
        return torch.cat([values, values[:, -1:].expand(-1, rest)], dim=1)
    spread = numerators[:, None] / cutoff_ks(metric, values.device)[tail + 1 :]
    if masked:
        spread = torch.where(counted[:, None], spread, fill)
    return torch.cat([values, spread], dim=1)


def tail_sums(metric, sums, tail, numerators, filled, power) -> list[torch.Tensor]:
    """The limbs of every cutoff, as two blocks of rows, from ``sums``, those of the cutoffs
    scored up to ``tail``: the last repeated (a view), or under "divide" the sums over the
    distinct numerators ``n`` of ``(n / k) ** power`` times their queries, plus 1 for each of
    ``filled`` queries.

    Each value is rounded on its own as :func:`limb_sums` rounds it, so the limbs are those
    of the values of every cutoff summed: the same to the bit.
    """
    rest = len(metric.top_k) - tail - 1
    if numerators is None:
        return [sums, sums[-1:].expand(rest, -1)]
    distinct, queries = torch.unique(numerators, return_counts=True)
    nonzero = distinct != 0  # 0 / k adds nothing (nor do the filled queries, held at 0 here)
    spread = distinct[nonzero, None] / cutoff_ks(metric, distinct.device)[tail + 1 :]
    tail_sums = weighted_limb_sums(spread.square() if power else spread, queries[nonzero])
    if filled is not None:
        tail_sums[:, 0] += filled.to(tail_sums.device)
    return [sums, tail_sums]
