"""Rows processed a few at a time: chunks of about ``CHUNK_ELEMENTS`` elements bound the
temporaries of a pass over whole rows (a sort, a comparison, a key) whatever the batch size.

The generic kernels (:mod:`.backend`) take ``DEVICE_PARTS`` chunks instead, each a fraction of
the batch: as many launches at any batch size and row length, temporaries bounded by a share of
the input rather than by a fixed size.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from .backend import host_tuned

__all__ = ["CHUNK_ELEMENTS", "DEVICE_PARTS", "row_parts", "row_slices", "rows_of", "rows_per_chunk"]

CHUNK_ELEMENTS = 2**21
DEVICE_PARTS = 4


def rows_per_chunk(num_items: int) -> int:
    """How many rows of ``num_items`` make one chunk of about ``CHUNK_ELEMENTS`` elements."""
    return max(1, CHUNK_ELEMENTS // max(num_items, 1))


def row_slices(batch: int, num_items: int) -> Iterator[slice]:
    """Consecutive slices of ``batch`` rows, each of about ``CHUNK_ELEMENTS`` elements."""
    step = rows_per_chunk(num_items)
    for start in range(0, batch, step):
        yield slice(start, min(start + step, batch))


def row_parts(batch: int) -> list[slice]:
    """``DEVICE_PARTS`` consecutive slices of ``batch`` rows, as equal as can be (some empty when
    ``batch < DEVICE_PARTS``)."""
    return [slice(batch * i // DEVICE_PARTS, batch * (i + 1) // DEVICE_PARTS) for i in range(DEVICE_PARTS)]


def rows_of(tensor: torch.Tensor) -> Iterator[slice] | list[slice]:
    """The row chunks of a ``(batch, num_items)`` tensor: :func:`row_slices` under the host-tuned
    kernels, :func:`row_parts` under the generic ones."""
    batch, num_items = tensor.shape
    return row_slices(batch, num_items) if host_tuned(tensor) else row_parts(batch)
