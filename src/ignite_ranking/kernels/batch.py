"""RankedBatch: what the per-query scorers read of one ranked batch, and the gain functions."""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from . import constants
from .backend import host_tuned
from .ties import TieBlocks

__all__ = [
    "GAIN_FUNCTIONS",
    "IdealLevels",
    "RankedBatch",
    "Stacked",
    "at_cutoffs",
    "check_gain_function",
    "gain",
    "ideal_order",
    "sequential_sums",
    "stacked_gains",
    "sum_to_cutoffs",
]

GAIN_FUNCTIONS = ("exp_rank", "linear_rank")
# Beyond these a row's gains are scaled (see ``gain``): below them, a sum of up to 2**62 gains
# stays below 2**1023 and is finite in float64.
_EXP_SCALE_FROM = 960.0
_LINEAR_SCALE_FROM = 2.0**960


def check_gain_function(gain_function: object, relevance_threshold: float | None = None) -> str:
    """Returns ``gain_function`` if it names a gain, else raises ``ValueError``.

    Linear gains of relevant labels below ``-2**960`` (possible only with a
    ``relevance_threshold`` that low) could not be summed in float64, so such a threshold is
    refused for ``"linear_rank"``.
    """
    if gain_function not in GAIN_FUNCTIONS:
        raise ValueError(f"gain_function must be 'exp_rank' or 'linear_rank', got {gain_function!r}.")
    low = relevance_threshold is not None and relevance_threshold < -_LINEAR_SCALE_FROM
    if gain_function == "linear_rank" and low:
        raise ValueError(
            "relevance_threshold must be >= -2**960 with gain_function='linear_rank' (the linear "
            f"gains of lower relevant labels overflow float64 sums), got {relevance_threshold}."
        )
    return gain_function  # type: ignore[return-value]


def gain(
    labels: torch.Tensor, relevant: torch.Tensor, gain_function: str, top: torch.Tensor | None = None
) -> torch.Tensor:
    """Float64 gains of ``labels``: ``2**label - 1`` or ``label`` where relevant, else 0.

    ``top``, each row's largest relevant label (broadcastable to ``labels``), makes the gains of
    a row whose largest gain would overflow a float64 sum (an exponential gain of a grade above
    960, a linear one above 2**960, or a ``+inf`` label) relative to that largest gain: divided
    by ``2**top`` or ``top``. Ratios of one row's gains, such as NDCG, are unchanged; a ``+inf``
    label gains 1 and every finite one 0, the limit as its grade grows. Other rows are exact
    and unscaled.
    """
    labels = labels.to(torch.float64)
    limit = _EXP_SCALE_FROM if gain_function == "exp_rank" else _LINEAR_SCALE_FROM
    if top is not None and host_tuned(top) and not bool((top > limit).any()):
        top = None  # no row is scaled: the plain gains are the same values, in fewer passes
    one, zero = (constants.scalar(v, torch.float64, labels.device) for v in (1.0, 0.0))
    if gain_function == "exp_rank":
        if top is None:
            values = torch.exp2(labels).sub_(1.0)
        else:
            shift = torch.where(top > _EXP_SCALE_FROM, top, zero)
            # l - l is NaN for l = inf (and only then, shift being 0 or above 960): the largest
            # label's exponent is 0 by definition. A NaN label is not relevant.
            exponent = torch.sub(labels, shift).nan_to_num_(nan=0.0, posinf=math.inf, neginf=-math.inf)
            values = torch.exp2(exponent).sub_(torch.exp2(shift.neg()))
    else:
        if top is None:
            values = labels
        else:
            scale = torch.where(top > _LINEAR_SCALE_FROM, top, one)
            values = torch.where(labels == scale, one, labels / scale)
    return torch.where(relevant, values, zero)


@dataclass
class Stacked:
    """A batch's ranked and ideal labels and relevance, ``(2, batch, K)`` float64 each (slab 0
    the ranked items', slab 1 the ideal ranking's), for a threshold ``>= 0``: the generic
    kernels' form, whose gains and sums take one pass for both. ``finite``: the labels were
    integers, never infinite. :meth:`RankedBatch.ranked_and_ideal` reads it while the batch's
    labels and relevance are still its slabs."""

    labels: torch.Tensor
    relevant: torch.Tensor
    finite: bool

    def __post_init__(self) -> None:
        self.slabs = (self.labels[0], self.relevant[0], self.labels[1], self.relevant[1])


