"""Exact, order-free sums of float64 values: fixed-point integers in int64 limbs.

A float64 sum rounds after every addition, so the same values added in another order (other
batch sizes, batch orders or numbers of processes) can differ in the last bits. Here every value
``v`` is first rounded, on its own, to the nearest multiple of 2**-64 (an error of at most
2**-65, and none for a value whose bits stop there, such as the reciprocal of a rank below 2**11
or any multiple of 2**-64), then added exactly as an integer number of 2**-64 units. Integer sums
are associative, so the sums, and the means :func:`limb_means` reads from them (one correctly
rounded division of Python integers), are the same to the bit whatever the order or grouping of
the additions.

A sum is a ``(..., LIMBS)`` int64 tensor: the whole part, two 32-bit fraction limbs (in units of
2**-32 and 2**-64) and a flag count of values that were not finite or not below ``2**31`` in
magnitude, which make the mean NaN (as a non-finite value makes a float sum non-finite). The
whole limb holds every total below ``2**63``.

How: each ``(rows, columns)`` block of values is split level by level with Rump's error-free
extraction ``q = fl(r + 1.5 * 2**52 * u) - 1.5 * 2**52 * u`` (``r`` rounded to a multiple of the
unit ``u``, exactly, while ``|r| <= 2**51 u``) at the units 1, 2**-32 and 2**-64; every level's
parts are integers of at most 2**31 units, so their float64 column sums are exact for up to 2**21
rows a block, whatever order the reduction takes. No value is read back to the host. The
generic kernels (:mod:`.backend`) split every value at once, by rounding it to multiples of the
three units and taking the differences, into one stacked tensor summed in one pass: the same
rounding, so the same carried limbs, in a fixed number of launches.

Example:
    >>> import torch
    >>> values = torch.tensor([[0.1], [0.2], [0.3]], dtype=torch.float64)
    >>> sums = limb_sums(values)
    >>> limb_means(sums, 3), [(0.1 + 0.2 + 0.3) / 3]  # correctly rounded, unlike the float sum
    ([0.2], [0.20000000000000004])
    >>> torch.equal(sums, carry(limb_sums(values[2:]) + limb_sums(values[:2])))
    True
"""

from __future__ import annotations

import math

import torch

from . import constants
from .backend import host_tuned

__all__ = [
    "LIMBS",
    "carry",
    "carry_",
    "from_floats",
    "host_means",
    "limb_means",
    "limb_sums",
    "limb_totals",
    "weighted_limb_sums",
]

LIMBS = 4
"""Limbs of one sum: whole part, high and low 32-bit fraction limbs, out-of-range flags."""

_UNITS = (1.0, 2.0**-32, 2.0**-64)
_BOUND = 2.0**31  # largest magnitude held; every level's parts stay within 2**31 units
_BLOCK = 2**16  # values per block: two float64 scratch blocks of 512 KiB stay in cache
_ROWS = 2**21  # rows per block: sums of 2**21 parts of 2**31 units or less are exact in float64
_MASK = 2**32 - 1
_CARRY_ROWS = 2**13  # sums carried a pass: 32,768 limbs


