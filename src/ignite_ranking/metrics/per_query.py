"""Per-query values kept by a metric on request (``per_query=True``): keeping, gathering, aggregating.

Keys: a query's key is the id the user passed with its batch (``(y_pred, y, {"query_ids":
ids})``), the query id of the flat form (``(preds, target, indexes)``: its ``indexes``), or else
its arrival index: the position of the query among all queries given to
the metric, counting those left out by ``ignore_zero_hits``. Under ``ignite.distributed`` the
values are gathered at ``compute``; arrival keys then count in (rank, arrival) order, as if the
processes' streams were concatenated rank after rank, and user ids are sorted ascending (so that
any sharding of a dataset gives the single-process order when the ids are dataset positions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..kernels.forms import Normalized

__all__ = [
    "PerQuery",
    "aggregate",
    "check_query_ids",
    "flat_ids",
    "gather_per_query",
    "keep_per_query",
    "query_keys",
    "refuse_repeated_keys",
]


@dataclass(frozen=True)
class PerQuery:
    """Per-query values of a metric or a group.

    Attributes:
        keys: ``int64`` query keys, one per row: the given query ids (ascending) or arrival
            indices.
        values: value name (``"mrr@10"``, or the group's names) -> ``float64`` values in the
            order of ``keys``.

    Example:
        >>> import torch
        >>> from ignite_ranking import NDCG
        >>> metric = NDCG([2], per_query=True)
        >>> metric.update((torch.tensor([[0.9, 0.1], [0.2, 0.8]]), torch.tensor([[1, 0], [1, 0]])))
        >>> result = metric.per_query_values()
        >>> len(result), result.keys.tolist(), [round(v, 4) for v in result.values["ndcg@2"].tolist()]
        (2, [0, 1], [1.0, 0.6309])
    """

    keys: torch.Tensor
    values: dict[str, torch.Tensor]

    def __len__(self) -> int:
        return int(self.keys.shape[0])


def check_query_ids(query_ids: object, batch: int, per_query: bool) -> torch.Tensor | None:
    """The ids as a CPU ``int64`` tensor of shape ``(batch,)``, or a ``ValueError``/``TypeError``."""
    if query_ids is None:
        return None
    if not per_query:
        raise ValueError("query_ids are kept only by a metric created with per_query=True")
    ids = query_ids if isinstance(query_ids, torch.Tensor) else torch.as_tensor(query_ids)
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise TypeError(f"query_ids must be integers, got dtype {ids.dtype}")
    if ids.shape != (batch,):
        raise ValueError(f"query_ids must have shape ({batch},), one id per query, got {tuple(ids.shape)}")
    return ids.detach().to(device="cpu", dtype=torch.int64)


def query_keys(
    output: object, query_ids: object, form_ids: torch.Tensor, per_query: bool
) -> torch.Tensor | None:
    """The keys of an update's ranked queries: the flat form's own query ids (its ``indexes``),
    else the ids passed with the batch, checked (None when the metric keeps no per-query values
    or none were passed)."""
    flat = isinstance(output, Sequence) and not isinstance(output, (str, bytes)) and len(output) == 3
    if flat:
        return form_ids.detach().to(device="cpu", dtype=torch.int64) if per_query else None
    return check_query_ids(query_ids, form_ids.shape[0], per_query)


def flat_ids(output: object, normalized: Normalized) -> torch.Tensor | None:
    """The query id of each ranked row of a flat ``(preds, target, indexes)`` update, else None."""
    flat = isinstance(output, Sequence) and not isinstance(output, (str, bytes)) and len(output) == 3
    return normalized.query_ids if flat else None


def gather_per_query(
    values: list[torch.Tensor],
    keys: list[torch.Tensor],
    arrived: int,
    user_keys: bool | None,
    num_values: int,
    local: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(keys, values)`` of every process (this one's alone when ``local``), in the order
    described in the module docstring."""
    import ignite.distributed as idist

    local_values = torch.cat(values) if values else torch.zeros((0, num_values), dtype=torch.float64)
    local_keys = torch.cat(keys) if keys else torch.zeros(0, dtype=torch.int64)
    world = 1 if local else idist.get_world_size()
    if world > 1:
        mode = -1 if user_keys is None else int(user_keys)
        info = idist.all_gather(torch.tensor([local_values.shape[0], arrived, mode], dtype=torch.int64))
        info = info.reshape(world, 3)
        modes = {int(m) for m in info[:, 2] if m >= 0}
        if len(modes) > 1:
            raise ValueError(
                "some processes passed query_ids and others did not; pass them everywhere or nowhere"
            )
        user_keys = modes.pop() == 1 if modes else None
        counts = info[:, 0].tolist()
        device = idist.device()
        gathered_values = idist.all_gather_tensors_with_shapes(
            local_values.to(device), [[c, num_values] for c in counts]
        )
        gathered_keys = idist.all_gather_tensors_with_shapes(local_keys.to(device), [[c] for c in counts])
        if not user_keys:
            offsets = torch.cumsum(info[:, 1], 0) - info[:, 1]
            gathered_keys = [k.cpu() + int(offsets[r]) for r, k in enumerate(gathered_keys)]
        local_values = torch.cat([v.cpu() for v in gathered_values])
        local_keys = torch.cat([k.cpu() for k in gathered_keys])
    if user_keys:
        local_keys, order = torch.sort(local_keys, stable=True)
        local_values = local_values[order]
    return local_keys, local_values


def refuse_repeated_keys(keys: torch.Tensor) -> None:
    """Refuses per-query values whose (sorted) ids repeat: they would not say which query is which."""
    repeated = keys[1:] == keys[:-1]
    if repeated.any():
        shown = keys[1:][repeated].unique()[:5].tolist()
        raise ValueError(
            f"per-query values need query ids that are unique across updates and processes; {shown} "
            "came more than once, so their values cannot be told apart (compute() counts each as a "
            "query). A flat query id that comes back after its query closed is a new query; a "
            "DistributedSampler pads its last batches with repeats: drop them or use drop_last."
        )


def keep_per_query(
    metric, values: torch.Tensor, query_ids: torch.Tensor | None, counted: torch.Tensor | None
) -> None:
    """Keeps in ``metric`` the values and keys of a batch's queries (only the ``counted`` ones if given)."""
    given = query_ids is not None
    if metric._user_keys is not None and metric._user_keys != given:
        raise ValueError("pass query_ids with every update of a per_query metric, or with none")
    batch = values.shape[0]
    keys = query_ids if given else torch.arange(metric._queries_arrived, metric._queries_arrived + batch)
    if counted is not None:
        values, keys = values[counted.to(values.device)], keys[counted.cpu()]
    metric._query_values.append(values.detach().to(device="cpu", dtype=torch.float64))
    metric._query_keys.append(keys)
    metric._queries_arrived += batch
    metric._user_keys = given
    metric._gathered = None


def aggregate(metric, gathered: PerQuery) -> list[float] | float:
    """``metric.aggregation`` of every process's counted per-query values, per value."""
    if len(gathered) == 0:
        raise metric._label_notes.not_computable(
            type(metric).__name__, metric.relevance_threshold, metric.count_rule
        )
    results = []
    for name, values in gathered.values.items():
        if callable(metric.aggregation):
            result = metric.aggregation(values)
            try:
                results.append(float(result))
            except (TypeError, ValueError, RuntimeError):
                raise TypeError(
                    f"aggregation must return one number for a 1-D tensor of per-query values; "
                    f"for {name} it returned {result!r}."
                ) from None
        else:  # median: the lower of the two middle values for an even count, as torch's
            results.append(float(getattr(values, metric.aggregation)()))
    return results if metric.top_k is not None else results[0]
