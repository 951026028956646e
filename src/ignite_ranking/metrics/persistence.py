"""RBP, its residual, ERR and nERR: measures of a user who stops with some probability."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from ..kernels import RankedBatch, persistence
from .base import RankingMetric

if TYPE_CHECKING:
    from .options import RankingOptions, Unpack

__all__ = ["ERR", "NERR", "RBP", "RBPResidual"]


class _Persistent(RankingMetric):
    """A metric with RBP's persistence ``p`` as an argument."""

    cutoff_tail = "repeat"
    options_offered = RankingMetric.options_offered - {"judged_only"}
    _settings_keys = (*RankingMetric._settings_keys, "p")
    value_range = (0.0, 1.0)

    def __init__(self, top_k: int | list[int], p: float = 0.9, *args, **options: Unpack[RankingOptions]):
        super().__init__(top_k, *args, **options)
        persistence.rank_biased_precision(_EMPTY, [1], p)  # refuses a p outside (0, 1)
        self.p = float(p)


_EMPTY = RankedBatch(labels=torch.zeros(0, 0), relevant=torch.zeros(0, 0), num_relevant=torch.zeros(0))


class RBP(_Persistent):
    r"""Mean rank-biased precision (Moffat & Zobel, TOIS 2008) at k.

    .. math:: \text{RBP}@k = (1 - p) \sum_{i=1}^{k} r_i \, p^{i-1}

    :math:`r_i` is 1 if the item at rank i is relevant, else 0 (under ``ties="average"`` the
    chance that it is), and ``p`` the persistence, the chance that the user goes on from one
    rank to the next (0.9 by default, as trec_eval; ir_measures' default is 0.8). The TREC layer's
    ``rbp`` uses graded gains as trec_eval does. Other arguments as :class:`~ignite_ranking.MRR`.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import RBP
        >>> metric = RBP(top_k=[1, 3], p=0.5)
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.7]]), torch.tensor([[1, 0, 1]])))
        >>> metric.compute()  # 0.5 * 1, 0.5 * (1 + 0.25)
        [0.5, 0.625]
    """

    name = "rbp"

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        return persistence.rank_biased_precision(ranked, cutoffs, self.p)


class RBPResidual(_Persistent):
    r"""Mean RBP residual at k, trec_eval 10's ``rbp_resid``: how far RBP could still rise.

    .. math:: \text{res}@k = p^{n} + (1 - p) \sum_{i \le n,\ i \text{ unjudged}} p^{i-1}

    with :math:`n = \min(k, \text{items})`: the weight of the unjudged ranks plus that of the ranks
    beyond the list. As in trec_eval it is 0 for a query without an unjudged item in the top k.
    Unjudged items are those an update's ``(y_pred, y, {"judged": mask})`` marks False;
    ``ties="average"`` is not supported. A query without a relevant item has a residual of its
    own: ``ignore_zero_hits=False`` (``empty_target_action="neg"``) counts it with that value,
    and ``empty_target_action="pos"`` counts it as 1 (torchmetrics' rule for every metric).

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import RBPResidual
        >>> metric = RBPResidual(top_k=[3], p=0.5)
        >>> judged = torch.tensor([[True, False, True]])
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.7]]), torch.tensor([[1, 0, 0]]), {"judged": judged}))
        >>> metric.compute()  # 0.5**3 + 0.5 * 0.5
        [0.375]
    """

    name = "rbp_resid"
    without_average = "reads which items of one order are judged"
    zero_without_hits = False

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        return persistence.rbp_residual(ranked, cutoffs, self.p)


class ERR(RankingMetric):
    r"""Mean expected reciprocal rank (Chapelle, Metzler, Zhang & Grinspan, CIKM 2009) at k.

    .. math::
        \text{ERR}@k = \sum_{r=1}^{k} \frac{1}{r} R_r \prod_{i<r} (1 - R_i), \qquad
        R_i = \frac{2^{g_i} - 1}{2^{g_{\max}}}

    :math:`g_i` is the label of the item at rank i if it is relevant (else :math:`R_i = 0`),
    capped at ``max_grade`` (:math:`g_{\max}`, 4 by default as in gdeval and ir_measures'
    ``ERR@k``). Not defined under ``ties="average"``. Other arguments as :class:`~ignite_ranking.MRR`.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import ERR
        >>> metric = ERR(top_k=[1, 3], max_grade=2)
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.7]]), torch.tensor([[2, 0, 1]])))
        >>> [round(v, 6) for v in metric.compute()]  # 3/4, 3/4 + 1/4 * 1/4 / 3
        [0.75, 0.770833]
    """

    name = "err"
    without_average = "is not defined under ties='average'"
    options_offered = RankingMetric.options_offered - {"judged_only"}
    _settings_keys = (*RankingMetric._settings_keys, "max_grade")

    @property
    def value_range(self) -> tuple[float, float] | None:
        """[0, 1] while relevant labels cannot be negative (``relevance_threshold >= 0``)."""
        return (0.0, 1.0) if self.relevance_threshold >= 0 else None

    def __init__(
        self, top_k: int | list[int], max_grade: float = 4, *args, **options: Unpack[RankingOptions]
    ):
        super().__init__(top_k, *args, **options)
        persistence.expected_reciprocal_rank(_EMPTY, [1], max_grade)  # refuses a bad max_grade
        self.max_grade = float(max_grade)

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        return persistence.expected_reciprocal_rank(ranked, cutoffs, self.max_grade)


class NERR(ERR):
    r"""Mean normalized ERR at k: ERR@k divided by the ERR@k of the row's ideal order.

    .. math:: \text{nERR}@k = \text{ERR}@k / \text{ERR}@k(\text{labels in descending order})

    A query whose ideal ERR is 0 scores 0. Arguments as :class:`~ignite_ranking.ERR`.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import NERR
        >>> metric = NERR(top_k=[2], max_grade=1)
        >>> metric.update((torch.tensor([[0.9, 0.8]]), torch.tensor([[0, 1]])))
        >>> metric.compute()  # (1/2 * 1/2) / (1/2)
        [0.5]
    """

    name = "nerr"
    needs_ideal = True

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        return persistence.normalized_err(ranked, cutoffs, self.max_grade)
