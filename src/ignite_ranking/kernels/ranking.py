"""The ranking kernel: select and order the top items of every row once, exactly.

Order (the contract): descending score; tied scores by item index, the lower index first
(``ties="first"``, the order of ``torch.argsort(y_pred, descending=True, stable=True)``) or the
higher index first (``ties="last"``).

The kernel never sorts a whole row unless the cutoff covers it. ``torch.topk`` with one item
more than the cutoff finds the best values; a row whose value after the cutoff equals the value
at the cutoff has a tie across the boundary, and only those rows take an extra pass that keeps
the tied items the tie rule prefers. The selected items are then ordered with a stable sort of
``(batch, k)`` values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .inputs import as_label_tensor, count_relevant, threshold_for

__all__ = [
    "GAIN_FUNCTIONS",
    "TIE_POLICIES",
    "RankedBatch",
    "check_gain_function",
    "check_ties",
    "rank_batch",
    "top_indices",
]

TIE_POLICIES = ("first", "last")


def check_ties(ties: object) -> str:
    """Returns ``ties`` if it names a tie policy, else raises ``ValueError``."""
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties must be one of {', '.join(map(repr, TIE_POLICIES))}, got {ties!r}.")
    return ties  # type: ignore[return-value]


def top_indices(scores: torch.Tensor, k: int, ties: str = "first") -> torch.Tensor:
    """Indices of the ``min(k, num_items)`` best items of each row, in ranking order.

    Args:
        scores: ``(batch, num_items)`` floating scores without NaN.
        k: how many items to return per row.
        ties: ``"first"`` (lower index first among equal scores) or ``"last"``.

    Returns:
        ``(batch, min(k, num_items))`` int64 indices.
    """
    batch, num_items = scores.shape
    if k >= num_items:
        every = torch.arange(num_items, device=scores.device).expand(batch, num_items)
        return _in_rank_order(scores, every, ties)
    values, indices = torch.topk(scores, k + 1, dim=1)
    boundary = values[:, k - 1]
    indices = indices[:, :k]
    crossing = (values[:, k] == boundary).nonzero().squeeze(1)
    if crossing.numel():
        need = k - (values[crossing, : k - 1] > boundary[crossing, None]).sum(dim=1)
        indices = indices.index_copy(
            0, crossing, _keep_tied(scores[crossing], boundary[crossing], need, k, ties)
        )
    return _in_rank_order(scores, indices, ties)


def _keep_tied(scores: torch.Tensor, boundary: torch.Tensor, need: torch.Tensor, k: int, ties: str):
    """For rows with a tie across the cutoff: the k items that the tie rule puts first, by index.

    Every item above the boundary value is kept, and of the items equal to it the ``need``
    lowest (``"first"``) or highest (``"last"``) indices.
    """
    keep = scores > boundary[:, None]
    rows, cols = (scores == boundary[:, None]).nonzero(as_tuple=True)
    per_row = torch.bincount(rows, minlength=scores.shape[0])
    ordinal = torch.arange(rows.numel(), device=rows.device) - (per_row.cumsum(0) - per_row)[rows]
    if ties == "last":
        ordinal = per_row[rows] - 1 - ordinal
    chosen = ordinal < need[rows]
    keep[rows[chosen], cols[chosen]] = True
    return keep.nonzero(as_tuple=True)[1].view(-1, k)


def _in_rank_order(scores: torch.Tensor, indices: torch.Tensor, ties: str) -> torch.Tensor:
    """Orders each row's ``indices`` by descending score, equal scores by the tie rule."""
    indices = indices.sort(dim=1, descending=ties == "last").values
    order = scores.gather(1, indices).argsort(dim=1, descending=True, stable=True)
    return indices.gather(1, order)


_GAINS = {
    "exp_rank": lambda labels: torch.exp2(labels) - 1.0,
    "linear_rank": lambda labels: labels,
}
GAIN_FUNCTIONS = tuple(_GAINS)


