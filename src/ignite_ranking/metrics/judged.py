"""bpref and Judged@k: measures that tell judged from unjudged items."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..kernels import RankedBatch, judged
from .base import RankingMetric
from .single_value import SingleValueMetric

__all__ = ["Bpref", "Judged"]


class Bpref(SingleValueMetric):
    r"""Mean bpref (Buckley & Voorhees, SIGIR 2004), as trec_eval computes it.

    .. math:: \text{bpref} = \frac{1}{R} \sum_{r \text{ relevant, ranked}}
        \left(1 - \frac{\min(n_r, R)}{\min(N, R)}\right)

    R relevant and N judged non-relevant items per query; :math:`n_r` is the number of judged
    non-relevant items ranked above relevant item r (a term is 1 when it is 0). Unjudged items,
    those an update's ``(y_pred, y, {"judged": mask})`` marks False, are skipped: they neither
    count in N nor push a relevant item down. Dense inputs without a mask are fully judged. It
    ranks whole rows (O(n log n) per row). Arguments as :class:`~ignite_ranking.MRR`, without
    ``top_k``; ``ties="average"`` is not supported.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import Bpref
        >>> metric = Bpref()
        >>> y_pred = torch.tensor([[0.9, 0.8, 0.7, 0.6]])
        >>> y = torch.tensor([[1, 0, 0, 1]])
        >>> metric.update((y_pred, y, {"judged": torch.tensor([[True, True, False, True]])}))
        >>> metric.compute()  # (1 + (1 - min(1, 2) / min(1, 2))) / 2
        0.5
    """

    value_range = (0.0, 1.0)
    name = "bpref"
    without_average = "is not defined under ties='average'"
    whole_row = True
    needs_counts = True
    needs_nonrelevant = True

    def score(self, ranked: RankedBatch) -> torch.Tensor:
        return judged.bpref(ranked)


class Judged(RankingMetric):
    r"""Mean Judged@k: the share of the top k that is judged (ir_measures' ``Judged@k``).

    .. math:: \text{Judged}@k = \frac{|\{\text{judged items at ranks} \le k\}|}{\min(k, n)}

    with n the items of the row. Unjudged items are those an update's
    ``(y_pred, y, {"judged": mask})`` marks False; without a mask every item is judged and the
    value is 1. Arguments as :class:`~ignite_ranking.MRR`; ``ties="average"`` is not supported.
    A query without a relevant item has a Judged@k of its own: ``ignore_zero_hits=False``
    (``empty_target_action="neg"``) counts it with that value, and ``empty_target_action="pos"``
    counts it as 1 (torchmetrics' rule for every metric).

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import Judged
        >>> metric = Judged(top_k=[2, 4])
        >>> judged = torch.tensor([[True, False, True, True]])
        >>> y_pred, y = torch.tensor([[0.9, 0.8, 0.7, 0.6]]), torch.tensor([[1, 0, 0, 1]])
        >>> metric.update((y_pred, y, {"judged": judged}))
        >>> metric.compute()
        [0.5, 0.75]
    """

    value_range = (0.0, 1.0)
    name = "judged"
    without_average = "reads which items of one order are judged"
    cutoff_tail = "repeat"
    zero_without_hits = False

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        return judged.judged_at_k(ranked, cutoffs)
