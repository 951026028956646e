"""Beyond accuracy: novelty, popularity bias, diversity and serendipity of each ranked list.

Each metric reads the item ids of each ranked list (the dense form's columns, a
:class:`~ignite_ranking.Retrieved`'s ids) and statistics indexed by item id, given at
construction on any device. A list shorter than k (``-1`` padding, items left out by
``ignore_index``) has fewer items: its means divide by the items it holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from ..kernels import RankedBatch, beyond
from .base import RankingMetric

if TYPE_CHECKING:
    from .options import RankingOptions, Unpack

__all__ = [
    "AveragePopularity",
    "IntraListDiversity",
    "LongTailShare",
    "Novelty",
    "Serendipity",
]


class _Statistics:
    """Item statistics kept on their own device, with a copy per device they are read on."""

    def __init__(self, **values: torch.Tensor):
        self._values = values
        self._copies: dict[tuple[str, torch.device], torch.Tensor] = {}

    def on(self, name: str, device: torch.device) -> torch.Tensor:
        value = self._values[name]
        if value.device == device:
            return value
        key = (name, device)
        if key not in self._copies:
            self._copies[key] = value.to(device)
        return self._copies[key]


class _ListMeasure(RankingMetric):
    """A mean over each list's items of a per-item statistic; lists of fewer than ``min_items``
    items are left out. Reads no relevance: every query with a list counts."""

    needs_items = True
    needs_labels = False
    reads_relevance = False
    zero_without_hits = False
    cutoff_tail = "repeat"
    min_items = 1
    keeps = "queries with a listed item"
    statistic = "item_popularity"
    without_average = "reads the items of one order of each list"
    _settings_keys = ("top_k", "ties", "ignore_index")
    positional_options = ("output_transform", "device", "skip_unrolling")
    options_offered = frozenset({*positional_options, "ties", "per_query", "ignore_index", "confidence"})

    def __init__(
        self,
        top_k: int | list[int],
        values: torch.Tensor,
        stats: _Statistics,
        *args,
        **options: Unpack[RankingOptions],
    ):
        self._size = values.shape[0]
        self._digest = beyond.digest(values)
        self._stats = stats
        super().__init__(top_k, *args, **options)

    def counted(self, ranked: RankedBatch) -> torch.Tensor:
        return beyond.list_lengths(ranked.indices) >= self.min_items

    @property
    def item_statistics(self) -> tuple[str, int]:
        return self.statistic, self._size

    def settings(self) -> dict:
        return {**super().settings(), self.statistic: self._digest}


class _ItemMean(_ListMeasure):
    """A list's mean of one per-item value: the ``_stats`` entry named ``per_item``."""

    per_item: str

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        values = self._stats.on(self.per_item, ranked.indices.device)
        lengths = beyond.list_lengths(ranked.indices)
        return beyond.list_means(beyond.values_at(values, ranked.indices), lengths, cutoffs)


