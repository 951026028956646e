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

import bisect
from dataclasses import dataclass

import numpy as np
import torch

from .io import Qrels

__all__ = ["GainRule", "ideal_matrix"]


class _Unnamed:
    """The grades ``0..top`` that no pair names, ascending (their gain is the grade), by index:
    the filler levels of trec_eval's ``setup_gains``, never listed."""

    def __init__(self, top: int, named: list[int]) -> None:
        self.named = sorted({g for g in named if 0 <= g <= top})
        self.shift = [g - j for j, g in enumerate(self.named)]  # level(i) = i + #shift <= i
        self.size = top + 1 - len(self.named)

    def gain(self, i: int) -> float:
        return float(i + bisect.bisect_right(self.shift, i))

    def index(self, levels: np.ndarray) -> np.ndarray:
        """The indices of unnamed levels."""
        return levels - np.searchsorted(np.array(self.named, dtype=np.int64), levels)


def _merge_sort(given: list, unnamed: _Unnamed, low: int, high: int) -> list:
    """Items ``low:high`` of ``given + unnamed levels``, sorted as glibc's ``msort`` (top-down,
    stable: a tie keeps the left item first) with trec_eval's comparator; runs of unnamed levels
    are ``range`` objects of their indices, so the cost does not grow with ``top``."""
    k = len(given)
    if low >= k:  # unnamed levels only: ascending, hence already in order
        return [range(low - k, high - k)] if high > low else []
    if high - low == 1:
        return [given[low]]
    half = (high - low) // 2
    left = _merge_sort(given, unnamed, low, low + half)
    return _merge(left, _merge_sort(given, unnamed, low + half, high), unnamed)


def _merge(left: list, right: list, unnamed: _Unnamed) -> list:
    """glibc's merge step on lists of items and runs (see :func:`_merge_sort`)."""
    merged: list = []
    left, right = left[::-1], right[::-1]  # heads at the end: pop() is cheap
    while left and right:
        a, b = left[-1], right[-1]
        gain_a = unnamed.gain(a[0]) if isinstance(a, range) else a[1]
        gain_b = unnamed.gain(b[0]) if isinstance(b, range) else b[1]
        from_left = _trec_compare(gain_a, gain_b) <= 0
        source, head = (left, a) if from_left else (right, b)
        if not isinstance(head, range):
            merged.append(source.pop())
            continue
        count = _run_taken(head, unnamed, gain_b if from_left else gain_a, from_left)
        merged.append(head[:count])
        if count < len(head):
            source[-1] = head[count:]
        else:
            source.pop()
    return merged + left[::-1] + right[::-1]


def _run_taken(run: range, unnamed: _Unnamed, other: float, from_left: bool) -> int:
    """How many leading levels of a run whose head the merge takes it takes in a row: from the
    left while a level is <= the other head, from the right while the other head is > a level."""

    def stops(i: int) -> bool:
        if from_left:
            return _trec_compare(unnamed.gain(i), other) > 0
        return _trec_compare(other, unnamed.gain(i)) <= 0

    return bisect.bisect_left(run, True, lo=1, key=stops)


