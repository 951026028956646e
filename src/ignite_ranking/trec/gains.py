"""NDCG gains the trec_eval way (``m_ndcg.c``, ``m_ndcg_cut.c``, ``gain_init.c``).

- The gain of a retrieved document depends on its label only, never on the relevance level
  (``-l`` decides what the binary measures count as relevant, not NDCG's gains): by default a
  judged document's grade (so grade 0 and below gain nothing), and 0 for a document that is not
  in the qrels or is in them with a negative grade (unjudged).
- ``ndcg.GRADE=GAIN,...`` replaces the gain of the grades given (the others keep their grade as
  gain); gains may be 0 or negative, and the labels -1 (not in the qrels) and -2 (judged with a
  negative grade) may be given a gain too, as in trec_eval.
- The ideal DCG takes the query's judged documents (grade >= 0) in trec_eval's level order:
  the levels are sorted by gain with trec_eval's comparator, which compares the *integer part*
  of the difference of two gains (so 0.5 and 0 compare equal), by a stable merge sort like
  glibc's ``qsort``; they are then taken from the highest, skipping levels without documents,
  until a level with documents has a gain <= 0. With the default gains that is simply every
  document of positive grade, best first.
- ``ndcg_burges`` (ranx's name) uses the gain ``2**grade - 1`` for positive grades.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .io import Qrels

__all__ = ["GainRule", "ideal_matrix"]


def _merge_sort(items: list, compare: Callable) -> list:
    """Top-down stable merge sort (glibc's ``msort``): a tie keeps the left item first."""
    if len(items) <= 1:
        return list(items)
    half = len(items) // 2
    left, right = _merge_sort(items[:half], compare), _merge_sort(items[half:], compare)
    merged = []
    while left and right:
        merged.append(left.pop(0) if compare(left[0], right[0]) <= 0 else right.pop(0))
    return merged + left + right


def _trec_compare(a: tuple[int, float], b: tuple[int, float]) -> int:
    return int(a[1] - b[1])  # C's (int) conversion truncates toward zero, as in comp_rel_gain


@dataclass(frozen=True)
class GainRule:
    """How grades become gains: ``kind`` "linear" (the grade), "exp" (``2**grade - 1``) or
    "custom" (``pairs``: ``((grade, gain), ...)`` in the order given, the other grades linear)."""

    kind: str = "linear"
    pairs: tuple[tuple[int, float], ...] = ()

    def of(self, labels: np.ndarray) -> np.ndarray:
        """Float64 gains of labels (grades, or -1 / -2 for documents not in the qrels / unjudged)."""
        positive = np.maximum(labels, 0).astype(np.float64)
        if self.kind == "exp":
            return np.exp2(positive) - 1.0
        gains = positive
        for level, gain in self.pairs:
            gains = np.where(labels == level, gain, gains)
        return gains

    def _ideal_levels(self, max_level: int) -> list[tuple[int, float]]:
        """trec_eval's ``(grade, gain)`` levels in the order the ideal ranking visits them."""
        if self.kind != "custom":
            return [(g, float(self.of(np.array([g]))[0])) for g in range(max_level, 0, -1)]
        given = [(level, gain) for level, gain in self.pairs]
        levels = given + [(g, float(g)) for g in range(max_level + 1) if g not in dict(given)]
        return _merge_sort(levels, _trec_compare)[::-1]

    def ideal(self, qrels: Qrels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each qrels query's ideal gains, best first: ``(gains, start, count)`` per query index."""
        num_q = len(qrels.qids)
        judged = qrels.rel >= 0
        qid, rel = qrels.qid[judged], qrels.rel[judged]
        max_level = np.full(num_q, -1, dtype=np.int64)
        np.maximum.at(max_level, qid, rel)
        position = np.full(len(rel), -1, dtype=np.int64)  # a grade's place in the visiting order
        values = np.zeros(len(rel), dtype=np.float64)
        present = np.zeros((num_q, int(max_level.max(initial=0)) + 1), dtype=bool)
        present[qid, rel] = True
        for top in np.unique(max_level[max_level >= 0]):
            queries = max_level == top
            rows = queries[qid]
            order = self._ideal_levels(int(top))
            if not order or order[0][1] <= 0:
                continue
            for place, (level, gain) in enumerate(order):
                if level < 0 or level > top:
                    continue
                has = present[:, level] & queries
                if not has.any():
                    continue
                # Visited only by the queries that reach it: those whose earlier visited levels
                # with documents all had a positive gain.
                stopped = np.zeros(num_q, dtype=bool)
                for earlier_level, earlier_gain in order[:place]:
                    if 0 <= earlier_level <= top and earlier_gain <= 0:
                        stopped |= present[:, earlier_level]
                if gain <= 0:
                    continue
                take = rows & (rel == level) & ~stopped[qid]
                position[take] = place
                values[take] = gain
        keep = position >= 0
        order = np.lexsort((position[keep], qid[keep]))
        gains = values[keep][order]
        count = np.bincount(qid[keep], minlength=num_q).astype(np.int64)
        return gains, np.cumsum(count) - count, count


def ideal_matrix(ideal: tuple[np.ndarray, np.ndarray, np.ndarray], queries: np.ndarray, width: int):
    """``(len(queries), <= width)`` float64 tensor of the queries' ideal gains, best first,
    0-padded; ``ideal`` from :meth:`GainRule.ideal`."""
    gains, start, count = ideal
    take = np.minimum(count[queries], width)
    matrix = np.zeros((len(queries), max(int(take.max()), 1)), dtype=np.float64)
    rows = np.repeat(np.arange(len(queries)), take)
    columns = np.arange(int(take.sum())) - np.repeat(np.cumsum(take) - take, take)
    matrix[rows, columns] = gains[start[queries][rows] + columns]
    return torch.from_numpy(matrix)
