"""A score and an item id packed into one int64 whose order is the ranking's order.

For scores of at most 32 bits (float32, float16, bfloat16) and ids below ``2**31``, the high 32
bits hold the score's bits remapped so that signed integer order is float order (equal scores,
``-0.0`` and ``0.0`` included, get equal bits) and the low 32 bits break ties by id: the lower
id ranks higher under ``"first"``, the higher one under ``"last"``. Keys of distinct items of a
row are distinct, so a plain (unstable) ``topk`` of the keys is the stable sort by score in tie
order, in one pass. Padding gets the smallest int64, below any item, ``-inf`` scores included.
"""

from __future__ import annotations

import torch

__all__ = ["PADDING", "fits", "pack"]

PADDING = -(2**63)
"""The key of an empty slot: below every item's."""

_PACKABLE = (torch.float32, torch.float16, torch.bfloat16)
_LOW = 2**31 - 1


def fits(dtype: torch.dtype, num_items: int) -> bool:
    """Whether scores of ``dtype`` and ids below ``num_items`` pack into one key."""
    return dtype in _PACKABLE and num_items <= _LOW


def pack(scores: torch.Tensor, ids: torch.Tensor, valid: torch.Tensor, ties: str) -> torch.Tensor:
    """int64 keys of ``scores`` (not NaN where ``valid``) and their int64 ``ids``; ``PADDING``
    where not ``valid``. A larger key ranks higher."""
    bits = scores.to(torch.float32, copy=True).add_(0.0).view(torch.int32)  # -0.0 becomes 0.0
    bits ^= (bits >> 31).bitwise_and_(_LOW)  # negative floats: reverse the order of their bits
    keys = bits.to(torch.int64).bitwise_left_shift_(32)
    keys |= _LOW - ids if ties == "first" else ids
    return keys.masked_fill_(~valid, PADDING)
