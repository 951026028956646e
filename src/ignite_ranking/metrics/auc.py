"""AUC per query and GAUC: how often a relevant item is scored above a non-relevant one."""

from __future__ import annotations

import torch

from ..kernels import RankedBatch, auc
from ..kernels.exact_sum import limb_sums
from .base import SingleValueMetric

__all__ = ["AUC", "GAUC"]


class AUC(SingleValueMetric):
    r"""Mean AUC per query: the Mann-Whitney statistic of each row, averaged over the queries.

    .. math:: \text{AUC}_q = \frac{1}{P N} \sum_{i \text{ relevant}} \sum_{j \text{ non-relevant}}
        \left([s_i > s_j] + \tfrac{1}{2} [s_i = s_j]\right)

    over the row's judged items (P relevant, N judged non-relevant; see
    ``(y_pred, y, {"judged": mask})``). Equal scores count one half whatever ``ties`` says; it
    equals ``sklearn.metrics.roc_auc_score`` per row. A row needs both kinds of items: with
    ``ignore_zero_hits=True`` the others are left out, with False they count 0; under
    ``empty_target_action`` they are the queries it acts on ("pos": they count 1, "error": they
    are refused). Cost: it reads whole rows, a sort of every row (O(n log n)) instead of a top-k
    selection. Arguments as
    :class:`~ignite_ranking.MRR`, without ``top_k``; ``ties="average"`` is refused.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import AUC
        >>> metric = AUC()
        >>> metric.update((torch.tensor([[0.9, 0.5, 0.5, 0.1]]), torch.tensor([[1, 0, 1, 0]])))
        >>> metric.compute()  # pairs won: 2 + (1/2 + 1) of 2 * 2
        0.875
    """

    name = "auc"
    count_rule = "had both a judged item below and one at or above relevance_threshold"
    empty_rule = "lacks a judged item below relevance_threshold={threshold:g} or one at or above it"
    without_average = "counts ties as one half itself"
    whole_row = True
    needs_counts = True
    needs_nonrelevant = True
    needs_scores = True

    def counted(self, ranked: RankedBatch) -> torch.Tensor:
        return (ranked.num_relevant > 0) & (ranked.num_nonrelevant > 0)

    def score(self, ranked: RankedBatch) -> torch.Tensor:
        return auc.auc(ranked)


class GAUC(AUC):
    r"""Group AUC as RecBole defines it: per-user AUC weighted by the user's number of items.

    .. math:: \text{GAUC} = \frac{\sum_u n_u \, \text{AUC}_u}{\sum_u n_u}

    over the users (rows) with both relevant and judged non-relevant items, :math:`n_u` the
    judged items of row u (all of them without a mask). The state is the exact weighted sum and
    the int64 sum of the weights. Arguments as :class:`~ignite_ranking.AUC`, without
    ``ignore_zero_hits`` (such rows are always left out, as in RecBole) and ``per_query``.

    Example:
        >>> import torch
        >>> from ignite_ranking import GAUC
        >>> metric = GAUC()
        >>> y_pred = torch.tensor([[0.9, 0.1, 0.5, 0.4], [0.1, 0.9, 0.5, 0.4]])
        >>> metric.update((y_pred, torch.tensor([[1, 0, 0, 0], [1, 0, 0, 0]])))
        >>> metric.compute()  # (4 * 1 + 4 * 0) / 8
        0.5
    """

    name = "gauc"
    has_per_query_values = False

    def __init__(
        self,
        relevance_threshold: float = 1.0,
        output_transform=lambda x: x,
        device="cpu",
        skip_unrolling: bool = False,
        *,
        ties: str = "first",
        ignore_index: int | None = None,
    ):
        super().__init__(
            True,
            relevance_threshold,
            output_transform,
            device,
            skip_unrolling,
            ties=ties,
            ignore_index=ignore_index,
        )

    def accumulate(self, ranked: RankedBatch, query_ids: torch.Tensor | None = None) -> None:
        value, p, n = auc.auc_pairs(ranked)
        counted = (p > 0) & (n > 0)
        weight = torch.where(counted, p + n, torch.zeros_like(p))
        self._add_to_sums(limb_sums((value * weight)[:, None]))
        self._num_examples += weight.sum().to(device=self._device, dtype=torch.int64)
