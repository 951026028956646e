"""R-Precision."""

from __future__ import annotations

import torch

from ..kernels import RankedBatch, scoring
from .single_value import SingleValueMetric

__all__ = ["RPrecision"]


class RPrecision(SingleValueMetric):
    r"""Mean R-Precision: precision at each query's own number R of relevant items.

    .. math:: \text{R-Prec}_q = \frac{|\{\text{relevant items of } q \text{ at ranks} \le R_q\}|}{R_q}

    There is no ``top_k``; ``compute`` returns one float. The kernel counts the relevant items
    within each query's top R by selection, without ranking that deep. Other arguments as
    :class:`~ignite_ranking.MRR`.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import RPrecision
        >>> metric = RPrecision()
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[1, 0, 1]])))
        >>> metric.compute()
        0.5
    """

    value_range = (0.0, 1.0)
    name = "r_precision"
    needs_labels = False
    covers_relevant = True

    def score(self, ranked: RankedBatch) -> torch.Tensor:
        return scoring.r_precision(ranked)