def limb_sums(values: torch.Tensor, carried: bool = True) -> torch.Tensor:
    """The exact sums over the rows of ``(n, ...)`` values, as ``(..., LIMBS)`` carried limbs
    (``carried=False``: perhaps not carried, for a caller that adds them to a carried state and
    carries the total; each limb of these is below 2**53 in magnitude)."""
    v = values.to(torch.float64)
    shape = v.shape[1:]
    v = v.reshape(v.shape[0], math.prod(shape))
    rows, columns = v.shape
    if not host_tuned(v) and 0 < rows <= _ROWS:
        stacked = _stacked_sums(v).reshape(*shape, LIMBS)
        return carry_(stacked) if carried else stacked
    out = torch.zeros((columns, LIMBS), dtype=torch.int64, device=v.device)
    width = max(1, _BLOCK // max(1, min(rows, _ROWS)))
    scratch = torch.empty((2, min(rows, _ROWS), min(width, columns)), dtype=torch.float64, device=v.device)
    for top in range(0, rows, _ROWS):
        for left in range(0, columns, width):
            block = v[top : top + _ROWS, left : left + width]
            out[left : left + width] += _block_sums(block, scratch[:, : block.shape[0], : block.shape[1]])
    return carry(out.reshape(*shape, LIMBS))


def _block_sums(block: torch.Tensor, scratch: torch.Tensor) -> torch.Tensor:
    rest, part = scratch.unbind(0)
    sums = torch.empty((block.shape[1], LIMBS), dtype=torch.int64, device=block.device)
    for level, unit in enumerate(_UNITS):
        shift = 1.5 * 2.0**52 * unit
        source = block if level == 0 else rest
        torch.add(source, shift, out=part).sub_(shift)  # source rounded to a multiple of unit
        sums[:, level] = part.sum(dim=0).div_(unit)  # an exact integer below 2**53
        if level < len(_UNITS) - 1:
            torch.sub(source, part, out=rest)  # exact: what the coarser levels left
    inside = (block.amax(dim=0) < _BOUND) & (block.amin(dim=0) > -_BOUND)  # False for NaN
    sums[:, -1] = (~inside).to(torch.int64)
    return sums


def _stacked_sums(v: torch.Tensor) -> torch.Tensor:
    """Uncarried ``(columns, LIMBS)`` limbs of ``(rows, columns)`` float64 values (1 to ``_ROWS``
    rows), summed in one reduction of four parts a value.

    With ``R_i`` the value times ``2**(32 i)`` rounded to an integer (ties to even), the parts are
    ``R_0``, ``R_1 - 2**32 R_0`` and ``R_2 - 2**32 R_1``: integers of at most 2**31 in magnitude,
    each exact in float64, whose limbs total ``R_2``, the value rounded to a multiple of 2**-64 as
    the blocks round it. The fourth part is the range flag.
    """
    scales = constants.listed((0.0, 1.0, 2.0**32, 2.0**64), torch.float64, v.device)
    rounded = torch.mul(v[..., None], scales).round_()  # 0, R_0, R_1, R_2 (exact scalings)
    parts = torch.empty((*v.shape, LIMBS), dtype=torch.float64, device=v.device)
    torch.sub(rounded[..., 1:], rounded[..., :-1], alpha=2.0**32, out=parts[..., :-1])
    torch.abs(v, out=parts[..., -1]).lt_(_BOUND)  # 0.0 for NaN
    sums = parts.sum(dim=0).to(torch.int64)
    flags = sums[:, -1]
    torch.lt(flags, v.shape[0], out=flags)  # a value outside: flagged once, as the blocks flag it
    return sums


def weighted_limb_sums(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """:func:`limb_sums` of ``(n, c)`` values whose row ``i`` stands for ``weights[i]`` equal rows.

    Each value ``v`` is rounded on its own to the nearest multiple of 2**-64, as :func:`limb_sums`
    rounds it, here split as ``trunc(v)``, then the fraction's high and (rounded) low 32 bits,
    each exact; the parts times the rows' weights are summed exactly (float64 sums of integers
    below 2**53 while the weights total at most 2**21, int64 beyond). The totals, and so the
    carried limbs, are those of the rows repeated, to the bit: ``(c, LIMBS)`` (a column with a
    flagged value is flagged once, as :func:`limb_sums` flags it within 2**21 rows, and its other
    limbs are not defined). For a few distinct rows standing for many (P@k past the ranked
    depth: the few hit counts over each k).
    """
    v = values.to(torch.float64)
    rows, columns = v.shape
    w = weights.to(device=v.device, dtype=torch.int64)
    in_floats = int(w.sum()) <= _ROWS
    w_floats = w.to(torch.float64)
    out = torch.zeros((columns, LIMBS), dtype=torch.int64, device=v.device)
    width = max(1, _BLOCK // 2 // max(1, rows))  # 32,768 values a pass, as carry_
    for left in range(0, columns, width):
        block = v[:, left : left + width]
        if block.numel() and not bool(block.abs().amax() < _BOUND):  # a NaN or a value too large
            flagged = ~(block.abs() < _BOUND)
            block = block.masked_fill(flagged, 0.0)
            out[left : left + width, -1] = (flagged & (w[:, None] > 0)).any(dim=0)
        whole = block.trunc()
        scaled = (block - whole).mul_(2.0**32)  # the signed fraction times 2**32: exact
        high = scaled.trunc()
        low = scaled.sub_(high).mul_(2.0**32).round_()  # to the nearest, ties to even: 2**-64 units
        for level, part in enumerate((whole, high, low)):
            if in_floats:  # integers of at most 2**32 times weights totalling at most 2**21
                out[left : left + width, level] = (w_floats @ part).to(torch.int64)
            else:
                out[left : left + width, level] = (part.to(torch.int64) * w[:, None]).sum(dim=0)
    return carry(out)


def carry(sums: torch.Tensor) -> torch.Tensor:
    """Limbs with the fraction limbs' carries moved up (each fraction limb in ``[0, 2**32)``).

    Sums of carried limbs (across updates or processes) stay far from overflow; carrying again
    gives the one canonical form of a total, so equal totals have equal limbs.
    """
    return carry_(sums.clone())


def carry_(sums: torch.Tensor) -> torch.Tensor:
    """:func:`carry` in place (no stack of the limbs: ~30x faster for 100,000 sums); ``sums``.

    A contiguous ``sums`` is carried ``_CARRY_ROWS`` sums at a time: passes of 32,768 limbs stay
    below torch's grain for parallel work, whose every pass waits for all threads (about 10 ms
    a pass on a busy machine).
    """
    rows = sums.reshape(-1, LIMBS) if sums.is_contiguous() else None
    chunks = (
        [sums]
        if rows is None
        else [rows[top : top + _CARRY_ROWS] for top in range(0, rows.shape[0], _CARRY_ROWS)]
    )
    for chunk in chunks:
        whole, high, low, _ = chunk.unbind(dim=-1)
        high.add_(low >> 32)  # arithmetic shifts: floor division, right for negative limbs too
        low.bitwise_and_(_MASK)
        whole.add_(high >> 32)
        high.bitwise_and_(_MASK)
    return sums


def limb_totals(sums: torch.Tensor) -> list[int | None]:
    """Each sum as an exact Python integer of 2**-64 units (None where a value was flagged)."""
    return [
        None if flags else (whole << 64) + (high << 32) + low
        for whole, high, low, flags in sums.reshape(-1, LIMBS).tolist()
    ]


def limb_means(sums: torch.Tensor, count: int) -> list[float]:
    """The means ``sum / count`` of ``(c, LIMBS)`` sums, each correctly rounded to float64."""
    return host_means(sums.reshape(-1).tolist(), count)


def host_means(limbs: list[int], count: int) -> list[float]:
    """:func:`limb_means` of sums already read to the host: their limbs, flattened."""
    scale = count << 64
    rows = (limbs[i : i + LIMBS] for i in range(0, len(limbs), LIMBS))
    return [
        math.nan if flags else ((whole << 64) + (high << 32) + low) / scale
        for whole, high, low, flags in rows
    ]


def from_floats(totals: torch.Tensor) -> torch.Tensor:
    """Limbs of float totals (the sums of a state saved before limbs, converted on load).

    Each finite total below 2**62 in magnitude is held exactly when its bits stop at 2**-64,
    else rounded to the nearest multiple of 2**-64; a non-finite total is flagged.
    """
    limbs = []
    for total in totals.to(torch.float64).reshape(-1).tolist():
        if not math.isfinite(total) or abs(total) >= 2.0**62:
            limbs.append([0, 0, 0, 1])
            continue
        units = round(total * 2.0**64)  # exact: a power-of-two scaling, then the nearest integer
        limbs.append([units >> 64, (units >> 32) & _MASK, units & _MASK, 0])
    return torch.tensor(limbs, dtype=torch.int64, device=totals.device).reshape(*totals.shape, LIMBS)
