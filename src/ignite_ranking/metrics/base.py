"""The shared base of every ranking metric: validation, state, accumulation and reduction."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

import torch
from ignite.exceptions import NotComputableError
from ignite.metrics.metric import Metric, reinit__is_reduced, sync_all_reduce

from ..kernels import RankedBatch, check_inputs, check_threshold, check_ties, normalize_top_k, rank_batch

__all__ = ["RankingMetric", "unpack_output"]


def unpack_output(output: object) -> tuple[torch.Tensor, torch.Tensor]:
    """``(y_pred, y)`` from an update's output, refusing anything but a pair of tensors."""
    if not isinstance(output, Sequence) or isinstance(output, (str, bytes)) or len(output) != 2:
        shown = f"a sequence of length {len(output)}" if isinstance(output, Sequence) else type(output)
        raise ValueError(f"output must be a pair (y_pred, y), got {shown}.")
    y_pred, y = output
    check_inputs(y_pred, y)
    return y_pred.detach(), y.detach()


class RankingMetric(Metric):
    """Base of the ranking metrics: per-cutoff float64 sums and an int64 query count.

    A subclass sets ``name`` and implements :meth:`score`; ``needs_counts``, ``needs_ideal``
    and ``covers_relevant`` tell the kernel what to gather, and ``takes_top_k = False`` marks a
    metric with one value and no cutoffs. The state is a few numbers per cutoff,
    all-reduced once in :meth:`compute`.
    """

    name = "ranking"
    takes_top_k = True
    needs_counts = False
    needs_ideal = False
    covers_relevant = False
    required_output_keys = ("y_pred", "y")
    _state_dict_all_req_keys = ("_sum_per_k", "_num_examples")

    def __init__(
        self,
        top_k: int | list[int] | None,
        ignore_zero_hits: bool = True,
        relevance_threshold: float = 1.0,
        output_transform: Callable = lambda x: x,
        device: str | torch.device = "cpu",
        skip_unrolling: bool = False,
        *,
        ties: str = "first",
    ):
        self.top_k = normalize_top_k(top_k) if self.takes_top_k else None
        if not isinstance(ignore_zero_hits, bool):
            raise TypeError(f"ignore_zero_hits must be a bool, got {type(ignore_zero_hits).__name__}.")
        self.ignore_zero_hits = ignore_zero_hits
        self.relevance_threshold = check_threshold(relevance_threshold)
        self.ties = check_ties(ties)
        super().__init__(output_transform, device=device, skip_unrolling=skip_unrolling)

    @property
    def depth(self) -> int:
        """How many ranked positions per query the metric reads."""
        return self.top_k[-1] if self.top_k else 1

    @property
    def num_values(self) -> int:
        return len(self.top_k) if self.top_k else 1

    def score(self, ranked: RankedBatch) -> torch.Tensor:
        """Per-query values ``(batch, num_values)`` of a ranked batch."""
        raise NotImplementedError

    def rank(self, y_pred: torch.Tensor, y: torch.Tensor) -> RankedBatch:
        return rank_batch(
            y_pred,
            y,
            self.depth,
            relevance_threshold=self.relevance_threshold,
            ties=self.ties,
            ideal=self.needs_ideal,
            cover_relevant=self.covers_relevant,
            count=self.needs_counts,
        )

    @reinit__is_reduced
    def reset(self) -> None:
        self._sum_per_k = torch.zeros(self.num_values, dtype=torch.float64, device=self._device)
        self._num_examples = torch.zeros((), dtype=torch.int64, device=self._device)

    @reinit__is_reduced
    def update(self, output: Sequence[torch.Tensor]) -> None:
        y_pred, y = unpack_output(output)
        self.accumulate(self.rank(y_pred, y))

    @reinit__is_reduced
    def accumulate(self, ranked: RankedBatch) -> None:
        """Adds the values of a ranked batch to the sums (no checks: the batch is valid)."""
        values = self.score(ranked)
        if self.ignore_zero_hits:
            # A query without relevant items scores 0 (the scorers' contract), so it adds nothing
            # to the sums and only the count leaves it out: no host synchronization, and no
            # masked copy of the (batch, cutoffs) values, which can be large.
            self._num_examples += (ranked.num_relevant > 0).sum().to(self._device)
        else:
            self._num_examples += values.shape[0]
        self._sum_per_k += values.sum(dim=0).to(self._device)

    @sync_all_reduce("_sum_per_k", "_num_examples")
    def compute(self) -> list[float] | float:
        if self._num_examples.item() == 0:
            raise NotComputableError(f"{type(self).__name__} must have at least one query before compute().")
        means = (self._sum_per_k / self._num_examples).tolist()
        return means if self.top_k is not None else means[0]

    def _state_dict_per_rank(self) -> OrderedDict:
        # Copies, so that later updates never change a state the user saved.
        return OrderedDict((key, getattr(self, key).clone()) for key in self._state_dict_all_req_keys)

    def _load_state_dict_per_rank(self, state_dict: Mapping) -> None:
        missing = [key for key in self._state_dict_all_req_keys if key not in state_dict]
        if missing:
            raise ValueError(
                f"state_dict lacks {missing}; pass what {type(self).__name__}.state_dict() returned."
            )
        sums, count = state_dict["_sum_per_k"], state_dict["_num_examples"]
        if not isinstance(sums, torch.Tensor) or sums.shape != (self.num_values,):
            shape = tuple(sums.shape) if isinstance(sums, torch.Tensor) else type(sums).__name__
            raise ValueError(
                f"state_dict holds sums of shape {shape}, but this {type(self).__name__} has "
                f"{self.num_values} cutoff(s)."
            )
        self._sum_per_k = sums.to(device=self._device, dtype=torch.float64).clone()
        self._num_examples = torch.as_tensor(count, dtype=torch.int64).to(self._device).clone()
