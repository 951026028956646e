"""A batch of a run's queries as an :class:`~ignite_ranking.Retrieved` batch, and back.

This is where the TREC layer enters the library's input forms: a run is retrieved ids with
scores and the qrels are sparse judgements, so each batch of queries becomes one
``Retrieved(ids, relevant, scores)`` that :func:`~ignite_ranking.kernels.forms.normalize`
ranks like any other; :func:`trec_ranked` then gives the ranked batch trec_eval's labels.

- **Item ids** are per query: a document's position in its query's list. Under ``ties="trec"``
  the list is laid out in ascending docno (``strcmp``) order, so the kernel's ``"last"`` (the
  larger id first among equal scores) is trec_eval's order, descending docno; under the
  kernel's own policies it is in file order, so ``"first"`` and ``"last"`` mean file order.
  Either way the ids ascend along each row, which spares the ranking a sort by id. A judged
  document that the batch does not list gets an id past the listed ones: it is never found,
  and it still counts in R and N.
- **Judgements** are ``(queries, m)`` padded ids with their grades: every qrels entry of the
  batch's queries, negative grades included (pooled but unjudged: below every relevance level,
  so never relevant).
- **Long lists are cut first**: when every measure has a cutoff k and the order of ties is
  fixed (``"trec"``, ``"first"``, ``"last"``), only the documents scoring at least a query's
  k-th largest score can reach its top k (ties at the cut are kept whole), so only they are
  joined with the qrels, sorted by docno and ranked.
- Like trec_eval, a document listed twice for one query is refused, naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from ..kernels import RankedBatch
from ..kernels.forms import Ranking, Retrieved, normalize
from .grid import docno_order, refuse_duplicates, refuse_sorted_duplicates, segments, top_cells
from .io import Qrels
from .judgements import NOT_IN_POOL, PADDING, UNJUDGED, Judgements, index_judgements, judged_rows, words
from .records import to_float32

__all__ = ["RunQueries", "trec_ranked"]


@dataclass(frozen=True)
class RunQueries:
    """A run's documents and the qrels' entries, grouped by qrels query index.

    Attributes:
        qrels: the judgements; ``judgements`` indexes them for the docno join.
        qids: the query ids (the qrels'), for messages.
        docno, score: the run's documents, grouped by query; ``start``/``count`` per query.
        precision: ``"float64"``, or ``"float32"`` to round each score to float32 first.
        entries, entry_start, entry_count: qrels rows grouped by query (``entries`` lists them).
        entry_position: each qrels row's position within its query's entries.
    """

    qrels: Qrels
    judgements: Judgements
    qids: list[str]
    docno: np.ndarray
    score: np.ndarray
    start: np.ndarray
    count: np.ndarray
    precision: str
    entries: np.ndarray
    entry_start: np.ndarray
    entry_count: np.ndarray
    entry_position: np.ndarray

    @classmethod
    def group(
        cls, qrels: Qrels, query: np.ndarray, docno: np.ndarray, score: np.ndarray, precision: str
    ) -> RunQueries:
        """Groups run rows (``query``: their qrels query index) and the qrels by query."""
        num_q = len(qrels.qids)
        order, start, count = segments(query.astype(np.int32), num_q)
        if order is not None:
            docno, score = docno[order], score[order]
        entry_order, entry_start, entry_count = segments(qrels.qid, num_q)
        entries = np.arange(len(qrels)) if entry_order is None else entry_order
        position = np.empty(len(qrels), dtype=np.int64)
        position[entries] = np.arange(len(qrels)) - np.repeat(entry_start, entry_count)
        return cls(
            qrels, index_judgements(qrels), list(qrels.qids), docno, score, start, count, precision,
            entries, entry_start, entry_count, position,
        )  # fmt: skip

    def batch(self, qs: np.ndarray, depth: int, ties: str) -> Retrieved:
        """The queries ``qs`` (qrels indices, each with a document) as one Retrieved batch.

        ``depth``: the deepest rank any measure reads; ``ties``: ``"trec"`` or a kernel policy.
        """
        lens = self.count[qs]
        names = [self.qids[q] for q in qs]
        cells, src = _grid(self.start[qs], lens)
        values = self.score[src]
        if self.precision == "float32":
            values = to_float32(values).astype(np.float64)
        if np.isnan(values).any():
            row = cells.nonzero()[0][np.flatnonzero(np.isnan(values))[0]]
            raise ValueError(f"run: query {names[row]!r} has a NaN score; scores must be numbers")
        cut = ties in ("trec", "first", "last") and depth < cells.shape[1]
        if cut:  # duplicates are looked for in the whole run, then the tail goes
            refuse_duplicates(self.docno[src], cells, lens, names)
            keep = top_cells(values, cells, depth)
            src, values = src[keep[cells]], values[keep[cells]]
            cells, _ = _grid(np.zeros_like(lens), keep.sum(axis=1))
        if ties == "trec":  # each query's documents in ascending docno order: their ids
            docno_words = words(self.docno[src])
            by_docno, sorted_grid = docno_order(docno_words, cells)
            if not cut:  # the whole run is here: its docno sort shows the duplicates
                refuse_sorted_duplicates(sorted_grid, lens, names)
            position = np.zeros(cells.shape, dtype=np.int64)
            position[cells] = np.arange(len(src))
            in_order = np.take_along_axis(position, by_docno, axis=1)[cells]
            src, values, docno_words = src[in_order], values[in_order], docno_words[in_order]
        else:  # in file order
            if not cut:
                refuse_duplicates(self.docno[src], cells, lens, names)
            docno_words = words(self.docno[src])
        docno = self.docno[src]
        listed = cells.sum(axis=1)
        matched = judged_rows(self.judgements, np.repeat(qs, listed), docno, docno_words)
        ids = np.where(cells, np.arange(cells.shape[1]), -1)
        scores = np.zeros(cells.shape, dtype=np.float64)
        scores[cells] = values
        relevant, grades = self._judgements_of(qs, ids[cells], matched, listed, cells.shape[1])
        return Retrieved(torch.from_numpy(ids), relevant, torch.from_numpy(scores), grades)

    def ranked(
        self, qs: np.ndarray, depth: int, levels: list[int], ties: str, cover_relevant: bool,
        num_nonrelevant: dict[int, np.ndarray],
    ) -> dict[int, RankedBatch]:  # fmt: skip
        """The queries ``qs`` ranked at each relevance level with trec_eval's labels (see
        :meth:`batch` and :func:`trec_ranked`); ``num_nonrelevant``: N per level and query."""
        retrieved = self.batch(qs, depth, ties)
        kernel_ties = "last" if ties == "trec" else ties  # ids ascend with the docno
        out = {}
        for level in levels:
            ranking = Ranking(depth, level, kernel_ties, cover_relevant=cover_relevant)
            out[level] = trec_ranked(normalize(retrieved, ranking).ranked, num_nonrelevant[level][qs])
        return out

    def _judgements_of(self, qs, listed_ids, matched, listed, width) -> tuple[torch.Tensor, torch.Tensor]:
        """``(len(qs), m)`` ids (``-1``-padded) and grades of the queries' qrels entries: each at
        the id of the listed document it judges (``matched``: the qrels row of each listed
        document, or -1), or at an id past the listed ones (``width`` + its place in the query)."""
        counts = self.entry_count[qs]
        entry_cells, src = _grid(self.entry_start[qs], counts)
        ids = np.where(entry_cells, width + np.arange(entry_cells.shape[1]), -1)
        found = matched >= 0
        owner = np.repeat(np.arange(len(qs)), listed)[found]
        flat = ids[entry_cells]
        flat[(np.cumsum(counts) - counts)[owner] + self.entry_position[matched[found]]] = listed_ids[found]
        ids[entry_cells] = flat
        grades = np.zeros(entry_cells.shape, dtype=np.float64)
        grades[entry_cells] = self.qrels.rel[self.entries[src]]
        return torch.from_numpy(ids), torch.from_numpy(grades)


def _grid(starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The real cells of a left-aligned ``(queries, max(lens))`` grid, and the source row of each
    (``starts[q]``, ``starts[q] + 1``...) in row-major order, as boolean-mask indexing visits them."""
    width = int(lens.max()) if lens.size else 0
    cells = np.arange(width) < lens[:, None]
    n = int(lens.sum())
    src = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(n)
    return cells, src


def trec_ranked(ranked: RankedBatch, num_nonrelevant: np.ndarray) -> RankedBatch:
    """A ranked :class:`~ignite_ranking.Retrieved` batch with trec_eval's labels.

    A listed document's label is its grade, :data:`~.judgements.UNJUDGED` when the qrels give it
    a negative grade, :data:`~.judgements.NOT_IN_POOL` when they lack it, and a position past a
    query's list holds :data:`~.judgements.PADDING`; a document is judged iff its grade is
    >= 0, and N (``num_nonrelevant``) counts the judged documents below the level.
    """
    found = ranked.judged > 0
    grades = torch.where(ranked.labels < 0, float(UNJUDGED), ranked.labels)
    labels = torch.where(found, grades, float(NOT_IN_POOL))
    labels = torch.where(ranked.indices >= 0, labels, float(PADDING))
    return replace(
        ranked,
        labels=labels,
        judged=(labels >= 0).to(torch.float64),
        num_nonrelevant=torch.from_numpy(num_nonrelevant),
        _gain_cache={},
    )
