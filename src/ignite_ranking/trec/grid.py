"""Packing a run's queries into padded ``(queries, width)`` grids: grouping, duplicates, top cells."""

from __future__ import annotations

import numpy as np

from .judgements import words as docno_words

__all__ = ["refuse_duplicates", "segments", "top_cells"]


def segments(qid: np.ndarray, num_queries: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row order grouping equal ``qid`` values, and each query's start and count in that order."""
    if qid.size == 0:
        zeros = np.zeros(num_queries, dtype=np.int64)
        return np.zeros(0, dtype=np.int64), zeros, zeros
    change = np.flatnonzero(qid[1:] != qid[:-1]) + 1
    heads = np.concatenate(([0], change))
    counts = np.bincount(qid, minlength=num_queries).astype(np.int64)
    if len(heads) == np.count_nonzero(counts):  # already grouped: every query in one block
        order = None
        start = np.zeros(num_queries, dtype=np.int64)
        start[qid[heads]] = heads
    else:
        order = np.argsort(qid, kind="stable")
        start = np.cumsum(counts) - counts
    return order, start, counts


def refuse_duplicates(docno: np.ndarray, cells: np.ndarray, lens: np.ndarray, names: list[str]) -> None:
    """Raises ValueError when a query of a batch lists a document twice, as trec_eval does.

    ``docno`` holds the batch's documents query by query, ``cells`` the real cells of the batch's
    ``(queries, width)`` grid, ``lens`` their count per query and ``names`` the query ids. Each
    query's docnos are sorted (values only for one-word docnos, faster than an argsort) and
    neighbours compared; padding sorts last and is masked off.
    """
    words = docno_words(docno)
    grid = np.full((words.shape[1], *cells.shape), np.iinfo(np.uint64).max, dtype=np.uint64)
    grid[:, cells] = words.T
    if grid.shape[0] == 1:
        grid = np.sort(grid, axis=-1)
    else:
        by_docno = np.lexsort(grid[::-1], axis=-1)
        grid = np.take_along_axis(grid, by_docno[None].repeat(grid.shape[0], 0), axis=2)
    same = np.all(grid[:, :, 1:] == grid[:, :, :-1], axis=0)
    same &= np.arange(1, cells.shape[1])[None, :] < lens[:, None]
    if same.any():
        i, j = map(int, np.argwhere(same)[0])
        duplicate = grid[:, i, j].astype(">u8").tobytes().rstrip(b"\0")  # _words zero-pads
        raise ValueError(
            f"run: document {duplicate.decode(errors='replace')!r} appears twice for query {names[i]!r}"
        )


def top_cells(values: np.ndarray, cells: np.ndarray, k: int) -> np.ndarray:
    """The cells of the ``(queries, width)`` grid (real cells ``cells``, filled in row-major order
    with ``values``) whose value is at least their row's k-th largest: every document that can rank
    in the top k under any order of ties, with the ties at the cut kept whole."""
    grid = np.full(cells.shape, -np.inf, dtype=values.dtype)
    grid[cells] = values
    kth = np.partition(grid, cells.shape[1] - k, axis=1)[:, cells.shape[1] - k]
    return (grid >= kth[:, None]) & cells
