"""A run held as a dict of dicts, ranked at the judged documents only: no docno join, no sort by docno.

ir_measures users pass runs as ``{query id: {document id: score}}``. Reading such a run into
the readers' columns (every id as bytes, a sort by docno, a join with the qrels, a ranking)
costs more than the measures. But trec_eval's measures read a ranking only through the label
at each rank, and a rank holds a label other than "not in the pool" only where the qrels judge
its document. So each qrels entry asks the run's dict for its document's score (one lookup),
and its rank in trec_eval's order (score descending, then docno descending) is

    1 + #(scores > s) + #(scores == s and docno > d)

The first count comes from the query's sorted scores; the second only where another document
scores exactly ``s``, from the docnos of those tied documents alone. The ranked labels follow:
the judged grade at each judged document's rank, "not in the pool" at the other ranks of the
list, padding past it; the measures are then computed on them as on any ranked batch.

The walk over the dicts runs batch by batch inside the evaluation's worker threads, so one
thread reads Python objects while another computes on the batch before.

Document ids are matched as ``str``, which ir_measures and pytrec_eval require: a run with a
document id of another type is read into columns instead
(:func:`~ignite_ranking.trec.columns.columns`, which matches ids by ``str()``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain, islice, repeat
from struct import error as StructError
from struct import pack_into

import numpy as np
import torch

from ..kernels import RankedBatch
from .columns import bad_entry, dict_entries, query_dicts
from .grid import segments
from .io import Qrels
from .judgements import NOT_IN_POOL, PADDING, UNJUDGED, index_judgements
from .records import to_float32

__all__ = ["DictQueries", "has_str_ids"]


def has_str_ids(run: Mapping) -> bool:
    """Whether every document id is a ``str`` (the dict path's condition: it looks the qrels'
    ids up as they are, so a run mixing ``5`` and ``"a"`` goes to the columns, which match ids
    by ``str()``); a TypeError where a query's documents are not a dict."""
    return all(all(map(isinstance, docs, repeat(str))) for docs in query_dicts(run, "run"))


@dataclass(frozen=True)
class DictQueries:
    """A dict-of-dicts run and the qrels' entries, by qrels query index.

    Attributes:
        qids: the qrels' query ids, for messages.
        runs: each qrels query's dict of document -> score in the run (empty where it has none).
        count: documents each qrels query ranks (1 for a ``missing_as_zero`` placeholder).
        precision: ``"float64"``, or ``"float32"`` to round each score to float32 first.
        docno, grades: the qrels entries grouped by query (document ids, grades), each
            query's from ``entry_start`` for ``entry_count``; ``docno`` is None with ``ids``.
        ids: the document ids as the qrels' own ``str`` objects, an object array
            (:attr:`Qrels.ids <ignite_ranking.trec.io.Qrels>`), or None to decode ``docno``
            batch by batch.
    """

    qids: list[str]
    runs: list[Mapping]
    count: np.ndarray
    precision: str
    docno: np.ndarray | None
    grades: np.ndarray
    entry_start: np.ndarray
    entry_count: np.ndarray
    ids: np.ndarray | None

    @classmethod
    def join(
        cls, qrels: Qrels, run: Mapping, run_to_qrels: np.ndarray, missing: np.ndarray, precision: str
    ) -> DictQueries:
        """The run's queries by qrels index (``run_to_qrels``: the qrels index of each run query,
        -1 if none); the ``missing`` qrels queries rank one document outside the pool."""
        if qrels.ids is None:  # a dict's str keys are distinct: no document judged twice
            index_judgements(qrels)  # refuses one, as the docno join does
        num_q = len(qrels.qids)
        runs: list[Mapping] = [{}] * num_q
        for index, docs in zip(run_to_qrels.tolist(), run.values(), strict=True):
            if index >= 0:
                runs[index] = docs
        count = np.fromiter(map(len, runs), dtype=np.int64, count=num_q)
        count[missing] = 1
        order, entry_start, entry_count = segments(qrels.qid, num_q)
        grades = qrels.rel if order is None else qrels.rel[order]
        if qrels.ids is None:
            docno, ids = qrels.docno if order is None else qrels.docno[order], None
        else:  # the docnos are not read (a DictQrels builds them only when asked)
            docno, ids = None, qrels.ids if order is None else qrels.ids[order]
        return cls(list(qrels.qids), runs, count, precision, docno, grades, entry_start, entry_count, ids)

    def ranked(
        self, qs: np.ndarray, depth: int, levels: list[int], ties: str, cover_relevant: bool,
        num_nonrelevant: dict[int, np.ndarray],
    ) -> dict[int, RankedBatch]:  # fmt: skip
        """The queries ``qs`` ranked in trec_eval's order (``ties`` must be ``"trec"``) at each
        relevance level, as :meth:`RunQueries.ranked <ignite_ranking.trec.retrieved.RunQueries.ranked>`
        ranks them."""
        if ties != "trec":
            raise ValueError(f"a dict-of-dicts run is ranked with ties='trec', got {ties!r}")
        runs = [self.runs[q] for q in qs]
        scored = np.fromiter(map(len, runs), dtype=np.int64, count=len(runs))
        entries = self.entry_count[qs]
        entry_cells = np.arange(int(entries.max(initial=0))) < entries[:, None]
        ends = np.cumsum(entries)
        rows = np.repeat(self.entry_start[qs] - (ends - entries), entries) + np.arange(ends[-1])  # in qrels
        if self.ids is not None:
            keys = [
                self.ids[start : start + n]
                for start, n in zip(self.entry_start[qs].tolist(), entries.tolist(), strict=True)
            ]
        else:
            ids = _as_str(self.docno[rows])  # decoded here, on the worker threads
            keys = [ids[end - n : end] for end, n in zip(ends.tolist(), entries.tolist(), strict=True)]
        qids = [self.qids[q] for q in qs.tolist()]
        both = _read_scores(qids, runs, keys, int(scored.sum() + entries.sum()))
        if self.precision == "float32":  # compared (and sorted, twice as fast) as float32: the same order
            both = to_float32(both)
        is_score = np.repeat(np.tile([True, False], len(qs)), np.column_stack((scored, entries)).ravel())
        values, judged_scores = both[is_score], both[~is_score]
        if np.isnan(values).any():  # None or NaN
            raise bad_entry("run", dict_entries(qids, runs))
        grades = np.zeros(entry_cells.shape, dtype=np.int64)
        grades[entry_cells] = self.grades[rows]
        rank = np.full(entry_cells.shape, -1, dtype=np.int64)  # 0-based; -1: not retrieved
        rank[entry_cells] = _ranks(values, scored, judged_scores, entries, runs, keys)

        count = self.count[qs]
        out = {}
        for level in levels:
            num_relevant = ((grades >= level) & entry_cells).sum(axis=1)  # R: all judgements
            most = int(num_relevant.max(initial=0))
            width = max(min(depth, max(int(count.max(initial=0)), most)), most if cover_relevant else 0)
            # Only the judged documents' cells differ from "not in the pool" (or padding past a
            # short list), so the three matrices are filled and then written at those cells.
            labels = np.full((len(qs), width), float(NOT_IN_POOL))
            short = count < width
            labels[short] = np.where(
                np.arange(width) < count[short, None], float(NOT_IN_POOL), float(PADDING)
            )
            held = (rank >= 0) & (rank < width)
            cells = np.nonzero(held)[0], rank[held]
            grade = grades[held]
            labels[cells] = np.where(grade >= 0, grade, UNJUDGED)
            relevant, judged = np.zeros(labels.shape), np.zeros(labels.shape)
            relevant[cells] = grade >= level  # level >= 0: an unjudged cell is never relevant
            judged[cells] = grade >= 0
            out[level] = RankedBatch(
                labels=torch.from_numpy(labels),
                relevant=torch.from_numpy(relevant),
                num_relevant=torch.from_numpy(num_relevant.astype(np.float64)),
                judged=torch.from_numpy(judged),
                num_nonrelevant=torch.from_numpy(num_nonrelevant[level][qs]),
                retrieved=torch.from_numpy(np.minimum(count, width).astype(np.float64)),
            )
        return out


