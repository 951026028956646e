"""NDCG@k, normalized discounted cumulative gain."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch

from ..kernels import RankedBatch, check_gain_function, scoring
from .base import RankingMetric
from .options import RankingOptions, given_options

if TYPE_CHECKING:
    from .options import Unpack

__all__ = ["NDCG"]


class NDCGOptions(RankingOptions, total=False):
    """NDCG's options: the shared ones and its gain."""

    gain_function: str


class NDCG(RankingMetric):
    r"""Mean normalized discounted cumulative gain at k.

    .. math::
        \text{DCG}@k = \sum_{i=1}^{k} \frac{g_i}{\log_2(i + 1)}, \qquad
        \text{NDCG}@k = \frac{\text{DCG}@k}{\text{IDCG}@k}

    :math:`g_i` is the gain of the item at rank i: ``2**label - 1`` (``"exp_rank"``, Burges et al.
    2005) or ``label`` (``"linear_rank"``, Järvelin and Kekäläinen 2002) for a relevant item, 0
    otherwise. IDCG@k is the DCG@k of the row's own labels in descending order. Gains are computed
    in float64, so large grades in float16 inputs do not overflow. A query whose IDCG is 0 (or
    negative: negative linear gains under a threshold below 0) scores 0. Arguments and defaults
    follow :class:`ignite.metrics.NDCG`, plus ``ties`` as in :class:`~ignite_ranking.MRR`.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import NDCG
        >>> metric = NDCG(top_k=[1, 2], gain_function="linear_rank")
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[0, 1, 0]])))
        >>> [round(v, 4) for v in metric.compute()]
        [0.0, 0.6309]
    """

    name = "ndcg"
    cutoff_tail = "repeat"
    needs_ideal = True
    _settings_keys = (*RankingMetric._settings_keys, "gain_function")

    @property
    def value_range(self) -> tuple[float, float] | None:
        """[0, 1] while relevant labels cannot be negative (``relevance_threshold >= 0``)."""
        return (0.0, 1.0) if self.relevance_threshold >= 0 else None

    # ignite's order: gain_function is the fourth positional argument, among the shared options.
    positional_options = (
        "ignore_zero_hits",
        "relevance_threshold",
        "gain_function",
        "output_transform",
        "device",
        "skip_unrolling",
    )
    options_offered = RankingMetric.options_offered | {"gain_function"}
    option_defaults: Mapping[str, object] = {"gain_function": "exp_rank"}

    def __init__(self, top_k: int | list[int], *args, **options: Unpack[NDCGOptions]):
        given = given_options(type(self), args, options)
        gain_function = given.pop("gain_function", self.option_defaults["gain_function"])
        super().__init__(top_k, **given)
        self.gain_function = check_gain_function(gain_function, self.relevance_threshold)

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        return scoring.ndcg(ranked, cutoffs, self.gain_function)
