"""Input forms: every way to describe a batch of rankings, normalized at one place.

Four forms describe the same thing, a ranking per query and its judgements:

- dense: ``(y_pred, y)``, two ``(batch, num_items)`` tensors;
- sparse labels: ``(y_pred, y)`` with ``y`` a torch sparse COO/CSR ``(batch, num_items)`` tensor
  (an absent entry is label 0);
- flat: ``(preds, target, indexes)``, three 1-D tensors of one length (or of one N-D shape,
  flattened), torchmetrics' retrieval form: the rows of one query id form one ranking (a
  query's rows must be contiguous);
- :class:`Retrieved`: ``(batch, k)`` retrieved item ids (``-1`` pads), optional scores, and the
  judged items of each query.

:func:`normalize` turns any of them into the :class:`~ignite_ranking.kernels.batch.RankedBatch`
that the scorers read, so metrics never branch on forms. The dense form goes to
:func:`~ignite_ranking.kernels.ranking.rank_batch`; every other form becomes *candidate lists*
(each query's items in a padded ``(queries, width)`` layout with a validity mask, and the query's
judgements as flat ``(row, label)`` pairs) that one exact sort ranks. Padding is never ranked:
it sorts after every item, even one scored ``-inf``, and forms a tie block of its own. R and the
ideal gains come from the judgements, not from what was listed, so a relevant item that was not
retrieved is never found and still counts.

This module holds the forms, :func:`normalize` and the flat form's checks; the sparse-label,
``Retrieved`` and dense-with-ignored-items lists are built in :mod:`~ignite_ranking.kernels.sources`
and ranked in :mod:`~ignite_ranking.kernels.candidates`; the flat form's held-back query is saved
by :mod:`~ignite_ranking.kernels.held`.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import torch

from . import constants
from .batch import RankedBatch
from .candidates import Ranking, _Candidates, _TopItems, rank_candidates
from .from_dicts import id_tensors
from .inputs import _F64, _FLOAT_DTYPES, _LABEL_DTYPES, ArgumentTypeError, check_inputs, equal_to, refuse_nan
from .ranking import rank_batch
from .sources import (
    _dense_candidates,
    _owner_of_each,
    _QueryNames,
    _retrieved_candidates,
    _sparse_label_candidates,
)

__all__ = [
    "FlatRows",
    "Normalized",
    "Ranking",
    "Retrieved",
    "check_flat",
    "check_ignore_index",
    "flush",
    "normalize",
]


@dataclass(frozen=True)
class Retrieved:
    """The output of a top-k search (FAISS, a vector database, ``torch.topk``) and its judgements.

    Attributes:
        ids: ``(batch, k)`` int64 or int32 item ids (ScaNN and others return int32; they are
            widened to int64). Without ``scores`` they are in rank order, best
            first. ``-1`` pads a row with fewer results, only at its end; a row of padding is
            still a query (it found nothing).
        relevant: the judged items of each query, either a ``(batch, m)`` int64 or int32 tensor of ids
            padded with ``-1`` (each listed id has label 1, or its entry of ``grades``), or a torch
            sparse COO/CSR ``(batch, num_items)`` tensor whose stored entries are the judged
            items and their grades. A judged grade below ``relevance_threshold`` is judged
            non-relevant; an item that is not judged has label 0.
        scores: optional ``(batch, k)`` floating scores; then items are ranked by descending
            score, equal scores by the tie policy with the item id as the index (as the dense
            form ranks the same scores). Scores of padding are ignored.
        grades: optional ``(batch, m)`` real labels of the padded ``relevant`` ids.

    Example:
        >>> import torch
        >>> from ignite_ranking import MRR, Retrieved
        >>> ids = torch.tensor([[7, 3, 9], [4, -1, -1]])
        >>> relevant = torch.tensor([[3, 5], [8, -1]])
        >>> metric = MRR([1, 3])
        >>> metric.update(Retrieved(ids, relevant))
        >>> metric.compute()  # query 1 finds 3 at rank 2; query 2 never finds 8
        [0.0, 0.25]
    """

    ids: torch.Tensor
    relevant: torch.Tensor
    scores: torch.Tensor | None = None
    grades: torch.Tensor | None = None

    @classmethod
    def from_dicts(
        cls, run: Mapping, qrels: Mapping, *, query_ids: Sequence[Hashable] | None = None
    ) -> Retrieved:
        """A batch of a run and qrels held as dicts: one row per query of ``query_ids``
        (default: the qrels' queries, in their order).

        Args:
            run: ``{query: {document: score}}`` (ranked by descending score, equal scores by the
                tie policy on the document ids' sorted order: ``"first"`` puts the lower id
                first, ``"last"`` the higher, as trec_eval) or ``{query: [document, ...]}``,
                best first. A query the run lacks retrieved nothing.
            qrels: ``{query: {document: grade}}``; every listed document is judged (with its
                grade), also those the run does not retrieve: they count in R.
            query_ids: the rows, in order; queries of the run not listed are left out.

        Document ids are str or int, matched as they are (``7`` is not ``"7"``).

        Example:
            >>> from ignite_ranking import MRR, Retrieved
            >>> run = {"q1": {"d1": 0.2, "d2": 0.9}, "q2": {"d3": 0.5, "d4": 0.5}}  # a tie
            >>> metric = MRR([1, 10])
            >>> metric.update(Retrieved.from_dicts(run, {"q1": {"d1": 1}, "q2": {"d3": 1, "d9": 2}}))
            >>> metric.compute()  # q1 finds d1 at rank 2; q2 d3 at rank 1 (the lower id of a tie)
            [0.5, 0.75]
        """
        ids, relevant, scores, grades, _ = id_tensors(run, qrels, query_ids)
        return cls(ids, relevant, scores, grades)


@dataclass(frozen=True)
class FlatRows:
    """Rows of the flat form: floating scores, real labels, int64 query ids (1-D, one length)."""

    preds: torch.Tensor
    target: torch.Tensor
    indexes: torch.Tensor

    def __len__(self) -> int:
        return self.preds.shape[0]

    def cat(self, other: FlatRows) -> FlatRows:
        return FlatRows(*(torch.cat([a, b]) for a, b in zip(self.astuple(), other.astuple(), strict=True)))

    def astuple(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.preds, self.target, self.indexes

    def select(self, keep: torch.Tensor | slice) -> FlatRows:
        return FlatRows(self.preds[keep], self.target[keep], self.indexes[keep])


@dataclass
class Normalized:
    """A normalized update.

    Attributes:
        ranked: the ranked batch of every complete query of the update.
        query_ids: ``(queries,)`` int64: the query id of each ranked row for the flat form, the
            row index for the other forms.
        held: the flat form's last query, held back because the next update may continue it,
            or None.
    """

    ranked: RankedBatch
    query_ids: torch.Tensor
    held: FlatRows | None = None


# ------------------------------------------------------------------------------------ entry points


def normalize(
    output: object,
    ranking: Ranking,
    *,
    held: FlatRows | None = None,
    hold_last: bool = False,
    first_query: int | None = None,
    query_ids: object = None,
) -> Normalized:
    """Checks an update's output in any form and ranks it once.

    Args:
        output: ``(y_pred, y)`` (dense, or ``y`` sparse), ``(preds, target, indexes)`` (flat) or
            a :class:`Retrieved`.
        ranking: what to rank and gather.
        held: flat rows held back by the previous update (its last, possibly incomplete query);
            the flat form continues them, any other form refuses to start while rows are held.
        hold_last: for the flat form, hold back the last query of this update instead of
            ranking it (a stream whose next update may continue it).
        first_query: the arrival index (from 0, over the whole evaluation) of the batch's first
            query, and ``query_ids`` the ids given with the batch, if any: only for messages,
            which then name a bad query by its place in the evaluation or its id, not only by
            its row in the batch.

    Raises:
        TypeError, ValueError: the output is in no form, or breaks its form's rules; the
            message names the argument.
    """
    if isinstance(output, Retrieved):
        _refuse_held(held, "a Retrieved batch")
        where = _QueryNames(first_query, query_ids)
        return _from_candidates(_retrieved_candidates(output, ranking, where), ranking)
    forms = "(y_pred, y), (preds, target, indexes) or an ignite_ranking.Retrieved"
    if not isinstance(output, Sequence) or isinstance(output, (str, bytes)):
        # Ignite's metrics raise TypeError (None) or ValueError here: this is both.
        raise ArgumentTypeError(f"output must be {forms}, got {type(output)}.")
    if len(output) not in (2, 3):
        raise ValueError(f"output must be {forms}, got a sequence of length {len(output)}.")
    if len(output) == 3:
        return _normalize_flat(output, ranking, held, hold_last)
    _refuse_held(held, "a (y_pred, y) batch")
    y_pred, y = output
    if isinstance(y, torch.Tensor) and y.layout != torch.strided:
        if ranking.ignore_index is not None:
            raise ValueError(
                "ignore_index applies to dense and flat labels; with sparse y, leave the ignored "
                f"items out of y instead (got ignore_index={ranking.ignore_index})."
            )
        return _from_candidates(_sparse_label_candidates(y_pred, y, ranking), ranking)
    check_inputs(y_pred, y, nan=False)  # the ranking kernel refuses NaN on its own passes
    assert isinstance(y_pred, torch.Tensor) and isinstance(y, torch.Tensor)
    return _normalize_dense(y_pred.detach(), y.detach(), ranking)


def _normalize_dense(y_pred: torch.Tensor, y: torch.Tensor, ranking: Ranking) -> Normalized:
    """A checked dense batch: the ranking kernel, or lists when items are to be left out."""
    ignored = None if ranking.ignore_index is None else equal_to(y, ranking.ignore_index)
    if ignored is not None and bool(ignored.any()):
        refuse_nan(y_pred, y)
        # A row whose items are all ignored is no query, as a flat query left without rows.
        rows = (~ignored).any(dim=1).nonzero().squeeze(1)
        candidates = _dense_candidates(y_pred[rows], y[rows], ranking.ignore_index)
        return Normalized(rank_candidates(candidates, ranking), rows)
    rows = constants.arange(0, y_pred.shape[0], 1, torch.int64, y_pred.device)
    ranked = rank_batch(
        y_pred,
        y,
        ranking.depth,
        relevance_threshold=ranking.relevance_threshold,
        ties=ranking.ties,
        ideal=ranking.ideal,
        cover_relevant=ranking.cover_relevant,
        count=ranking.count,
        keep_indices=ranking.keep_indices or ranking.scores,
        labels=ranking.labels,
        last_run=ranking.runs,
        relevance=ranking.relevance,
    )
    if ranking.scores:
        ranked.scores = y_pred.gather(1, ranked.indices).to(_F64)
    return Normalized(ranked, rows)


def flush(held: FlatRows, ranking: Ranking) -> RankedBatch:
    """Ranks flat rows held back by a stream as one complete query (at the stream's end)."""
    return _normalize_flat_rows(held, ranking, hold_last=False).ranked


def _refuse_held(held: FlatRows | None, what: str) -> None:
    if held is not None and len(held):
        raise ValueError(
            f"update got {what} while the flat form's query {int(held.indexes[0])} is held back "
            "(waiting for its next rows); feed one form per evaluation, or call compute() first."
        )


def _from_candidates(candidates: _Candidates | _TopItems, ranking: Ranking) -> Normalized:
    ranked = rank_candidates(candidates, ranking)
    queries = ranked.relevant.shape[0]
    return Normalized(ranked, constants.arange(0, queries, 1, torch.int64, ranked.relevant.device))


# ------------------------------------------------------------------------------------- flat form


def _normalize_flat(output: Sequence, ranking: Ranking, held: FlatRows | None, hold_last: bool) -> Normalized:
    rows = check_flat(*output)
    if ranking.ignore_index is not None:
        rows = rows.select(~equal_to(rows.target, ranking.ignore_index))
    if held is not None and len(held):
        rows = held.cat(rows)
    return _normalize_flat_rows(rows, ranking, hold_last)


def check_flat(preds: object, target: object, indexes: object) -> FlatRows:
    """Checks the flat form and returns its rows (query ids as int64), flattened.

    The three tensors may have any shape with at least one dimension, the same for all three
    (torchmetrics' rule); an N-D input is flattened in row-major order, so a ``(queries, items)``
    batch whose ``indexes`` are constant along each row is one query per row.
    """
    for name, value in (("preds", preds), ("target", target), ("indexes", indexes)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value)}.")
    assert isinstance(preds, torch.Tensor) and isinstance(target, torch.Tensor)
    assert isinstance(indexes, torch.Tensor)
    if preds.dtype not in _FLOAT_DTYPES:
        raise TypeError(f"preds must hold floating scores, got {preds.dtype}.")
    if target.dtype not in _LABEL_DTYPES:
        raise TypeError(f"target must hold real labels (bool, integer or floating), got {target.dtype}.")
    if indexes.dtype.is_floating_point or indexes.dtype in (torch.bool, torch.complex64, torch.complex128):
        # A 3-tuple of float tensors is a bad (y_pred, y) to Ignite's metrics (ValueError): both.
        raise ArgumentTypeError(f"indexes must hold integer query ids, got {indexes.dtype}.")
    shapes = [tuple(t.shape) for t in (preds, target, indexes)]
    if len(set(shapes)) != 1 or not shapes[0]:
        raise ValueError(
            "preds, target and indexes must have one shape with at least one dimension (1-D of one "
            f"length, or N-D, flattened), got shapes {shapes}."
        )
    if len({t.device for t in (preds, target, indexes)}) != 1:
        raise ValueError("preds, target and indexes must be on one device.")
    if torch.isnan(preds).any():
        raise ValueError("preds must not contain NaN; mask items with -inf instead.")
    if target.is_floating_point() and torch.isnan(target).any():
        raise ValueError("target must not contain NaN labels.")
    return FlatRows(
        preds.detach().reshape(-1), target.detach().reshape(-1), indexes.detach().to(torch.int64).reshape(-1)
    )


def _normalize_flat_rows(rows: FlatRows, ranking: Ranking, hold_last: bool) -> Normalized:
    device = rows.preds.device
    n = len(rows)
    if n == 0:
        empty = FlatRows(*(t[:0] for t in rows.astuple()))
        return _from_candidates(_ragged_candidates(empty, *[torch.zeros(0, dtype=torch.int64)] * 2), ranking)
    change = (rows.indexes[1:] != rows.indexes[:-1]).nonzero().squeeze(1) + 1
    starts = torch.cat([torch.zeros(1, dtype=torch.int64, device=device), change])
    ids = rows.indexes[starts]
    _refuse_reappearing(ids)
    held = None
    if hold_last:
        last = int(starts[-1])
        held, rows, starts, ids = (
            rows.select(slice(last, None)),
            rows.select(slice(0, last)),
            starts[:-1],
            ids[:-1],
        )
    lengths = torch.diff(starts, append=torch.tensor([len(rows)], device=device))
    if lengths.numel() and bool((lengths == lengths[0]).all()):
        # Queries of one length are a dense batch, each row's position its index.
        shape = (lengths.numel(), int(lengths[0]))
        normalized = _normalize_dense(rows.preds.view(shape), rows.target.view(shape), ranking)
        ranked = normalized.ranked  # flat rows are all judged: N is what is not relevant (bpref, AUC)
        ranked.num_nonrelevant = shape[1] - ranked.num_relevant.to(_F64)
    else:
        normalized = _from_candidates(_ragged_candidates(rows, starts, lengths), ranking)
    normalized.query_ids = ids
    normalized.held = held
    return normalized


def _refuse_reappearing(ids: torch.Tensor) -> None:
    """Refuses a query id whose rows are not contiguous (it appears in two runs)."""
    unique, counts = torch.unique(ids, return_counts=True)
    if unique.numel() != ids.numel():
        query = int(unique[counts > 1][0])
        raise ValueError(
            f"indexes: query {query} reappears after another query began; a query's rows must be "
            "contiguous in the stream (possibly across consecutive updates)."
        )


def _ragged_candidates(rows: FlatRows, starts: torch.Tensor, lengths: torch.Tensor) -> _Candidates:
    """Candidate lists of contiguous runs of rows; a row's position in its query is its index."""
    device = rows.preds.device
    queries = starts.numel()
    query = _owner_of_each(lengths)
    position = torch.arange(len(rows), device=device) - starts.to(device)[query]
    width = int(lengths.max()) if queries else 0
    c = _Candidates.scatter(queries, width, query, position, rows.preds, position, rows.target)
    c.index_ascending = True
    return c


def check_ignore_index(ignore_index: object) -> int | None:
    """``ignore_index`` as None or an int (NumPy integers too; bools refused), else raises ``TypeError``."""
    if ignore_index is None:
        return None
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, numbers.Integral):
        raise TypeError(f"ignore_index must be None or an int, got {type(ignore_index).__name__}.")
    return int(ignore_index)
