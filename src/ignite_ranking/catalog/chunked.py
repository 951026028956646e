"""Exact top-k over a whole item catalog, one chunk of items at a time.

:func:`top_k` ranks every item of a catalog for every query without ever holding the
``(batch, num_items)`` score matrix: it scores a chunk of items, keeps the candidates that can
still reach a query's top k, and merges them into a running ``(batch, k)`` result. The result
is the same as ranking the full matrix under the contract's tie rule, whatever the chunking.

Two selection methods, both exact, share the merge:

- ``"filter"`` (CPU): each row keeps its current k-th best score; one pass over a chunk reads
  the maximum of every 32 consecutive scores, and only the groups above the row's k-th score
  (a few per row once the top k has settled) are compared entry by entry. Candidates are
  merged in batches, not after every chunk.
- ``"topk"`` (CUDA and other accelerators): each chunk's own exact top k (``torch.topk`` and a
  tie fix that needs no data-dependent shapes) is merged at once. Nothing in the loop reads a
  value back to the host, so the device never waits for Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Union

import torch

from ..kernels import check_ties
from ..kernels.backend import host_tuned

__all__ = ["BLOCK_BYTES", "top_k"]

BLOCK_BYTES = 16 * 2**20
"""Default size of one chunk's score block (``batch x chunk_size`` scores), 16 MiB."""

Scorer = Callable[[int, int], torch.Tensor]
Items = Union[torch.Tensor, Scorer]  # noqa: UP007 - a runtime alias, Python 3.10 friendly


