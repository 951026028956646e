"""Candidate lists of the forms that are not dense scores with dense labels.

Sparse labels with dense scores (the items that can reach the cutoff), ``Retrieved`` ids (labels
looked up among each query's judged items) and dense rows with items left out by
``ignore_index`` each become :class:`~ignite_ranking.kernels.candidates._Candidates`, which one
exact sort ranks; the checks of their ids and sparse entries live here beside them.

On the device path (:mod:`.backend`) nothing here waits for the host where the shapes are known
in advance: sparse labels under ``ties="first"``/``"last"`` are looked up for the top items the
ranker selects (:class:`~.candidates._TopItems`; their NaN refused later, as dense input's), and the value
checks of a ``Retrieved`` batch are read together, in one synchronization (:class:`_Checks`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from . import constants
from .backend import host_tuned
from .candidates import Ranking, _Candidates, _TopItems
from .inputs import _F64, _FLOAT_DTYPES, _LABEL_DTYPES, equal_to
from .lookup import judged_labels as judged_labels_of

__all__ = ["sparse_entries"]


def _dense_candidates(y_pred: torch.Tensor, y: torch.Tensor, ignore_index: int) -> _Candidates:
    """Dense rows as lists, items labelled ``ignore_index`` left out (of ranking and judgements)."""
    batch, num_items = y.shape
    labels = y.to(_F64)
    valid = ~equal_to(y, ignore_index)
    index = torch.arange(num_items, device=y.device).expand(batch, num_items)
    return _Candidates(y_pred.to(_F64), index, labels, valid, index_ascending=True)


class _Checks:
    """The value checks of a batch (what its tensors hold, not their shapes).

    On the host each refuses at once. On the device path they are gathered and read together
    as the ``with`` block ends, with any other value asked for (:meth:`flag`, :meth:`count`), in
    one synchronization, so that a malformed batch is still refused before the update changes
    anything, with the message of its first failed check in the host's order (an error raised
    inside the block waits for the checks gathered before it).
    """

    def __init__(self, now: bool) -> None:
        self.now = now
        self._flags: list[tuple[torch.Tensor, Callable[[], Exception] | None]] = []
        self._counts: list[torch.Tensor] = []
        self._read: list[int] = []

    def refuse(self, bad: torch.Tensor, error: Callable[[], Exception]) -> None:
        """Refuses the batch with ``error()`` if the 0-dim bool ``bad`` is set."""
        if not self.now:
            self._flags.append((bad, error))
        elif bool(bad):
            raise error()

    def flag(self, value: torch.Tensor) -> Callable[[], bool]:
        """The 0-dim bool ``value``, read with the checks: call the result after the block."""
        if self.now:
            read = bool(value)
            return lambda: read
        self._flags.append((value, None))
        at = len(self._flags) - 1
        return lambda: bool(self._read[at])

    def count(self, value: torch.Tensor) -> Callable[[], int]:
        """The 0-dim int64 ``value``, read with the checks: call the result after the block."""
        if self.now:
            read = int(value)
            return lambda: read
        self._counts.append(value)
        at = len(self._counts) - 1
        return lambda: self._read[len(self._flags) + at]

    def __enter__(self) -> _Checks:
        return self

    def __exit__(self, *raised: object) -> None:
        if self.now or not (self._flags or self._counts):
            return
        read = torch.stack([flag for flag, _ in self._flags])
        if self._counts:
            read = torch.cat([read.to(torch.int64), torch.stack(self._counts)])
        self._read = read.tolist()
        for bad, (_, error) in zip(self._read, self._flags, strict=False):
            if bad and error is not None:
                raise error()


def sparse_entries(y: torch.Tensor, name: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows, columns and float64 values of the stored entries of a 2-D sparse COO/CSR tensor
    (NaN values are the caller's to refuse).

    A COO tensor is coalesced first (on an accelerator a synchronization, the number of distinct
    entries, unless it is coalesced already, as ``to_sparse()`` makes it); a CSR tensor's rows
    are found without one."""
    if y.layout == torch.sparse_coo:
        y = y.coalesce()
        rows, cols = y.indices()
        values = y.values()
    elif y.layout == torch.sparse_csr:
        crow, cols, values = y.crow_indices(), y.col_indices(), y.values()
        entries = torch.arange(cols.numel(), dtype=crow.dtype, device=crow.device)
        rows = torch.searchsorted(crow[1:], entries, right=True)
    else:
        raise TypeError(f"{name} must be a dense, sparse COO or sparse CSR tensor, got layout {y.layout}.")
    if y.ndim != 2 or values.ndim != 1:
        raise ValueError(
            f"{name} must be a 2-D sparse (batch, num_items) tensor, got shape {tuple(y.shape)}."
        )
    if values.dtype not in _LABEL_DTYPES:
        raise TypeError(f"{name} must hold real labels (bool, integer or floating), got {values.dtype}.")
    return rows.to(torch.int64), cols.to(torch.int64), values.to(_F64)


