"""Candidate lists of the forms that are not dense scores with dense labels.

Sparse labels with dense scores (the items that can reach the cutoff), ``Retrieved`` ids (labels
looked up among each query's judged items) and dense rows with items left out by
``ignore_index`` each become :class:`~ignite_ranking.kernels.candidates._Candidates`, which one
exact sort ranks; the checks of their ids and sparse entries live here beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from .candidates import Ranking, _Candidates
from .inputs import _F64, _FLOAT_DTYPES, _LABEL_DTYPES

__all__ = ["sparse_entries"]


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


def _owner_of_each(counts: torch.Tensor) -> torch.Tensor:
    """``repeat_interleave(arange(len(counts)), counts)``, which is slow on CPU."""
    ends = counts.cumsum(0)
    total = int(ends[-1]) if ends.numel() else 0
    return torch.searchsorted(ends, torch.arange(total, device=counts.device), right=True)


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


def _check_padded_ids(
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


def _retrieved_candidates(r, ignore_index: int | None, where: _QueryNames = _QueryNames()) -> _Candidates:
    """Retrieved ids as lists; labels looked up among the judged items of their query (``r`` a
    :class:`~ignite_ranking.kernels.forms.Retrieved`)."""
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
        relevant, valid_relevant, _ = _check_padded_ids(relevant, "Retrieved.relevant", None, where)
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
    ids, valid, ascending = _check_padded_ids(ids, "Retrieved.ids", num_items, where)
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