def top_k(
    queries: torch.Tensor,
    items: Items,
    k: int,
    *,
    exclude: torch.Tensor | None = None,
    chunk_size: int | None = None,
    ties: str = "first",
    num_items: int | None = None,
    progress: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` best items of the whole catalog for every query, best first.

    The score of item ``j`` for query ``i`` is ``queries[i] @ items[j]`` (for cosine similarity,
    L2-normalize both sides first), or, with a callable ``items``, column ``j - start`` of
    ``items(start, stop)``. Items are ranked by descending score; equal scores by the tie
    policy: ``"first"`` puts the lower item id first (as a stable descending sort of the full
    score row), ``"last"`` the higher one.

    Args:
        queries: ``(batch, d)`` query embeddings. With a callable ``items``, any tensor whose
            first dimension is the batch (e.g. user ids); it only fixes the batch size and device.
        items: ``(num_items, d)`` item embeddings on the queries' device, of their dtype, or a
            callable ``score(start, stop)`` returning the ``(batch, stop - start)`` floating
            scores of items ``start .. stop - 1`` (then ``num_items`` is required).
        k: how many items to return per query (``>= 1``); a larger k than the catalog is
            padded.
        exclude: items that are not candidates for a query (e.g. its training interactions),
            as a torch sparse ``(batch, num_items)`` tensor (every stored entry is excluded,
            whatever its value; uncoalesced is fine) or a ``(batch, m)`` integer tensor of item
            ids padded with ``-1`` anywhere (repeats are fine). Excluded items are removed, not
            ranked last.
        chunk_size: items scored at once. Default: as many as keep the ``(batch, chunk_size)``
            score block near :data:`BLOCK_BYTES` (16 MiB).
        ties: ``"first"`` or ``"last"``.
        num_items: the catalog size; required with a callable ``items``.
        progress: show a tqdm progress bar over the chunks on stderr.

    Returns:
        ``(scores, ids)``, each ``(batch, k)``: the scores in the scores' dtype and the int64 item
        ids, best first. A query with fewer than k candidates has ``-1`` ids and ``-inf`` scores
        after its last candidate; a candidate scored ``-inf`` keeps its id.

    Example:
        >>> import torch
        >>> from ignite_ranking import catalog
        >>> users = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> items = torch.tensor([[3.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.0, 3.0]])
        >>> seen = torch.tensor([[0, -1], [3, 2]])  # items each user already has
        >>> scores, ids = catalog.top_k(users, items, k=3, exclude=seen, chunk_size=2)
        >>> ids
        tensor([[ 2,  1,  3],
                [ 1,  0, -1]])
        >>> scores
        tensor([[2., 1., 0.],
                [1., 0., -inf]])
    """
    k = _check_k(k)
    ties = _check_catalog_ties(ties)
    batch, device, score_items, num_items, dtype = _scorer(queries, items, num_items)
    chunk_size = _chunk_size(chunk_size, batch, dtype)
    pairs = None if exclude is None else _exclusion_pairs(exclude, batch, num_items)
    spans = [(start, min(start + chunk_size, num_items)) for start in range(0, num_items, chunk_size)]
    return _rank(score_items, spans, num_items, k, batch, device, dtype, pairs, ties, progress)


def _rank(
    score_items: Scorer,
    spans: list[tuple[int, int]],
    num_items: int,
    k: int,
    batch: int,
    device: torch.device,
    dtype: torch.dtype,
    pairs: tuple[torch.Tensor, torch.Tensor] | None,
    ties: str,
    progress: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The top k of items ``0 .. num_items - 1``, scored ``score_items(start, stop)`` per span.

    ``spans`` are the chunks, ``(start, stop)`` in increasing order, tiling the items; ``pairs``
    the excluded ``(rows, cols)``. Arguments are already checked.
    """
    depth = min(k, num_items)  # the state never holds more than the catalog
    excluded = _Exclusions(pairs, batch, device, spans)
    if ties == "last":
        spans = spans[::-1]  # later ids first: a newcomer then loses every tie, as under "first"
    method = _method_for(device)
    state = _State(batch, depth, ties, device)
    if not batch:
        spans = []
    pending = _Pending(ties)
    if progress:
        from tqdm import tqdm

        spans = tqdm(spans, desc="scoring the catalog", unit="chunk", leave=False)
    for start, stop in spans:
        scores = score_items(start, stop)
        if state.scores is None:
            state.start(scores.dtype)
        elif scores.dtype != state.scores.dtype:
            raise TypeError(
                f"items({start}, {stop}) returned {scores.dtype}, but earlier chunks were "
                f"{state.scores.dtype}; every chunk must have one dtype."
            )
        rows, cols = excluded.within(start, stop)
        if method == "filter":
            _filter_chunk(scores, start, rows, cols, state, pending)
        else:
            _chunk_top_k(scores, start, rows, cols, state)
    pending.merge_into(state)
    state.check_finished()
    return state.padded(k, dtype)


# ------------------------------------------------------------------------------------ validation


_LABEL_POLICIES = ("optimistic", "pessimistic", "average")
_NAN_MESSAGE = "the item scores contain NaN; scores may be +-inf but not NaN."


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}.")
    return k


def _check_catalog_ties(ties: object) -> str:
    if ties in _LABEL_POLICIES:
        raise ValueError(
            f"ties={ties!r} needs relevance labels, which a catalog ranking does not have; rank "
            "with ties='first' (or 'last') here, then pass the judgements to the metrics "
            "(e.g. RankingMetrics(..., ties=...)) to evaluate tie-aware."
        )
    ties = check_ties(ties)
    return ties


def _chunk_size(chunk_size: object, batch: int, dtype: torch.dtype) -> int:
    """``chunk_size`` checked, or the default that keeps the score block near BLOCK_BYTES."""
    if chunk_size is None:
        itemsize = torch.empty(0, dtype=dtype).element_size()
        size = max(1, BLOCK_BYTES // max(1, batch * itemsize))
        return size - size % _ALIGN if size > _ALIGN else size
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int or None, got {chunk_size!r}.")
    return chunk_size


_ALIGN = 64
"""A default chunk is a multiple of this many items: the CPU matmul writes a block whose rows are
not a multiple of 16 scores up to twice as slowly."""


def _scorer(queries, items, num_items):
    """``(batch, device, score(start, stop), num_items, fallback dtype)`` for either form."""
    if not isinstance(queries, torch.Tensor) or queries.dim() < 1:
        raise TypeError(f"queries must be a tensor with a batch dimension, got {_describe(queries)}.")
    batch, device = queries.shape[0], queries.device
    if callable(items) and not isinstance(items, torch.Tensor):
        if isinstance(num_items, bool) or not isinstance(num_items, int) or num_items < 0:
            raise ValueError(f"num_items must be an int >= 0 when items is a callable, got {num_items!r}.")

        def score(start: int, stop: int) -> torch.Tensor:
            block = items(start, stop)
            _check_block(block, batch, start, stop, device)
            return block

        dtype = queries.dtype if queries.is_floating_point() else torch.float32
        return batch, device, score, num_items, dtype
    if not isinstance(items, torch.Tensor):
        raise TypeError(
            f"items must be a (num_items, d) tensor or a callable score(start, stop), got {_describe(items)}."
        )
    if queries.dim() != 2 or not queries.is_floating_point():
        raise ValueError(f"queries must be a (batch, d) floating tensor, got {_describe(queries)}.")
    if items.dim() != 2 or items.shape[1] != queries.shape[1]:
        raise ValueError(
            f"items must be a (num_items, {queries.shape[1]}) tensor like queries' d, got {_describe(items)}."
        )
    if items.dtype != queries.dtype or items.device != device:
        raise ValueError(
            f"items must have the queries' dtype and device ({queries.dtype}, {device}), "
            f"got {items.dtype} on {items.device}."
        )
    if num_items is not None and num_items != items.shape[0]:
        raise ValueError(f"num_items={num_items!r} disagrees with items' {items.shape[0]} rows.")

    if torch.is_grad_enabled() and (queries.requires_grad or items.requires_grad):

        def product(start: int, stop: int) -> torch.Tensor:
            return queries @ items[start:stop].T

        return batch, device, product, items.shape[0], queries.dtype
    buffer: list[torch.Tensor] = []

    def product_into_buffer(start: int, stop: int) -> torch.Tensor:
        # One block reused for every chunk: a fresh result per chunk costs as much as
        # the product itself (the allocator hands back new pages, each faulted in on first
        # write). Nothing keeps a chunk's block past its step (every use reads or copies it).
        size = batch * (stop - start)
        if not buffer or buffer[0].numel() < size:
            buffer[:] = [torch.empty(size, dtype=queries.dtype, device=device)]
        block = buffer[0][:size].view(batch, stop - start)
        return torch.matmul(queries, items[start:stop].T, out=block)

    return batch, device, product_into_buffer, items.shape[0], queries.dtype


def _check_block(block, batch, start, stop, device) -> None:
    if not isinstance(block, torch.Tensor) or not block.is_floating_point():
        raise TypeError(f"items({start}, {stop}) must return a floating tensor, got {_describe(block)}.")
    if tuple(block.shape) != (batch, stop - start):
        raise ValueError(
            f"items({start}, {stop}) must return shape ({batch}, {stop - start}), got {tuple(block.shape)}."
        )
    if block.device != device:
        raise ValueError(
            f"items({start}, {stop}) returned a tensor on {block.device}, queries are on {device}."
        )


def _describe(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return f"{type(value).__name__}"


def _method_for(device: torch.device) -> str:
    """``"filter"`` on the CPU (reads its counts on the host), ``"topk"`` elsewhere (never does)."""
    return "filter" if host_tuned(device) else "topk"


# ------------------------------------------------------------------------------------ exclusions


class _Exclusions:
    """Each query's excluded items, sorted by item id so that a chunk's entries are one slice.

    The slices of all chunks are found at once, so the loop over chunks reads nothing back.
    """

    def __init__(self, pairs, batch: int, device: torch.device, spans: list[tuple[int, int]]):
        self.rows = self.cols = None
        self.bounds: dict[int, tuple[int, int]] = {}
        if pairs is None or not pairs[0].numel():
            return
        rows, cols = pairs[0].to(device), pairs[1].to(device)
        order = (cols * max(batch, 1) + rows).argsort()
        self.rows, self.cols = rows[order], cols[order]
        edges = torch.tensor([start for start, _ in spans] + [stop for _, stop in spans], device=device)
        found = torch.searchsorted(self.cols, edges).tolist()
        starts = [start for start, _ in spans]
        self.bounds = dict(
            zip(starts, zip(found[: len(spans)], found[len(spans) :], strict=True), strict=True)
        )

    def within(self, start: int, stop: int):
        """``(rows, cols - start)`` of the entries in items ``start .. stop - 1``, or ``None``s."""
        if self.rows is None:
            return None, None
        low, high = self.bounds[start]
        if low == high:
            return None, None
        return self.rows[low:high], self.cols[low:high] - start


def _exclusion_pairs(exclude, batch: int, num_items: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(rows, cols)`` int64 of every excluded entry (duplicates kept), after checking the form."""
    if not isinstance(exclude, torch.Tensor):
        raise TypeError(
            f"exclude must be a sparse (batch, num_items) tensor or a (batch, m) id tensor, "
            f"got {_describe(exclude)}."
        )
    if exclude.layout != torch.strided:
        if exclude.layout != torch.sparse_coo:
            exclude = exclude.to_sparse_coo()
        if tuple(exclude.shape) != (batch, num_items):
            raise ValueError(
                f"a sparse exclude must have shape (batch, num_items) = ({batch}, {num_items}), "
                f"got {tuple(exclude.shape)}."
            )
        indices = exclude._indices()  # stored entries, also those an uncoalesced tensor repeats
        return indices[0].long(), indices[1].long()
    if exclude.dim() != 2 or exclude.shape[0] != batch:
        raise ValueError(
            f"exclude must be a ({batch}, m) tensor of item ids padded with -1, got {_describe(exclude)}."
        )
    if exclude.is_floating_point() or exclude.is_complex() or exclude.dtype == torch.bool:
        raise TypeError(f"exclude ids must be integers, got {exclude.dtype}.")
    ids = exclude.long()
    bad = (ids < -1) | (ids >= num_items)
    if bad.any():
        row, col = (int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"exclude ids must lie in [0, {num_items}) or be -1 (padding), got {int(ids[row, col])} "
            f"at exclude[{row}, {col}]."
        )
    rows, cols = (ids >= 0).nonzero(as_tuple=True)
    return rows, ids[rows, cols]


# ------------------------------------------------------------------------------------ state


class _State:
    """The running ``(batch, depth)`` top items, best first; padding is id -1, score -inf.

    Under ``ties="first"`` chunks come in increasing id order, under ``"last"`` in decreasing
    order; either way every item already held beats a newcomer with an equal score.
    """

    def __init__(self, batch: int, depth: int, ties: str, device: torch.device):
        self.batch, self.depth, self.ties, self.device = batch, depth, ties, device
        self.scores: torch.Tensor | None = None
        self.ids = torch.full((batch, depth), -1, dtype=torch.int64, device=device)
        self.all_full = depth == 0  # a host-side flag, kept only by the "filter" method
        self.nan = torch.zeros((), dtype=torch.bool, device=device)

    def start(self, dtype: torch.dtype) -> None:
        self.scores = torch.full((self.batch, self.depth), -math.inf, dtype=dtype, device=self.device)

    def kth(self) -> torch.Tensor:
        """Each row's k-th score; ``+inf`` where the row holds fewer than k items."""
        last = self.scores[:, -1]
        return torch.where(self.ids[:, -1] >= 0, last, torch.full_like(last, math.inf))

    def merge(self, scores: torch.Tensor, ids: torch.Tensor, valid: torch.Tensor, plain: bool) -> None:
        """Keeps the best ``depth`` of the held items and ``(batch, m)`` newcomers.

        Newcomers come after the held items and in tie order among themselves, so a stable
        descending sort puts equal scores in the policy's order. Padding slots score ``-inf``;
        ``plain`` says that every held slot is an item and no newcomer item scores ``-inf``, so
        no padding ties with an item ahead of it and the sort by score alone is enough.
        Otherwise a second stable sort moves the items ahead of the padding.
        """
        all_scores = torch.cat([self.scores, scores], dim=1)
        all_ids = torch.cat([self.ids, ids], dim=1)
        order = all_scores.argsort(dim=1, descending=True, stable=True)
        if not plain:
            all_valid = torch.cat([self.ids >= 0, valid], dim=1).gather(1, order)
            order = order.gather(1, all_valid.to(torch.uint8).argsort(dim=1, descending=True, stable=True))
        order = order[:, : self.depth]
        self.scores = all_scores.gather(1, order)
        self.ids = all_ids.gather(1, order)

    def check_finished(self) -> None:
        if self.nan.any():
            raise ValueError(_NAN_MESSAGE)

    def padded(self, k: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        if self.scores is None:
            self.start(dtype)
        extra = k - self.depth
        if not extra:
            return self.scores, self.ids
        pad_scores = torch.full((self.batch, extra), -math.inf, dtype=self.scores.dtype, device=self.device)
        pad_ids = torch.full((self.batch, extra), -1, dtype=torch.int64, device=self.device)
        return torch.cat([self.scores, pad_scores], 1), torch.cat([self.ids, pad_ids], 1)


# ------------------------------------------------------------------------------------ "filter"


class _Pending:
    """Candidates found but not yet merged, as flat ``(rows, ids, scores)`` lists in tie order."""

    def __init__(self, ties: str):
        self.ties = ties
        self.parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
        self.size = 0
        self.needs_validity_sort = False

    def add(self, rows, ids, scores, from_open_rows: bool) -> None:
        if not rows.numel():
            return
        if self.ties == "last":  # this chunk's entries by decreasing id, as the chunks come
            rows, ids, scores = rows.flip(0), ids.flip(0), scores.flip(0)
        self.parts.append((rows, ids, scores))
        self.size += rows.numel()
        self.needs_validity_sort |= from_open_rows

    def merge_into(self, state: _State) -> None:
        if not self.parts:
            return
        rows, ids, scores = (torch.cat(column) for column in zip(*self.parts, strict=True))
        plain = not self.needs_validity_sort
        self.parts, self.size, self.needs_validity_sort = [], 0, False
        by_row = rows.argsort(stable=True)  # keeps each row's tie order
        rows, ids, scores = rows[by_row], ids[by_row], scores[by_row]
        per_row = torch.bincount(rows, minlength=state.batch)
        width = int(per_row.max())
        slot = torch.arange(rows.numel(), device=rows.device) - (per_row.cumsum(0) - per_row)[rows]
        block_scores = torch.full((state.batch, width), -math.inf, dtype=scores.dtype, device=rows.device)
        block_ids = torch.full((state.batch, width), -1, dtype=torch.int64, device=rows.device)
        block_scores[rows, slot] = scores
        block_ids[rows, slot] = ids
        state.merge(block_scores, block_ids, block_ids >= 0, plain)
        state.all_full = bool((state.ids[:, -1] >= 0).all())


def _filter_chunk(scores, start, ex_rows, ex_cols, state: _State, pending: _Pending) -> None:
    """Finds the chunk's entries that can still enter a row's top k; merges now and then."""
    width = scores.shape[1]
    if not state.all_full:
        open_rows = (state.ids[:, -1] < 0).nonzero().squeeze(1)
        rows, cols, values = _open_row_candidates(scores, open_rows, ex_rows, ex_cols, state.depth)
        pending.add(rows, cols + start, values, from_open_rows=True)
    rows, cols, values = _above(scores, state.kth())
    if rows.numel():
        if ex_rows is not None:
            # Excluded entries never become candidates: drop those that passed the filter.
            keep = ~torch.isin(rows * width + cols, ex_rows * width + ex_cols)
            rows, cols, values = rows[keep], cols[keep], values[keep]
        pending.add(rows, cols + start, values, from_open_rows=False)
    if not state.all_full or pending.size >= state.batch * state.depth:
        pending.merge_into(state)


_GROUP = 32  # columns summarized by one maximum in the filter's single pass


def _above(scores: torch.Tensor, threshold: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(rows, cols, values)`` of the entries ``> threshold[row]``, columns ascending per row.

    One pass reads the block: the maximum of every 32 consecutive scores of a row (reading
    memory once, writing 1/32 of it). Only the groups whose maximum is above the row's
    threshold, a few per row once the top k has settled, are read again, by their flat offsets
    in the block, and compared entry by entry. NaN, which every maximum it enters propagates,
    is refused.
    """
    width = scores.shape[1]
    whole = width - width % _GROUP
    maxima = scores[:, :whole].unflatten(1, (-1, _GROUP)).amax(-1)
    tail = scores[:, whole:]
    if (maxima.numel() and maxima.amax().isnan()) or (tail.numel() and tail.isnan().any()):
        raise ValueError(_NAN_MESSAGE)
    hits = (maxima > threshold[:, None]).view(-1).nonzero().squeeze(1)  # row * groups + group
    hit_rows = hits.div(max(1, maxima.shape[1]), rounding_mode="floor")
    first = hits * _GROUP if whole == width else hits * _GROUP + hit_rows * (width - whole)
    if whole == width and scores.is_contiguous():  # each hit group is a row of the block's view
        entries = scores.view(-1, _GROUP).index_select(0, hits)
    else:
        offsets = (first[:, None] + torch.arange(_GROUP, device=scores.device)).view(-1)
        entries = scores.reshape(-1).index_select(0, offsets).view(-1, _GROUP)
    passed = (entries > threshold.index_select(0, hit_rows)[:, None]).view(-1).nonzero().squeeze(1)
    values = entries.view(-1).index_select(0, passed)
    flat = first.index_select(0, passed.div(_GROUP, rounding_mode="floor")) + passed % _GROUP
    rows = flat.div(width, rounding_mode="floor")
    cols = flat - rows * width
    if whole == width:
        return rows, cols, values
    passed = tail > threshold[:, None]
    tail_rows, tail_cols = passed.nonzero(as_tuple=True)
    return (
        torch.cat([rows, tail_rows]),
        torch.cat([cols, tail_cols + whole]),
        torch.cat([values, tail[passed]]),
    )


def _open_row_candidates(scores, open_rows, ex_rows, ex_cols, depth):
    """``(rows, cols, values)`` of the entries of rows holding fewer than k items that may
    enter: at least their chunk's top k.

    With excluded entries set to ``-inf``, a lower bound of the ``min(k, width)``-th best score
    of the row is at most its k-th best candidate's, so every candidate of the chunk's top k
    scores at least that.
    """
    block = scores if open_rows.numel() == scores.shape[0] else scores[open_rows]
    valid = None
    if ex_rows is not None:
        valid = torch.ones_like(block, dtype=torch.bool)
        position = torch.full((scores.shape[0],), -1, dtype=torch.int64, device=scores.device)
        position[open_rows] = torch.arange(open_rows.numel(), device=scores.device)
        mine = position[ex_rows]
        inside = mine >= 0
        valid[mine[inside], ex_cols[inside]] = False
        block = block.masked_fill(~valid, -math.inf)
    bound = _kth_lower_bound(block, min(depth, block.shape[1]))
    wanted = block >= bound
    if valid is not None:
        wanted &= valid
    flat = wanted.reshape(-1).nonzero().squeeze(1)  # one pass finds the entries
    rows = flat.div(block.shape[1], rounding_mode="floor")
    cols = flat - rows * block.shape[1]
    values = block.view(-1).index_select(0, flat) if block.is_contiguous() else block[rows, cols]
    return open_rows[rows], cols, values


def _kth_lower_bound(block: torch.Tensor, depth: int) -> torch.Tensor:
    """``(rows, 1)``, at most each row's ``depth``-th best score, and close to it.

    The ``depth``-th best of the maxima of disjoint groups of a row's scores: each of the
    ``depth`` best groups holds a score at least that. A top k over about ``8 * depth`` maxima
    instead of the whole row (the slowest step of a first chunk). A group is every
    ``groups``-th column (any partition bounds it), so the maxima are one vectorized pass.
    """
    size = block.shape[1] // (8 * depth)
    if size < 2:
        return block.topk(depth, dim=1).values[:, -1:]
    groups = block.shape[1] // size
    maxima = block[:, : groups * size].unflatten(1, (size, groups)).amax(1)
    return maxima.topk(depth, dim=1).values[:, -1:]


# ------------------------------------------------------------------------------------ "topk"


def _chunk_top_k(scores, start, ex_rows, ex_cols, state: _State) -> None:
    """Merges the chunk's exact top k: no data-dependent shape, no read-back to the host."""
    width = scores.shape[1]
    valid = None
    if ex_rows is not None:
        valid = torch.ones_like(scores, dtype=torch.bool)
        valid[ex_rows, ex_cols] = False
        scores = scores.masked_fill(~valid, -math.inf)
    depth = min(state.depth, width)
    values = scores.topk(depth, dim=1).values
    state.nan |= values[:, 0].isnan().any()  # topk ranks NaN first
    bound = values[:, -1:]
    above = scores > bound
    at_bound = scores == bound
    if valid is not None:
        at_bound &= valid
    wanted = depth - above.sum(dim=1, keepdim=True)
    if state.ties == "last":
        order_among_tied = at_bound.flip(1).cumsum(dim=1, dtype=torch.int32).flip(1)
    else:
        order_among_tied = at_bound.cumsum(dim=1, dtype=torch.int32)
    chosen = above | (at_bound & (order_among_tied <= wanted))
    # Exactly the chosen entries (fewer only where the row has fewer valid ones) come first.
    picked = chosen.to(torch.uint8).topk(depth, dim=1).indices
    picked = picked.sort(dim=1, descending=state.ties == "last").values
    kept = chosen.gather(1, picked)
    new_scores = torch.where(kept, scores.gather(1, picked), torch.full_like(values, -math.inf))
    new_ids = torch.where(kept, picked + start, torch.full_like(picked, -1))
    state.merge(new_scores, new_ids, kept, plain=False)
