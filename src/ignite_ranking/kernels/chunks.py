"""Rows processed a few at a time: chunks of about ``CHUNK_ELEMENTS`` elements bound the
temporaries of a pass over whole rows (a sort, a comparison, a key) whatever the batch size."""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["CHUNK_ELEMENTS", "row_slices", "rows_per_chunk"]

CHUNK_ELEMENTS = 2**21


def rows_per_chunk(num_items: int) -> int:
    """How many rows of ``num_items`` make one chunk of about ``CHUNK_ELEMENTS`` elements."""
    return max(1, CHUNK_ELEMENTS // max(num_items, 1))


def row_slices(batch: int, num_items: int) -> Iterator[slice]:
    """Consecutive slices of ``batch`` rows, each of about ``CHUNK_ELEMENTS`` elements."""
    step = rows_per_chunk(num_items)
    for start in range(0, batch, step):
        yield slice(start, min(start + step, batch))