def _refuse_nan_labels(checks: _Checks, values: torch.Tensor, name: str) -> None:
    checks.refuse(torch.isnan(values).any(), lambda: ValueError(f"{name} must not contain NaN labels."))


def _owner_of_each(counts: torch.Tensor) -> torch.Tensor:
    """``repeat_interleave(arange(len(counts)), counts)``, which is slow on CPU."""
    ends = counts.cumsum(0)
    total = int(ends[-1]) if ends.numel() else 0
    return torch.searchsorted(ends, torch.arange(total, device=counts.device), right=True)


def _lookup_padded(ids, relevant, grades):
    """:func:`~.lookup.judged_labels` for padded ids and judgements of one shape per row, by comparing every
    retrieved id with every judged id of its row (faster up to about 8 judged items per row)."""
    same = (ids[:, :, None] == relevant[:, None, :]) & (ids >= 0)[:, :, None]
    found = same.any(dim=2)
    if relevant.shape[1] == 0:  # no judgement at all (argmax needs an entry)
        return torch.zeros(ids.shape, dtype=_F64, device=ids.device), found
    labels = grades.gather(1, same.to(torch.uint8).argmax(dim=2))
    return torch.where(found, labels, constants.scalar(0.0, _F64, ids.device)), found


def _lookup_sorted_rows(ids, relevant, grades):
    """:func:`_lookup_padded` by a search of each row's sorted judged ids (more of them; the
    device path's form: the flat join reads its key span on the host)."""
    ordered, order = relevant.sort(dim=1)
    at = torch.searchsorted(ordered, ids.contiguous()).clamp_(max=relevant.shape[1] - 1)
    found = (ordered.gather(1, at) == ids) & (ids >= 0)
    labels = grades.gather(1, order.gather(1, at))
    return torch.where(found, labels, constants.scalar(0.0, _F64, ids.device)), found


def _sparse_label_candidates(y_pred: object, y: torch.Tensor, ranking: Ranking) -> _Candidates | _TopItems:
    """Dense scores with sparse labels: the items that can reach the cutoff, and their labels.

    Only items scored at least the k-th best score of their row can enter the top k under any
    tie policy (and they hold every tied block that reaches it whole), so they are the lists.
    On the device path under ``"first"``/``"last"`` the lists are the top k items themselves,
    selected by the ranker (:func:`_top_items`).
    """
    if not isinstance(y_pred, torch.Tensor) or y_pred.layout != torch.strided:
        raise TypeError(
            f"y_pred must be a dense torch.Tensor of shape (batch, num_items), got {type(y_pred)}."
        )
    rows, cols, values = sparse_entries(y, "y")
    static = ranking.ties in ("first", "last") and not ranking.cover_relevant and not host_tuned(y_pred)
    if not static:
        _refuse_nan_labels(_Checks(now=True), values, "y")
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
    if static:
        return _top_items(y_pred, rows, cols, values, y.dtype.is_floating_point)
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
    labels, found = judged_labels_of(cand_rows, cand_cols, rows, cols, values, num_items)
    width = int(counts.max()) if batch else 0
    scores = y_pred[cand_rows, cand_cols].to(_F64)
    c = _Candidates.scatter(batch, width, cand_rows, position, scores, cand_cols, labels)
    judged = torch.zeros_like(c.valid)
    judged[cand_rows, position] = found
    return replace(
        c, judged_rows=rows, judged_labels=values, index_ascending=True, judged=judged, catalog=num_items
    )


