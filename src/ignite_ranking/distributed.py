"""Sharding an evaluation set across processes so that every query counts exactly once.

PyTorch's :class:`~torch.utils.data.distributed.DistributedSampler`, which
``ignite.distributed.auto_dataloader`` builds by default, repeats samples when the data set does
not divide by the number of processes (or drops them with ``drop_last=True``), so that every
process gets as many; a mean over queries then counts a few of them twice (or leaves them out).
:class:`EvaluationSampler` gives each index to exactly one process instead, and the ranking
metrics warn with a :class:`PaddedSamplerWarning` when the engine they are attached to reads a
sampler that repeats or drops samples.

This module uses ``ignite`` and ``torch`` only; the metrics import their guard from it.

Example:
    >>> from ignite_ranking.distributed import EvaluationSampler
    >>> [list(EvaluationSampler(range(5), num_replicas=2, rank=r)) for r in range(2)]
    [[0, 1, 2], [3, 4]]
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Iterator, Sized

import ignite.distributed as idist
from ignite.engine import Engine, Events
from ignite.metrics import Metric
from torch.utils.data.distributed import DistributedSampler

__all__ = ["EvaluationSampler", "PaddedSamplerWarning"]


class PaddedSamplerWarning(UserWarning):
    """The engine's data loader repeats or drops samples, so some queries count twice or not at all.

    A ranking metric warns with it (once per metric object, on the process of rank 0) when the
    ``DistributedSampler`` of the data loader it runs on pads the data set to a multiple of the
    number of processes, as PyTorch's does by default, or drops its tail (``drop_last=True``).
    Use :class:`EvaluationSampler` to shard the queries exactly.

    Example:
        >>> import torch
        >>> import warnings
        >>> from ignite.engine import Engine
        >>> from torch.utils.data import DataLoader, DistributedSampler
        >>> from ignite_ranking import MRR
        >>> from ignite_ranking.distributed import PaddedSamplerWarning
        >>> queries = list(zip(torch.rand(5, 4), torch.eye(5, 4)))
        >>> padding = DistributedSampler(queries, num_replicas=2, rank=0, shuffle=False)
        >>> evaluator = Engine(lambda engine, batch: batch)
        >>> MRR([10]).attach(evaluator, "mrr")
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = evaluator.run(DataLoader(queries, batch_size=2, sampler=padding))
        >>> [w.category.__name__ for w in caught]
        ['PaddedSamplerWarning']
        >>> print(caught[0].message)  # doctest: +ELLIPSIS
        MRR: the data loader's DistributedSampler pads the 5 queries to 6 over 2 processes,
        so 1 query is counted twice and the result is not the mean over the data set. Pass
        sampler=EvaluationSampler(dataset) ...
    """


class EvaluationSampler(DistributedSampler):
    """A ``DistributedSampler`` that gives every index to exactly one process: no repeats, no drops.

    The indices ``0 .. len(data_source) - 1`` are cut into ``num_replicas`` contiguous blocks in
    order: rank 0 takes the first block, rank 1 the next, and so on; the first
    ``len(data_source) % num_replicas`` ranks take one index more than the others. Contiguous
    blocks keep the data set's order across ranks, so values gathered in (rank, arrival) order,
    such as per-query values without ids, come back in data set order. The order is fixed
    (``shuffle`` is False and :meth:`set_epoch` changes nothing); a mean does not depend on it.

    Being a ``DistributedSampler``, it is used as it is by ``ignite.distributed.auto_dataloader``
    (which wraps other samplers in a proxy that pads), and it works in a plain ``DataLoader`` as
    well. ``len()`` is this rank's share; ``total_size`` is the size of the data set. Ranks may
    run a different number of batches, which the metrics allow (their one collective is in
    ``compute()``); per-batch collectives of your own would wait for a batch that never comes.

    An evaluation resumed from a checkpoint in the middle of an epoch reads only the indices
    that the interrupted run had not consumed: the ranking metrics attached to the engine call
    :meth:`resume_after` at the start of each epoch (see :doc:`/distributed`, "Resuming").

    Args:
        data_source: the data set (anything with ``len()``); its size is read here, as
            ``DistributedSampler`` does, and checked again when the sampler is iterated.
        num_replicas: the number of processes; by default ``idist.get_world_size()``.
        rank: this process's rank, in ``[0, num_replicas)``; by default ``idist.get_rank()``.

    Example:
        >>> from ignite_ranking.distributed import EvaluationSampler
        >>> queries = range(7)
        >>> [list(EvaluationSampler(queries, num_replicas=3, rank=r)) for r in range(3)]
        [[0, 1, 2], [3, 4], [5, 6]]
        >>> len(EvaluationSampler(queries, num_replicas=3, rank=1))
        2

        Under ``ignite.distributed``, in each process (the defaults are its rank and world size)::

            loader = idist.auto_dataloader(dataset, batch_size=256, sampler=EvaluationSampler(dataset))
    """

    def __init__(self, data_source: Sized, *, num_replicas: int | None = None, rank: int | None = None):
        try:
            size = len(data_source)
        except TypeError:
            raise TypeError(
                f"EvaluationSampler needs a data set with len(), got {type(data_source).__name__}; an "
                "IterableDataset must shard itself."
            ) from None
        num_replicas = idist.get_world_size() if num_replicas is None else num_replicas
        rank = idist.get_rank() if rank is None else rank
        for name, value in (("num_replicas", num_replicas), ("rank", rank)):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}.")
        num_replicas, rank = int(num_replicas), int(rank)
        if num_replicas < 1:
            raise ValueError(f"num_replicas must be a positive number of processes, got {num_replicas}.")
        if not 0 <= rank < num_replicas:
            raise ValueError(
                f"rank must be in [0, num_replicas) = [0, {num_replicas}), got rank={rank}; the ranks of "
                f"{num_replicas} processes are 0 to {num_replicas - 1}."
            )
        super().__init__(data_source, num_replicas=num_replicas, rank=rank, shuffle=False, drop_last=False)
        share, extra = divmod(size, num_replicas)
        self.start = rank * share + min(rank, extra)
        self.stop = self.start + share + (rank < extra)
        # What DistributedSampler's readers expect, without padding: this rank's share, and the
        # data set's size as the total over all ranks.
        self.num_samples = self.stop - self.start
        self.total_size = size
        self.consumed = 0

    def resume_after(self, consumed: int) -> None:
        """Makes the iterators yield this rank's indices after its first ``consumed`` (0: all).

        It holds until the next call; the metrics attached to an engine call it at the start of
        each epoch (0 for a fresh one) and at its end (0).
        """
        if not isinstance(consumed, numbers.Integral) or isinstance(consumed, bool):
            raise TypeError(f"consumed must be an int, got {consumed!r} of type {type(consumed).__name__}.")
        if not 0 <= consumed <= self.num_samples:
            raise ValueError(f"consumed must be in [0, {self.num_samples}] (its share), got {consumed}.")
        self.consumed = int(consumed)

    def __iter__(self) -> Iterator[int]:
        if len(self.dataset) != self.total_size:
            raise RuntimeError(
                f"the data set had {self.total_size} samples when the EvaluationSampler was built and "
                f"has {len(self.dataset)} now; build the sampler again so that the shards cover it."
            )
        return iter(range(self.start + self.consumed, self.stop))

    def __len__(self) -> int:
        return self.num_samples

    def __repr__(self) -> str:
        return (
            f"EvaluationSampler(indices {self.start}..{self.stop - 1} of {self.total_size}, "
            f"rank={self.rank}, num_replicas={self.num_replicas}"
            + (f", after the first {self.consumed})" if self.consumed else ")")
        )


def _distributed_sampler(data: object) -> DistributedSampler | None:
    """The ``DistributedSampler`` a data loader draws from (directly or in its batch sampler)."""
    batch_sampler = getattr(data, "batch_sampler", None)
    for sampler in (getattr(data, "sampler", None), getattr(batch_sampler, "sampler", None)):
        if isinstance(sampler, DistributedSampler):
            return sampler
    return None


def _uneven_message(data: object, owner: str) -> str | None:
    """What :class:`PaddedSamplerWarning` says about ``data``, or None if it counts every query once."""
    sampler = _distributed_sampler(data)
    if sampler is None or isinstance(sampler, EvaluationSampler):
        return None
    try:
        size, total, processes = len(sampler.dataset), int(sampler.total_size), int(sampler.num_replicas)
    except (TypeError, AttributeError, ValueError):
        return None
    fix = (
        "Pass sampler=EvaluationSampler(dataset) (from ignite_ranking.distributed) to "
        "idist.auto_dataloader or DataLoader: it gives each query to exactly one process."
    )
    if total > size:
        repeated = total - size
        if repeated <= size:
            counted = f"{repeated} {'query is' if repeated == 1 else 'queries are'} counted twice"
        else:  # fewer queries than processes: the padding goes round the data set more than once
            counted = f"queries are counted up to {-(-total // size)} times"
        return (
            f"{owner}: the data loader's {type(sampler).__name__} pads the {size} queries to {total} over "
            f"{processes} processes, so {counted} and the result is not the mean over the data set. {fix}"
        )
    if total < size:
        dropped = size - total
        left = f"{dropped} {'query is' if dropped == 1 else 'queries are'} left out"
        return (
            f"{owner}: the data loader's {type(sampler).__name__} drops the {size} queries to {total} over "
            f"{processes} processes (drop_last=True), so {left} and the result is not the mean over the "
            f"data set. {fix}"
        )
    return None


class _SamplerGuard:
    """An engine handler that warns, once for its metric, when the data loader repeats or drops."""

    def __init__(self, owner: str):
        self.owner = owner
        self.warned = False

    def __call__(self, engine: Engine) -> None:
        if self.warned or idist.get_rank() != 0:
            return
        message = _uneven_message(engine.state.dataloader, self.owner)
        if message is not None:
            self.warned = True
            warnings.warn(message, PaddedSamplerWarning, stacklevel=2)


def guard_sampler(metric: Metric, engine: Engine) -> None:
    """Makes ``metric`` warn (:class:`PaddedSamplerWarning`) if ``engine``'s data loader pads or drops.

    Called by the metrics' ``attach``. The check runs at the start of each epoch, before any
    batch, on the process of rank 0, until it has warned once for this metric object.
    """
    guard = metric.__dict__.get("_sampler_guard")  # not getattr: ignite's Metric answers any name
    if guard is None:
        guard = metric.__dict__["_sampler_guard"] = _SamplerGuard(type(metric).__name__)
    if not engine.has_event_handler(guard, Events.EPOCH_STARTED):
        engine.add_event_handler(Events.EPOCH_STARTED, guard)


def unguard_sampler(metric: Metric, engine: Engine) -> None:
    """Undoes :func:`guard_sampler` once ``metric`` is detached from ``engine`` under every usage."""
    guard = metric.__dict__.get("_sampler_guard")
    attached = engine.has_event_handler(metric.completed)  # under any usage's event
    if guard is not None and not attached and engine.has_event_handler(guard, Events.EPOCH_STARTED):
        engine.remove_event_handler(guard, Events.EPOCH_STARTED)