def _read_scores(qids: list[str], runs: list[Mapping], keys: list, count: int) -> np.ndarray:
    """Each query's scores, then its judged documents' (NaN where it lacks one), as float64; a
    score numpy will not take as float64 is refused naming its query (``qids``) and document.

    The judged documents are looked up while their query's dict is still in cache (about twice
    as fast as a second pass). Each query is packed by ``struct`` (its scores as one call's
    arguments), about a third faster than ``np.fromiter`` item by item; values ``struct`` will
    not take as floats (``str``, None) go through numpy's conversion, as in a column of them.
    """
    out = np.empty(count, dtype=np.float64)
    offset = 0
    try:
        for docs, ids in zip(runs, keys, strict=True):
            size = len(docs) + len(ids)
            pack_into(f"{size}d", out, offset, *docs.values(), *map(docs.get, ids, repeat(math.nan)))
            offset += 8 * size
    except (StructError, TypeError, OverflowError):
        listed = chain.from_iterable(chain.from_iterable(map(_scores_then_judged, runs, keys)))
        try:
            return np.fromiter(listed, np.float64, count)
        except (TypeError, ValueError, OverflowError) as err:
            raise (bad_entry("run", dict_entries(qids, runs)) or err) from None
    return out


def _scores_then_judged(docs: Mapping, ids) -> tuple:
    return docs.values(), map(docs.get, ids, repeat(math.nan))


def _as_str(docno: np.ndarray) -> list[str]:
    """The docnos as ``str`` (UTF-8; bytes that are not, as in a file read from disk, become lone
    surrogates, which no ``str`` id of a run equals): one join, decode and split, or one at a
    time when a docno holds the separator."""
    listed = docno.tolist()
    joined = b"\n".join(listed)
    if joined.count(b"\n") == max(len(listed) - 1, 0):
        return joined.decode("utf-8", "surrogateescape").split("\n") if listed else []
    return [d.decode("utf-8", "surrogateescape") for d in listed]


