"""MRR@k, mean reciprocal rank."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..kernels import RankedBatch, scoring
from .base import RankingMetric

__all__ = ["MRR"]


class MRR(RankingMetric):
    r"""Mean reciprocal rank at k.

    .. math::
        \text{MRR}@k = \frac{1}{|Q|} \sum_{q \in Q} \text{RR}_q@k, \qquad
        \text{RR}_q@k = \begin{cases} 1 / r_q & r_q \le k \\ 0 & \text{otherwise} \end{cases}

    where :math:`r_q` is the rank of the first relevant item of query :math:`q` (an item is
    relevant iff its label is ``>= relevance_threshold``). Items are ranked by descending score;
    equal scores are ranked by item index, the lower index first, exactly as
    ``torch.argsort(y_pred, dim=1, descending=True, stable=True)``. ``+inf``/``-inf`` scores are
    allowed and rank first/last; NaN is refused.

    - ``update`` takes ``(y_pred, y)``, both of shape ``(batch, num_items)``: floating scores (higher
      is better) and binary or graded labels of any real dtype (``y`` may be sparse); or the
      flat form ``(preds, target, indexes)``; or an :class:`~ignite_ranking.Retrieved` (see
      :doc:`/inputs`).
    - ``compute`` returns a list of floats, one per cutoff in ascending order of ``top_k``.

    Args:
        top_k: a positive int or a list of them; duplicates are dropped, and a k larger than the
            number of items sees every item.
        ignore_zero_hits: if True, queries without a relevant item are left out of the mean; if
            False they count with value 0.
        relevance_threshold: the smallest label that makes an item relevant.
        output_transform: turns the engine's output into ``(y_pred, y)``.
        device: where the sums are kept.
        skip_unrolling: as in :class:`ignite.metrics.Metric`, for multi-output models.
        ties: how equal scores are ordered: ``"first"`` (the default above), ``"last"`` (higher
            index first), ``"optimistic"`` / ``"pessimistic"`` (higher / lower label first), or
            ``"average"`` (the expected value over all orders of each tied block).
        per_query: also keep each query's values (memory O(queries)), for
            :meth:`per_query_values` and :func:`ignite_ranking.compare.compare`; an update may then
            carry query ids as ``(y_pred, y, {"query_ids": ids})``.
        ignore_index: items (flat rows) whose label equals it are left out, as in torchmetrics.
        judged_only: score each query's ranking with its unjudged items removed (Sakai's
            condensed list; trec_eval ``-J``, ir_measures ``judged_only=True``). Unjudged items
            are those absent from sparse labels or a Retrieved's ``relevant``, or those an
            update's ``(y_pred, y, {"judged": mask})`` marks False (dense inputs are fully
            judged otherwise). It ranks whole rows, O(n log n) per row instead of top-k. Also
            offered by :class:`~ignite_ranking.Precision`, :class:`~ignite_ranking.MAP`,
            :class:`~ignite_ranking.NDCG` and :class:`~ignite_ranking.Recall`.
        confidence: a level such as 0.95 makes the state also keep the sums of squares, for
            :meth:`interval` (Student t intervals; an engine then also gets ``"mrr@k_low"`` and
            ``"mrr@k_high"``). Offered by every metric with per-query values.
        empty_target_action: torchmetrics' name for what to do with a query without a relevant
            item (keyword only): ``"skip"`` leaves it out (``ignore_zero_hits=True``), ``"neg"``
            counts it as 0 (``ignore_zero_hits=False``), ``"pos"`` counts it as 1 on every
            cutoff, ``"error"`` refuses the update that holds it with a ``ValueError`` naming the
            query (its row in the batch, or its ``indexes`` value in the flat form, whose last
            query is checked when the next update or :meth:`compute` completes it); the state is
            left as it was. None (default): as ``ignore_zero_hits`` says. Give it instead of
            ``ignore_zero_hits``: both together must agree. "pos" and "error" are saved with the
            state's settings.
        aggregation: how :meth:`compute` aggregates the per-query values of each cutoff:
            ``"mean"`` (default), ``"median"`` (the lower of the two middle values for an even
            count, as ``torch.median`` and torchmetrics), ``"min"``, ``"max"``, or a callable
            taking a 1-D float64 tensor of the values and returning a number (torchmetrics'
            ``f(values, dim=None)`` works as it is). Anything but the mean keeps every counted
            query's value (memory O(queries), as ``per_query``; gathered from every process in
            :meth:`compute`); the mean needs only the sums. Not with ``confidence``.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import MRR
        >>> y_pred = torch.tensor([[4.0, 2.0, 3.0, 1.0], [1.0, 2.0, 3.0, 4.0]])
        >>> y = torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
        >>> metric = MRR(top_k=[1, 2, 3, 4])
        >>> metric.update((y_pred, y))
        >>> metric.compute()
        [0.0, 0.5, 0.5, 0.5]
        >>> metric = MRR(top_k=[1, 2, 3, 4], ignore_zero_hits=False)
        >>> metric.update((y_pred, y))
        >>> metric.compute()
        [0.0, 0.25, 0.25, 0.25]
        >>> metric = MRR(top_k=[1, 2, 3, 4], empty_target_action="pos")  # the second query: 1
        >>> metric.update((y_pred, y))
        >>> metric.compute()
        [0.5, 0.75, 0.75, 0.75]
        >>> metric = MRR(top_k=[1, 2, 3, 4], empty_target_action="neg", aggregation="max")
        >>> metric.update((y_pred, y))
        >>> metric.compute()
        [0.0, 0.5, 0.5, 0.5]
    """

    value_range = (0.0, 1.0)
    name = "mrr"
    cutoff_tail = "repeat"
    needs_labels = False

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        return scoring.reciprocal_rank(ranked, cutoffs)
