"""MAP@k, mean average precision."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..kernels import RankedBatch, scoring
from .base import RankingMetric

if TYPE_CHECKING:
    from .options import RankingOptions, Unpack

__all__ = ["MAP"]


class MAP(RankingMetric):
    r"""Mean average precision at k.

    .. math:: \text{AP}_q@k = \frac{1}{R_q} \sum_{i \le k,\; \text{item at } i \text{ relevant}}
        \text{P}_q@i

    The divisor is the query's number of relevant items R, not ``min(k, R)`` (trec_eval's
    ``map_cut_k`` and ranx's ``map@k``). ``denominator`` (keyword only) chooses another:
    ``"min_k_relevant"`` divides by ``min(k, R)`` (sentence-transformers' and RecBole's MAP@k),
    ``"relevant_retrieved"`` by the relevant items within the top k (torchmetrics'; not defined
    under ``ties="average"``). Other arguments as :class:`~ignite_ranking.MRR`.

    Queries without a relevant item are left out of the mean by default (``ignore_zero_hits=True``),
    unlike ranx and trec_eval, which count them as 0: pass ``ignore_zero_hits=False`` for their numbers.

    Example:
        >>> import torch
        >>> from ignite_ranking import MAP
        >>> metric = MAP(top_k=[2, 3])
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[1, 0, 1]])))
        >>> [round(v, 4) for v in metric.compute()]
        [0.5, 0.8333]
        >>> metric = MAP(top_k=[2, 3], denominator="min_k_relevant")  # 1 / min(2, 2), then / 2
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[1, 0, 1]])))
        >>> [round(v, 4) for v in metric.compute()]
        [0.5, 0.8333]
        >>> metric = MAP(top_k=[2, 3], denominator="relevant_retrieved")  # 1 / 1, then / 2
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[1, 0, 1]])))
        >>> [round(v, 4) for v in metric.compute()]
        [1.0, 0.8333]
    """

    needs_counts = True
    value_range = (0.0, 1.0)
    name = "map"
    needs_labels = False

    def __init__(
        self, top_k: int | list[int], *args, denominator: str = "relevant", **options: Unpack[RankingOptions]
    ):
        self.denominator = scoring.check_denominator(denominator)
        super().__init__(top_k, *args, **options)
        scoring.check_denominator(denominator, self.ties)

    @property
    def cutoff_tail(self) -> str | None:
        """Past the ranked depth the sum stops growing: AP@k repeats, but over ``min(k, R)``."""
        return None if self.denominator == "min_k_relevant" else "repeat"

    def settings(self) -> dict:
        settings = super().settings()
        if self.denominator != "relevant":  # only when set, so that states saved before still load
            settings["denominator"] = self.denominator
        return settings

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]):
        return scoring.average_precision(ranked, cutoffs, self.denominator)
