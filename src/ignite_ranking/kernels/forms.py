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
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import torch

from .batch import RankedBatch
from .boundary import boundary_blocks
from .inputs import _FLOAT_DTYPES, _LABEL_DTYPES, ArgumentTypeError, check_inputs, refuse_nan
from .ranking import rank_batch
from .ties import tie_blocks

__all__ = [
    "HELD_KEYS",
    "FlatRows",
    "Normalized",
    "Ranking",
    "Retrieved",
    "check_flat",
    "check_ignore_index",
    "flush",
    "held_from_state",
    "held_to_state",
    "normalize",
]

_F64 = torch.float64
_BY_LABEL = ("optimistic", "pessimistic")


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


@dataclass(frozen=True)
class Ranking:
    """What a metric (or a group) needs of a ranked batch: the arguments of ``rank_batch``."""

    depth: int
    relevance_threshold: float = 1.0
    ties: str = "first"
    ideal: bool = False
    cover_relevant: bool = False
    count: bool = True
    ignore_index: int | None = None
    keep_indices: bool = False
    labels: bool = True  # gather the ranked labels (dense form; metrics reading only relevance need not)
    runs: bool = False  # with ideal: count the whole run of the ideal ranking's last held label
    relevance: bool = True  # count whether each row has a relevant item (False: no metric reads it)
    scores: bool = False  # gather the ranked scores (AUC), where the form has scores


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
        return _from_candidates(_retrieved_candidates(output, ranking.ignore_index, where), ranking)
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
    if ranking.ignore_index is not None and bool((y == ranking.ignore_index).any()):
        refuse_nan(y_pred, y)
        return _from_candidates(_dense_candidates(y_pred, y, ranking.ignore_index), ranking)
    rows = torch.arange(y_pred.shape[0], device=y_pred.device)
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


# ------------------------------------------------------------------------------------- flat form


def _normalize_flat(output: Sequence, ranking: Ranking, held: FlatRows | None, hold_last: bool) -> Normalized:
    rows = check_flat(*output)
    if ranking.ignore_index is not None:
        rows = rows.select(rows.target != ranking.ignore_index)
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


def _owner_of_each(counts: torch.Tensor) -> torch.Tensor:
    """``repeat_interleave(arange(len(counts)), counts)``, which is slow on CPU."""
    ends = counts.cumsum(0)
    total = int(ends[-1]) if ends.numel() else 0
    return torch.searchsorted(ends, torch.arange(total, device=counts.device), right=True)


# -------------------------------------------------------------------------------- candidate lists


@dataclass
class _Candidates:
    """Each query's items as padded ``(queries, width)`` lists, and its judgements.

    ``scores`` (float64, or None when the lists are in rank order), ``index`` (int64, the tie
    index), ``labels`` (float64, 0 for unjudged) and ``valid`` (bool) have one shape;
    ``judged_rows`` / ``judged_labels`` list every judged item of every query (for R and IDCG),
    or are None when the judged items are exactly the valid listed ones (flat rows, dense rows).
    ``index_ascending`` says that ``index`` ascends along each row (no sort needed for it).
    ``judged`` (bool, the lists' shape) flags the listed items found among the judgements, or
    is None when every listed item is judged; a listed item that is not judged is never relevant
    (the contract's unjudged items), whatever the threshold. ``catalog`` is the number of items
    a row ranks among (None: unknown, only the listed and judged items are known); the ideal
    ranking puts the relevant items of negative label (under a negative threshold) after all
    the others, which gain 0.
    """

    scores: torch.Tensor | None
    index: torch.Tensor
    labels: torch.Tensor
    valid: torch.Tensor
    judged_rows: torch.Tensor | None = None
    judged_labels: torch.Tensor | None = None
    index_ascending: bool = False
    judged: torch.Tensor | None = None
    catalog: int | None = None

    @classmethod
    def scatter(cls, queries, width, query, position, scores, index, labels) -> _Candidates:
        """Lists of ragged items given as (query, position) pairs; every item is judged."""
        device = labels.device
        shape = (queries, width)
        valid = torch.zeros(shape, dtype=torch.bool, device=device)
        valid[query, position] = True
        out_scores = torch.full(shape, -torch.inf, dtype=_F64, device=device)
        out_scores[query, position] = scores.to(_F64)
        out_index = torch.zeros(shape, dtype=torch.int64, device=device)
        out_index[query, position] = index
        out_labels = torch.zeros(shape, dtype=_F64, device=device)
        out_labels[query, position] = labels.to(_F64)
        return cls(out_scores, out_index, out_labels, valid)

    @property
    def queries(self) -> int:
        return self.labels.shape[0]


