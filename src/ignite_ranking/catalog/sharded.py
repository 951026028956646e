"""Exact top-k over an item catalog split across processes, one shard of items on each.

Every process of a ``torch.distributed`` group holds the same queries and its own contiguous
range of the catalog's items. :func:`sharded_top_k` ranks each shard with the chunked top-k of
:mod:`.chunked`, then one all-gather of every process's ``(batch, k)`` candidates (scores and
global ids) and an exact merge give every process the top k of the whole catalog, bit for bit
what :func:`~ignite_ranking.catalog.top_k` returns on the concatenated item table. The score
matrix never travels; nor does any item.

Each call makes two collectives, both all-gathers:

1. the layout: each process's item range, the shape, dtype and a checksum of its queries, its
   settings, and whether its own arguments passed their checks (12 int64 per process). Every
   process checks the same table, so bad arguments on one process, a gap or an overlap between
   shards, or queries that differ between processes make every process raise, none waits;
2. the candidates, packed in one byte buffer: a status (a process whose ranking failed, e.g. on
   NaN scores, says so here, and every process raises), the ids and the scores.

Exactness: a score's last bit can depend on the shape of the matrix product it comes from (the
BLAS picks its kernels by shape), so each shard scores its items in the blocks :func:`top_k`
would use on the whole catalog: chunk boundaries at the same global ids, and a block that a
shard boundary cuts is computed at its full width, the rows outside the shard set to zero.
"""

from __future__ import annotations

import operator

import torch
import torch.distributed as dist

from .chunked import (
    _check_catalog_ties,
    _check_k,
    _chunk_size,
    _describe,
    _exclusion_pairs,
    _rank,
    _scorer,
)
from .running import NAN_MESSAGE

__all__ = ["sharded_top_k"]

# What each process tells the others first: one int64 per field.
_FIELDS = (
    "ok",
    "item_offset",
    "shard_size",
    "num_items",  # -1: None
    "batch",
    "d",
    "dtype",
    "device",
    "k",
    "ties",
    "chunk_size",
    "checksum",
)
_AT = {name: i for i, name in enumerate(_FIELDS)}
_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_DEVICE_TYPES = ("cpu", "cuda")
_TIES = ("first", "last")

# The status each process sends with its candidates.
_OK, _NAN, _BAD_EXCLUDE, _FAILED = 0, 1, 2, 3
_STATUS_BYTES = 8


