"""Exact top-k over a whole item catalog, one chunk of items at a time.

:func:`top_k` ranks every item of a catalog for every query without ever holding the
``(batch, num_items)`` score matrix: it scores a chunk of items, keeps the candidates that can
still reach a query's top k, and merges them into a running ``(batch, k)`` result. The result
is the same as ranking the full matrix under the contract's tie rule, whatever the chunking.

Two selection methods, both exact, share the merge (:class:`.running.RunningTop`):

- ``"filter"`` (CPU, :mod:`.filtering`): each row keeps its current k-th best score; one pass
  over a chunk reads the maximum of every 32 consecutive scores, and only the groups above the
  row's k-th score (a few per row once the top k has settled) are compared entry by entry.
  Candidates are merged in batches, not after every chunk.
- ``"topk"`` (CUDA and other accelerators): each chunk's own exact top k (``torch.topk`` and a
  tie fix that needs no data-dependent shapes) is merged at once. Nothing in the loop reads a
  value back to the host, so the device never waits for Python.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Union

import torch

from ..kernels import check_ties
from ..kernels.backend import host_tuned
from ..kernels.inputs import check_readable
from .filtering import Pending, filter_chunk
from .running import RunningTop

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
    state = RunningTop(batch, depth, ties, device)
    if not batch:
        spans = []
    pending = Pending()
    if progress:
        from tqdm import tqdm

        spans = tqdm(spans, desc="scoring the catalog", unit="chunk", leave=False)
    for start, stop in spans:
        scores = score_items(start, stop)
        if state.scores is None:
            state.start(scores.dtype, num_items)
        elif scores.dtype != state.scores.dtype:
            raise TypeError(
                f"items({start}, {stop}) returned {scores.dtype}, but earlier chunks were "
                f"{state.scores.dtype}; every chunk must have one dtype."
            )
        rows, cols = excluded.within(start, stop)
        if method == "filter":
            filter_chunk(scores, start, rows, cols, state, pending)
        else:
            _chunk_top_k(scores, start, rows, cols, state)
    pending.merge_into(state)
    state.check_finished()
    return state.padded(k, dtype)


# ------------------------------------------------------------------------------------ validation


_LABEL_POLICIES = ("optimistic", "pessimistic", "average")


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}.")
    return int(k)


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
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int or None, got {chunk_size!r}.")
    return int(chunk_size)


_ALIGN = 64
"""A default chunk is a multiple of this many items: the CPU matmul writes a block whose rows are
not a multiple of 16 scores up to twice as slowly."""


def _scorer(queries, items, num_items):
    """``(batch, device, score(start, stop), num_items, fallback dtype)`` for either form."""
    if not isinstance(queries, torch.Tensor) or queries.dim() < 1:
        raise TypeError(f"queries must be a tensor with a batch dimension, got {_describe(queries)}.")
    batch, device = queries.shape[0], queries.device
    if callable(items) and not isinstance(items, torch.Tensor):
        if isinstance(num_items, bool) or not isinstance(num_items, numbers.Integral) or num_items < 0:
            raise ValueError(f"num_items must be an int >= 0 when items is a callable, got {num_items!r}.")
        num_items = int(num_items)

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
    check_readable("queries", queries)
    check_readable("items", items)
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


# ------------------------------------------------------------------------------------ "topk"


def _chunk_top_k(scores, start, ex_rows, ex_cols, state: RunningTop) -> None:
    """Merges the chunk's exact top k: no data-dependent shape, no read-back to the host."""
    width = scores.shape[1]
    valid = None
    if ex_rows is not None:
        valid = torch.ones_like(scores, dtype=torch.bool)
        valid[ex_rows, ex_cols] = False
        state.nan |= scores[ex_rows, ex_cols].isnan().any()  # refused too, as on the host path
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