_FLOAT64_MAX = torch.finfo(torch.float64).max


def stacked_gains(stacked: Stacked, gain_function: str) -> torch.Tensor:
    """``(2, batch, K)``: :func:`gain` of both slabs of ``stacked``, each row scaled by its
    largest label (the ideal slab's first), the same values to the bit.

    Exponential gains take ``2**(label - shift) - 2**-shift`` with the relevance folded into
    the exponent: a non-relevant item's is ``-shift``, so it gains +0.0 as :func:`gain` masks it.
    A ``-inf`` label (never relevant here) is clamped first (``0 * -inf`` is NaN), and the
    exponent ``inf - inf`` of a ``+inf`` largest label is 0, as :func:`gain` takes it.
    """
    labels, relevant = stacked.labels, stacked.relevant
    top = labels[1, :, :1]
    if gain_function != "exp_rank":
        return gain(labels, relevant > 0, gain_function, top)
    if not stacked.finite:
        labels = labels.clamp(min=-_FLOAT64_MAX)
    # The exponents and, in a column beside them, each row's shift: one exp2 takes both.
    both = torch.empty((*labels.shape[:-1], labels.shape[-1] + 1), dtype=torch.float64, device=labels.device)
    exponent, shift = both[..., :-1], both[0, :, -1:]
    torch.threshold(top, _EXP_SCALE_FROM, 0.0, out=shift).neg_()  # minus gain()'s shift
    torch.addcmul(shift, relevant, labels, out=exponent)
    if not stacked.finite:
        exponent.nan_to_num_(nan=0.0, posinf=math.inf, neginf=-math.inf)
    both.exp2_()
    return exponent.sub_(shift)