def _from_candidates(candidates: _Candidates, ranking: Ranking) -> Normalized:
    ranked = rank_candidates(candidates, ranking)
    return Normalized(ranked, torch.arange(candidates.queries, device=candidates.labels.device))


def rank_candidates(c: _Candidates, ranking: Ranking) -> RankedBatch:
    """Ranks candidate lists exactly, padding last, and gathers what the scorers read.

    The positions held per row are the cutoff's, but never fewer than the row's judged relevant
    items need (ideal gains, R-Precision) nor more than those and the lists hold; under
    ``"average"`` the whole lists are kept, so every tied block is whole.
    """
    queries, width = c.labels.shape
    device = c.labels.device
    threshold = ranking.relevance_threshold
    listed_relevant = c.valid & (c.labels >= threshold)
    if c.judged is not None:
        listed_relevant &= c.judged  # unjudged: never relevant, even under a threshold <= 0
    relevant_rows = relevant_labels = None
    if c.judged_labels is None:
        counts = listed_relevant.sum(dim=1)
    else:
        is_relevant = c.judged_labels >= threshold
        relevant_rows, relevant_labels = c.judged_rows[is_relevant], c.judged_labels[is_relevant]
        counts = torch.bincount(relevant_rows, minlength=queries)
    most = int(counts.max()) if queries else 0
    depth = max(min(ranking.depth, max(width, most)), most if ranking.cover_relevant else 0)
    if width < depth:
        c = _widen(c, depth)
        listed_relevant = torch.nn.functional.pad(listed_relevant, (0, depth - width))
        width = depth
    order = _order(c, ranking.ties)
    labels = c.labels.gather(1, order)
    relevant = listed_relevant.gather(1, order)
    labels = torch.where(c.valid.gather(1, order), labels, torch.zeros_like(labels))
    average = ranking.ties == "average" and c.scores is not None
    keep = width if average else depth
    ranked = RankedBatch(
        labels=labels[:, :keep],
        relevant=relevant[:, :keep].to(_F64),
        num_relevant=counts.to(_F64),
    )
    _mark_judged(ranked, c, order, keep, threshold)
    if ranking.scores and c.scores is not None:  # past a list's end: no item, scored -inf
        ranked.scores = torch.where(ranked.indices >= 0, c.scores.gather(1, order)[:, :keep], -torch.inf)
    if ranking.ideal:
        if c.judged_labels is None:
            gains = torch.where(listed_relevant, c.labels, torch.zeros_like(c.labels))
            ranked.ideal_labels = torch.topk(gains, keep, dim=1).values
        else:
            ranked.ideal_labels = _ideal_labels(relevant_rows, relevant_labels, counts, queries, keep)
        positions = torch.arange(keep, device=device)
        ranked.ideal_relevant = (positions[None, :] < counts[:, None]).to(_F64)
        if c.judged_labels is not None and threshold < 0:
            _move_negative_gains_last(ranked, c, relevant_rows, relevant_labels, threshold)
        if ranking.runs:
            ranked.ideal_last_run = _last_run(ranked, c, listed_relevant, relevant_rows, relevant_labels)
    if c.catalog is not None:
        ranked.catalog = torch.full((queries,), float(c.catalog), dtype=_F64, device=device)
    elif c.judged_labels is None:  # flat rows, dense rows without the ignored items: all listed
        ranked.catalog = c.valid.sum(dim=1).to(_F64)
    if average:
        # Padding scores NaN: unequal to everything, so each padded slot is a block of its own.
        scores = torch.where(c.valid, c.scores, torch.full_like(c.scores, torch.nan))
        listed = torch.where(c.valid, c.labels, torch.zeros_like(c.labels))
        # The lists are whole: no block continues beyond them.
        none = torch.zeros(0, dtype=torch.int64, device=device)
        at = torch.zeros(scores.shape[0], dtype=scores.dtype, device=device)
        tail = boundary_blocks(scores, listed, threshold, at, none)
        blocks = tie_blocks(scores, order, listed.gather(1, order).to(_F64), relevant, tail)
        ranked.blocks = blocks
        ranked.relevant = blocks.read_back(blocks.block_relevant)
    return ranked


