"""AUC per query and GAUC: how often a relevant item is scored above a non-relevant one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from ..kernels import RankedBatch, auc, normalize_top_k
from ..kernels.exact_sum import limb_sums
from .base import _WHOLE_ROW, RankingMetric
from .options import given_options
from .single_value import SingleValueMetric

if TYPE_CHECKING:
    from .options import RankingOptions, Unpack

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
    selection. It takes the dense and the flat ``(preds, target, indexes)`` forms (it reads every
    item's score). Arguments as :class:`~ignite_ranking.MRR`; ``ties="average"`` is refused.

    Args:
        top_k: None (default): every item of the row. A positive int or a list of them: the AUC
            of each query's top k ranked items only (torchmetrics' ``top_k``; equal scores at the
            cutoff are kept in the tie policy's order), one value per cutoff, 0 where the top k
            lacks one kind of item; which queries count still depends on the whole row.
            ``compute`` then returns a list, one float per cutoff (keyword only).
        max_fpr: None (default), or a float in (0, 1]: the McClish-standardized partial AUC over
            false positive rates up to ``max_fpr``, as ``sklearn.metrics.roc_auc_score(...,
            max_fpr=...)`` and torchmetrics compute it (0.5 for a random ranking, 1 for a
            perfect one; 1.0 is the plain AUC) (keyword only).

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import AUC
        >>> metric = AUC()
        >>> metric.update((torch.tensor([[0.9, 0.5, 0.5, 0.1]]), torch.tensor([[1, 0, 1, 0]])))
        >>> metric.compute()  # pairs won: 2 + (1/2 + 1) of 2 * 2
        0.875
        >>> metric = AUC(top_k=[2, 4], max_fpr=0.5)  # the flat form, one query
        >>> metric.update((torch.tensor([0.9, 0.5, 0.4, 0.1]), torch.tensor([1, 0, 1, 0]),
        ...                torch.tensor([7, 7, 7, 7])))
        >>> [round(v, 4) for v in metric.compute()]
        [1.0, 0.6667]
    """

    value_range = (0.0, 1.0)
    name = "auc"
    keeps = "queries with a relevant and a judged non-relevant item"
    count_rule = "had both a judged item below and one at or above relevance_threshold"
    empty_rule = "lacks a judged item below relevance_threshold={threshold:g} or one at or above it"
    without_average = "counts ties as one half itself"
    whole_row = True
    needs_counts = True
    needs_nonrelevant = True
    needs_scores = True

    def __init__(
        self,
        *args,
        top_k: int | list[int] | None = None,
        max_fpr: float | None = None,
        **options: Unpack[RankingOptions],
    ):
        self.max_fpr = auc.check_max_fpr(max_fpr)
        RankingMetric.__init__(self, top_k, *args, **options)  # SingleValueMetric's arguments, and cutoffs

    def _cutoffs(self, top_k: object) -> list[int] | None:
        return None if top_k is None else normalize_top_k(top_k)

    @property
    def depth(self) -> int:
        return _WHOLE_ROW if self.top_k is None else self.top_k[-1]

    def settings(self) -> dict:
        settings = super().settings()
        if self.max_fpr is not None:  # only when set, so that states saved before the option still load
            settings["max_fpr"] = self.max_fpr
        return settings

    cutoff_tail = "repeat"

    def counted(self, ranked: RankedBatch) -> torch.Tensor:
        return (ranked.num_relevant > 0) & (ranked.num_nonrelevant > 0)

    def score(self, ranked: RankedBatch) -> torch.Tensor:
        if self.top_k is None and self.max_fpr is None:
            return auc.auc(ranked)
        return self.score_at(ranked, self.top_k)

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int] | None) -> torch.Tensor:
        return auc.auc_at(ranked, cutoffs, self.max_fpr)


class GAUC(AUC):
    r"""Group AUC as RecBole defines it: per-user AUC weighted by the user's number of items.

    .. math:: \text{GAUC} = \frac{\sum_u n_u \, \text{AUC}_u}{\sum_u n_u}

    over the users (rows) with both relevant and judged non-relevant items, :math:`n_u` the
    judged items of row u (all of them without a mask). The state is the exact weighted sum and
    the int64 sum of the weights. Arguments as :class:`~ignite_ranking.AUC`, without
    ``ignore_zero_hits`` and ``empty_target_action`` (such rows are always left out, as in
    RecBole), ``per_query``, ``aggregation``, ``top_k`` and ``max_fpr``.

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
    positional_options = ("relevance_threshold", "output_transform", "device", "skip_unrolling")
    options_offered = frozenset({*positional_options, "ties", "ignore_index"})

    def __init__(self, *args, **options: Unpack[RankingOptions]):
        self.max_fpr = None
        # AUC's arguments, less its own (top_k=... and max_fpr=... are refused)
        RankingMetric.__init__(self, None, **given_options(type(self), args, options))

    def accumulate(self, ranked: RankedBatch, query_ids: torch.Tensor | None = None) -> None:
        value, p, n = auc.auc_pairs(ranked)
        counted = (p > 0) & (n > 0)
        weight = torch.where(counted, p + n, torch.zeros_like(p))
        self._add_to_sums(limb_sums((value * weight)[:, None]))
        self._num_examples += weight.sum().to(device=self._device, dtype=torch.int64)
