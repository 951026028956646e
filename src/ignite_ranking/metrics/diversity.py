"""Diversity metrics on subtopic judgements: alpha-nDCG, ERR-IA, NRBP, P-IA and subtopic recall.

Their definitions are those of TREC's ``ndeval`` (see :mod:`ignite_ranking.kernels.diversity`
and :doc:`/diversity`). The input is ``(y_pred, y)`` with ``y_pred`` of shape
``(batch, num_items)`` and ``y`` the subtopic judgements, ``(batch, num_items, num_subtopics)``,
dense or a sparse COO tensor: item i is relevant to subtopic s iff
``y[b, i, s] >= relevance_threshold``. With ``per_query=True`` the ids come as
``(y_pred, y, {"query_ids": ids})``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from ignite.metrics.metric import reinit__is_reduced

from ..kernels import RankedBatch
from ..kernels.diversity import (
    SubtopicBatch,
    alpha_ndcg,
    check_alpha,
    err_ia,
    nrbp,
    precision_ia,
    subtopic_batch,
    subtopic_hits,
    subtopic_recall,
)
from .base import RankingMetric
from .batches import split_extras
from .cutoff_tail import cutoff_ks
from .options import given_options
from .per_query import check_query_ids

if TYPE_CHECKING:
    from .options import RankingOptions, Unpack

__all__ = ["ERRIA", "NRBP", "AlphaNDCG", "PrecisionIA", "SubtopicMetric", "SubtopicRecall"]

_TIES = ("first", "last")


def _check_inputs(output: object) -> tuple[torch.Tensor, torch.Tensor]:
    """``(y_pred, y)`` of an update, or a ``TypeError``/``ValueError`` saying what is wrong."""
    if not isinstance(output, (tuple, list)) or len(output) != 2:
        raise TypeError(
            "a diversity metric takes (y_pred, y) with y of shape (batch, num_items, num_subtopics), "
            f"optionally with {{'query_ids': ids}} as a third element; got {type(output).__name__}"
            + (f" of length {len(output)}" if isinstance(output, (tuple, list)) else "")
        )
    y_pred, y = output
    if not isinstance(y_pred, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError(f"y_pred and y must be tensors, got {type(y_pred).__name__} and {type(y).__name__}")
    if y_pred.ndim != 2 or not y_pred.is_floating_point():
        raise ValueError(
            f"y_pred must be floating scores of shape (batch, num_items), got {y_pred.dtype} of "
            f"shape {tuple(y_pred.shape)}"
        )
    if y.layout not in (torch.strided, torch.sparse_coo) or y.ndim != 3 or y.shape[:2] != y_pred.shape:
        raise ValueError(
            "y must be subtopic judgements of shape (batch, num_items, num_subtopics) = "
            f"{(*y_pred.shape, 'S')}, dense or sparse COO; got {y.layout} of shape {tuple(y.shape)}"
        )
    if y.device != y_pred.device:
        raise ValueError(f"y_pred and y must be on one device, got {y_pred.device} and {y.device}")
    if bool(torch.isnan(y_pred).any()):
        raise ValueError("y_pred holds NaN; scores must be numbers (+-inf rank first/last)")
    labels = y.coalesce().values() if y.is_sparse else y
    if labels.is_floating_point() and bool(torch.isnan(labels).any()):
        raise ValueError("y holds NaN; subtopic labels must be numbers")
    if labels.dtype == torch.bool:
        y = y.to(torch.uint8)
    return y_pred, y


class SubtopicMetric(RankingMetric):
    """Base of the diversity metrics: the update of :class:`RankingMetric` on subtopic labels.

    A query counts in the mean under ``ignore_zero_hits=True`` (default) when one of its items is
    relevant to a subtopic; with ``False`` the others count as 0, as ndeval counts them.
    ``ties`` is ``"first"`` (default) or ``"last"``; the ideal ranking's equal gains go to the
    lower item index. ``judged`` masks, ``ignore_index`` and the flat form are not taken.
    """

    count_rule = "had an item relevant to a subtopic (label >= relevance_threshold)"
    empty_rule = "has no subtopic label >= relevance_threshold={threshold:g}"
    keeps = "queries with a relevant subtopic"

    options_offered = RankingMetric.options_offered - {"ignore_index", "judged_only"}

    def __init__(self, top_k: int | list[int] | None, *args, **options: Unpack[RankingOptions]):
        ties = options.get("ties", "first")
        if ties not in _TIES:
            raise ValueError(f"ties must be 'first' or 'last' for a diversity metric, got {ties!r}")
        super().__init__(top_k, *args, **options)

    takes_flat = False

    def score_subtopics(self, batch: SubtopicBatch, cutoffs: list[int] | None) -> torch.Tensor:
        """Per-query values ``(batch, len(cutoffs))`` of a ranked subtopic batch."""
        raise NotImplementedError

    def numerators_subtopics(self, batch: SubtopicBatch, cutoffs: list[int]) -> torch.Tensor:
        """For ``cutoff_tail = "divide"``: the values at ``cutoffs`` times k."""
        raise NotImplementedError

    def score(self, ranked: RankedBatch) -> torch.Tensor:
        raise TypeError(
            f"{type(self).__name__} reads subtopic labels (batch, num_items, num_subtopics): it is "
            "updated on its own, not scored on a ranked batch"
        )

    @reinit__is_reduced
    def update(self, output) -> None:
        """Adds ``(y_pred, y)`` or ``(y_pred, y, {"query_ids": ids})``; see the module docstring."""
        output, query_ids, judged = split_extras(output)
        if judged is not None:
            raise ValueError("a diversity metric takes no 'judged' mask: unlabelled items are non-relevant")
        y_pred, y = _check_inputs(output)
        ids = check_query_ids(query_ids, y_pred.shape[0], self._per_query)
        batch = subtopic_batch(y_pred, y, self.depth, self.relevance_threshold, self.ties)
        counted = batch.num_subtopics > 0
        if self.empty_target_action == "error":
            self.refuse_empty_rows(~counted, None)
        # The cutoffs past the ranked items cost O(1) a query (see RankingMetric.cutoff_tail).
        tail = self._tail(batch.ranked.shape[1])
        cutoffs = self.top_k if tail is None else self.top_k[: tail + 1]
        numerators = None
        if tail is not None and self.cutoff_tail == "divide":
            numerators = self.numerators_subtopics(batch, cutoffs)
            values = numerators / cutoff_ks(self, numerators.device)[: tail + 1]
            numerators = numerators[:, -1]
        else:
            values = self.score_subtopics(batch, cutoffs)
        counted = counted if self.empty_target_action in ("skip", "pos") else None
        self.add_values(values, counted, ids, tail=tail, numerators=numerators)


class AlphaNDCG(SubtopicMetric):
    r"""alpha-nDCG@k (Clarke et al., 2008), as ndeval computes it.

    .. math::
        \alpha\text{-DCG}@k = \sum_{i=1}^{k} \frac{\sum_{s \in S_i} (1-\alpha)^{c_{s,i}}}{\log_2(i+1)}

    with :math:`S_i` the subtopics of the item at rank i and :math:`c_{s,i}` the items above rank
    i relevant to s; divided by the alpha-DCG@k of the greedy ideal ranking (at each rank the
    item of largest gain given those above it; equal gains to the lower index).

    Example:
        >>> import torch
        >>> from ignite_ranking import AlphaNDCG
        >>> metric = AlphaNDCG(top_k=[1, 2])
        >>> y = torch.tensor([[[1, 0], [1, 0], [0, 1]]])  # 3 items, 2 subtopics
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), y))
        >>> [round(v, 4) for v in metric.compute()]
        [1.0, 0.8066]
    """

    value_range = (0.0, math.inf)  # its greedy ideal can be beaten: no upper bound
    name = "alpha_ndcg"
    cutoff_tail = "repeat"  # past the ranked items neither DCG nor the ideal DCG grows
    _settings_keys = (*RankingMetric._settings_keys, "alpha")

    def __init__(self, top_k: int | list[int], alpha: float = 0.5, **options: Unpack[RankingOptions]):
        super().__init__(top_k, **options)
        self.alpha = check_alpha("alpha", alpha)

    def score_subtopics(self, batch: SubtopicBatch, cutoffs: list[int]) -> torch.Tensor:
        return alpha_ndcg(batch, cutoffs, self.alpha)


class ERRIA(SubtopicMetric):
    r"""Intent-aware ERR@k (Chapelle et al., 2009) with ndeval's normalisation.

    .. math::
        \text{ERR-IA}@k = \frac{\sum_{i=1}^{k} \frac{1}{i} \sum_{s \in S_i} (1-\alpha)^{c_{s,i}}}
                               {N \sum_{i=1}^{k} \frac{(1-\alpha)^{i-1}}{i}}

    N is the number of subtopics with a relevant item. (ndeval leaves ERR-IA@1 undivided by N; here
    k=1 is normalised like every other cutoff.)

    Example:
        >>> import torch
        >>> from ignite_ranking import ERRIA
        >>> metric = ERRIA(top_k=3)
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[[1, 0], [1, 0], [0, 1]]])))
        >>> round(metric.compute()[0], 4)
        0.5938
    """

    value_range = (0.0, 1.0)
    name = "err_ia"
    _settings_keys = (*RankingMetric._settings_keys, "alpha")

    def __init__(self, top_k: int | list[int], alpha: float = 0.5, **options: Unpack[RankingOptions]):
        super().__init__(top_k, **options)
        self.alpha = check_alpha("alpha", alpha)

    def score_subtopics(self, batch: SubtopicBatch, cutoffs: list[int]) -> torch.Tensor:
        return err_ia(batch, cutoffs, self.alpha)


class NRBP(SubtopicMetric):
    r"""Novelty- and rank-biased precision (Clarke et al., 2009), over the whole ranking.

    .. math::
        \text{NRBP} = \frac{1 - (1-\alpha)\beta}{N} \sum_{i \ge 1} \beta^{i-1}
                      \sum_{s \in S_i} (1-\alpha)^{c_{s,i}}

    Example:
        >>> import torch
        >>> from ignite_ranking import NRBP
        >>> metric = NRBP()
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[[1, 0], [1, 0], [0, 1]]])))
        >>> metric.compute()
        0.5625
    """

    value_range = (0.0, 1.0)
    name = "nrbp"
    takes_top_k = False
    whole_row = True
    _settings_keys = (*RankingMetric._settings_keys, "alpha", "beta")

    def __init__(self, alpha: float = 0.5, beta: float = 0.5, **options: Unpack[RankingOptions]):
        super().__init__(None, **given_options(type(self), (), options))  # top_k=... is refused
        self.alpha = check_alpha("alpha", alpha)
        self.beta = check_alpha("beta", beta)

    def score_subtopics(self, batch: SubtopicBatch, cutoffs: None) -> torch.Tensor:
        return nrbp(batch, self.alpha, self.beta)


class PrecisionIA(SubtopicMetric):
    r"""Intent-aware precision P-IA@k (Agrawal et al., 2009), uniform over the N subtopics:
    :math:`\frac{1}{kN}\sum_{i=1}^{k} |S_i|`.

    Example:
        >>> import torch
        >>> from ignite_ranking import PrecisionIA
        >>> metric = PrecisionIA(top_k=[1, 5])
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[[1, 0], [1, 0], [0, 1]]])))
        >>> metric.compute()
        [0.5, 0.3]
    """

    value_range = (0.0, 1.0)
    name = "p_ia"
    cutoff_tail = "divide"

    def __init__(self, top_k: int | list[int], **options: Unpack[RankingOptions]):
        super().__init__(top_k, **options)

    def score_subtopics(self, batch: SubtopicBatch, cutoffs: list[int]) -> torch.Tensor:
        return precision_ia(batch, cutoffs)

    def numerators_subtopics(self, batch: SubtopicBatch, cutoffs: list[int]) -> torch.Tensor:
        return subtopic_hits(batch, cutoffs)


class SubtopicRecall(SubtopicMetric):
    r"""Subtopic recall S-recall@k (Zhai et al., 2003): the share of the N subtopics that the top k
    items cover.

    Example:
        >>> import torch
        >>> from ignite_ranking import SubtopicRecall
        >>> metric = SubtopicRecall(top_k=[1, 3])
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[[1, 0], [1, 0], [0, 1]]])))
        >>> metric.compute()
        [0.5, 1.0]
    """

    value_range = (0.0, 1.0)
    name = "strec"
    cutoff_tail = "repeat"

    def __init__(self, top_k: int | list[int], **options: Unpack[RankingOptions]):
        super().__init__(top_k, **options)

    def score_subtopics(self, batch: SubtopicBatch, cutoffs: list[int]) -> torch.Tensor:
        return subtopic_recall(batch, cutoffs)