def sharded_top_k(
    queries: torch.Tensor,
    items: torch.Tensor,
    k: int,
    *,
    item_offset: int,
    num_items: int | None = None,
    exclude: torch.Tensor | None = None,
    chunk_size: int | None = None,
    ties: str = "first",
    group: dist.ProcessGroup | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` best items of a catalog split across processes, for every query, best first.

    Call it on every process of the group, each with the same ``queries`` and its own shard of
    the item table: the rows of global item ids ``item_offset .. item_offset + len(items) - 1``.
    The shards must tile the catalog ``0 .. num_items - 1``: no gap, no overlap, in any order
    over the ranks, of any sizes (an empty shard is fine, its offset is not read). Every process
    returns the same result, equal bit for bit (ids and scores) to
    ``top_k(queries, whole_item_table, k, exclude=exclude, chunk_size=chunk_size, ties=ties)``,
    under both tie policies and whatever the shards: equal scores are ordered by global item id
    also across shards (lower id first under ``"first"``, higher under ``"last"``).

    Each process ranks its shard in chunks, as :func:`~ignite_ranking.catalog.top_k` does, and
    keeps its best ``min(k, largest shard)`` candidates per query; one all-gather brings every
    process's candidates to all, and a stable sort by score, ties by global id, merges them.
    Each process receives ``world_size x batch x min(k, largest shard) x (score bytes + 8)``
    bytes of candidates (int64 ids; plus 8 bytes of status and at most 7 of alignment per
    process), e.g. 2 x 4,096 x 100 x 12 B = 9.4 MiB for two processes, float32 and k = 100,
    and ``world_size x 96`` bytes for the layout check that comes first. The score matrix is
    never gathered.

    Without ``torch.distributed`` initialized (and ``group=None``) the process is a world of
    one: its shard must be the whole catalog. Under ``ignite.distributed`` the default group is
    the one ``idist.Parallel`` set up. The collectives run on CPU tensors under gloo and on the
    current CUDA device under nccl; on CUDA nothing inside the chunk loop reads a value back to
    the host (a call reads a few values back once: the layout table, the statuses).

    Args:
        queries: ``(batch, d)`` query embeddings, the same on every process (same shape, dtype,
            device type and values; checked with a checksum).
        items: this process's ``(shard_size, d)`` item embeddings, on the queries' device, of
            their dtype; ``shard_size`` may be 0.
        k: how many items to return per query (``>= 1``); a larger k than the catalog is
            padded, as by ``top_k``.
        item_offset: the global id of ``items[0]``.
        num_items: the size of the whole catalog; ``None``: the sum of the shards' sizes. Given,
            it must be the same on every process and the shards must end at it.
        exclude: items that are not candidates for a query, in global ids, in either form
            ``top_k`` takes: a torch sparse ``(batch, num_items)`` tensor or a ``(batch, m)``
            integer tensor of ids padded with ``-1``. Each process keeps the entries of its own
            shard and ignores the rest, so the whole exclusion list or only the shard's part
            may be passed.
        chunk_size: items scored at once, the same on every process (the chunks are aligned
            to global ids, so that the scores are those of ``top_k`` with this chunk size).
            Default: ``top_k``'s default for this batch and dtype.
        ties: ``"first"`` or ``"last"``, the same on every process.
        group: the ``torch.distributed`` process group; ``None``: the default group.

    Returns:
        ``(scores, ids)``, each ``(batch, k)`` on the queries' device: the scores in their dtype
        and the int64 global item ids, best first, padded with ``-1`` ids and ``-inf`` scores
        where a query has fewer than k candidates. The same on every process.

    Raises:
        ValueError: on every process, when the shards do not tile the catalog (the message names
            the ranks and the items between them), when the processes disagree on ``queries``,
            ``k``, ``ties``, ``num_items`` or ``chunk_size``, or when another process's arguments
            were refused or its ranking failed (its scores hold NaN, say). The process whose own
            argument was wrong raises the error ``top_k`` would (``ValueError`` or
            ``TypeError``), naming the argument.

    Example:
        >>> import torch
        >>> from ignite_ranking import catalog
        >>> users = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> items = torch.tensor([[3.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.0, 3.0]])
        >>> seen = torch.tensor([[0, -1], [3, 2]])
        >>> # No process group here: one process holding the whole catalog. Under
        >>> # idist.Parallel, rank r passes items[start:stop] and item_offset=start.
        >>> scores, ids = catalog.sharded_top_k(users, items, k=3, item_offset=0, exclude=seen)
        >>> ids
        tensor([[ 2,  1,  3],
                [ 1,  0, -1]])
        >>> torch.equal(ids, catalog.top_k(users, items, k=3, exclude=seen)[1])
        True
    """
    comm = _Comm(group)
    with torch.no_grad():  # a ranking has no gradient; the product may then reuse its block
        # 1. Every process checks its own arguments, then all share the outcome and the layout.
        try:
            shard = _Shard(queries, items, k, item_offset, num_items, chunk_size, ties)
            row = shard.layout(comm.device())  # not the data's: a refused process has none
        except Exception as error:  # every process must reach the gather below, even this one
            refused, row = error, torch.zeros(len(_FIELDS), dtype=torch.int64, device=comm.device())
        else:
            refused = None
        table = comm.gather(row).tolist()
        if refused is not None:
            raise refused
        total = _check_layout(table)

        # 2. Each process ranks its shard; one gather brings every process's candidates to all.
        width = min(shard.k, max(row[_AT["shard_size"]] for row in table))
        status, failure = _OK, None
        try:
            pairs = None
            if exclude is not None:
                pairs = _shard_exclusions(exclude, shard, total)
        except Exception as error:
            status, failure = _BAD_EXCLUDE, error
        if failure is None:
            try:
                scores, ids = shard.top(width, pairs, total)
            except Exception as error:
                nan = isinstance(error, ValueError) and str(error) == NAN_MESSAGE
                status, failure = (_NAN if nan else _FAILED), error
        if failure is not None:
            scores = torch.zeros(shard.batch, width, dtype=shard.dtype, device=shard.device)
            ids = torch.zeros(shard.batch, width, dtype=torch.int64, device=shard.device)
        packet = _pack(status, scores, ids).to(comm.device(shard.device))
        gathered = comm.gather(packet)
        statuses = gathered[:, :_STATUS_BYTES].view(torch.int64)[:, 0].tolist()
        if failure is not None:
            raise failure
        _check_statuses(statuses)
        gathered = gathered.to(shard.device)
        scores, ids = _unpack(gathered, shard.batch, width, shard.dtype)
        offsets = [row[_AT["item_offset"]] for row in table]
        return _merge(scores, ids, offsets, shard.k, shard.ties)


# ------------------------------------------------------------------------------------ this shard


class _Shard:
    """This process's arguments, checked on their own (the others' are not known yet)."""

    def __init__(self, queries, items, k, item_offset, num_items, chunk_size, ties):
        self.k = _check_k(k)
        self.ties = _check_catalog_ties(ties)
        if not isinstance(items, torch.Tensor):
            raise TypeError(
                "items must be this process's (shard_size, d) tensor of item embeddings, "
                f"got {_describe(items)}."
            )
        self.offset = _check_count("item_offset", item_offset)
        self.num_items = None if num_items is None else _check_count("num_items", num_items)
        self.batch, self.device, _, self.size, self.dtype = _scorer(queries, items, None)
        if self.dtype not in _DTYPES or self.device.type not in _DEVICE_TYPES:
            raise ValueError(
                f"queries must be float16, bfloat16, float32 or float64 on a CPU or CUDA device, "
                f"got {_describe(queries)} on {self.device}."
            )
        self.chunk_size = _chunk_size(chunk_size, self.batch, self.dtype)
        self.queries, self.items = queries, items

    def layout(self, device: torch.device) -> torch.Tensor:
        """This process's row of the layout table, on ``device``."""
        fields = {
            "ok": 1,
            "item_offset": self.offset,
            "shard_size": self.size,
            "num_items": -1 if self.num_items is None else self.num_items,
            "batch": self.batch,
            "d": self.queries.shape[1],
            "dtype": _DTYPES.index(self.dtype),
            "device": _DEVICE_TYPES.index(self.device.type),
            "k": self.k,
            "ties": _TIES.index(self.ties),
            "chunk_size": self.chunk_size,
        }
        row = torch.tensor([fields[name] for name in _FIELDS[:-1]], dtype=torch.int64)
        return torch.cat([row.to(device), _checksum(self.queries).to(device).view(1)])

    def top(self, width: int, pairs, total: int) -> tuple[torch.Tensor, torch.Tensor]:
        """This shard's best ``width`` items per query, ``(batch, width)``, in global ids."""
        if not width:
            empty = torch.empty(self.batch, 0, device=self.device)
            return empty.to(self.dtype), empty.to(torch.int64)
        spans, score = self._aligned_scorer(total)
        scores, ids = _rank(
            score, spans, self.size, width, self.batch, self.device, self.dtype, pairs, self.ties
        )
        return scores, torch.where(ids >= 0, ids + self.offset, ids)

    def _aligned_scorer(self, end: int):
        """The chunks of this shard, cut at the global ids where ``top_k`` cuts the catalog.

        A chunk that a shard boundary cuts is scored in the block of ``top_k``'s shape: the
        rows of the other shards' items are zeros, and the shard's columns are kept. A
        product's rounding depends on the block's shape, not on the other columns' values.
        """
        offset, size, step = self.offset, self.size, self.chunk_size
        _, _, product, _, _ = _scorer(self.queries, self.items, None)
        firsts = range(offset - offset % step, offset + size, step) if size else ()
        spans = [(max(first, offset) - offset, min(first + step, offset + size) - offset) for first in firsts]
        queries, items = self.queries, self.items

        def score(start: int, stop: int) -> torch.Tensor:
            first = offset + start
            block_start = first - first % step
            block_stop = min(block_start + step, end)
            if first == block_start and offset + stop == block_stop:
                return product(start, stop)
            padded = items.new_zeros(block_stop - block_start, items.shape[1])
            inside = slice(first - block_start, offset + stop - block_start)
            padded[inside] = items[start:stop]
            return (queries @ padded.T)[:, inside]

        return spans, score


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an int >= 0, got {value!r}.")
    try:
        value = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}.") from None
    if value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}.")
    return value


def _checksum(queries: torch.Tensor) -> torch.Tensor:
    """An int64 of the queries' bits: equal queries give equal sums, on every process."""
    as_int = {2: torch.int16, 4: torch.int32, 8: torch.int64}[queries.element_size()]
    bits = queries.detach().contiguous().view(as_int).reshape(-1).to(torch.int64)
    # Odd weights by position: a different value, or values in other places, change the sum
    # (int64 arithmetic wraps around, in any order of summation).
    weights = torch.arange(1, 2 * bits.numel() + 1, 2, dtype=torch.int64, device=bits.device)
    return (bits * weights).sum()


def _shard_exclusions(exclude, shard: _Shard, total: int):
    """The excluded ``(rows, local ids)`` of this shard, from ``exclude`` in global ids."""
    rows, cols = _exclusion_pairs(exclude, shard.batch, total)
    mine = (cols >= shard.offset) & (cols < shard.offset + shard.size)
    return rows[mine], cols[mine] - shard.offset


# ------------------------------------------------------------------------------------ the group


class _Comm:
    """The process group, or a world of one when torch.distributed is not initialized."""

    def __init__(self, group):
        initialized = dist.is_available() and dist.is_initialized()
        if group is None and not initialized:
            self.group, self.backend, self.rank, self.world = None, None, 0, 1
            return
        self.group = group
        self.backend = str(dist.get_backend(group)).lower()
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        if self.rank < 0:
            raise ValueError("sharded_top_k must run on the processes of group; this one is not in it.")

    def device(self, data: torch.device | None = None) -> torch.device:
        """Where the collectives' tensors live: CPU for gloo, the current CUDA device for nccl.

        With a backend per device type (``"cpu:gloo,cuda:nccl"``) or another backend, the
        data's device (the processes agree on its type), or the CPU before it is known.
        """
        cpu = torch.device("cpu")
        if self.backend is None:
            return data or cpu
        nccl, gloo = "nccl" in self.backend, "gloo" in self.backend
        if nccl and not gloo:
            return torch.device("cuda", torch.cuda.current_device())
        if gloo and not nccl:
            return cpu
        return data or cpu

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """Every process's 1-d ``tensor`` (same size everywhere), ``(world, size)``."""
        if self.backend is None:
            return tensor[None]
        out = tensor.new_empty(self.world * tensor.numel())
        gather_into = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        gather_into(out, tensor.contiguous(), group=self.group)
        return out.view(self.world, -1)


# ------------------------------------------------------------------------------------ checks


def _check_layout(table: list[list[int]]) -> int:
    """Checks the table every process gathered (so all raise alike); the catalog's size."""
    refused = [rank for rank, row in enumerate(table) if not row[_AT["ok"]]]
    if refused:
        raise ValueError(
            f"sharded_top_k: the arguments of {_ranks(refused)} were refused (the error there says "
            "why); every process stops here."
        )
    problems = []
    first = table[0]
    queries = _differ(table, ("batch", "d", "dtype", "device"))
    if queries:
        problems.append(
            "queries: "
            + ", ".join(f"rank {rank} has {_describe_queries(table[rank])}" for rank in [0, *queries])
        )
    elif _differ(table, ("checksum",)):
        problems.append(
            f"queries: the values on {_ranks(_differ(table, ('checksum',)))} are not rank 0's "
            "(every process ranks the same queries against its own items: shard the items, "
            "not the queries)"
        )
    for name in ("k", "ties", "num_items", "chunk_size"):
        ranks = _differ(table, (name,))
        if ranks:
            values = (f"rank {r} has {_show(name, table[r][_AT[name]])}" for r in [0, *ranks])
            problems.append(f"{name}: " + ", ".join(values))
    if problems:
        raise ValueError(
            "sharded_top_k: every process must pass the same queries and settings, but "
            + "; ".join(problems)
            + "."
        )
    return _check_tiling(table, first[_AT["num_items"]])


def _check_tiling(table: list[list[int]], given: int) -> int:
    """The catalog's size, once the shards are known to cover it exactly once."""
    shards = sorted(
        (row[_AT["item_offset"]], row[_AT["shard_size"]], rank)
        for rank, row in enumerate(table)
        if row[_AT["shard_size"]]
    )
    total = sum(size for _, size, _ in shards) if given < 0 else given
    problems = []
    reached, holder = 0, None  # items 0 .. reached - 1 are covered; rank `holder` has the last
    for offset, size, rank in shards:
        if offset > reached:
            after = f" between rank {holder}'s shard and" if holder is not None else " before"
            problems.append(f"items {reached}..{offset - 1} are on no rank (a gap{after} rank {rank}'s)")
        elif offset < reached:
            problems.append(
                f"ranks {holder} and {rank} both hold items {offset}..{min(reached, offset + size) - 1}"
            )
        if offset + size > reached:
            reached, holder = offset + size, rank
    if given >= 0 and reached < given:
        where = f"after rank {holder}'s shard" if holder is not None else "every shard is empty"
        problems.append(f"items {reached}..{given - 1} are on no rank ({where}; num_items={given})")
    if given >= 0 and reached > given:
        beyond = [rank for offset, size, rank in shards if offset + size > given]
        verb = "holds" if len(beyond) == 1 else "hold"
        problems.append(f"{_ranks(beyond)} {verb} items past num_items={given} (the last id is {given - 1})")
    if problems:
        listed = ", ".join(f"rank {rank}: {_items(row)}" for rank, row in enumerate(table))
        size = f"num_items={given}" if given >= 0 else f"{total} items in all"
        raise ValueError(
            f"sharded_top_k: the item shards must cover the catalog 0..{total - 1} ({size}) exactly "
            f"once, but " + "; ".join(problems) + f". Shards: {listed}."
        )
    return total


def _check_statuses(statuses: list[int]) -> None:
    failed = [rank for rank, status in enumerate(statuses) if status != _OK]
    if not failed:
        return
    why = {
        _NAN: "its item scores contain NaN (scores may be +-inf but not NaN)",
        _BAD_EXCLUDE: "its exclude was refused",
        _FAILED: "its ranking failed",
    }
    raise ValueError(
        "sharded_top_k: "
        + "; ".join(f"on rank {rank}, {why[statuses[rank]]}" for rank in failed)
        + " (the error there says more); every process stops here."
    )


def _differ(table: list[list[int]], names: tuple[str, ...]) -> list[int]:
    return [rank for rank, row in enumerate(table) if any(row[_AT[n]] != table[0][_AT[n]] for n in names)]


def _describe_queries(row: list[int]) -> str:
    dtype = str(_DTYPES[row[_AT["dtype"]]]).removeprefix("torch.")
    return f"({row[_AT['batch']]}, {row[_AT['d']]}) {dtype} on {_DEVICE_TYPES[row[_AT['device']]]}"


def _show(name: str, value: int) -> str:
    if name == "ties":
        return repr(_TIES[value])
    if name == "num_items" and value < 0:
        return "None"
    return str(value)


def _items(row: list[int]) -> str:
    offset, size = row[_AT["item_offset"]], row[_AT["shard_size"]]
    return f"items {offset}..{offset + size - 1}" if size else "empty"


def _ranks(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


# ------------------------------------------------------------------------------------ the merge


def _pack(status: int, scores: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """One uint8 buffer: the status (int64), the ids, the scores, zeros to a multiple of 8."""
    head = torch.full((1,), status, dtype=torch.int64, device=scores.device)
    parts = [
        head.view(torch.uint8),
        ids.contiguous().view(-1).view(torch.uint8),
        scores.contiguous().view(-1).view(torch.uint8),
    ]
    tail = -sum(part.numel() for part in parts) % 8
    if tail:  # so that the next process's ids start on an 8-byte boundary
        parts.append(torch.zeros(tail, dtype=torch.uint8, device=scores.device))
    return torch.cat(parts)


def _unpack(gathered: torch.Tensor, batch: int, width: int, dtype: torch.dtype):
    """``(scores, ids)`` of every process, each ``(world, batch, width)``, views of ``gathered``."""
    world, count = gathered.shape[0], batch * width
    ids_end = _STATUS_BYTES + 8 * count
    ids = gathered[:, _STATUS_BYTES:ids_end].view(torch.int64)
    itemsize = torch.empty(0, dtype=dtype).element_size()
    scores = gathered[:, ids_end : ids_end + itemsize * count].view(dtype)
    return scores.reshape(world, batch, width), ids.reshape(world, batch, width)


def _merge(scores: torch.Tensor, ids: torch.Tensor, offsets: list[int], k: int, ties: str):
    """The best k of every process's candidates, ``(batch, k)``, under the tie rule.

    Each process's list is best first, equal scores in the tie order of their ids. Laid side by
    side in the order of the shards' offsets (reversed under ``"last"``), equal scores stand in
    their tie order over the whole catalog, so a stable sort by descending score is exact. A
    second stable sort moves padding (id -1, score -inf) behind candidates that score -inf.
    """
    world, batch, width = ids.shape
    order = sorted(range(world), key=offsets.__getitem__, reverse=ties == "last")
    scores = torch.stack([scores[rank] for rank in order], dim=1).reshape(batch, world * width)
    ids = torch.stack([ids[rank] for rank in order], dim=1).reshape(batch, world * width)
    by_score = scores.argsort(dim=1, descending=True, stable=True)
    valid = (ids >= 0).gather(1, by_score)
    best = by_score.gather(1, valid.to(torch.uint8).argsort(dim=1, descending=True, stable=True))[:, :k]
    scores, ids = scores.gather(1, best), ids.gather(1, best)
    missing = k - best.shape[1]
    if missing:
        scores = torch.cat([scores, scores.new_full((batch, missing), float("-inf"))], dim=1)
        ids = torch.cat([ids, ids.new_full((batch, missing), -1)], dim=1)
    return scores, ids