def check_gain_function(gain_function: object) -> str:
    """Returns ``gain_function`` if it names a gain, else raises ``ValueError``."""
    if gain_function not in _GAINS:
        raise ValueError(f"gain_function must be 'exp_rank' or 'linear_rank', got {gain_function!r}.")
    return gain_function  # type: ignore[return-value]


@dataclass
class RankedBatch:
    """What the per-query scorers need of one ranked batch; all values are float64.

    Attributes:
        labels: ``(batch, K)`` labels of the items at ranks 1..K.
        relevant: ``(batch, K)`` 1.0 where the item at that rank is relevant, else 0.0.
        num_relevant: ``(batch,)`` number of relevant items of each row (all items, not only K).
        ideal_labels: ``(batch, K)`` each row's K largest labels, descending, or None when the
            batch was ranked without ``ideal=True``.
        ideal_relevant: ``(batch, K)`` relevance of ``ideal_labels``, or None.
    """

    labels: torch.Tensor
    relevant: torch.Tensor
    num_relevant: torch.Tensor
    ideal_labels: torch.Tensor | None = None
    ideal_relevant: torch.Tensor | None = None
    _gain_cache: dict = field(default_factory=dict, repr=False)

    @property
    def depth(self) -> int:
        """K, the number of ranked positions held per row."""
        return self.labels.shape[1]

    def gains(self, gain_function: str) -> torch.Tensor:
        """``(batch, K)`` gain of the item at each rank; 0 for items that are not relevant."""
        return self._gains("ranked", gain_function, self.labels, self.relevant)

    def ideal_gains(self, gain_function: str) -> torch.Tensor:
        """``(batch, K)`` the K largest gains of each row, descending."""
        if self.ideal_labels is None or self.ideal_relevant is None:
            raise RuntimeError("this batch was ranked without ideal=True")
        return self._gains("ideal", gain_function, self.ideal_labels, self.ideal_relevant)

    def _gains(self, which: str, gain_function: str, labels, relevant) -> torch.Tensor:
        key = (which, gain_function)
        if key not in self._gain_cache:
            gain = _GAINS[gain_function](labels)
            self._gain_cache[key] = torch.where(relevant > 0, gain, torch.zeros_like(gain))
        return self._gain_cache[key]


def rank_batch(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    depth: int,
    *,
    relevance_threshold: float = 1.0,
    ties: str = "first",
    ideal: bool = False,
    cover_relevant: bool = False,
) -> RankedBatch:
    """Ranks a checked batch once and gathers what every scorer needs.

    Args:
        y_pred: ``(batch, num_items)`` scores, already checked by
            :func:`~ignite_ranking.kernels.inputs.check_inputs`.
        y: ``(batch, num_items)`` labels.
        depth: the largest cutoff asked for; K is ``min(depth, num_items)``.
        relevance_threshold: an item is relevant iff its label is ``>=`` this.
        ties: the tie policy, see :func:`top_indices`.
        ideal: also gather each row's K largest labels (for IDCG).
        cover_relevant: make K at least each row's number of relevant items (for R-Precision).
    """
    num_relevant = count_relevant(y, relevance_threshold)
    if cover_relevant and num_relevant.numel():
        depth = max(depth, int(num_relevant.max().item()))
    depth = min(depth, y_pred.shape[1])
    labels = as_label_tensor(y)
    threshold = threshold_for(y, relevance_threshold)
    ranked_labels = labels.gather(1, top_indices(y_pred, depth, ties))
    batch = RankedBatch(
        labels=ranked_labels.to(torch.float64),
        relevant=(ranked_labels >= threshold).to(torch.float64),
        num_relevant=num_relevant,
    )
    if ideal:
        best = torch.topk(labels, depth, dim=1).values
        batch.ideal_labels = best.to(torch.float64)
        batch.ideal_relevant = (best >= threshold).to(torch.float64)
    return batch