def _last_run(ranked: RankedBatch, c: _Candidates, listed_relevant, relevant_rows, relevant_labels):
    """``RankedBatch.ideal_last_run`` of candidate lists: the relevant items of each query whose
    label is that of the last held ideal position, where that position holds a relevant item."""
    queries, keep = ranked.ideal_labels.shape
    if keep == 0:
        return torch.zeros(queries, dtype=_F64, device=c.labels.device)
    last = ranked.ideal_labels[:, -1]
    if c.judged_labels is None:
        run = (listed_relevant & (c.labels == last[:, None])).sum(dim=1)
    else:
        same = relevant_labels == last[relevant_rows]
        run = torch.bincount(relevant_rows[same], minlength=queries)
    return torch.where(ranked.ideal_relevant[:, -1] > 0, run.to(_F64), 0.0)


def _mark_judged(
    ranked: RankedBatch, c: _Candidates, order: torch.Tensor, keep: int, threshold: float
) -> None:
    """The ranked lists' real positions, their indices (-1 past a list's end), judged flags and
    judged non-relevant count N."""
    listed = c.valid.gather(1, order)[:, :keep]
    ranked.retrieved = listed.sum(dim=1).to(_F64)
    ranked.indices = torch.where(listed, c.index.gather(1, order)[:, :keep], -1)
    if c.judged is None:
        ranked.num_nonrelevant = (c.valid & (c.labels < threshold)).sum(dim=1).to(_F64)
        return
    ranked.judged = (c.judged.gather(1, order)[:, :keep] & listed).to(_F64)
    below = c.judged_labels < threshold
    ranked.num_nonrelevant = torch.bincount(c.judged_rows[below], minlength=c.queries).to(_F64)


def _widen(c: _Candidates, width: int) -> _Candidates:
    """The lists padded with invalid slots to ``width``."""
    extra = width - c.labels.shape[1]

    def pad(t, value):
        return torch.nn.functional.pad(t, (0, extra), value=value) if t is not None else None

    return replace(
        c,
        scores=pad(c.scores, -torch.inf),
        index=pad(c.index, 0),
        labels=pad(c.labels, 0.0),
        valid=pad(c.valid, False),
        judged=pad(c.judged, False),
    )


def _order(c: _Candidates, ties: str) -> torch.Tensor:
    """``(queries, width)`` positions in rank order: the tie policy's index order, then by label
    for the bounds, then by descending score (stable sorts), and padding after everything."""
    queries, width = c.labels.shape
    if c.scores is None:
        order = torch.arange(width, device=c.labels.device).expand(queries, width)
    else:
        if c.index_ascending and ties == "last":
            # The reversed rows hold the index descending, which a stable sort keeps within ties.
            order = (width - 1) - c.scores.flip(1).argsort(dim=1, descending=True, stable=True)
        else:
            order = c.scores.argsort(dim=1, descending=True, stable=True)
        # The stable sort keeps index order within ties: enough for "first", "last" and
        # "average" when the index ascends, and for every policy when no two scores are equal.
        index_kept = ties in ("first", "last", "average") and c.index_ascending
        if not index_kept and _any_tie(c.scores.gather(1, order)):
            if c.index_ascending:
                order = torch.arange(width, device=c.labels.device).expand(queries, width)
            else:
                order = c.index.argsort(dim=1, descending=ties == "last", stable=True)
            if ties in _BY_LABEL:
                # Unjudged items rank as the lowest label, as the dense form's masked ones.
                key = c.labels if c.judged is None else c.labels.masked_fill(~c.judged, -torch.inf)
                by_label = key.gather(1, order).argsort(dim=1, descending=ties == "optimistic", stable=True)
                order = order.gather(1, by_label)
            order = order.gather(1, c.scores.gather(1, order).argsort(dim=1, descending=True, stable=True))
    if bool(c.valid.all()):
        return order
    padding_last = (~c.valid).gather(1, order).to(torch.uint8).argsort(dim=1, stable=True)
    return order.gather(1, padding_last)


def _any_tie(ranked_scores: torch.Tensor) -> bool:
    return bool((ranked_scores[:, 1:] == ranked_scores[:, :-1]).any())