def _top_items(y_pred, rows, cols, values, float_labels) -> _TopItems:
    """The device path's sparse labels under ``"first"``/``"last"``: the top items are selected
    by the ranker (:class:`~.candidates._TopItems`), and each row's NaN code
    (:func:`~.inputs.nan_rows`) is left for the metric to refuse the batch later, as it refuses
    a dense one (none for an empty batch, as a dense one's)."""
    if y_pred.numel() == 0:
        return _TopItems(y_pred, rows, cols, values, None)
    codes = torch.isnan(y_pred.amax(dim=1)).mul(2)
    if float_labels:
        nan = torch.zeros_like(codes).index_add_(0, rows, torch.isnan(values).to(torch.int64))
        codes = codes.maximum(nan.clamp_(max=1))
    return _TopItems(y_pred, rows, cols, values, codes)


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


def _check_padded_ids(
    ids: torch.Tensor, name: str, num_items: int | None, where: _QueryNames, checks: _Checks
) -> tuple[torch.Tensor, torch.Tensor, Callable[[], bool]]:
    """Refuses ids that are not ``-1``-padded int64 or int32 rows of distinct in-range ids;
    returns them as int64, the valid mask and whether the ids ascend along every row (before its
    padding; known once ``checks`` are read). ``where`` names a bad row in messages."""
    if ids.dtype not in _ID_DTYPES:
        raise TypeError(f"{name} must hold int64 or int32 item ids (-1 for padding), got {ids.dtype}.")
    ids = ids.to(torch.int64)
    if ids.ndim != 2:
        raise ValueError(f"{name} must be 2-D with shape (batch, k), got shape {tuple(ids.shape)}.")
    valid = ids >= 0
    checks.refuse(
        (ids < -1).any(),
        lambda: ValueError(f"{name} must hold item ids >= 0 or -1 for padding, got {int(ids.min())}."),
    )
    if num_items is not None and ids.numel():
        checks.refuse(
            (ids >= num_items).any(),
            lambda: ValueError(f"{name} must hold item ids < num_items={num_items}, got {int(ids.max())}."),
        )
    if ids.shape[1] < 2:
        return ids, valid, lambda: True
    gap = valid[:, 1:] & ~valid[:, :-1]

    def gap_error() -> ValueError:
        row = int(gap.any(dim=1).nonzero()[0])
        return ValueError(
            f"{name}: {where(row)} has padding (-1) before an id; pad only at the end of a row."
        )

    checks.refuse(gap.any(), gap_error)
    ascending = checks.flag(((ids[:, 1:] > ids[:, :-1]) | ~valid[:, 1:]).all())
    # Ascending ids are distinct; others are sorted to find a repeated one (on the device path
    # every batch is: its check is read with the others).
    if not checks.now or not ascending():
        ordered = ids.sort(dim=1).values
        repeated = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)

        def repeated_error() -> ValueError:
            row = int(repeated.any(dim=1).nonzero()[0])
            item = int(ordered[row, 1:][repeated[row]][0])
            return ValueError(f"{name}: {where(row)} lists item {item} more than once.")

        checks.refuse(repeated.any(), repeated_error)
    return ids, valid, ascending


