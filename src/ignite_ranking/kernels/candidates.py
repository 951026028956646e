"""The candidate-list ranker: padded per-query lists of items ranked by one exact sort.

Every form but the dense one becomes :class:`_Candidates` (each query's items in a padded
``(queries, width)`` layout with a validity mask, and the query's judgements as flat
``(row, label)`` pairs; see :mod:`~ignite_ranking.kernels.sources`), and :func:`rank_candidates`
ranks them under the tie policy into the :class:`~ignite_ranking.kernels.batch.RankedBatch` the
scorers read. Padding sorts after every item, even one scored ``-inf``, and forms a tie block of
its own. :class:`Ranking` says what to rank and gather, for these lists and for the dense kernel.

On the device path (:mod:`.backend`) the ranker reads nothing on the host unless the width it
holds depends on the data (lists shorter than the cutoff, and R-Precision's, hold as many positions
as a row's relevant items need: their most, read once, a ``Retrieved`` batch's with its checks):
judgements are counted per row by ``index_add`` rather than selected and counted by ``bincount``,
an entry that is not relevant is labelled NaN rather than left out, and rows are sorted whether or
not they tie or hold padding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from . import constants
from .backend import host_tuned
from .batch import RankedBatch
from .boundary import boundary_blocks
from .inputs import _F64
from .lookup import judged_labels
from .ranking import _BY_LABEL, top_indices
from .ties import tie_blocks

__all__ = ["Ranking", "rank_candidates"]


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


@dataclass
class _Candidates:
    """Each query's items as padded ``(queries, width)`` lists, and its judgements.

    ``scores`` (float64, or None when the lists are in rank order, padding at their end),
    ``index`` (int64, the tie index), ``labels`` (float64, 0 for unjudged) and ``valid`` (bool)
    have one shape; ``judged_rows`` / ``judged_labels`` list every judged item of every query (for
    R and IDCG; a NaN label is no judged item: the device path's padding), or are None when the
    judged items are exactly the valid listed ones (flat rows, dense rows).
    ``index_ascending`` says that ``index`` ascends along each row (no sort needed for it).
    ``judged`` (bool, the lists' shape) flags the listed items found among the judgements, or
    is None when every listed item is judged; a listed item that is not judged is never relevant
    (the contract's unjudged items), whatever the threshold. ``catalog`` is the number of items
    a row ranks among (None: unknown, only the listed and judged items are known); the ideal
    ranking puts the relevant items of negative label (under a negative threshold) after all
    the others, which gain 0. ``refused``: the rows' NaN codes, for the metric to refuse later
    (:attr:`~.batch.RankedBatch.refused`), or None. ``most_relevant``: the most relevant judged
    items of a query, where already read on the host, or None.
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
    refused: torch.Tensor | None = None
    most_relevant: int | None = None

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


@dataclass
class _TopItems:
    """Lists yet to be selected: each row's top ``Ranking.depth`` items of dense ``scores`` under
    ``"first"``/``"last"``, in rank order, labelled by the judged entries ``(rows, items,
    labels)`` (an item without one is unjudged): the device path's sparse labels, in static
    shapes. ``refused``: the rows' NaN codes (None for an empty batch)."""

    scores: torch.Tensor
    rows: torch.Tensor
    items: torch.Tensor
    labels: torch.Tensor
    refused: torch.Tensor | None

    def select(self, ranking: Ranking) -> _Candidates:
        batch, num_items = self.scores.shape
        top = top_indices(self.scores, ranking.depth, ranking.ties)
        rows = constants.arange(0, batch, 1, torch.int64, top.device)[:, None].expand_as(top)
        labels, found = judged_labels(rows, top, self.rows, self.items, self.labels, num_items)
        valid = torch.ones_like(top, dtype=torch.bool)
        judged = (self.rows, self.labels)
        return _Candidates(None, top, labels, valid, *judged, False, found, num_items, self.refused)


def rank_candidates(c: _Candidates | _TopItems, ranking: Ranking) -> RankedBatch:
    """Ranks candidate lists exactly, padding last, and gathers what the scorers read.

    The positions held per row are the cutoff's, but never fewer than the row's judged relevant
    items need (ideal gains, R-Precision) nor more than those and the lists hold; under
    ``"average"`` the whole lists are kept, so every tied block is whole.
    """
    if isinstance(c, _TopItems):
        c = c.select(ranking)
    queries, width = c.labels.shape
    device = c.labels.device
    threshold = ranking.relevance_threshold
    if isinstance(threshold, int) and not -(2**63) <= threshold < 2**63:
        threshold = float(threshold)  # past int64: above (or below) every label, compared as a float
    listed_relevant = c.valid & (c.labels >= threshold)
    if c.judged is not None:
        listed_relevant &= c.judged  # unjudged: never relevant, even under a threshold <= 0
    relevant_rows = relevant_labels = None
    if c.judged_labels is None:
        counts = listed_relevant.sum(dim=1)
    else:
        is_relevant = c.judged_labels >= threshold
        if host_tuned(is_relevant):
            relevant_rows, relevant_labels = c.judged_rows[is_relevant], c.judged_labels[is_relevant]
            counts = torch.bincount(relevant_rows, minlength=queries)
        else:  # no selection (the host would read its length): the others labelled NaN
            nan = constants.scalar(math.nan, _F64, device)
            relevant_rows, relevant_labels = c.judged_rows, torch.where(is_relevant, c.judged_labels, nan)
            counts = _count_rows(relevant_rows, is_relevant, queries)
    holds_all = c.judged_labels is None or (c.catalog is not None and width >= c.catalog)
    if host_tuned(counts) or ranking.cover_relevant or (width < ranking.depth and not holds_all):
        # Lists shorter than the cutoff hold the positions their rows' relevant items need (the
        # ideal ranking), R-Precision's every relevant item: a width of the data, read on the
        # host (on the device path, a Retrieved batch's with its checks).
        most = c.most_relevant
        if most is None:
            most = int(counts.max()) if queries else 0
        depth = max(min(ranking.depth, max(width, most)), most if ranking.cover_relevant else 0)
    else:  # the lists hold as many positions as the cutoff, or every relevant item
        depth = min(ranking.depth, width)
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
    ranked.refused = c.refused
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
        run = _count_rows(relevant_rows, relevant_labels == last[relevant_rows], queries)
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
    ranked.num_nonrelevant = _count_rows(c.judged_rows, below, c.queries).to(_F64)


def _count_rows(rows: torch.Tensor, flags: torch.Tensor, queries: int) -> torch.Tensor:
    """``(queries,)`` int64: how many entries of each row (``rows`` their rows) are flagged; on
    the device path by ``index_add`` (``bincount`` reads its output's length on the host)."""
    if host_tuned(rows):
        return torch.bincount(rows[flags], minlength=queries)
    return torch.zeros(queries, dtype=torch.int64, device=rows.device).index_add_(
        0, rows, flags.to(torch.int64)
    )


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
        if not index_kept and (not host_tuned(order) or _any_tie(c.scores.gather(1, order))):
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
    if c.scores is None or (host_tuned(order) and bool(c.valid.all())):
        return order  # lists without scores are padded at their end
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
        items = _count_rows(c.judged_rows, ~torch.isnan(c.judged_labels), queries) + unjudged.sum(dim=1)
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
    if not host_tuned(labels):
        return _ideal_labels_in_place(rows[by_label], labels[by_label], out, offset)
    by_row = rows[by_label].argsort(stable=True)
    rows, labels = rows[by_label][by_row], labels[by_label][by_row]
    starts = counts.cumsum(0) - counts
    position = torch.arange(rows.numel(), device=rows.device) - starts[rows]
    if offset is not None:
        position = position + offset[rows]
    kept = position < width
    out[rows[kept], position[kept]] = labels[kept]
    return out


def _ideal_labels_in_place(rows, labels, out, offset) -> torch.Tensor:
    """:func:`_ideal_labels` of entries in descending label order, NaN ones left out, on the device
    path: in static shapes, the entries not held written to one spare slot and dropped."""
    queries, width = out.shape
    left_out = torch.isnan(labels)
    by_row = (rows * 2 + left_out).argsort(stable=True)  # a row's NaN entries after its others
    rows, labels, left_out = rows[by_row], labels[by_row], left_out[by_row]
    position = torch.arange(rows.numel(), device=rows.device) - torch.searchsorted(rows, rows)
    if offset is not None:
        position = position + offset[rows]
    slot = torch.where(left_out | (position >= width), queries * width, rows * width + position)
    flat = torch.cat([out.reshape(-1), out.new_zeros(1)]).scatter_(0, slot, labels)
    return flat[:-1].view(queries, width)