def _trec_compare(a: float, b: float) -> int:
    return int(a - b)  # C's (int) conversion truncates toward zero, as in comp_rel_gain


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

    def ideal(self, qrels: Qrels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each qrels query's ideal gains, best first: ``(gains, start, count)`` per query index.

        The cost grows with the number of judgements (and of pairs), not with the grades.
        """
        num_q = len(qrels.qids)
        judged = qrels.rel >= 0
        qid, rel = qrels.qid[judged], qrels.rel[judged]
        if self.kind == "custom" and self.pairs:
            position, values = self._visits(qid, rel, num_q)
            keep = position >= 0
        else:  # every positive grade, the highest first (its gain is positive)
            position, values, keep = -rel, self.of(rel), rel > 0
        order = np.lexsort((position[keep], qid[keep]))
        gains = values[keep][order]
        count = np.bincount(qid[keep], minlength=num_q).astype(np.int64)
        return gains, np.cumsum(count) - count, count

    def _visits(self, qid: np.ndarray, rel: np.ndarray, num_q: int) -> tuple[np.ndarray, np.ndarray]:
        """Each judgement's place in trec_eval's visiting order of its query's levels (-1 if the
        ideal ranking does not take it) and its gain, for a custom rule.

        A query's levels are visited from the last of the sorted levels back: one without
        documents of the query is passed, one with a gain <= 0 ends the visit (and a query
        whose first level has a gain <= 0 takes none); a level named twice takes the later gain.
        """
        # The distinct (query, grade) pairs, and each judgement's pair.
        by_pair = np.lexsort((rel, qid))
        new = np.ones(len(rel), dtype=bool)
        new[1:] = (np.diff(qid[by_pair]) != 0) | (np.diff(rel[by_pair]) != 0)
        pair_of = np.empty(len(rel), dtype=np.int64)
        pair_of[by_pair] = np.cumsum(new) - 1
        pair_q, pair_level = qid[by_pair][new], rel[by_pair][new]
        max_level = np.full(num_q, -1, dtype=np.int64)
        np.maximum.at(max_level, pair_q, pair_level)
        place = np.full(len(pair_q), -1, dtype=np.int64)
        gain = np.zeros(len(pair_q), dtype=np.float64)
        given = list(self.pairs)
        for top in np.unique(max_level[pair_q]):
            unnamed = _Unnamed(int(top), [level for level, _ in given])
            ascending = _merge_sort(given, unnamed, 0, len(given) + unnamed.size)
            visit = [s[::-1] if isinstance(s, range) else s for s in ascending[::-1]]
            first = visit[0]
            if (unnamed.gain(first[0]) if isinstance(first, range) else first[1]) <= 0:
                continue
            group = np.flatnonzero(max_level[pair_q] == top)
            levels = pair_level[group]
            entry_pair, entry_place, entry_gain = [], [], []
            runs, run_places, offset = [], [], 0  # runs of unnamed levels: lowest index, place + top index
            for segment in visit:
                if isinstance(segment, range):
                    runs.append(segment[-1])
                    run_places.append(offset + segment[0])
                else:
                    level, level_gain = segment
                    hit = group[levels == level]
                    entry_pair.append(hit)
                    entry_place.append(np.full(len(hit), offset))
                    entry_gain.append(np.full(len(hit), level_gain, dtype=np.float64))
                offset += len(segment)
            # An unnamed level of index i, in a run visited from its top index down, sits at the
            # run's first place + (top index - i).
            plain = ~np.isin(levels, unnamed.named)
            index = unnamed.index(levels[plain])
            starts = np.array(runs, dtype=np.int64)
            by_start = np.argsort(starts)
            run = by_start[np.searchsorted(starts[by_start], index, side="right") - 1]
            entry_pair.append(group[plain])
            entry_place.append(np.array(run_places, dtype=np.int64)[run] - index)
            entry_gain.append(levels[plain].astype(np.float64))
            entry_pair, entry_place, entry_gain = (
                np.concatenate(e) for e in (entry_pair, entry_place, entry_gain)
            )
            # A query stops at its first level with documents and a gain <= 0.
            stop = np.full(num_q, np.iinfo(np.int64).max, dtype=np.int64)
            ends = entry_gain <= 0
            np.minimum.at(stop, pair_q[entry_pair[ends]], entry_place[ends])
            taken = entry_place < stop[pair_q[entry_pair]]
            # The last place taken of each pair wins (its level's later gain).
            pairs, places, gains = entry_pair[taken], entry_place[taken], entry_gain[taken]
            by_place = np.lexsort((places, pairs))
            last = np.ones(len(by_place), dtype=bool)
            last[:-1] = pairs[by_place][1:] != pairs[by_place][:-1]
            chosen = by_place[last]
            place[pairs[chosen]], gain[pairs[chosen]] = places[chosen], gains[chosen]
        return place[pair_of], gain[pair_of]


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
