"""RankedBatch: what the per-query scorers read of one ranked batch, and the gain functions."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .ties import TieBlocks

__all__ = ["GAIN_FUNCTIONS", "RankedBatch", "check_gain_function", "gain"]

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


def gain(labels: torch.Tensor, relevant: torch.Tensor, gain_function: str) -> torch.Tensor:
    """Float64 gains of ``labels``: ``2**label - 1`` or ``label`` where relevant, else 0."""
    values = _GAINS[gain_function](labels.to(torch.float64))
    return torch.where(relevant, values, torch.zeros_like(values))


@dataclass
class RankedBatch:
    """What the per-query scorers need of one ranked batch; all values are float64.

    Attributes:
        labels: ``(batch, K)`` labels of the items at ranks 1..K.
        relevant: ``(batch, K)`` 1.0 where the item at that rank is relevant, else 0.0; under
            ``ties="average"`` the probability that it is (its tied block's relevant share).
        num_relevant: ``(batch,)`` number of relevant items of each row (all items, not only K);
            for a batch ranked with ``count=False``, 1.0 if the row has any and 0.0 if not.
        ideal_labels: ``(batch, K)`` each row's K largest labels, descending, or None when the
            batch was ranked without ``ideal=True``.
        ideal_relevant: ``(batch, K)`` relevance of ``ideal_labels`` (1.0/0.0), or None.
        blocks: the tied blocks under ``ties="average"``, else None.
    """

    labels: torch.Tensor
    relevant: torch.Tensor
    num_relevant: torch.Tensor
    ideal_labels: torch.Tensor | None = None
    ideal_relevant: torch.Tensor | None = None
    blocks: TieBlocks | None = None
    _gain_cache: dict = field(default_factory=dict, repr=False)

    @property
    def depth(self) -> int:
        """K, the number of ranked positions held per row."""
        return self.labels.shape[1]

    def gains(self, gain_function: str) -> torch.Tensor:
        """``(batch, K)`` gain of the item at each rank (its expected gain under ``"average"``)."""
        key = ("ranked", gain_function)
        if key not in self._gain_cache:
            if self.blocks is not None:
                self._gain_cache[key] = self.blocks.mean_gains(
                    lambda labels, relevant: gain(labels, relevant, gain_function)
                )
            else:
                self._gain_cache[key] = gain(self.labels, self.relevant > 0, gain_function)
        return self._gain_cache[key]

    def ideal_gains(self, gain_function: str) -> torch.Tensor:
        """``(batch, K)`` the K largest gains of each row, descending."""
        if self.ideal_labels is None or self.ideal_relevant is None:
            raise RuntimeError("this batch was ranked without ideal=True")
        key = ("ideal", gain_function)
        if key not in self._gain_cache:
            self._gain_cache[key] = gain(self.ideal_labels, self.ideal_relevant > 0, gain_function)
        return self._gain_cache[key]