def _retrieved_candidates(r, ranking: Ranking, where: _QueryNames = _QueryNames()) -> _Candidates:
    """Retrieved ids as lists; labels looked up among the judged items of their query (``r`` a
    :class:`~ignite_ranking.kernels.forms.Retrieved`).

    On the device path the value checks are read together (:class:`_Checks`), and nothing else
    is: padded ``relevant`` ids stay in their layout, padding (and the items ``ignore_index``
    drops) labelled NaN, which no comparison with a threshold takes. Lists shorter than the
    cutoff (and R-Precision's) hold the positions the rows' relevant items need: their most
    relevant items of a row are read with the checks."""
    ignore_index = ranking.ignore_index
    ids, relevant = r.ids, r.relevant
    for name, value in (("ids", ids), ("relevant", relevant)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"Retrieved.{name} must be a torch.Tensor, got {type(value)}.")
    host = host_tuned(ids)
    nan = constants.scalar(math.nan, _F64, ids.device)
    with _Checks(now=host) as checks:
        if relevant.layout != torch.strided:
            if r.grades is not None:
                raise ValueError(
                    "Retrieved.grades goes with padded relevant ids; a sparse relevant holds its grades."
                )
            judged_rows, judged_items, judged_labels = sparse_entries(relevant, "Retrieved.relevant")
            _refuse_nan_labels(checks, judged_labels, "Retrieved.relevant")
            batch, num_items = relevant.shape
        else:
            relevant, valid_relevant, _ = _check_padded_ids(
                relevant, "Retrieved.relevant", None, where, checks
            )
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
                checks.refuse(
                    (torch.isnan(grades) & valid_relevant).any(),
                    lambda: ValueError("Retrieved.grades must not contain NaN labels."),
                )
            if host:
                judged_rows = valid_relevant.nonzero(as_tuple=True)[0]
                judged_items, judged_labels = relevant[valid_relevant], grades[valid_relevant]
            else:  # every slot: no selection, whose length the host would read
                rows = constants.arange(0, batch, 1, torch.int64, relevant.device)
                judged_rows = rows[:, None].expand_as(relevant).reshape(-1)
                judged_items = relevant.reshape(-1)
                judged_labels = torch.where(valid_relevant, grades, nan).reshape(-1)
        ids, valid, ascending = _check_padded_ids(ids, "Retrieved.ids", num_items, where, checks)
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
            checks.refuse(
                (torch.isnan(scores) & valid).any(),
                lambda: ValueError("Retrieved.scores must not contain NaN; mask items with -inf instead."),
            )
        most = None
        if not host and batch and (ranking.cover_relevant or ids.shape[1] < ranking.depth):
            relevant_judged = judged_labels >= ranking.relevance_threshold
            if ignore_index is not None:
                relevant_judged &= ~equal_to(judged_labels, ignore_index)
            per_row = torch.zeros(batch, dtype=torch.int64, device=ids.device)
            most = checks.count(per_row.index_add_(0, judged_rows, relevant_judged.to(torch.int64)).max())
    # Comparing every id with every judged id of its row beats a sorted join for a few of them.
    if relevant.layout == torch.strided and relevant.shape[1] <= 8:
        labels, found = _lookup_padded(ids, relevant, grades)
    elif relevant.layout == torch.strided and not host:
        labels, found = _lookup_sorted_rows(ids, relevant, grades)
    else:
        span = num_items  # a sparse relevant's width: every id is below it (checked)
        if span is None:
            span = 1 + max(int(t.max()) if t.numel() else 0 for t in (ids, judged_items))
        rows = constants.arange(0, batch, 1, torch.int64, ids.device)[:, None].expand_as(ids)
        labels, found = judged_labels_of(
            rows, ids.clamp(min=0), judged_rows, judged_items, judged_labels, span
        )
    if ignore_index is not None:
        valid = valid & ~(found & equal_to(labels, ignore_index))
        dropped = equal_to(judged_labels, ignore_index)
        if host:
            judged_rows, judged_labels = judged_rows[~dropped], judged_labels[~dropped]
        else:
            judged_labels = torch.where(dropped, nan, judged_labels)
    labels = torch.where(valid, labels, torch.zeros_like(labels))
    if ignore_index is not None and scores is None:
        # Without scores the order is the ranking: the ignored items leave their places to the
        # items below them, as they do in the flat and dense forms (a stable sort, valid first).
        keep = (~valid).to(torch.uint8).argsort(dim=1, stable=True)
        ids, labels, valid, found = (t.gather(1, keep) for t in (ids, labels, valid, found))
    # Ids that ascend along every row spare the ranking a sort by id.
    c = _Candidates(
        scores, ids, labels, valid, judged_rows, judged_labels, ascending(), found & valid, num_items
    )
    c.most_relevant = most() if most is not None else None
    return c
