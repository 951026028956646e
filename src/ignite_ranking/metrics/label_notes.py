"""What a metric notes about the labels it is given: for its messages, never for its numbers.

Two surprises reach a user without a word otherwise: fractional labels below the relevance
threshold (0.5 with the default threshold of 1.0) silently count as not relevant, and an
evaluation whose labels are all below the threshold ends in ``NotComputableError`` although many
queries were passed. :class:`LabelNotes` warns once about the first and lets the error say the
second: how many queries were seen, the threshold and the largest label seen.

Cost: the fractional-label check reads the labels of the first update after each reset only,
and of a large update an evenly spaced sample of 65,536 of them (so it may miss a rare fraction);
the largest label is taken only of updates in which no query had a relevant item (on CPU; on
other devices, where reading a flag back would wait for the device, of every update).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import ignite.distributed as idist
import torch
from ignite.exceptions import NotComputableError

from ..kernels import RankedBatch, constants
from ..kernels.backend import host_tuned
from ..kernels.forms import Retrieved
from ..kernels.inputs import comparable_labels

__all__ = ["FractionalLabelWarning", "LabelNotes"]

_WIDE_UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)
_SAMPLE = 2**16  # labels of the first update read for the fractional-label check, at most


class FractionalLabelWarning(UserWarning):
    """Labels strictly between 0 and ``relevance_threshold`` that are not whole numbers (say 0.5
    under the default threshold 1.0): they count as not relevant, which is rarely what was meant.

    A metric (or a group) warns once, on the first update after a reset that holds such labels.
    When every label checked is such a fraction, strictly between 0 and 1, they look like scores
    (probabilities) rather than grades, and the message asks whether ``y_pred`` and ``y`` were
    swapped. Numbers are printed with as many digits as tell them apart (a float32 label 0.7 is
    ``0.699999988079071``, below a threshold of 0.7).

    Example:
        >>> import torch, warnings
        >>> from ignite_ranking import MRR, FractionalLabelWarning
        >>> metric = MRR([3])
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     metric.update((torch.tensor([[0.9, 0.5, 0.1]]), torch.tensor([[0.5, 1.0, 0.0]])))
        >>> [w.category.__name__ for w in caught]
        ['FractionalLabelWarning']
        >>> metric.compute()  # the 0.5 ranked first is not relevant; the 1.0 ranked second is
        [0.5]
    """


def _shown(value: float) -> str:
    """``value`` in few digits where they round-trip (``1``, ``0.5``), else its ``repr``: a label
    0.699999988079071 (float32 0.7) and a threshold of 0.7 must not print alike."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def _labels(output: object) -> torch.Tensor | None:
    """The labels of an update in any input form (those of its judged items), or None."""
    if isinstance(output, Retrieved):
        return output.grades if output.grades is not None else None
    if not isinstance(output, Sequence) or len(output) not in (2, 3):
        return None
    y = output[1]
    if not isinstance(y, torch.Tensor):
        return None
    if y.layout == torch.sparse_coo:
        return y._values()
    if y.layout in (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc):
        return y.values()
    return y


class LabelNotes:
    """A metric's notes on its labels (not saved with its state; per process until gathered)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.seen = 0  # queries given, counted or not
        self.largest: torch.Tensor | None = None  # of updates without a relevant item
        self.checked = False  # the first update's labels were checked for fractions
        self.warned = False

    def note(self, output: object, ranked: RankedBatch, owner: tuple[str, float] | None) -> None:
        """Notes an update (after the metric accepted it). ``owner`` is the metric's name and
        relevance threshold, or None for metrics that read no relevance (the list measures): they
        count every query, so only the arrival count is kept."""
        self.seen += int(ranked.num_relevant.shape[0])
        labels = _labels(output)
        if owner is None or labels is None or labels.numel() == 0:
            return
        owner, threshold = owner
        if not self.checked:
            self.checked = True
            self._warn_of_fractions(labels, owner, threshold)
        # On CPU only of updates without a relevant item (counts are never negative); elsewhere,
        # where reading that flag would wait for the device, of every update (module docstring).
        if host_tuned(labels) and bool(ranked.num_relevant.any()):
            return
        below = constants.scalar(-math.inf, torch.float64, labels.device)
        if labels.dtype in _WIDE_UNSIGNED:  # no amax for them on CPU; accepted ones are below 2**63
            labels = labels.to(torch.int64)
        self.largest = torch.maximum(
            below if self.largest is None else self.largest, labels.amax()
        )  # float64

    def _warn_of_fractions(self, labels: torch.Tensor, owner: str, threshold: float) -> None:
        if self.warned or not labels.is_floating_point() or threshold <= 0:
            return
        flat = labels.reshape(-1)
        if flat.numel() > _SAMPLE:  # an evenly spaced sample: the check costs no pass over big batches
            flat = flat[:: -(-flat.numel() // _SAMPLE)]
        values, bound = comparable_labels(flat, threshold)
        between = (values > 0) & ~(values >= bound) & (values != values.trunc())
        if not bool(between.any()):
            return
        example = _shown(float(values[between].max()))
        if bool(((values > 0) & (values < 1) & (values != values.trunc())).all()):
            advice = (
                "Every label is a fraction between 0 and 1: they look like scores (probabilities), "
                "not grades. Were y_pred and y swapped? The update takes (y_pred, y): scores first, "
                "then the labels."
            )
        else:
            advice = (
                f"If they are graded relevance, pass relevance_threshold={example} (or the smallest "
                "grade that is relevant)."
            )
        self.warned = True
        warnings.warn(
            f"{owner}: labels such as {example} lie between 0 and relevance_threshold={_shown(threshold)} "
            f"and are not whole numbers; they count as not relevant. {advice} Warned once per metric.",
            FractionalLabelWarning,
            stacklevel=4,
        )

    def not_computable(self, owner: str, threshold: float, rule: str) -> NotComputableError:
        """The error of a metric that counted no query, saying why (a collective: every process
        raises it together, as the all-reduced count is 0 on every one)."""
        largest = self.largest if self.largest is not None else torch.tensor(-math.inf, dtype=torch.float64)
        seen = int(idist.all_reduce(torch.tensor(self.seen, dtype=torch.int64)))
        largest = float(idist.all_reduce(largest.cpu().to(torch.float64), op="MAX"))
        if seen == 0:
            return NotComputableError(f"{owner} must have at least one query before compute().")
        found = f" (the largest label seen was {_shown(largest)})" if math.isfinite(largest) else ""
        return NotComputableError(
            f"{owner} saw {seen} {'query' if seen == 1 else 'queries'}, and none {rule}="
            f"{_shown(threshold)}{found}, so none counts in the mean "
            "(ignore_zero_hits=True leaves out queries without a relevant item). Lower "
            "relevance_threshold if those labels are relevant, or pass ignore_zero_hits=False to "
            "count such queries as 0."
        )