def sum_to_cutoffs(
    per_rank: torch.Tensor, cutoffs: Sequence[int], weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Cumulative sums of ``per_rank`` (times ``weights``, one per rank, if given) read at each
    cutoff: ``(batch, len(cutoffs))``; a cutoff beyond the ranks sums them all. One sequential
    sum along the ranks, so a cutoff's value does not depend on the other cutoffs asked for.
    Leading dimensions (stacked slabs, ``(slabs, batch, depth)``) are summed side by side."""
    *rows, depth = per_rank.shape
    if depth == 0 or not cutoffs:
        return torch.zeros(*rows, len(cutoffs), dtype=per_rank.dtype, device=per_rank.device)
    depth = min(depth, max(cutoffs))  # the ranks past the deepest cutoff are not read

    def block(start: int, stop: int) -> torch.Tensor:
        columns = per_rank[..., start:stop]
        return columns * weights[..., start:stop] if weights is not None else columns.clone()

    return sequential_sums(block, tuple(rows), depth, cutoffs, whole=not host_tuned(per_rank))


# Cumulative sums of more columns than make this many elements are taken a block at a time, a
# block in cache. 2**16 lets a batch of 512 rows sum its 100 ranks in one block (about 1 ms less a
# six-metric update at 512 x 10,000 than 2**15); deep sums take the same time either way.
_SUM_ELEMENTS = 2**16


def sequential_sums(
    block: Callable[[int, int], torch.Tensor],
    rows: tuple[int, ...],
    depth: int,
    cutoffs: Sequence[int],
    whole: bool = False,
) -> torch.Tensor:
    """``(*rows, len(cutoffs))``: the cumulative sums along the ranks of ``(*rows, depth)``
    values, ``depth > 0``, read at each cutoff; ``block(start, stop)`` gives the values of ranks
    ``start + 1 .. stop`` as a new tensor (written here).

    Deep rows are summed a block of columns (in cache) at a time, each block's first column
    adding the sum so far: the same sequential sums as one ``cumsum`` of all ranks, to the bit,
    without a ``(batch, depth)`` tensor of them (nor of the values). The block's width is set
    by the last of ``rows`` (a batch's rows: stacked slabs of one batch take the same blocks).
    With ``whole`` (the generic kernels: as many launches at any depth), one block of all ranks.
    """
    step = max(1, _SUM_ELEMENTS // max(rows[-1], 1))
    columns = [min(k, depth) - 1 for k in cutoffs]
    if whole or depth <= step or columns != sorted(columns):
        return at_cutoffs(block(0, depth).cumsum_(dim=-1), cutoffs)
    out = so_far = None
    for start in range(0, depth, step):
        stop = min(start + step, depth)
        summed = block(start, stop)
        if so_far is not None:
            summed[..., 0] += so_far
        summed.cumsum_(dim=-1)
        if out is None:
            out = torch.empty(*rows, len(columns), dtype=summed.dtype, device=summed.device)
        low, high = bisect.bisect_left(columns, start), bisect.bisect_left(columns, stop)
        if high > low:
            at = constants.listed(tuple(c - start for c in columns[low:high]), torch.int64, summed.device)
            out[..., low:high] = summed[..., at]
        so_far = summed[..., -1]
    return out


def at_cutoffs(cumulative: torch.Tensor, cutoffs: Sequence[int]) -> torch.Tensor:
    """``(batch, len(cutoffs))``: cumulative sums ``(batch, K)``, ``K > 0``, read at each cutoff
    (a cutoff beyond ``K`` reads the last); leading dimensions are kept."""
    return cumulative[..., _cutoff_columns(tuple(cutoffs), cumulative.shape[-1], cumulative.device)]


@functools.lru_cache(maxsize=64)
def _cutoff_columns(cutoffs: tuple[int, ...], depth: int, device: torch.device) -> torch.Tensor:
    """The column of each cutoff in cumulative sums over ``depth`` ranks (read only)."""
    return torch.tensor([min(k, depth) - 1 for k in cutoffs], device=device)


def ideal_order(
    labels: torch.Tensor, threshold: float | int, best: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Labels of each row's ``K`` largest gains in descending order of gain, and their relevance.

    Args:
        labels: ``(batch, num_items)`` labels, compared with ``threshold`` as is.
        threshold: an item is relevant iff its label is ``>= threshold``.
        best: ``(batch, K)`` each row's K largest labels, descending.

    Both gains grow with the label and a non-relevant item gains 0. With ``threshold >= 0``
    every relevant label is ``>= 0`` and outranks every non-relevant one, so the label order is
    the gain order and ``best`` is the answer. Below 0, a relevant item of negative label gains
    less than a non-relevant one, so the order comes from the labels with those of non-relevant
    items replaced by 0 (which then read as relevant with gain 0).

    Returns:
        Two ``(batch, K)`` float64 tensors: the labels, and 1.0/0.0 relevance.
    """
    if threshold < 0 and best.shape[1]:
        zero = torch.zeros((), dtype=labels.dtype, device=labels.device)
        key = torch.where(labels >= threshold, labels, zero)
        best = torch.topk(key, best.shape[1], dim=1).values
    relevant = torch.ge(best, threshold, out=torch.empty(best.shape, dtype=torch.float64, device=best.device))
    return best.to(torch.float64), relevant


@dataclass
class IdealLevels:
    """Each row's ideal ranking as runs of equal labels, for labels of a few values.

    A deep ideal ranking of such labels is a few runs, held as their lengths: IDCG of one
    relevant value is a sum over the runs (:meth:`at_cutoffs`), exactly DCG's sum for a perfect
    ranking; :meth:`spread` and :meth:`expand` lay the runs out rank by rank for the rest.

    Attributes:
        labels: ``(L,)`` float64 label of each run, in the order of :func:`ideal_order` (below a
            negative threshold, non-relevant labels read as 0, relevant with gain 0).
        relevant: ``(L,)`` bool, ``labels >= threshold``.
        counts: ``(batch, L)`` float64 length of each run in each row (items of that label).
        single: the one relevant label when only one label value is relevant (binary
            relevance), else None: every relevant item then has the same gain.
    """

    labels: torch.Tensor
    relevant: torch.Tensor
    counts: torch.Tensor
    single: float | None = None

    @classmethod
    def of(cls, values: torch.Tensor, counts: torch.Tensor, threshold: float | int) -> IdealLevels:
        """Runs of ``values`` (``(L,)`` distinct labels) with ``counts`` items each, in ideal order."""
        key = values.to(torch.float64)
        if threshold < 0:
            key = torch.where(key >= threshold, key, 0.0)
        order = key.argsort(descending=True, stable=True)
        key = key[order]
        relevant_values = values[values >= threshold].tolist()
        single = float(relevant_values[0]) if len(relevant_values) == 1 else None
        return cls(key, key >= threshold, counts[:, order], single)

    def top(self) -> torch.Tensor:
        """``(batch,)`` the first label of each row's ideal ranking (its largest gain)."""
        first = (self.counts > 0).to(torch.uint8).argmax(dim=1)
        return self.labels[first]

    def spread(self, values: torch.Tensor, depth: int) -> torch.Tensor:
        """``(batch, depth)``: each run's value (``values``: ``(batch, L)``) at its ranks."""
        batch = self.counts.shape[0]
        ends = self.counts.cumsum(dim=1).clamp_(max=depth)
        lengths = torch.diff(ends, dim=1, prepend=torch.zeros_like(ends[:, :1])).to(torch.int64)
        spread = torch.repeat_interleave(values.reshape(-1), lengths.reshape(-1), output_size=batch * depth)
        return spread.view(batch, depth)

    def expand(self, depth: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(batch, depth)`` float64 labels and 1.0/0.0 relevance of the ideal ranking."""
        batch = self.counts.shape[0]
        relevant = self.relevant.to(torch.float64).expand(batch, -1)
        return self.spread(self.labels.expand(batch, -1), depth), self.spread(relevant, depth)

    def at_cutoffs(self, gains: torch.Tensor, cutoffs: Sequence[int], weights: torch.Tensor) -> torch.Tensor:
        """``(batch, len(cutoffs))``: the ideal ranking's sums of gain times weight to each cutoff.

        Args:
            gains: ``(batch, L)`` the gain of each run's label in each row.
            cutoffs: positive ints; a cutoff beyond ``len(weights)`` sums them all.
            weights: ``(K,)`` float64 weight of each rank.
        """
        summed = torch.nn.functional.pad(weights.cumsum(dim=0), (1, 0))
        depth = weights.shape[0]
        limits = constants.listed(tuple(min(k, depth) for k in cutoffs), torch.float64, gains.device)
        ends = self.counts.cumsum(dim=1)[:, :, None]
        starts = ends - self.counts[:, :, None]
        within = summed[ends.minimum(limits).long()] - summed[starts.minimum(limits).long()]
        return (gains[:, :, None] * within).sum(dim=1)


@dataclass
class RankedBatch:
    """What the per-query scorers need of one ranked batch; all values are float64.

    Attributes:
        labels: ``(batch, K)`` labels of the items at ranks 1..K, or None for a batch ranked
            without them (``rank_batch(..., labels=False)``, for scorers that read relevance only).
        relevant: ``(batch, K)`` 1.0 where the item at that rank is relevant, else 0.0; under
            ``ties="average"`` the probability that it is (its tied block's relevant share).
        num_relevant: ``(batch,)`` number of relevant items of each row (all items, not only K);
            for a batch ranked with ``count=False``, 1.0 if the row has any and 0.0 if not.
        ideal_labels: ``(batch, K)`` the labels of each row's K largest gains, descending (see
            :func:`ideal_order`), or None when the batch was ranked without ``ideal=True``.
        ideal_relevant: ``(batch, K)`` relevance of ``ideal_labels`` (1.0/0.0), or None.
        ideal_levels: the ideal ranking as runs of equal labels, when the kernel counted them
            instead (:class:`IdealLevels`); :meth:`ideal` lays them out when read rank by rank.
        blocks: the tied blocks under ``ties="average"``, else None.
        judged: ``(batch, K)`` 1.0 where the item at that rank is judged, 0.0 where it is not
            (absent from the judgements, or masked out); None when every item is judged (dense
            inputs without a mask). Read by the measures of :mod:`.judged` and :mod:`.persistence`.
        num_nonrelevant: ``(batch,)`` judged non-relevant items of each row (all items, not only
            K), or None when not counted; bpref divides by it.
        retrieved: ``(batch,)`` the ranked positions that hold a real item (a padded row holds
            fewer than K), or None when all K do.
        indices: ``(batch, K)`` int64 column of the item at each rank (catalog measures), or None.
        scores: ``(batch, K)`` float64 score of the item at each rank (AUC), or None when not
            gathered.
        relevant_within_r: ``(batch,)`` relevant items at ranks ``1..R`` of each row (``R`` =
            ``num_relevant``; expected under ``"average"``) when the kernel counted them without
            ranking that deep (see :mod:`.within_r`), else None: R-Precision then reads the
            ranked positions, which must hold rank R.
        catalog: ``(batch,)`` float64 number of items each row ranks among (the dense form's
            columns, a sparse form's width, a flat query's rows), or None where unknown (a
            :class:`~ignite_ranking.Retrieved` batch with padded ``relevant`` ids).
        ideal_last_run: ``(batch,)`` float64, for a batch ranked with ``Ranking(runs=True)``:
            how many items of the row hold the label of the last held position of the ideal
            ranking (its whole run of equal labels, also beyond ``K``) where that position holds
            a relevant item, else 0; None when not asked for (expected exposure's target).
        refused: ``(batch,)`` NaN codes or flags of the rows (:func:`~.inputs.nan_rows`), left by
            the generic kernels for the metric to refuse later (docs/contract.md); else None.
        stacked: the generic kernels' :class:`Stacked` form of ``labels``, ``relevant``,
            ``ideal_labels`` and ``ideal_relevant`` (their views), or None.
    """

    labels: torch.Tensor | None
    relevant: torch.Tensor
    num_relevant: torch.Tensor
    ideal_labels: torch.Tensor | None = None
    ideal_relevant: torch.Tensor | None = None
    ideal_levels: IdealLevels | None = None
    blocks: TieBlocks | None = None
    judged: torch.Tensor | None = None
    num_nonrelevant: torch.Tensor | None = None
    retrieved: torch.Tensor | None = None
    indices: torch.Tensor | None = None
    scores: torch.Tensor | None = None
    relevant_within_r: torch.Tensor | None = None
    catalog: torch.Tensor | None = None
    ideal_last_run: torch.Tensor | None = None
    refused: torch.Tensor | None = None
    stacked: Stacked | None = None
    _gain_cache: dict = field(default_factory=dict, repr=False)

    @property
    def depth(self) -> int:
        """K, the number of ranked positions held per row."""
        return self.relevant.shape[1]

    def _top(self) -> torch.Tensor | None:
        """``(batch,)`` each row's largest relevant label (for a row with any), or None."""
        if self.ideal_levels is not None and self.depth:
            return self.ideal_levels.top()
        if self.ideal_labels is None or self.ideal_labels.shape[1] == 0:
            return None
        return self.ideal_labels[:, 0]

    def ranked_and_ideal(self) -> Stacked | None:
        """``stacked`` while the batch's labels, relevance and ideal ones are its slabs (a batch
        rebuilt with other labels, say condensed to its judged items, no longer reads it)."""
        stacked = self.stacked
        if stacked is None:
            return None
        held = (self.labels, self.relevant, self.ideal_labels, self.ideal_relevant)
        return stacked if all(a is b for a, b in zip(held, stacked.slabs, strict=True)) else None

    def ideal(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``ideal_labels`` and ``ideal_relevant``, laid out from ``ideal_levels`` if need be."""
        if self.ideal_labels is None and self.ideal_levels is not None:
            self.ideal_labels, self.ideal_relevant = self.ideal_levels.expand(self.depth)
        if self.ideal_labels is None or self.ideal_relevant is None:
            raise RuntimeError("this batch was ranked without ideal=True")
        return self.ideal_labels, self.ideal_relevant

    def _gain_of(self, gain_function: str):
        """``gain_of(labels, relevant, rows)`` of :class:`~.ties.TieBlocks`, scaled as :meth:`gains`."""
        top = self._top()
        return lambda labels, relevant, rows: gain(
            labels, relevant, gain_function, None if top is None else top[rows]
        )

    def gains(self, gain_function: str) -> torch.Tensor:
        """``(batch, K)`` gain of the item at each rank (its expected gain under ``"average"``).

        With ideal labels at hand, a row whose largest gain would overflow a float64 sum has
        all its gains (ranked and ideal alike) divided by that largest gain, see :func:`gain`.
        """
        key = ("ranked", gain_function)
        if key not in self._gain_cache:
            if self.blocks is not None:
                blocks = self.blocks
                self._gain_cache[key] = blocks.read_back(blocks.gain_totals(self._gain_of(gain_function)))
            else:
                top = self._top()
                top = None if top is None else top[:, None]
                self._gain_cache[key] = gain(self.labels, self.relevant > 0, gain_function, top)
        return self._gain_cache[key]

    def dcg(self, gain_function: str, cutoffs: Sequence[int], discount: torch.Tensor) -> torch.Tensor:
        """``(batch, len(cutoffs))``: :meth:`gains` times ``discount`` (one weight per rank),
        summed to each cutoff; from the block slots when a batch has few tied blocks.

        When one label value alone is relevant (``ideal_levels.single``), every relevant item
        gains the same: DCG is that gain times the discounted relevance, and no gain is computed
        per rank.
        """
        blocks = self.blocks
        few = blocks is not None and blocks.few_blocks(cutoffs)
        single = self.ideal_levels.single if self.ideal_levels is not None else None
        if single is not None:
            per_rank = blocks.block_relevant if few else self.relevant
        elif few:
            per_rank = blocks.gain_totals(self._gain_of(gain_function))
        else:
            per_rank = self.gains(gain_function)
        sums = (
            blocks.sums_to_cutoffs(per_rank, cutoffs, discount)
            if few
            else sum_to_cutoffs(per_rank, cutoffs, discount)
        )
        if single is None:
            return sums
        top = self._top()
        value = torch.full_like(sums[:, :1], single)
        relevant = torch.ones_like(value, dtype=torch.bool)
        return sums * gain(value, relevant, gain_function, None if top is None else top[:, None])

    def hits(self, cutoffs: Sequence[int]) -> torch.Tensor:
        """``(batch, len(cutoffs))``: the relevant items (expected under ``"average"``) within
        each cutoff; from the block slots when a batch has few tied blocks."""
        blocks = self.blocks
        if blocks is not None and blocks.few_blocks(cutoffs):
            return blocks.sums_to_cutoffs(blocks.block_relevant, cutoffs)
        if self.depth == 0:
            return sum_to_cutoffs(self.relevant, cutoffs)
        return at_cutoffs(self.cumulative_relevant(), cutoffs)

    def cumulative_relevant(self) -> torch.Tensor:
        """``(batch, K)``: ``relevant.cumsum(dim=1)``, summed once for every scorer that reads
        it (hits, AP) while ``relevant`` is the same tensor."""
        cached = self._gain_cache.get("cumulative")
        if cached is None or cached[0] is not self.relevant:
            cached = self._gain_cache["cumulative"] = (self.relevant, self.relevant.cumsum(dim=1))
        return cached[1]

    def ideal_dcg(self, gain_function: str, cutoffs: Sequence[int], discount: torch.Tensor) -> torch.Tensor:
        """``(batch, len(cutoffs))`` the ideal ranking's gains (scaled as :meth:`gains`) times
        ``discount`` (one weight per rank), summed to each cutoff."""
        top = self._top()
        top = None if top is None else top[:, None]
        levels = self.ideal_levels
        if levels is None:
            labels, relevant = self.ideal()
            return sum_to_cutoffs(gain(labels, relevant > 0, gain_function, top), cutoffs, discount)
        batch = levels.counts.shape[0]
        labels, relevant = levels.labels.expand(batch, -1), levels.relevant.expand(batch, -1)
        gains = gain(labels, relevant, gain_function, top)
        if levels.single is not None:  # one gain: the sum over its run is exactly :meth:`dcg`'s
            return levels.at_cutoffs(gains, cutoffs, discount)
        # Summed rank by rank, as DCG is, so that a perfect ranking scores exactly 1.
        return sum_to_cutoffs(levels.spread(gains, self.depth), cutoffs, discount)