class Novelty(_ItemMean):
    r"""Novelty at k: the mean self-information of the recommended items, in bits.

    .. math::
        \text{Novelty}@k = \frac{1}{|Q|} \sum_{q} \frac{1}{|L_q|} \sum_{i \in L_q} -\log_2 p_i,
        \qquad p_i = \frac{\text{pop}_i}{\sum_j \text{pop}_j}

    with :math:`L_q` the first ``min(k, n)`` items of query q's list (``n`` the items it holds)
    and :math:`p_i` item i's share of all training interactions (``item_popularity``: each
    item's number of interactions). This is expected free discovery (EFD, Vargas & Castells,
    "Rank and Relevance in Novelty and Diversity Metrics for Recommender Systems", RecSys 2011)
    without rank discount and relevance weighting, and Microsoft Recommenders' novelty (the
    historical item novelty averaged over the recommendations: equal when every list has the
    same length). Elliot's ``EFD`` weighs each rank by its relevance and a log discount, and
    gives items never seen in training the largest novelty of a seen item (see
    :doc:`/beyond_accuracy`). Zhou et al. (PNAS 2010) take ``p_i`` as the share of users who
    interacted with i; with one interaction per user and item that is :math:`p_i` times the
    mean number of interactions per user, so their novelty is this one minus the constant
    :math:`\log_2` of that mean.

    A list of no item (a :class:`~ignite_ranking.Retrieved` row of padding) is left out. Every
    item needs ``item_popularity > 0`` (an unseen item's novelty is infinite): add one to every
    count to keep unseen items. ``ties="average"`` is not offered.

    Args:
        top_k: a positive int or a list of them.
        item_popularity: ``(num_items,)`` non-negative interaction counts (or any popularity),
            indexed by item id, on any device.
        output_transform, device, skip_unrolling, ties, per_query, ignore_index: as in
            :class:`~ignite_ranking.MRR`.

    Example:
        >>> import torch
        >>> from ignite_ranking import Novelty
        >>> popularity = torch.tensor([4.0, 2.0, 1.0, 1.0])  # shares 1/2, 1/4, 1/8, 1/8
        >>> metric = Novelty([1, 2], popularity)
        >>> metric.update((torch.tensor([[0.9, 0.1, 0.8, 0.0]]), torch.zeros(1, 4)))
        >>> metric.compute()  # items 0 then 2: 1 bit, then (1 + 3) / 2
        [1.0, 2.0]
    """

    value_range = (0.0, math.inf)
    name = "novelty"
    per_item = "novelty"

    def __init__(
        self, top_k: int | list[int], item_popularity: torch.Tensor, *args, **options: Unpack[RankingOptions]
    ):
        popularity = beyond.check_popularity("item_popularity", item_popularity, positive=True)
        super().__init__(
            top_k, popularity, _Statistics(novelty=beyond.novelty_of_items(popularity)), *args, **options
        )


class AveragePopularity(_ItemMean):
    r"""Average recommendation popularity (ARP) at k: the mean raw popularity of a list's items.

    .. math::
        \text{ARP}@k = \frac{1}{|Q|} \sum_{q} \frac{1}{|L_q|} \sum_{i \in L_q} \text{pop}_i

    with :math:`L_q` the first ``min(k, n)`` items of query q's list. As RecBole's
    ``AveragePopularity`` and Elliot's ``ARP`` (the ARP and APLT names are Abdollahpouri,
    Burke & Mobasher, "Managing Popularity Bias in Recommender Systems with Personalized
    Re-ranking", FLAIRS 2019). Lower is less popularity-biased. A list of no item is left out;
    ``item_popularity`` must lie below 2**31 (the range of the exact sums).

    Args:
        top_k: a positive int or a list of them.
        item_popularity: ``(num_items,)`` non-negative popularity (e.g. training interactions),
            indexed by item id, on any device.
        output_transform, device, skip_unrolling, ties, per_query, ignore_index: as in
            :class:`~ignite_ranking.MRR`.

    Example:
        >>> import torch
        >>> from ignite_ranking import AveragePopularity, Retrieved
        >>> metric = AveragePopularity([2], torch.tensor([10, 4, 1, 0]))
        >>> metric.update(Retrieved(torch.tensor([[0, 2], [1, -1]]), torch.tensor([[2], [3]])))
        >>> metric.compute()  # (10 + 1) / 2 and 4 / 1 (a list of one item)
        [4.75]
    """

    value_range = (0.0, math.inf)
    name = "arp"
    per_item = "popularity"

    def __init__(
        self, top_k: int | list[int], item_popularity: torch.Tensor, *args, **options: Unpack[RankingOptions]
    ):
        popularity = beyond.check_popularity("item_popularity", item_popularity)
        super().__init__(top_k, popularity, _Statistics(popularity=popularity), *args, **options)


