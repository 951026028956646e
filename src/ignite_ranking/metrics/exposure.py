"""Coverage@k, the Gini index and the Shannon entropy of exposure: what the top-k lists do to the catalog."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import torch
from ignite.exceptions import NotComputableError
from ignite.metrics.metric import reinit__is_reduced, sync_all_reduce

from ..kernels import RankedBatch, beyond, exposure
from .base import RankingMetric

if TYPE_CHECKING:
    from .options import RankingOptions, Unpack

__all__ = ["Coverage", "GiniIndex", "ShannonEntropy"]


class _Exposure(RankingMetric):
    """Counts of each catalog item in the top k lists; ``compute`` reads them."""

    needs_items = True
    reads_relevance = False
    has_per_query_values = False
    without_average = "counts the items of one order"
    _settings_keys = ("top_k", "num_items", "ties", "ignore_index")
    positional_options = ("output_transform", "device", "skip_unrolling")
    options_offered = frozenset({*positional_options, "ties", "ignore_index"})

    def __init__(self, top_k: int | list[int], num_items: int, *args, **options: Unpack[RankingOptions]):
        if isinstance(num_items, bool) or not isinstance(num_items, numbers.Integral) or num_items < 1:
            raise ValueError(f"num_items (the catalog size) must be a positive int, got {num_items!r}.")
        self.num_items = int(num_items)
        super().__init__(top_k, *args, **options)

    @property
    def num_values(self) -> int:
        return len(self.top_k) * self.num_items

    @property
    def item_statistics(self) -> tuple[str, int]:
        return "num_items", self.num_items

    @reinit__is_reduced
    def accumulate(self, ranked: RankedBatch, query_ids: torch.Tensor | None = None) -> None:
        if ranked.indices is None:
            raise ValueError(f"{type(self).__name__} needs the ranked items' ids")
        counts = exposure.distinct_item_counts(ranked.indices, self.top_k, self.num_items)
        state = self._sum_per_k.view(len(self.top_k), self.num_items)
        state[: counts.shape[0]] += counts.to(device=self._device, dtype=torch.int64)
        state[counts.shape[0] :] += counts[-1:].to(device=self._device, dtype=torch.int64)  # repeated
        self._num_examples += ranked.indices.shape[0]

    def _zero_sums(self) -> torch.Tensor:
        """Integer counts, exact and order-free as they are: no fixed-point limbs."""
        return torch.zeros(self.num_values, dtype=torch.int64, device=self._device)

    def _loaded_sums(self, sums: object) -> torch.Tensor:
        """The counts of a saved state (float64 counts of older versions converted)."""
        integral = isinstance(sums, torch.Tensor) and not sums.is_complex() and sums.dtype != torch.bool
        if not integral or sums.shape != (self.num_values,):
            shown = f"{sums.dtype} of shape {tuple(sums.shape)}" if isinstance(sums, torch.Tensor) else sums
            raise ValueError(
                f"state_dict['_sum_per_k'] must hold {self.num_values} item counts "
                f"(len(top_k) x num_items), got {shown}."
            )
        if sums.is_floating_point() and not bool((torch.isfinite(sums) & (sums == sums.round())).all()):
            raise ValueError("state_dict['_sum_per_k'] must hold whole item counts.")
        if bool((sums < 0).any()):
            raise ValueError("state_dict['_sum_per_k'] must hold non-negative item counts.")
        return sums.detach().to(torch.int64).clone()

    def _check_sums(self, sums: torch.Tensor, count: int) -> None:
        """Each item is in at most every one of the ``count`` lists (once a list)."""
        if sums.numel() and int(sums.max()) > count:
            raise ValueError(
                f"state_dict['_sum_per_k'] holds an item count of {int(sums.max())}, more than the "
                f"{count} lists of state_dict['_num_examples']; an item is counted once a list."
            )

    def _counts(self) -> torch.Tensor:
        if self._num_examples.item() == 0:
            raise NotComputableError(f"{type(self).__name__} must have at least one query before compute().")
        return self._sum_per_k.reshape(len(self.top_k), self.num_items).to(torch.float64)


class Coverage(_Exposure):
    r"""Item coverage at k: the share of the catalog that appears in some top k list.

    .. math:: \text{Coverage}@k = \frac{|\bigcup_q \text{top}_k(q)|}{\text{num\_items}}

    As RecBole's ``ItemCoverage``. The state is one count per item and cutoff (int64, exact
    and order-free), all-reduced by sum: it grows with the catalog (``num_items``), not with the
    data, and ``per_query`` is not offered. ``relevance_threshold`` and ``ignore_zero_hits`` do
    not apply: every query's list counts. Inputs: dense ``(y_pred, y)`` (columns are items),
    sparse labels or a :class:`~ignite_ranking.Retrieved` (its ids), not the flat form.

    Example:
        >>> import torch
        >>> from ignite_ranking import Coverage
        >>> metric = Coverage(top_k=[1, 2], num_items=4)
        >>> y_pred = torch.tensor([[0.9, 0.1, 0.5, 0.0], [0.8, 0.7, 0.1, 0.0]])
        >>> metric.update((y_pred, torch.zeros(2, 4)))
        >>> metric.compute()  # top 1: {0}; top 2: {0, 2, 1}
        [0.25, 0.75]
    """

    name = "coverage"

    @sync_all_reduce("_sum_per_k", "_num_examples")
    def compute(self) -> list[float]:
        return exposure.coverage(self._counts()).tolist()


class GiniIndex(_Exposure):
    r"""Gini index of item exposure at k, as RecBole's ``GiniIndex``.

    .. math:: \text{Gini}@k = \frac{\sum_{i=1}^{n} (2i - n - 1)\, c_{(i)}}{n \sum_{i} c_{(i)}}

    with :math:`c_{(1)} \le \dots \le c_{(n)}` the number of top k lists holding each of the
    ``num_items`` = n catalog items. 0: every item shown equally often; near 1: a few items take
    all exposure. State and inputs as :class:`~ignite_ranking.Coverage`.

    Example:
        >>> import torch
        >>> from ignite_ranking import GiniIndex
        >>> metric = GiniIndex(top_k=[1], num_items=4)
        >>> metric.update((torch.tensor([[0.9, 0.1, 0.5, 0.0], [0.8, 0.7, 0.1, 0.0]]), torch.zeros(2, 4)))
        >>> metric.compute()  # counts 0, 0, 0, 2: (2*4 - 4 - 1) * 2 / (4 * 2)
        [0.75]
    """

    name = "gini"

    @sync_all_reduce("_sum_per_k", "_num_examples")
    def compute(self) -> list[float]:
        return exposure.gini_index(self._counts()).tolist()


class ShannonEntropy(_Exposure):
    r"""Shannon entropy of item exposure at k, in bits: how evenly the top k lists spread over
    the catalog.

    .. math:: H@k = -\sum_{i : c_i > 0} p_i \log_2 p_i, \qquad p_i = \frac{c_i}{\sum_j c_j}

    with :math:`c_i` the number of top k lists (over the whole evaluation) holding catalog item
    i; padding is no item, so lists shorter than k add fewer. 0: every list shows the same
    items; :math:`\log_2` of the number of items shown: they are shown equally often. The base
    is 2 (bits). RecBole documents this formula with the natural log, and its code also divides
    by the number of distinct items recommended (:math:`H_{RecBole} = H \ln 2 / |\{i : c_i >
    0\}|`); Elliot's ``SEntropy`` is this value in bits when every list has the same length
    (see :doc:`/beyond_accuracy`). State and inputs as :class:`~ignite_ranking.Coverage`: one
    int64 count per item and cutoff, all-reduced once; the terms are summed correctly rounded
    (``math.fsum``), so the value depends on the counts only.

    Example:
        >>> import torch
        >>> from ignite_ranking import ShannonEntropy
        >>> metric = ShannonEntropy(top_k=[1, 2], num_items=4)
        >>> metric.update((torch.tensor([[0.9, 0.1, 0.5, 0.0], [0.8, 0.7, 0.1, 0.0]]), torch.zeros(2, 4)))
        >>> metric.compute()  # top 1: item 0 twice; top 2: items 0, 0, 2, 1
        [0.0, 1.5]
    """

    name = "entropy"

    @sync_all_reduce("_sum_per_k", "_num_examples")
    def compute(self) -> list[float]:
        self._counts()  # NotComputableError without a query
        return beyond.shannon_entropy(self._sum_per_k.reshape(len(self.top_k), self.num_items))