def _move_negative_gains_last(ranked: RankedBatch, c: _Candidates, rows, labels, threshold) -> None:
    """Moves the relevant items of negative label to the end of the ideal ranking, after every
    item of gain 0 (non-relevant or unjudged, of the catalog or else of the known items), as
    the dense kernel's ``ideal_order`` does."""
    negative = labels < 0
    if not bool(negative.any()):
        return
    queries, keep = ranked.ideal_labels.shape
    if c.catalog is not None:
        items = torch.full((queries,), c.catalog, device=labels.device)
    else:
        unjudged = c.valid & ~c.judged if c.judged is not None else torch.zeros_like(c.valid)
        items = torch.bincount(c.judged_rows, minlength=queries) + unjudged.sum(dim=1)
    rows, labels = rows[negative], labels[negative]
    counts = torch.bincount(rows, minlength=queries)
    ideal = ranked.ideal_labels.clamp(min=0.0)
    ranked.ideal_labels = _ideal_labels(rows, labels, counts, queries, keep, ideal, items - counts)
    ranked.ideal_relevant = (ranked.ideal_labels >= threshold).to(_F64)  # gain-0 slots: relevant


def _ideal_labels(rows, labels, counts, queries, width, out=None, offset=None) -> torch.Tensor:
    """``(queries, width)``: each query's largest relevant labels, descending, 0-padded (or
    written into ``out`` from each row's position ``offset`` on)."""
    if out is None:
        out = torch.zeros(queries, width, dtype=_F64, device=labels.device)
    if labels.numel() == 0 or width == 0:
        return out
    by_label = labels.argsort(descending=True, stable=True)
    by_row = rows[by_label].argsort(stable=True)
    rows, labels = rows[by_label][by_row], labels[by_label][by_row]
    starts = counts.cumsum(0) - counts
    position = torch.arange(rows.numel(), device=rows.device) - starts[rows]
    if offset is not None:
        position = position + offset[rows]
    kept = position < width
    out[rows[kept], position[kept]] = labels[kept]
    return out


# ----------------------------------------------------------------------------- the other forms


def _dense_candidates(y_pred: torch.Tensor, y: torch.Tensor, ignore_index: int) -> _Candidates:
    """Dense rows as lists, items labelled ``ignore_index`` left out (of ranking and judgements)."""
    batch, num_items = y.shape
    labels = y.to(_F64)
    valid = y != ignore_index
    index = torch.arange(num_items, device=y.device).expand(batch, num_items)
    return _Candidates(y_pred.to(_F64), index, labels, valid, index_ascending=True)


