"""Packing a run's queries into padded ``(queries, width)`` grids: grouping, duplicates, top cells."""

from __future__ import annotations

import numpy as np

from .io import DuplicateEntryError
from .judgements import words as docno_words

__all__ = ["docno_order", "refuse_duplicates", "refuse_sorted_duplicates", "segments", "top_cells"]


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


_PAD_WORD = np.iinfo(np.uint64).max  # padding cells' docno words: after every real docno


def _word_grid(words: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """``(words per docno, queries, width)`` grid of docno words, real cells filled in row-major order."""
    if cells.all():  # every query as long as the longest: the words are the grid already
        return np.ascontiguousarray(words.T).reshape(words.shape[1], *cells.shape)
    grid = np.full((words.shape[1], *cells.shape), _PAD_WORD, dtype=np.uint64)
    grid[:, cells] = words.T
    return grid


def docno_order(words: np.ndarray, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's cells in ascending docno (``strcmp``) order, padding last, and the word grid
    in that order: ``(by_docno (queries, width), sorted_grid)``. ``words`` from
    :func:`~ignite_ranking.trec.judgements.words`, one row per real cell."""
    grid = _word_grid(words, cells)
    if grid.shape[0] == 1 and not (words == _PAD_WORD).any():
        # Docnos of one word, none equal to the padding: equal words are equal docnos, so an
        # unstable sort (faster) orders them as well, with padding last.
        by_docno = np.argsort(grid[0], axis=-1)
    else:
        by_docno = np.lexsort(grid[::-1], axis=-1)
    return by_docno, np.take_along_axis(grid, by_docno[None], axis=2)


def refuse_sorted_duplicates(sorted_grid: np.ndarray, lens: np.ndarray, names: list[str]) -> None:
    """Raises ValueError when neighbours of a row of a docno-sorted word grid are equal docnos
    (``lens`` real cells per row, ``names`` the query ids), as trec_eval refuses duplicates."""
    same = np.all(sorted_grid[:, :, 1:] == sorted_grid[:, :, :-1], axis=0)
    same &= np.arange(1, sorted_grid.shape[2])[None, :] < lens[:, None]
    if same.any():
        i, j = map(int, np.argwhere(same)[0])
        duplicate = sorted_grid[:, i, j].astype(">u8").tobytes().rstrip(b"\0")  # words zero-pad
        raise DuplicateEntryError("run", names[i], duplicate)


def refuse_duplicates(docno: np.ndarray, cells: np.ndarray, lens: np.ndarray, names: list[str]) -> None:
    """Raises ValueError when a query of a batch lists a document twice, as trec_eval does.

    ``docno`` holds the batch's documents query by query, ``cells`` the real cells of the batch's
    ``(queries, width)`` grid, ``lens`` their count per query and ``names`` the query ids.
    """
    words = docno_words(docno)
    if words.shape[1] == 1:  # sort the values only: faster than an argsort
        sorted_grid = np.sort(_word_grid(words, cells), axis=-1)
    else:
        sorted_grid = docno_order(words, cells)[1]
    refuse_sorted_duplicates(sorted_grid, lens, names)


def top_cells(values: np.ndarray, cells: np.ndarray, k: int) -> np.ndarray:
    """The cells of the ``(queries, width)`` grid (real cells ``cells``, filled in row-major order
    with ``values``) whose value is at least their row's k-th largest: every document that can rank
    in the top k under any order of ties, with the ties at the cut kept whole."""
    if cells.all():
        grid = values.reshape(cells.shape)
    else:
        grid = np.full(cells.shape, -np.inf, dtype=values.dtype)
        grid[cells] = values
    kth = np.partition(grid, cells.shape[1] - k, axis=1)[:, cells.shape[1] - k]
    return (grid >= kth[:, None]) & cells