class LongTailShare(_ItemMean):
    r"""Average percentage of long-tail items (APLT) at k: the share of a list's items in the tail.

    .. math::
        \text{APLT}@k = \frac{1}{|Q|} \sum_{q} \frac{|\{i \in L_q : i \in T\}|}{|L_q|}

    with :math:`L_q` the first ``min(k, n)`` items of query q's list and T the long-tail items
    (``tail_items``). Abdollahpouri, Burke & Mobasher, "Controlling Popularity Bias in
    Learning-to-Rank Recommendation", RecSys 2017; as RecBole's ``TailPercentage`` and Elliot's
    ``APLT`` given the same tail set (RecBole picks the tail from ``tail_ratio``, Elliot from
    the short head's share of interactions; here the tail is given). A list of no item is left out.

    Args:
        top_k: a positive int or a list of them.
        tail_items: ``(num_items,)`` bool mask, True for long-tail items, on any device.
        output_transform, device, skip_unrolling, ties, per_query, ignore_index: as in
            :class:`~ignite_ranking.MRR`.

    Example:
        >>> import torch
        >>> from ignite_ranking import LongTailShare
        >>> tail = torch.tensor([False, False, True, True])
        >>> metric = LongTailShare([1, 4], tail)
        >>> metric.update((torch.tensor([[0.9, 0.1, 0.8, 0.0]]), torch.zeros(1, 4)))
        >>> metric.compute()
        [0.0, 0.5]
    """

    value_range = (0.0, 1.0)
    name = "aplt"
    statistic = "tail_items"
    per_item = "tail"

    def __init__(
        self, top_k: int | list[int], tail_items: torch.Tensor, *args, **options: Unpack[RankingOptions]
    ):
        tail = beyond.check_tail_items(tail_items)
        super().__init__(top_k, tail, _Statistics(tail=tail.to(torch.float64)), *args, **options)


class IntraListDiversity(_ListMeasure):
    r"""Intra-list diversity at k: the mean cosine distance between the items of a list.

    .. math::
        \text{ILD}@k = \frac{1}{|Q|} \sum_{q} \frac{2}{|L_q| (|L_q| - 1)}
            \sum_{i < j \in L_q} \left(1 - \frac{e_i \cdot e_j}{\|e_i\| \|e_j\|}\right)

    with :math:`L_q` the first ``min(k, n)`` items of query q's list and :math:`e_i` item i's
    embedding. Ziegler et al. ("Improving Recommendation Lists Through Topic Diversification",
    WWW 2005) introduced intra-list similarity as a sum over the pairs; this normalized mean of
    distances is that of Vargas & Castells (RecSys 2011). A list of fewer than two items has no
    pair and is left out, so every cutoff must be at least 2. One ``(batch, k, k)`` Gram block
    per batch in float64 (no loop over the pairs); embeddings with NaN, inf or a zero row are
    refused.

    Args:
        top_k: an int >= 2 or a list of them.
        item_embeddings: ``(num_items, d)`` floating embeddings, indexed by item id, on any
            device.
        output_transform, device, skip_unrolling, ties, per_query, ignore_index: as in
            :class:`~ignite_ranking.MRR`.

    Example:
        >>> import torch
        >>> from ignite_ranking import IntraListDiversity
        >>> embeddings = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]])
        >>> metric = IntraListDiversity([2, 3], embeddings)
        >>> metric.update((torch.tensor([[0.9, 0.1, 0.5]]), torch.zeros(1, 3)))
        >>> metric.compute()  # items 0, 2 (same direction), then 1: distances 0; 0, 1, 1
        [0.0, 0.6666666666666667]
    """

    value_range = (0.0, 2.0)
    name = "ild"
    min_items = 2
    keeps = "queries with two listed items"
    statistic = "item_embeddings"

    def __init__(
        self, top_k: int | list[int], item_embeddings: torch.Tensor, *args, **options: Unpack[RankingOptions]
    ):
        unit = beyond.check_embeddings(item_embeddings)
        super().__init__(top_k, unit, _Statistics(unit=unit), *args, **options)
        if self.top_k[0] < 2:
            raise ValueError(
                "IntraListDiversity needs cutoffs >= 2 (a list of one item has no pair), got "
                f"top_k={self.top_k}."
            )

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        unit = self._stats.on("unit", ranked.indices.device)
        return beyond.intra_list_diversity(ranked.indices, cutoffs, unit)


