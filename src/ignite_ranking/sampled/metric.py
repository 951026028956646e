"""SampledMetrics: an Ignite metric over sampled ranks, corrected to full-catalog estimates."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from ignite.exceptions import NotComputableError
from ignite.metrics.metric import reinit__is_reduced, sync_all_reduce

from ..kernels import check_inputs, check_threshold, check_ties
from ..kernels.inputs import comparable_labels, count_relevant
from ..metrics.base import RankingMetric
from .arguments import _check_flag, check_estimator, check_sizes
from .estimators import _correction, design_for
from .mle import fit_rank_distribution

if TYPE_CHECKING:
    from ..metrics.options import RankingOptions, Unpack

__all__ = ["SampledMetrics", "sampled_ranks"]

_LISTED_ROWS = 10


def sampled_ranks(
    y_pred: torch.Tensor, y: torch.Tensor, *, relevance_threshold: float = 1.0, ties: str = "first"
) -> torch.Tensor:
    """Each row's rank of its one relevant item among the row's ``m + 1`` candidates.

    Ranked as the contract ranks (descending score; equal scores by the tie policy: ``"first"``,
    the lower column first, as ``torch.argsort(y_pred, descending=True, stable=True)``;
    ``"last"``; ``"optimistic"``, the relevant item first among its ties; ``"pessimistic"``,
    last). The rank is counted, not sorted: ``1 +`` the items scored above the relevant one
    ``+`` the tied items the policy puts before it, which is what the ranking kernel's order gives
    (the tests check it against :func:`ignite_ranking.kernels.rank_batch`). ``"average"`` has no
    integer rank and is refused.

    Args:
        y_pred: ``(batch, m + 1)`` floating scores.
        y: ``(batch, m + 1)`` labels with exactly one label ``>= relevance_threshold`` per row.

    Returns:
        ``(batch,)`` int64 ranks in ``1 .. m + 1``.

    Example:
        >>> import torch
        >>> from ignite_ranking import sampled
        >>> y_pred = torch.tensor([[0.5, 0.9, 0.5, 0.1], [0.3, 0.2, 0.1, 0.0]])
        >>> y = torch.tensor([[0, 0, 1, 0], [1, 0, 0, 0]])
        >>> sampled.sampled_ranks(y_pred, y).tolist()  # row 0: 0.9 above, the tie at column 0 first
        [3, 1]
    """
    ties = check_ties(ties)
    if ties == "average":
        raise ValueError(
            "ties='average' gives a tied relevant item a fractional expected rank, and the sampled "
            "histogram counts integer ranks; use 'first' (the default), 'last', 'optimistic' or "
            "'pessimistic'."
        )
    threshold = check_threshold(relevance_threshold)
    check_inputs(y_pred, y)
    batch, columns = y_pred.shape
    if batch == 0:
        return torch.empty(0, dtype=torch.int64, device=y_pred.device)
    relevant = count_relevant(y, threshold)
    wrong = (relevant != 1).nonzero().squeeze(1).tolist()
    if wrong:
        shown = ", ".join(f"row {row} has {int(relevant[row])}" for row in wrong[:_LISTED_ROWS])
        more = f" (and {len(wrong) - _LISTED_ROWS} more rows)" if len(wrong) > _LISTED_ROWS else ""
        raise ValueError(
            f"y must mark exactly one relevant item per row (label >= relevance_threshold="
            f"{threshold}): the held-out item among its sampled negatives; {shown}{more}."
        )
    labels, _ = comparable_labels(y, threshold)
    # The one relevant label is the row's only label at or above the threshold: its maximum.
    position = labels.argmax(dim=1)
    score = y_pred.gather(1, position[:, None])
    rank = 1 + (y_pred > score).sum(dim=1)
    if ties == "optimistic":
        return rank
    equal = y_pred == score
    tied = equal.sum(dim=1) - 1
    if ties == "pessimistic":
        return rank + tied
    before = torch.zeros_like(tied)
    rows = (tied > 0).nonzero().squeeze(1)
    if rows.numel():
        columns_before = torch.arange(columns, device=y_pred.device) < position[rows, None]
        before[rows] = (equal[rows] & columns_before).sum(dim=1)
    return rank + (before if ties == "first" else tied - before)


class SampledMetrics(RankingMetric):
    r"""Full-catalog MRR@k, HitRate@k, NDCG@k and AUC estimated from sampled-negative ranks.

    Each query is its held-out item scored against ``num_negatives`` (m) negatives drawn
    uniformly from the other ``num_items - 1`` items (:func:`sample_negatives`): ``update``
    takes ``(y_pred, y)`` of shape ``(batch, m + 1)`` with exactly one relevant label per row
    (any column), and adds each row's sampled rank (:func:`sampled_ranks`) to a histogram of
    ``m + 1`` int64 counts, the whole state (constant in size, exact and order-free, one
    all-reduce in ``compute``). ``compute`` returns the full-catalog metrics as the
    ``estimator`` estimates them from the histogram (:mod:`ignite_ranking.sampled.estimators`):
    ``{"mrr@k", "hit_rate@k", "ndcg@k" for each k, "auc", "num_queries"}``; with one relevant
    item, ``hit_rate@k`` is also Recall@k and ``mrr@k`` is AP@k.

    Prefer the full catalog (:func:`ignite_ranking.catalog.top_k` with the usual metrics) when
    it can be scored: every estimate here trades bias for variance (:doc:`/sampled`).

    Args:
        num_items: ``n``, the catalog size the negatives are drawn from.
        num_negatives: ``m``, negatives per query (``1 <= m < n``).
        top_k: cutoffs of MRR, HitRate and NDCG.
        estimator: ``"sampled"`` (uncorrected), ``"rank"``, ``"cls"``, ``"bv"`` (default) or
            ``"mle"``.
        gamma: the variance weight of ``"bv"``, in ``[0, 1]``.
        replacement: whether the negatives were drawn with replacement.
        ties: ``"first"`` (default), ``"last"``, ``"optimistic"`` or ``"pessimistic"``;
            ``"average"`` is refused (the histogram counts integer ranks).
        relevance_threshold: a label ``>=`` this marks the relevant item.

    ``settings()`` (saved with the state) holds what the histogram means: ``num_items``,
    ``num_negatives``, ``replacement``, ``ties`` and ``relevance_threshold``. ``top_k``,
    ``estimator`` and ``gamma`` only say how ``compute`` reads it, so a saved histogram can be
    loaded into a metric that estimates it differently.

    Example:
        >>> import torch
        >>> from ignite_ranking import sampled
        >>> metric = sampled.SampledMetrics(num_items=1000, num_negatives=3, top_k=[1, 10])
        >>> y_pred = torch.tensor([[0.9, 0.1, 0.2, 0.3], [0.1, 0.9, 0.2, 0.3]])
        >>> y = torch.tensor([[1, 0, 0, 0], [1, 0, 0, 0]])  # the held-out item in column 0
        >>> metric.update((y_pred, y))  # sampled ranks 1 and 4
        >>> result = metric.compute()
        >>> result["num_queries"], round(result["hit_rate@10"], 4), round(result["auc"], 4)
        (2, 0.0565, 0.5)
        >>> metric.compute_with("sampled")["hit_rate@1"]  # the uncorrected value: half the queries
        0.5
    """

    name = "sampled"
    has_per_query_values = False
    without_average = "counts integer sampled ranks"
    _settings_keys = ("num_items", "num_negatives", "replacement", "ties", "relevance_threshold")

    positional_options = ()
    options_offered = frozenset(
        {"ties", "relevance_threshold", "output_transform", "device", "skip_unrolling"}
    )

    def __init__(
        self,
        num_items: int,
        num_negatives: int,
        top_k: int | list[int] = (1, 5, 10, 20),  # type: ignore[assignment]
        *,
        estimator: str = "bv",
        gamma: float = 0.01,
        replacement: bool = False,
        **options: Unpack[RankingOptions],
    ):
        self.num_items, self.num_negatives = check_sizes(num_items, num_negatives)
        self.estimator, self.gamma = check_estimator(estimator, gamma)
        self.replacement = _check_flag("replacement", replacement)
        if isinstance(top_k, tuple):
            top_k = list(top_k)
        super().__init__(top_k, **options)

    @property
    def num_values(self) -> int:
        return self.num_negatives + 1

    @property
    def value_names(self) -> list[str]:
        names = [f"{metric}@{k}" for metric in ("mrr", "hit_rate", "ndcg") for k in self.top_k]
        return [*names, "auc"]

    def _zero_sums(self) -> torch.Tensor:
        """The histogram: one int64 count per sampled rank ``1 .. m + 1``."""
        return torch.zeros(self.num_negatives + 1, dtype=torch.int64, device=self._device)

    @reinit__is_reduced
    def update(self, output: Sequence[torch.Tensor]) -> None:
        """Adds a batch ``(y_pred, y)`` of shape ``(batch, num_negatives + 1)``; checks it all first."""
        if (
            not isinstance(output, Sequence)
            or isinstance(output, (str, bytes))
            or len(output) != 2
            or not all(isinstance(t, torch.Tensor) for t in output)
        ):
            raise TypeError(
                "SampledMetrics.update takes (y_pred, y), two (batch, num_negatives + 1) tensors, got "
                f"{type(output).__name__}."
            )
        y_pred, y = output
        expected = self.num_negatives + 1
        if y_pred.ndim == 2 and y_pred.shape[1] != expected:
            raise ValueError(
                f"y_pred must have num_negatives + 1 = {expected} columns (the held-out item and its "
                f"{self.num_negatives} sampled negatives), got shape {tuple(y_pred.shape)}."
            )
        ranks = sampled_ranks(
            y_pred.detach(), y.detach(), relevance_threshold=self.relevance_threshold, ties=self.ties
        )
        counts = torch.bincount(ranks - 1, minlength=expected)
        self._sum_per_k += counts.to(device=self._device, dtype=torch.int64)
        self._num_examples += ranks.numel()

    @sync_all_reduce("_sum_per_k")
    def compute(self) -> dict[str, float | int]:
        """The estimates of the full-catalog metrics, and ``num_queries``."""
        return self._estimate(self.estimator, self.gamma)

    def compute_with(self, estimator: str, gamma: float | None = None) -> dict[str, float | int]:
        """:meth:`compute` with another estimator (and ``gamma``), from the same histogram."""
        estimator, gamma = check_estimator(estimator, self.gamma if gamma is None else gamma)
        return sync_all_reduce("_sum_per_k")(type(self)._estimate)(self, estimator, gamma)

    def histogram(self) -> torch.Tensor:
        """The histogram of sampled ranks of this process (int64, ``m + 1``; index ``j``: rank ``j + 1``)."""
        return self._sum_per_k.clone()

    def _estimate(self, estimator: str, gamma: float) -> dict[str, float | int]:
        counts = self._sum_per_k.detach().to("cpu")
        total = int(counts.sum())
        if total == 0:
            raise NotComputableError("SampledMetrics must have at least one query before compute().")
        h = counts.to(torch.float64)
        n, m, rep = self.num_items, self.num_negatives, self.replacement
        wanted = [(metric, k) for metric in ("mrr", "hit_rate", "ndcg") for k in self.top_k]
        wanted.append(("auc", None))
        values: dict[str, float | int] = {}
        if estimator == "mle":
            fit = fit_rank_distribution(h, n, m, replacement=rep)
            for metric, k in wanted:
                values[_key(metric, k)] = fit.metric(n, metric, k)
        else:
            design = design_for(n, m, rep, self.top_k, True) if estimator in ("bv", "cls") else None
            for metric, k in wanted:
                x = _correction(n, m, metric, k, estimator, gamma, rep, design=design)
                values[_key(metric, k)] = float(h @ x / total)
        values["num_queries"] = total
        return values

    def _loaded_sums(self, sums: object) -> torch.Tensor:
        """The histogram of a saved state: ``m + 1`` non-negative int64 counts."""
        if (
            not isinstance(sums, torch.Tensor)
            or sums.dtype != torch.int64
            or tuple(sums.shape) != (self.num_negatives + 1,)
        ):
            shown = f"{sums.dtype} of shape {tuple(sums.shape)}" if isinstance(sums, torch.Tensor) else sums
            raise ValueError(
                f"state_dict['_sum_per_k'] must be the int64 histogram of num_negatives + 1 = "
                f"{self.num_negatives + 1} sampled ranks, got {shown}."
            )
        if bool((sums < 0).any()):
            raise ValueError("state_dict['_sum_per_k'] must hold non-negative counts.")
        return sums.detach().clone()

    def _check_sums(self, sums: torch.Tensor, count: int) -> None:
        if int(sums.sum()) != count:
            raise ValueError(
                f"state_dict['_num_examples'] ({count}) must equal the histogram's total "
                f"({int(sums.sum())}); it is not a saved SampledMetrics state."
            )


def _key(metric: str, k: int | None) -> str:
    return metric if k is None else f"{metric}@{k}"
