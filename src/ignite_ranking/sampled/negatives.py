"""Uniform negatives for sampled evaluation: every allowed item equally likely, exactly."""

from __future__ import annotations

import numbers

import numpy as np
import torch

__all__ = ["sample_negatives"]

_BITS = 2**62


def _uniform_below(bound: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One exactly uniform integer in ``[0, bound[i])`` per entry of ``bound`` (int64, >= 1).

    A uniform 62-bit integer modulo ``bound`` would favour the small residues by up to
    ``bound / 2**62``; draws at or above the largest multiple of ``bound`` are drawn again instead
    (almost never: with probability below ``bound / 2**62``).
    """
    limit = (_BITS // bound) * bound
    draws = torch.randint(0, _BITS, bound.shape, generator=generator, device=bound.device)
    over = draws >= limit
    while bool(over.any()):
        draws[over] = torch.randint(0, _BITS, (int(over.sum()),), generator=generator, device=bound.device)
        over = draws >= limit
    return draws % bound


def _distinct_below(bound: torch.Tensor, m: int, generator: torch.Generator | None) -> torch.Tensor:
    """``(rows, m)`` distinct uniform integers in ``[0, bound[i])`` per row (``2 m <= bound``).

    All ``m`` are drawn at once; each value that repeats an earlier position's value in its row
    is drawn again, until none repeats. The procedure treats every value alike, so every ordered
    ``m``-tuple of distinct values is equally likely (exact, like drawing one by one without
    replacement); with ``2 m <= bound`` each round redraws at most half of the entries on average.
    """
    rows = bound.shape[0]
    bounds = bound[:, None].expand(rows, m).contiguous()
    values = _uniform_below(bounds, generator)
    while True:
        ordered, order = values.sort(dim=1, stable=True)
        repeat_sorted = torch.zeros_like(values, dtype=torch.bool)
        repeat_sorted[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
        repeat = torch.zeros_like(repeat_sorted).scatter_(1, order, repeat_sorted)
        if not bool(repeat.any()):
            return values
        values[repeat] = _uniform_below(bounds[repeat], generator)


def _excluded_ids(exclude: object, batch: int, num_items: int, device: torch.device) -> torch.Tensor:
    """``(batch, e)`` int64 excluded ids, ``-1`` for padding, from either accepted form."""
    if exclude is None:
        return torch.empty(batch, 0, dtype=torch.int64, device=device)
    if not isinstance(exclude, torch.Tensor):
        raise TypeError(
            "exclude must be a (batch, e) int tensor of item ids padded with -1, or a sparse "
            f"(batch, num_items) tensor, got {type(exclude).__name__}."
        )
    if exclude.layout != torch.strided:
        if tuple(exclude.shape) != (batch, num_items):
            raise ValueError(
                f"a sparse exclude must have shape (batch, num_items) = ({batch}, {num_items}), got "
                f"{tuple(exclude.shape)}."
            )
        coo = exclude.to_sparse_coo().coalesce()
        rows, cols = coo.indices()
        counts = torch.bincount(rows, minlength=batch)
        width = int(counts.max()) if rows.numel() else 0
        ids = torch.full((batch, width), -1, dtype=torch.int64, device=rows.device)
        slot = torch.arange(rows.numel(), device=rows.device) - (torch.cumsum(counts, 0) - counts)[rows]
        ids[rows, slot] = cols
        return ids.to(device)
    if exclude.dtype.is_floating_point or exclude.dtype == torch.bool or exclude.is_complex():
        raise TypeError(f"exclude must hold integer item ids, got dtype {exclude.dtype}.")
    if exclude.ndim != 2 or exclude.shape[0] != batch:
        raise ValueError(
            f"exclude must have shape (batch, e) = ({batch}, e), item ids padded with -1, got "
            f"{tuple(exclude.shape)}."
        )
    ids = exclude.to(device=device, dtype=torch.int64)
    if bool((ids >= num_items).any()) or bool((ids < -1).any()):
        raise ValueError(f"exclude must hold item ids in [0, {num_items}) or -1 for padding.")
    return ids


def sample_negatives(
    positives: torch.Tensor,
    num_items: int,
    m: int,
    *,
    exclude: torch.Tensor | None = None,
    replacement: bool = False,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """``m`` negatives per query, uniform over the catalog minus the positive and excluded items.

    Each row's candidates are the ``num_items`` items except its positive and its excluded
    (e.g. training) items. Without replacement the ``m`` ids of a row are distinct and every
    ordered choice of ``m`` candidates is equally likely; with replacement each id is an
    independent uniform candidate. Both are exact: the candidates are numbered ``0 .. c - 1``
    and uniform integers below ``c`` are mapped to them through the sorted forbidden ids, so no
    draw is discarded in a way that favours some items, and a row is never topped up.

    Args:
        positives: ``(batch,)`` int ids of each query's held-out item, in ``[0, num_items)``.
        num_items: ``n``, the catalog size.
        m: negatives per query.
        exclude: items that are not candidates: a ``(batch, e)`` int tensor of ids padded with
            ``-1`` (the form :func:`ignite_ranking.catalog.top_k` takes), or a sparse
            ``(batch, num_items)`` tensor whose stored entries are excluded.
        replacement: draw with replacement (ids may repeat) instead of without.
        generator: a :class:`torch.Generator` on ``positives``' device, for reproducible draws.

    Returns:
        ``(batch, m)`` int64 ids on ``positives``' device.

    Raises:
        ValueError: a row has fewer than ``m`` candidates (without replacement) or none (with),
            naming the rows; or ids out of range.

    Example:
        >>> import torch
        >>> from ignite_ranking import sampled
        >>> gen = torch.Generator().manual_seed(0)
        >>> seen = torch.tensor([[1, -1], [5, 2]])  # training items, padded with -1
        >>> ids = sampled.sample_negatives(torch.tensor([3, 0]), 6, 3, exclude=seen, generator=gen)
        >>> ids.shape, sorted(ids[1].tolist())  # row 1 may only use items 1, 3 and 4
        (torch.Size([2, 3]), [1, 3, 4])
        >>> sampled.sample_negatives(torch.tensor([3, 0]), 6, 4, exclude=seen)
        Traceback (most recent call last):
        ...
        ValueError: sample_negatives: m=4 negatives without replacement need at least 4 candidates
        per row (the catalog minus the positive and the excluded items); row 1 has 3.
    """
    if not isinstance(positives, torch.Tensor):
        raise TypeError(
            f"positives must be a (batch,) int tensor of item ids, got {type(positives).__name__}."
        )
    if positives.dtype.is_floating_point or positives.dtype == torch.bool or positives.is_complex():
        raise TypeError(f"positives must hold integer item ids, got dtype {positives.dtype}.")
    if positives.ndim != 1:
        raise ValueError(f"positives must be 1-D, shape (batch,), got shape {tuple(positives.shape)}.")
    for name, value, low in (("num_items", num_items, 1), ("m", m, 0)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}.")
        if value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value}.")
    if not isinstance(replacement, (bool, np.bool_)):
        raise TypeError(
            f"replacement must be a bool, got {replacement!r} of type {type(replacement).__name__}."
        )
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}.")
    n, m = int(num_items), int(m)
    device = positives.device
    pos = positives.to(torch.int64)
    if bool((pos < 0).any()) or bool((pos >= n).any()):
        raise ValueError(f"positives must hold item ids in [0, {n}), got values outside it.")
    batch = pos.shape[0]
    forbidden = torch.cat([pos[:, None], _excluded_ids(exclude, batch, n, device)], dim=1)
    forbidden = torch.where(forbidden < 0, n, forbidden).sort(dim=1).values
    repeated = torch.zeros_like(forbidden, dtype=torch.bool)
    repeated[:, 1:] = forbidden[:, 1:] == forbidden[:, :-1]
    forbidden = torch.where(repeated, n, forbidden).sort(dim=1).values  # distinct ids, then n's
    candidates = n - (forbidden < n).sum(dim=1)
    need = (1 if m else 0) if replacement else m
    short = (candidates < need).nonzero().squeeze(1).tolist()
    if short:
        shown = ", ".join(f"row {row} has {int(candidates[row])}" for row in short[:10])
        more = f" (and {len(short) - 10} more rows)" if len(short) > 10 else ""
        mode = (
            "with replacement need at least 1 candidate"
            if replacement
            else (f"without replacement need at least {m} candidates")
        )
        raise ValueError(
            f"sample_negatives: m={m} negatives {mode} per row (the catalog minus the positive and "
            f"the excluded items); {shown}{more}."
        )
    if batch == 0 or m == 0:
        return torch.empty(batch, m, dtype=torch.int64, device=device)
    if replacement:
        index = _uniform_below(candidates[:, None].expand(batch, m).contiguous(), generator)
    else:
        index = torch.empty(batch, m, dtype=torch.int64, device=device)
        sparse = 2 * m <= candidates
        if bool(sparse.any()):
            index[sparse] = _distinct_below(candidates[sparse], m, generator)
        for row in (~sparse).nonzero().squeeze(1).tolist():  # small rows: a permutation each
            count = int(candidates[row])
            index[row] = torch.randperm(count, generator=generator, device=device)[:m]
    # The u-th candidate (0-based) is u + #{s : forbidden[s] - s <= u} over the sorted forbidden ids.
    shifted = forbidden - torch.arange(forbidden.shape[1], device=device)
    shifted = torch.where(forbidden < n, shifted, n)
    return index + torch.searchsorted(shifted, index, right=True)