class Serendipity(RankingMetric):
    r"""Serendipity at k (Ge, Delgado-Battenfeld & Jannach, "Beyond Accuracy: Evaluating
    Recommender Systems by Coverage and Serendipity", RecSys 2010).

    .. math::
        \text{SRDP}@k = \frac{1}{|Q|} \sum_{q} \frac{|\{i \in L_q : i \notin PM_k,\ i
            \text{ relevant}\}|}{|L_q|}

    with :math:`L_q` the first ``min(k, n)`` items of query q's list and :math:`PM_k` the list
    of a primitive recommender: the k most popular items of ``item_popularity`` (equal
    popularity: lower item id first). The denominator is the list's length, as in Ge et al.'s
    ``|UNEXP ∩ USEFUL| / |N|``. A list of no item scores 0. Kaminskas & Bridge's
    history-based unexpectedness is not this measure.

    Queries without a relevant item are left out (``ignore_zero_hits=True``) or count as 0,
    as for :class:`~ignite_ranking.Precision`. ``ties="average"`` is not offered.

    Args:
        top_k: a positive int or a list of them.
        item_popularity: ``(num_items,)`` non-negative popularity, indexed by item id, on any
            device; only its order is read.
        ignore_zero_hits, relevance_threshold: as in :class:`~ignite_ranking.MRR`.
        output_transform, device, skip_unrolling, ties, per_query, ignore_index: as in
            :class:`~ignite_ranking.MRR`.

    Example:
        >>> import torch
        >>> from ignite_ranking import Serendipity
        >>> popularity = torch.tensor([9.0, 5.0, 1.0, 0.0])  # most popular: 0, then 1
        >>> metric = Serendipity([1, 2], popularity)
        >>> metric.update((torch.tensor([[0.9, 0.1, 0.8, 0.0]]), torch.tensor([[1, 0, 1, 0]])))
        >>> metric.compute()  # item 0 is relevant but expected; item 2 is both relevant and not
        [0.0, 0.5]
    """

    value_range = (0.0, 1.0)
    name = "serendipity"
    cutoff_tail = "repeat"
    needs_items = True
    needs_labels = False
    without_average = "reads the items of one order of each list"
    _settings_keys = ("top_k", "ignore_zero_hits", "relevance_threshold", "ties", "ignore_index")
    options_offered = frozenset(
        {*RankingMetric.positional_options, "ties", "per_query", "ignore_index", "confidence"}
    )

    def __init__(
        self, top_k: int | list[int], item_popularity: torch.Tensor, *args, **options: Unpack[RankingOptions]
    ):
        popularity = beyond.check_popularity("item_popularity", item_popularity)
        self._size = popularity.shape[0]
        self._digest = beyond.digest(popularity)
        self._stats = _Statistics(ranks=beyond.popularity_ranks(popularity))
        super().__init__(top_k, *args, **options)

    @property
    def item_statistics(self) -> tuple[str, int]:
        return "item_popularity", self._size

    def settings(self) -> dict:
        return {**super().settings(), "item_popularity": self._digest}

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        ranks = self._stats.on("ranks", ranked.indices.device)
        return beyond.serendipity(ranked.relevant, ranked.indices, cutoffs, ranks)

    def _tail(self, depth: int) -> int | None:
        # PM_k grows with k past a list shorter than the catalog, so the value settles only
        # where PM_k holds every item (it is 0 from there on).
        return super()._tail(max(depth, self._size))