def sparse_entries(y: torch.Tensor, name: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows, columns and float64 values of the stored entries of a 2-D sparse COO/CSR tensor."""
    if y.layout == torch.sparse_coo:
        y = y.coalesce()
        rows, cols = y.indices()
        values = y.values()
    elif y.layout == torch.sparse_csr:
        crow = y.crow_indices()
        rows = _owner_of_each(crow.diff())
        cols, values = y.col_indices(), y.values()
    else:
        raise TypeError(f"{name} must be a dense, sparse COO or sparse CSR tensor, got layout {y.layout}.")
    if y.ndim != 2 or values.ndim != 1:
        raise ValueError(
            f"{name} must be a 2-D sparse (batch, num_items) tensor, got shape {tuple(y.shape)}."
        )
    if values.dtype not in _LABEL_DTYPES:
        raise TypeError(f"{name} must hold real labels (bool, integer or floating), got {values.dtype}.")
    values = values.to(_F64)
    if torch.isnan(values).any():
        raise ValueError(f"{name} must not contain NaN labels.")
    return rows.to(torch.int64), cols.to(torch.int64), values


def _lookup(rows, items, judged_rows, judged_items, judged_labels, span):
    """Labels of ``(rows, items)`` among the judged ``(row, item)`` pairs (0 where not judged),
    and where they were judged."""
    if judged_rows.numel() == 0:
        return torch.zeros(rows.shape, dtype=_F64, device=rows.device), torch.zeros_like(
            rows, dtype=torch.bool
        )
    keys = judged_rows * span + judged_items
    keys, order = keys.sort()
    wanted = rows * span + items
    at = torch.searchsorted(keys, wanted).clamp(max=keys.numel() - 1)
    found = keys[at] == wanted
    return torch.where(found, judged_labels[order][at], torch.zeros((), dtype=_F64)), found


def _lookup_padded(ids, relevant, grades):
    """:func:`_lookup` for padded ids and judgements of one shape per row, by comparing every
    retrieved id with every judged id of its row (faster up to about 8 judged items per row)."""
    same = (ids[:, :, None] == relevant[:, None, :]) & (ids >= 0)[:, :, None]
    found = same.any(dim=2)
    if relevant.shape[1] == 0:  # no judgement at all (argmax needs an entry)
        return torch.zeros(ids.shape, dtype=_F64, device=ids.device), found
    labels = grades.gather(1, same.to(torch.uint8).argmax(dim=2))
    return torch.where(found, labels, torch.zeros((), dtype=_F64)), found


def _sparse_label_candidates(y_pred: object, y: torch.Tensor, ranking: Ranking) -> _Candidates:
    """Dense scores with sparse labels: the items that can reach the cutoff, and their labels.

    Only items scored at least the k-th best score of their row can enter the top k under any
    tie policy (and they hold every tied block that reaches it whole), so they are the lists.
    """
    if not isinstance(y_pred, torch.Tensor) or y_pred.layout != torch.strided:
        raise TypeError(
            f"y_pred must be a dense torch.Tensor of shape (batch, num_items), got {type(y_pred)}."
        )
    rows, cols, values = sparse_entries(y, "y")
    if y_pred.dtype not in _FLOAT_DTYPES:
        raise TypeError(f"y_pred must hold floating scores, got {y_pred.dtype}.")
    if y_pred.ndim != 2:
        raise ValueError(
            f"y_pred must be 2-D with shape (batch, num_items), got shape {tuple(y_pred.shape)}."
        )
    if tuple(y.shape) != tuple(y_pred.shape):
        raise ValueError(
            f"y must have the same shape as y_pred, got y_pred {tuple(y_pred.shape)} and y {tuple(y.shape)}."
        )
    y_pred = y_pred.detach()
    batch, num_items = y_pred.shape
    if y_pred.numel() and torch.isnan(y_pred.amax(dim=1)).any():
        raise ValueError("y_pred must not contain NaN; mask items with -inf instead.")
    depth = ranking.depth
    if ranking.cover_relevant and values.numel():
        depth = max(
            depth, int(torch.bincount(rows[values >= ranking.relevance_threshold], minlength=1).max())
        )
    if depth >= num_items or batch == 0:
        cand_rows, cand_cols = (torch.ones_like(y_pred, dtype=torch.bool)).nonzero(as_tuple=True)
    else:
        boundary = torch.topk(y_pred, depth, dim=1).values[:, -1:]
        cand_rows, cand_cols = (y_pred >= boundary).nonzero(as_tuple=True)
    counts = torch.bincount(cand_rows, minlength=batch)
    starts = counts.cumsum(0) - counts
    position = torch.arange(cand_rows.numel(), device=y_pred.device) - starts[cand_rows]
    labels, found = _lookup(cand_rows, cand_cols, rows, cols, values, num_items)
    width = int(counts.max()) if batch else 0
    scores = y_pred[cand_rows, cand_cols].to(_F64)
    c = _Candidates.scatter(batch, width, cand_rows, position, scores, cand_cols, labels)
    judged = torch.zeros_like(c.valid)
    judged[cand_rows, position] = found
    return replace(
        c, judged_rows=rows, judged_labels=values, index_ascending=True, judged=judged, catalog=num_items
    )


@dataclass(frozen=True)
class _QueryNames:
    """Names a row of a batch in messages: its row, and its arrival index in the whole
    evaluation (``first_query`` + row) or its given id, when the caller knows them."""

    first_query: int | None = None
    query_ids: object = None

    def __call__(self, row: int) -> str:
        if self.query_ids is not None:
            try:
                qid = self.query_ids[row]
                qid = qid.item() if hasattr(qid, "item") else qid
                return f"row {row} of the batch (query id {qid!r})"
            except (IndexError, TypeError, KeyError, ValueError):
                pass  # ids of the wrong shape are refused elsewhere; name the row alone
        if self.first_query is not None:
            return f"row {row} of the batch (query {self.first_query + row} of the evaluation, from 0)"
        return f"row {row} of the batch"


_ID_DTYPES = (torch.int64, torch.int32)


def _check_ids(
    ids: torch.Tensor, name: str, num_items: int | None, where: _QueryNames = _QueryNames()
) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """Refuses ids that are not ``-1``-padded int64 or int32 rows of distinct in-range ids;
    returns them as int64, the valid mask and whether the ids ascend along every row (before its
    padding). ``where`` names a bad row in messages."""
    if ids.dtype not in _ID_DTYPES:
        raise TypeError(f"{name} must hold int64 or int32 item ids (-1 for padding), got {ids.dtype}.")
    ids = ids.to(torch.int64)
    if ids.ndim != 2:
        raise ValueError(f"{name} must be 2-D with shape (batch, k), got shape {tuple(ids.shape)}.")
    valid = ids >= 0
    if (ids < -1).any():
        raise ValueError(f"{name} must hold item ids >= 0 or -1 for padding, got {int(ids.min())}.")
    if num_items is not None and ids.numel() and int(ids.max()) >= num_items:
        raise ValueError(f"{name} must hold item ids < num_items={num_items}, got {int(ids.max())}.")
    if ids.shape[1] < 2:
        return ids, valid, True
    if (valid[:, 1:] & ~valid[:, :-1]).any():
        row = int((valid[:, 1:] & ~valid[:, :-1]).any(dim=1).nonzero()[0])
        raise ValueError(f"{name}: {where(row)} has padding (-1) before an id; pad only at the end of a row.")
    ascending = bool(((ids[:, 1:] > ids[:, :-1]) | ~valid[:, 1:]).all())
    if not ascending:  # ascending ids are distinct; others are sorted to find a repeated one
        ordered = ids.sort(dim=1).values
        repeated = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
        if repeated.any():
            row = int(repeated.any(dim=1).nonzero()[0])
            item = int(ordered[row, 1:][repeated[row]][0])
            raise ValueError(f"{name}: {where(row)} lists item {item} more than once.")
    return ids, valid, ascending


def _retrieved_candidates(
    r: Retrieved, ignore_index: int | None, where: _QueryNames = _QueryNames()
) -> _Candidates:
    """Retrieved ids as lists; labels looked up among the judged items of their query."""
    ids, relevant = r.ids, r.relevant
    for name, value in (("ids", ids), ("relevant", relevant)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"Retrieved.{name} must be a torch.Tensor, got {type(value)}.")
    if relevant.layout != torch.strided:
        if r.grades is not None:
            raise ValueError(
                "Retrieved.grades goes with padded relevant ids; a sparse relevant holds its grades."
            )
        judged_rows, judged_items, judged_labels = sparse_entries(relevant, "Retrieved.relevant")
        num_items = relevant.shape[1]
        batch = relevant.shape[0]
    else:
        relevant, valid_relevant, _ = _check_ids(relevant, "Retrieved.relevant", None, where)
        batch, num_items = relevant.shape[0], None
        if r.grades is None:
            grades = torch.ones(relevant.shape, dtype=_F64, device=relevant.device)
        else:
            grades = r.grades
            if not isinstance(grades, torch.Tensor) or grades.dtype not in _LABEL_DTYPES:
                raise TypeError("Retrieved.grades must be a tensor of real labels.")
            if grades.shape != relevant.shape:
                raise ValueError(
                    "Retrieved.grades must have the shape of relevant, "
                    f"{tuple(relevant.shape)}, got {tuple(grades.shape)}."
                )
            grades = grades.detach().to(_F64)
            if torch.isnan(grades[valid_relevant]).any():
                raise ValueError("Retrieved.grades must not contain NaN labels.")
        judged_rows = valid_relevant.nonzero(as_tuple=True)[0]
        judged_items, judged_labels = relevant[valid_relevant], grades[valid_relevant]
    ids, valid, ascending = _check_ids(ids, "Retrieved.ids", num_items, where)
    if ids.shape[0] != batch:
        raise ValueError(
            f"Retrieved.ids and relevant must have one batch size, got {ids.shape[0]} and {batch}."
        )
    scores = r.scores
    if scores is not None:
        if not isinstance(scores, torch.Tensor) or scores.dtype not in _FLOAT_DTYPES:
            raise TypeError("Retrieved.scores must be a tensor of floating scores.")
        if scores.shape != ids.shape:
            raise ValueError(
                f"Retrieved.scores must have ids' shape {tuple(ids.shape)}, got {tuple(scores.shape)}."
            )
        scores = scores.detach().to(_F64)
        if torch.isnan(scores[valid]).any():
            raise ValueError("Retrieved.scores must not contain NaN; mask items with -inf instead.")
    # Comparing every id with every judged id of its row beats a sorted join for a few of them.
    if relevant.layout == torch.strided and relevant.shape[1] <= 8:
        labels, found = _lookup_padded(ids, relevant, grades)
    else:
        big = max(
            int(ids.max()) if ids.numel() else 0, int(judged_items.max()) if judged_items.numel() else 0
        )
        rows = torch.arange(batch, device=ids.device)[:, None].expand_as(ids)
        labels, found = _lookup(rows, ids.clamp(min=0), judged_rows, judged_items, judged_labels, big + 1)
    if ignore_index is not None:
        valid = valid & ~(found & (labels == ignore_index))
        dropped = judged_labels == ignore_index
        judged_rows, judged_labels = judged_rows[~dropped], judged_labels[~dropped]
    labels = torch.where(valid, labels, torch.zeros_like(labels))
    # Ids that ascend along every row spare the ranking a sort by id.
    return _Candidates(
        scores, ids, labels, valid, judged_rows, judged_labels, ascending, found & valid, num_items
    )


def check_ignore_index(ignore_index: object) -> int | None:
    """``ignore_index`` if it is None or an int (bools refused), else raises ``TypeError``."""
    if ignore_index is not None and (isinstance(ignore_index, bool) or not isinstance(ignore_index, int)):
        raise TypeError(f"ignore_index must be None or an int, got {type(ignore_index).__name__}.")
    return ignore_index


# The flat form's held-back query in a state_dict (empty tensors when none is held).
HELD_KEYS = ("_held_preds", "_held_target", "_held_indexes")


def held_to_state(held: FlatRows | None) -> OrderedDict:
    """The held-back rows as state_dict entries (copies)."""
    rows = (
        held.astuple()
        if held is not None
        else (torch.zeros(0, dtype=_F64),) * 2 + (torch.zeros(0, dtype=torch.int64),)
    )
    return OrderedDict((key, value.clone()) for key, value in zip(HELD_KEYS, rows, strict=True))


def held_from_state(state_dict: Mapping) -> FlatRows | None:
    """The held-back rows of a state_dict (copies; None if it holds none, as in states saved
    before them), refusing rows that no update holds back: the flat form's rows of one query."""
    present = [key for key in HELD_KEYS if key in state_dict]
    if not present:
        return None
    if len(present) < len(HELD_KEYS):
        raise ValueError(f"state_dict holds {present} of the held-back rows {list(HELD_KEYS)}, not all.")
    rows = [state_dict[key] for key in HELD_KEYS]
    for key, row in zip(HELD_KEYS, rows, strict=True):
        if not isinstance(row, torch.Tensor):
            raise TypeError(f"state_dict[{key!r}] must be a tensor, got {type(row).__name__}.")
    if len({tuple(r.shape) for r in rows}) != 1 or rows[0].ndim != 1 or len({r.device for r in rows}) != 1:
        raise ValueError(
            f"state_dict holds held-back rows {HELD_KEYS} of shapes {[tuple(r.shape) for r in rows]} on "
            f"devices {[str(r.device) for r in rows]}; expected 1-D tensors of one length on one device."
        )
    preds, target, indexes = rows
    if preds.numel() == 0:
        return None
    integral = not (indexes.is_floating_point() or indexes.is_complex()) and indexes.dtype != torch.bool
    if preds.dtype not in _FLOAT_DTYPES or target.dtype not in _LABEL_DTYPES or not integral:
        raise ValueError(
            f"state_dict's held-back rows {HELD_KEYS} must be floating scores, real labels and integer "
            f"query ids, got {preds.dtype}, {target.dtype} and {indexes.dtype}."
        )
    if bool(torch.isnan(preds).any()) or (target.is_floating_point() and bool(torch.isnan(target).any())):
        raise ValueError("state_dict's held-back rows ('_held_preds', '_held_target') must not hold NaN.")
    if bool((indexes != indexes[0]).any()):
        raise ValueError(
            f"state_dict['_held_indexes'] must name one query (an update holds back the rows of its "
            f"last query only), got ids {indexes.unique()[:5].tolist()}."
        )
    return FlatRows(preds.detach().clone(), target.detach().clone(), indexes.detach().to(torch.int64).clone())