def _ranks(values, scored, judged_scores, entries, runs, keys) -> np.ndarray:
    """0-based rank in trec_eval's order of each qrels entry's document (-1 where the run lacks
    it): the documents scoring more, plus those scoring the same with a larger docno."""
    width = int(scored.max(initial=0))
    if len(values) == width * len(scored):  # every query as long: the scores are the grid
        grid = values.reshape(len(scored), width)
    else:
        grid = np.full((len(scored), width), -np.inf, dtype=values.dtype)
        grid[np.arange(width) < scored[:, None]] = values
    ascending = np.sort(grid, axis=1)
    entry_cells = np.arange(int(entries.max(initial=0))) < entries[:, None]
    probe = np.full(entry_cells.shape, -np.inf, dtype=values.dtype)
    probe[entry_cells] = judged_scores
    found = ~np.isnan(probe) & entry_cells
    if not found.any():
        return np.full(len(judged_scores), -1, dtype=np.int64)
    probe[~found] = -np.inf
    at_most = torch.searchsorted(torch.from_numpy(ascending), torch.from_numpy(probe), right=True).numpy()
    rank = width - at_most
    # Another document scores the same iff the one sorted just below the last <= s equals s (for
    # s = -inf, iff two real -inf scores: the padding is -inf too).
    before = np.take_along_axis(ascending, np.maximum(at_most - 2, 0), axis=1)
    tied = found & (at_most >= 2) & (before == probe)
    minus_inf = tied & (probe == -np.inf)
    tied[minus_inf] = (at_most - (width - scored)[:, None])[minus_inf] > 1
    if tied.any():
        rank[tied] += _larger_tied_docnos(grid, scored, probe, tied, runs, keys)
    return np.where(found, rank, -1)[entry_cells]


def _larger_tied_docnos(grid, scored, probe, tied, runs, keys) -> np.ndarray:
    """For each tied judged document (``tied``, row-major), the documents of its query with its
    exact score and a larger docno (``strcmp`` order, which is ``str`` order on the UTF-8 bytes).

    ``grid``: the scores in each query's dict order, ``-inf``-padded past ``scored``.
    """
    rows, columns = np.nonzero(tied)
    tied_rows = np.unique(rows)
    # The tied scores of each row side by side (NaN-padded), then the documents holding one.
    slot = np.cumsum(tied, axis=1) - 1
    wanted = np.full((len(grid), int(tied.sum(axis=1).max())), np.nan)
    wanted[rows, slot[rows, columns]] = probe[rows, columns]
    sub, wanted = grid[tied_rows], wanted[tied_rows]
    member = np.zeros(sub.shape, dtype=bool)
    for j in range(wanted.shape[1]):
        member |= sub == wanted[:, j : j + 1]
    member &= np.arange(sub.shape[1]) < scored[tied_rows][:, None]
    local_rows, positions = np.nonzero(member)
    member_rows = tied_rows[local_rows]
    member_values = sub[local_rows, positions]
    # Their ids, in the same (row, position) order.
    member_keys = []
    starts = np.searchsorted(local_rows, np.arange(len(tied_rows) + 1)).tolist()
    for r, start, end in zip(tied_rows.tolist(), starts[:-1], starts[1:], strict=True):
        member_keys.extend(_keys_at(runs[r], positions[start:end].tolist()))
    judged_keys = [keys[r][c] for r, c in zip(rows.tolist(), columns.tolist(), strict=True)]
    # Rank every id once (member ids, then the judged ones, which are members too), group the
    # members by (row, score), and count within each group the ids ranking above the judged one.
    _, key_rank = np.unique(np.array(member_keys + judged_keys), return_inverse=True)
    all_rows = np.concatenate((member_rows, rows))
    all_values = np.concatenate((member_values, probe[rows, columns]))
    order = np.lexsort((all_values, all_rows))
    change = np.ones(len(order), dtype=bool)
    in_rows, in_values = all_rows[order], all_values[order]
    change[1:] = (in_rows[1:] != in_rows[:-1]) | (in_values[1:] != in_values[:-1])  # not diff: -inf
    group = np.empty(len(order), dtype=np.int64)
    group[order] = np.cumsum(change) - 1
    span = int(key_rank.max()) + 1
    composite = group * span + key_rank
    members = np.sort(composite[: len(member_keys)])
    judged = composite[len(member_keys) :]
    group_end = (group[len(member_keys) :] + 1) * span
    return np.searchsorted(members, group_end) - np.searchsorted(members, judged, side="right")


def _keys_at(docs: Mapping, positions: list[int]) -> list:
    """The keys at these ascending ``positions`` of a dict's order, skipped over in C (about 3x
    faster than listing the keys) from whichever end passes fewer of them."""
    if isinstance(docs, dict) and len(docs) - positions[0] < positions[-1]:
        last = len(docs) - 1
        return _items_at(reversed(docs), [last - p for p in reversed(positions)])[::-1]
    return _items_at(iter(docs), positions)


def _items_at(items: Iterator, positions: list[int]) -> list:
    """The items at these ascending ``positions`` of an iterator."""
    picked, at = [], 0
    for p in positions:
        picked.append(next(islice(items, p - at, None)))
        at = p + 1
    return picked
