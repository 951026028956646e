"""Expected exposure: how far a ranking's exposure of the items lies from the exposure their
relevance earns (EE-L, EE-D, EE-R, and each group's exposure with ``groups``)."""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import torch

from ..kernels import RankedBatch, beyond
from .base import _WHOLE_ROW, RankingMetric
from .beyond import _Statistics

if TYPE_CHECKING:
    from .options import RankingOptions, Unpack

__all__ = ["ExpectedExposure"]


class ExpectedExposure(RankingMetric):
    r"""Expected exposure at k (Diaz, Mitra, Ekstrand, Biega & Carterette, "Evaluating Stochastic
    Rankings with Expected Exposure", CIKM 2020), under the RBP browsing model.

    A user reads rank i (0-based) with probability :math:`\gamma^i` (``patience`` = γ), so the
    item at rank :math:`i < k` gets exposure :math:`\epsilon_j = \gamma^i` and every other item
    0. The target :math:`\epsilon^*` gives equally relevant items equal exposure: the ideal
    ranking lists the relevant items by descending label, then the non-relevant ones (all
    items below ``relevance_threshold`` form one level), and the items of a level at ideal
    ranks :math:`b .. b + m - 1` each get :math:`(\gamma^{\min(b,k)} - \gamma^{\min(b+m,k)})
    / ((1 - \gamma) m)`, their ranks' exposure cut at k as the system's is (so a stochastic
    ranking can reach EE-L = 0). Over the catalog's items, per query:

    .. math::
        \text{EE-L} = \|\epsilon - \epsilon^*\|_2^2, \quad \text{EE-D} = \|\epsilon\|_2^2, \quad
        \text{EE-R} = 2\, \epsilon^\top \epsilon^*, \quad
        \text{EE-L} = \text{EE-D} - \text{EE-R} + \|\epsilon^*\|_2^2

    and the metric is their means over the queries. They are not normalized (the paper's
    definitions; expeval's ``-N`` min-max normalization with per-query bounds is not applied).
    Lower EE-L and EE-D are better, higher EE-R. With ``ties="average"`` each item of a block of
    equal scores gets the mean exposure of the block's ranks: the expected exposure over all
    orders of the tied items (the paper's stochastic ranking), computed exactly; this ranks
    whole rows. With ``groups``, each group's exposure per query (the sum of its items'
    exposure, averaged over the queries) is reported too.

    The catalog is every column of the dense form, the width of sparse labels, and for a
    :class:`~ignite_ranking.Retrieved` with padded ``relevant`` ids ``num_items`` (or
    ``len(groups)``), which must then be given. Unjudged items are non-relevant.
    ``relevance_threshold`` must be positive.

    ``compute()`` returns a dict, in the form Ignite spreads into ``engine.state.metrics``:
    ``"ee_l@k"``, ``"ee_d@k"``, ``"ee_r@k"`` for each cutoff, then ``"ee_group{g}@k"`` for each
    group g. In a :class:`~ignite_ranking.RankingMetrics`, the member's name replaces ``"ee"``
    (a member ``exposure`` gives ``"exposure_l@10"``); per-query values use the same names.

    Args:
        top_k: a positive int or a list of them.
        groups: ``(num_items,)`` int group id (>= 0) of each item, on any device, or None.
        patience: γ in (0, 1): the chance that the user reads on to the next rank.
        ignore_zero_hits: queries without a relevant item are left out (True) or counted
            (False: their target spreads the exposure over all items).
        relevance_threshold: the smallest relevant label (positive).
        output_transform, device, skip_unrolling, ties, per_query, ignore_index: as in
            :class:`~ignite_ranking.MRR`.
        num_items: the catalog size for :class:`~ignite_ranking.Retrieved` batches with padded
            ``relevant`` ids (checked against the other forms' width).

    Example:
        >>> import torch
        >>> from ignite_ranking import ExpectedExposure
        >>> metric = ExpectedExposure([1], patience=0.5)
        >>> metric.update((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[0, 1, 1]])))
        >>> {name: round(value, 4) for name, value in metric.compute().items()}
        {'ee_l@1': 1.5, 'ee_d@1': 1.0, 'ee_r@1': 0.0}

        The system shows item 0 (exposure 1), a non-relevant one; the two relevant items share
        rank 0's exposure in the target (0.5 each): EE-L = 1 + 0.25 + 0.25.
    """

    value_range = (0.0, math.inf)
    name = "ee"
    needs_ideal = True
    needs_counts = True
    needs_levels = True
    zero_without_hits = False
    _settings_keys = (
        "top_k",
        "ignore_zero_hits",
        "relevance_threshold",
        "ties",
        "ignore_index",
        "patience",
        "num_items",
    )
    options_offered = frozenset(
        {*RankingMetric.positional_options, "ties", "per_query", "ignore_index", "confidence"}
    )

    def __init__(
        self,
        top_k: int | list[int],
        groups: torch.Tensor | None = None,
        patience: float = 0.5,
        *args,
        num_items: int | None = None,
        **options: Unpack[RankingOptions],
    ):
        self.patience = beyond.check_patience(patience)
        if num_items is not None and (
            isinstance(num_items, bool) or not isinstance(num_items, numbers.Integral) or num_items < 1
        ):
            raise ValueError(
                f"num_items (the catalog size) must be None or a positive int, got {num_items!r}."
            )
        self._groups = None if groups is None else beyond.check_groups(groups)
        if self._groups is not None and num_items is not None and num_items != self._groups.shape[0]:
            raise ValueError(
                f"groups holds {self._groups.shape[0]} items but num_items={num_items}; give one group "
                "id per item."
            )
        self.num_items = num_items
        self.num_groups = 0 if self._groups is None else int(self._groups.max()) + 1
        self._digest = None if self._groups is None else beyond.digest(self._groups)
        self._stats = _Statistics(groups=self._groups) if self._groups is not None else None
        self.needs_items = self._groups is not None
        super().__init__(top_k, *args, **options)
        if not self.relevance_threshold > 0:
            raise ValueError(
                "ExpectedExposure needs relevance_threshold > 0 (labels below it form the one "
                f"non-relevant level), got {self.relevance_threshold}."
            )

    @property
    def depth(self) -> int:
        """Whole rows under ``ties="average"`` (every tied block whole), else the largest cutoff."""
        return _WHOLE_ROW if self.ties == "average" else super().depth

    @property
    def parts(self) -> list[str]:
        """The measures per cutoff: ``"l"``, ``"d"``, ``"r"``, then ``"group{g}"`` per group."""
        return ["l", "d", "r", *(f"group{g}" for g in range(self.num_groups))]

    @property
    def num_values(self) -> int:
        return len(self.parts) * len(self.top_k)

    @property
    def value_names(self) -> list[str]:
        return [f"{self.name}_{part}@{k}" for part in self.parts for k in self.top_k]

    @property
    def _given_catalog(self) -> int | None:
        """The catalog size given at construction (``num_items``, else ``len(groups)``), or None."""
        statistics = self.item_statistics
        return None if statistics is None else statistics[1]

    @property
    def item_statistics(self) -> tuple[str, int] | None:
        if self.num_items is not None:
            return "num_items", self.num_items
        return None if self._groups is None else ("groups", self._groups.shape[0])

    def check_ranked(self, ranked: RankedBatch) -> None:
        beyond.exposure_catalog(ranked, self._given_catalog)

    def score(self, ranked: RankedBatch) -> torch.Tensor:
        catalog = beyond.exposure_catalog(ranked, self._given_catalog)
        groups = None if self._stats is None else self._stats.on("groups", ranked.relevant.device)
        values = beyond.expected_exposure(ranked, self.top_k, self.patience, catalog, groups, self.num_groups)
        parts = [values.loss, values.disparity, values.relevance]
        if values.groups is not None:
            parts += list(values.groups.unbind(dim=2))
        return torch.cat(parts, dim=1)

    def compute(self) -> dict[str, float]:
        values = super().compute()
        return dict(zip(self.value_names, values, strict=True))

    def settings(self) -> dict:
        settings = super().settings()
        if self._digest is not None:
            settings["groups"] = self._digest
        return settings
