"""What ``compute()`` reads back: the sums, the count and the refusal record in one transfer.

:func:`state_for_host` lays a metric's (reduced) state out as one int64 tensor; :func:`means_of`
turns it, read on the host with one ``tolist()``, into the means, after raising a refusal
recorded on the device (:mod:`.refusal`). A group reads all its members' states at once.
"""

from __future__ import annotations

import torch
from ignite.metrics.metric import sync_all_reduce

from ..kernels.exact_sum import host_means
from .refusal import refusal_error

__all__ = ["means_of", "reduced_state", "state_for_host"]


def state_for_host(metric) -> torch.Tensor:
    """``metric``'s value sums (limbs, flattened), count and refusal record, one int64 tensor."""
    sums = metric._sum_per_k[: metric.num_values].reshape(-1)
    return torch.cat((sums, metric._num_examples.reshape(1), metric._refusal.read().to(sums.device)))


_all_reduced = sync_all_reduce("_sum_per_k", "_num_examples")(state_for_host)


def reduced_state(metric) -> torch.Tensor:
    """:func:`state_for_host` after Ignite's all-reduce of the sums and the count (a method); this
    process's own for a metric that is ``_local`` (evaluated on one process, no collective)."""
    return state_for_host(metric) if metric._local else _all_reduced(metric)


def means_of(metric, state: list[int]) -> list[float] | float:
    """``compute()``'s means from :func:`state_for_host` read on the host."""
    error = refusal_error(state[-1])
    if error is not None:
        raise error
    if state[-2] == 0:
        raise metric._label_notes.not_computable(
            type(metric).__name__, metric.relevance_threshold, metric.count_rule
        )
    means = host_means(state[:-2], state[-2])
    return means if metric.top_k is not None else means[0]
