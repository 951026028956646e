"""Beyond-accuracy measures of top-k lists: novelty, popularity bias, diversity, serendipity,
the entropy of exposure and expected exposure.

Every function reads a ranked batch's item ids (``indices``, ``(batch, K)`` in rank order, ``-1``
past the end of a list shorter than ``K``) and statistics indexed by item id. A list's measure at
cutoff ``k`` reads its first ``min(k, n)`` items, ``n`` the items it holds (padding is no item),
and its means divide by that number. Values a list cannot have (the mean of no item, the pairs of
fewer than two) are NaN here; the metrics leave such lists out of their means.

Formulas (``L_k`` a list's first ``min(k, n)`` items, ``|L_k|`` their number):

- novelty: mean over ``L_k`` of ``-log2(p_i)``, ``p_i = pop_i / sum_j pop_j`` (expected free
  discovery without rank discount or relevance, Vargas & Castells, RecSys 2011);
- average popularity (ARP): mean over ``L_k`` of ``pop_i``;
- long-tail share (APLT): the share of ``L_k`` in the tail set;
- intra-list diversity: mean over the pairs ``i < j`` of ``L_k`` of ``1 - cos(e_i, e_j)``;
- serendipity (Ge et al., RecSys 2010): the share of ``L_k`` that is relevant and not among the
  ``k`` most popular items;
- Shannon entropy: ``-sum_i p_i log2 p_i`` over how often each item is in a top k list;
- expected exposure (Diaz et al., CIKM 2020): see :func:`expected_exposure`.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Sequence
from typing import NamedTuple

import torch

from .batch import RankedBatch, sum_to_cutoffs
from .forms import Retrieved
from .inputs import _F64, _FLOAT_DTYPES, _LABEL_DTYPES

__all__ = [
    "ExposureValues",
    "check_catalog",
    "check_embeddings",
    "check_groups",
    "check_patience",
    "check_popularity",
    "check_tail_items",
    "digest",
    "expected_exposure",
    "exposure_catalog",
    "intra_list_diversity",
    "list_lengths",
    "list_means",
    "novelty_of_items",
    "popularity_ranks",
    "serendipity",
    "shannon_entropy",
    "values_at",
]

# The exact sums hold values below 2**31 in magnitude (see exact_sum); larger popularity is refused.
_LARGEST = 2.0**31


# ------------------------------------------------------------------------------ item statistics


def _check_vector(name: str, value: object) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a 1-D torch.Tensor indexed by item id, got {type(value).__name__}.")
    if value.layout != torch.strided or value.is_meta:
        raise TypeError(f"{name} must be a dense tensor with values, got layout {value.layout}.")
    if value.ndim != 1 or value.numel() == 0:
        raise ValueError(
            f"{name} must be 1-D with one entry per item (num_items,), got shape {tuple(value.shape)}."
        )
    return value.detach()


def check_popularity(name: str, popularity: object, *, positive: bool = False) -> torch.Tensor:
    """``popularity`` as float64 (its device kept), refusing anything but a 1-D tensor of finite,
    non-negative (``positive``: positive) real values below 2**31 with a positive sum.

    Example:
        >>> import torch
        >>> check_popularity("item_popularity", torch.tensor([3, 0, 1])).tolist()
        [3.0, 0.0, 1.0]
    """
    value = _check_vector(name, popularity)
    if value.dtype not in _LABEL_DTYPES or value.dtype == torch.bool:
        raise TypeError(f"{name} must hold real numbers (integer or floating), got {value.dtype}.")
    value = value.to(_F64)
    if not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} must be finite, got {value[~torch.isfinite(value)][0].item()}.")
    low = float(value.min())
    if positive and low <= 0:
        raise ValueError(
            f"{name} must be positive for every item (its -log2 share is infinite at 0), got "
            f"{low} at item {int(value.argmin())}; count each item once more (item_popularity + 1) "
            "to keep items never seen in training."
        )
    if low < 0:
        raise ValueError(f"{name} must be non-negative, got {low} at item {int(value.argmin())}.")
    if float(value.max()) >= _LARGEST:
        raise ValueError(f"{name} must be below 2**31 (the exact sums' range), got {float(value.max())}.")
    if float(value.sum()) <= 0:
        raise ValueError(f"{name} must have a positive sum (some item was seen), got all zeros.")
    return value


def check_tail_items(tail_items: object) -> torch.Tensor:
    """``tail_items`` as a bool mask, refusing anything but a 1-D bool tensor (True: in the tail)."""
    value = _check_vector("tail_items", tail_items)
    if value.dtype != torch.bool:
        raise TypeError(
            "tail_items must be a bool mask of the catalog (num_items,), True for long-tail items, got "
            f"{value.dtype}; from item ids: "
            "torch.zeros(num_items, dtype=torch.bool).index_fill_(0, ids, True)."
        )
    return value


def check_embeddings(item_embeddings: object) -> torch.Tensor:
    """Unit-length float64 rows of ``item_embeddings`` (``(num_items, d)``, finite, no zero row).

    Example:
        >>> import torch
        >>> check_embeddings(torch.tensor([[3.0, 4.0], [0.0, 2.0]])).tolist()
        [[0.6, 0.8], [0.0, 1.0]]
    """
    if not isinstance(item_embeddings, torch.Tensor):
        raise TypeError(
            f"item_embeddings must be a (num_items, d) torch.Tensor, got {type(item_embeddings).__name__}."
        )
    value = item_embeddings.detach()
    if value.layout != torch.strided or value.is_meta:
        raise TypeError(f"item_embeddings must be a dense tensor with values, got layout {value.layout}.")
    if value.dtype not in _FLOAT_DTYPES:
        raise TypeError(f"item_embeddings must hold floating values, got {value.dtype}.")
    if value.ndim != 2 or value.shape[0] == 0 or value.shape[1] == 0:
        raise ValueError(f"item_embeddings must be 2-D (num_items, d), got shape {tuple(value.shape)}.")
    value = value.to(_F64)
    finite = torch.isfinite(value).all(dim=1)
    if not bool(finite.all()):
        raise ValueError(
            f"item_embeddings must be finite (no NaN or inf), got one at item {int((~finite).nonzero()[0])}."
        )
    peak = value.abs().amax(dim=1)
    if not bool((peak > 0).all()):
        raise ValueError(
            f"item_embeddings must have no zero row (its cosine is undefined), got one at item "
            f"{int((peak == 0).nonzero()[0])}."
        )
    # Each row scaled by a power of two that brings its largest entry into [0.5, 1): exact, so the
    # unit rows are those of value / norm to the bit, and no norm overflows or underflows (rows
    # past 1e154 or below 1e-154). Two steps: 2**1074 itself is past float64.
    exponent = torch.frexp(peak).exponent[:, None]
    half = exponent // 2
    value = torch.ldexp(torch.ldexp(value, -half), half - exponent)
    return value / torch.linalg.vector_norm(value, dim=1, keepdim=True)


def check_groups(groups: object) -> torch.Tensor:
    """``groups`` as int64 group ids (``>= 0``), one per item."""
    value = _check_vector("groups", groups)
    if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == torch.bool:
        raise TypeError(f"groups must hold integer group ids, one per item, got {value.dtype}.")
    value = value.to(torch.int64)
    if int(value.min()) < 0:
        raise ValueError(f"groups must hold group ids >= 0, got {int(value.min())}.")
    return value


def check_patience(patience: object) -> float:
    """``patience`` (RBP's gamma) if it is a real number in (0, 1), else raises."""
    if isinstance(patience, bool) or not isinstance(patience, numbers.Real):
        raise TypeError(f"patience must be a float in (0, 1), got {type(patience).__name__}.")
    if not 0.0 < float(patience) < 1.0:
        raise ValueError(f"patience must be in (0, 1) (the chance to read on), got {patience}.")
    return float(patience)


def digest(value: torch.Tensor) -> str:
    """A short fingerprint of a statistic, saved in a metric's settings: a state computed with
    other statistics is refused on load.

    Example:
        >>> import torch
        >>> digest(torch.tensor([1.0, 2.0]))
        'sha256:e76d7533ca1b61e2 (2 items)'
    """
    data = value.detach().to("cpu").contiguous()
    head = f"{data.dtype}{tuple(data.shape)}".encode()
    body = data.view(torch.uint8).numpy().tobytes() if data.dtype == torch.bool else data.numpy().tobytes()
    return f"sha256:{hashlib.sha256(head + body).hexdigest()[:16]} ({data.shape[0]} items)"


def novelty_of_items(popularity: torch.Tensor) -> torch.Tensor:
    """``-log2(p_i)``, ``p_i = pop_i / sum_j pop_j``: each item's self-information in bits.

    Example:
        >>> import torch
        >>> novelty_of_items(torch.tensor([2.0, 1.0, 1.0], dtype=torch.float64)).tolist()
        [1.0, 2.0, 2.0]
    """
    return -torch.log2(popularity / popularity.sum())


def popularity_ranks(popularity: torch.Tensor) -> torch.Tensor:
    """Each item's 0-based rank by descending popularity, equal popularity by lower id first
    (the contract's order): item ``i`` is among the ``k`` most popular iff its rank is ``< k``.

    Example:
        >>> import torch
        >>> popularity_ranks(torch.tensor([1.0, 5.0, 1.0, 7.0])).tolist()
        [2, 1, 3, 0]
    """
    order = torch.argsort(popularity, descending=True, stable=True)
    ranks = torch.empty_like(order)
    ranks[order] = torch.arange(order.numel(), device=order.device)
    return ranks


def check_catalog(output: object, size: int, statistic: str, owner: str) -> None:
    """Refuses a batch (its form already checked) that is not over the ``size`` items of a
    statistic: a dense or sparse-label batch (or scores alone), or a Retrieved's sparse
    ``relevant``, of another width (even where the extra items stay out of the top k), or a
    Retrieved id of ``size`` or more.

    Example:
        >>> import torch
        >>> batch = (torch.rand(1, 4), torch.zeros(1, 4))
        >>> check_catalog(batch, 3, "item_popularity", "Novelty")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: Novelty: item_popularity holds 3 items, but the batch has 4 columns ...
    """
    largest = None
    if isinstance(output, Retrieved):
        width = None if output.relevant.layout == torch.strided else output.relevant.shape[1]
        largest = int(output.ids.max()) if output.ids.numel() else None
    elif isinstance(output, Sequence) and len(output) == 2 and isinstance(output[1], torch.Tensor):
        width = output[1].shape[1]
    elif isinstance(output, torch.Tensor):  # the functional API's scores alone
        width = output.shape[-1]
    else:
        return
    if width is not None and width != size:
        raise ValueError(
            f"{owner}: {statistic} holds {size} items, but the batch has {width} columns (one per "
            "item id); give statistics for exactly the batch's items."
        )
    if largest is not None and largest >= size:
        raise ValueError(
            f"{owner}: {statistic} holds {size} items, but the batch ranks item id {largest}; give "
            "statistics for the whole catalog (one entry per item id)."
        )


def exposure_catalog(ranked: RankedBatch, given: int | None) -> torch.Tensor:
    """Each row's catalog size for expected exposure: the batch's own where its form tells it,
    else ``given`` (``num_items``); refuses an unknown catalog or more relevant items than it."""
    catalog = ranked.catalog
    if catalog is None and given is not None:
        catalog = torch.full_like(ranked.num_relevant, float(given))
    if catalog is None:
        raise ValueError(
            "expected exposure needs the catalog size of a Retrieved batch with padded relevant ids "
            "(its non-relevant items share the target exposure): pass num_items=, groups=, or a "
            "sparse (batch, num_items) relevant."
        )
    if catalog.numel() and bool((ranked.num_relevant > catalog).any()):
        raise ValueError(
            "expected exposure: a query has more relevant items than the catalog size "
            f"({int(catalog.min())}); relevant ids must be catalog items."
        )
    return catalog


# ------------------------------------------------------------------------------------- lists


def list_lengths(indices: torch.Tensor) -> torch.Tensor:
    """``(batch,)`` int64: the items each list holds (its ids that are not ``-1``)."""
    return (indices >= 0).sum(dim=1)


def values_at(statistic: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """``(batch, K)`` float64: ``statistic`` of the item at each rank, 0 past a list's end."""
    values = statistic.to(_F64)[indices.clamp(min=0)]
    return torch.where(indices >= 0, values, 0.0)


def _held(lengths: torch.Tensor, cutoffs: Sequence[int]) -> torch.Tensor:
    """``(batch, len(cutoffs))`` float64: ``min(k, n)``, the items of each list within each cutoff."""
    ks = torch.tensor(list(cutoffs), dtype=torch.int64, device=lengths.device)
    return torch.minimum(lengths[:, None], ks[None, :]).to(_F64)


def list_means(per_rank: torch.Tensor, lengths: torch.Tensor, cutoffs: Sequence[int]) -> torch.Tensor:
    """``(batch, len(cutoffs))``: the mean of ``per_rank`` (0 past a list's end) over each list's
    first ``min(k, n)`` items; NaN for a list of no item.

    Example:
        >>> import torch
        >>> per_rank = torch.tensor([[1.0, 3.0, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
        >>> list_means(per_rank, torch.tensor([2, 0]), [1, 3]).tolist()
        [[1.0, 2.0], [nan, nan]]
    """
    held = _held(lengths, cutoffs)
    sums = sum_to_cutoffs(per_rank, cutoffs)
    return torch.where(held > 0, sums / held.clamp(min=1.0), math.nan)


def intra_list_diversity(indices: torch.Tensor, cutoffs: Sequence[int], unit: torch.Tensor) -> torch.Tensor:
    """``(batch, len(cutoffs))``: the mean cosine distance ``1 - cos(e_i, e_j)`` over the pairs
    ``i < j`` of each list's first ``min(k, n)`` items; NaN for fewer than two items.

    ``unit`` holds unit-length float64 embeddings (:func:`check_embeddings`), so a cosine is a dot
    product: one ``(batch, K, K)`` Gram block per batch, its strict lower triangle summed per row
    and then along the ranks, read at each cutoff.

    Example:
        >>> import torch
        >>> unit = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], dtype=torch.float64)
        >>> intra_list_diversity(torch.tensor([[0, 1, 2]]), [2, 3], unit).tolist()  # pairs: 1; 1, 0, 1
        [[1.0, 0.6666666666666667]]
    """
    valid = indices >= 0
    vectors = unit[indices.clamp(min=0)] * valid[:, :, None]
    gram = torch.bmm(vectors, vectors.transpose(1, 2))
    below = gram.tril_(diagonal=-1).sum(dim=2)  # row j: cosines of item j with the items above it
    similar = sum_to_cutoffs(below, cutoffs)
    held = _held(list_lengths(indices), cutoffs)
    pairs = held * (held - 1.0) / 2.0
    return torch.where(pairs > 0, 1.0 - similar / pairs.clamp(min=1.0), math.nan)


def serendipity(
    relevant: torch.Tensor, indices: torch.Tensor, cutoffs: Sequence[int], ranks: torch.Tensor
) -> torch.Tensor:
    """``(batch, len(cutoffs))``: the share of each list's first ``min(k, n)`` items that are
    relevant and not among the ``k`` most popular (``ranks``: :func:`popularity_ranks`); 0 for a
    list of no item.

    Example:
        >>> import torch
        >>> ranks = torch.tensor([0, 1, 2, 3])  # item 0 is the most popular
        >>> relevant = torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64)
        >>> serendipity(relevant, torch.tensor([[0, 3, 1]]), [1, 3], ranks).tolist()
        [[0.0, 0.3333333333333333]]
    """
    valid = indices >= 0
    item_rank = ranks[indices.clamp(min=0)]
    hits = (relevant > 0) & valid
    held = _held(list_lengths(indices), cutoffs)
    depth = indices.shape[1]
    out = torch.zeros(indices.shape[0], len(cutoffs), dtype=_F64, device=indices.device)
    for column, k in enumerate(cutoffs):
        found = (hits[:, : min(k, depth)] & (item_rank[:, : min(k, depth)] >= k)).sum(dim=1)
        out[:, column] = found.to(_F64)
    return torch.where(held > 0, out / held.clamp(min=1.0), 0.0)


def shannon_entropy(counts: torch.Tensor) -> list[float]:
    """Entropy in bits, ``-sum_i p_i log2 p_i`` with ``p_i = c_i / sum_j c_j``, of each row of
    item counts (``(len(cutoffs), num_items)``, from :func:`~.exposure.item_counts`); 0 for a row
    without counts. Each term is computed alone and the terms summed correctly rounded
    (``math.fsum``), so the value depends on the counts only.

    Example:
        >>> import torch
        >>> shannon_entropy(torch.tensor([[2, 2, 0, 0], [1, 1, 1, 1]]))
        [1.0, 2.0]
    """
    values = []
    for row in counts.to(torch.int64):
        seen = row[row > 0].to(_F64)
        if seen.numel() == 0:
            values.append(0.0)
            continue
        p = seen / seen.sum()
        values.append(math.fsum((-p * torch.log2(p)).tolist()))
    return values


# ------------------------------------------------------------------------------ expected exposure


class ExposureValues(NamedTuple):
    """Per-query expected exposure measures, each ``(batch, len(cutoffs))`` float64.

    ``loss`` is EE-L, ``disparity`` EE-D, ``relevance`` EE-R (``loss = disparity - relevance +
    ||target||^2``); ``groups`` is ``(batch, len(cutoffs), num_groups)``, the exposure each group
    of items receives, or None without groups.
    """

    loss: torch.Tensor
    disparity: torch.Tensor
    relevance: torch.Tensor
    groups: torch.Tensor | None


def _level_of(labels: torch.Tensor, ranked: RankedBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """``(start, size)`` float64 of the run (level) of each relevant ``label`` in its row's ideal
    ranking: the relevant items of greater label, and the items of that label (0 where the level
    is not among the held ideal positions, which then lies beyond every cutoff)."""
    ideal_labels, ideal_relevant = ranked.ideal()
    held = ideal_labels.shape[1]
    key = torch.where(ideal_relevant > 0, ideal_labels, -math.inf)
    ascending = key.flip(1).contiguous()
    labels = labels.contiguous()
    right = torch.searchsorted(ascending, labels, right=True)
    left = torch.searchsorted(ascending, labels, right=False)
    start = (held - right).to(_F64)
    size = (right - left).to(_F64)
    if held and ranked.ideal_last_run is not None:
        crossing = (labels == ideal_labels[:, -1:]) & (ideal_relevant[:, -1:] > 0)
        size = torch.where(crossing, ranked.ideal_last_run[:, None].expand_as(size), size)
    return start, size


def _share(gamma: float, start: torch.Tensor, size: torch.Tensor, k: int) -> torch.Tensor:
    """The target exposure of one item of a level at ranks ``start .. start + size - 1``
    (0-based), cut at ``k``: ``(gamma^min(s, k) - gamma^min(s + m, k)) / ((1 - gamma) m)``."""
    top = torch.pow(gamma, start.clamp(max=k))
    bottom = torch.pow(gamma, (start + size).clamp(max=k))
    return torch.where(size > 0, (top - bottom) / ((1.0 - gamma) * size.clamp(min=1.0)), 0.0)


def expected_exposure(
    ranked: RankedBatch,
    cutoffs: Sequence[int],
    patience: float,
    catalog: torch.Tensor,
    groups: torch.Tensor | None = None,
    num_groups: int = 0,
) -> ExposureValues:
    """Expected exposure (Diaz et al., "Evaluating Stochastic Rankings with Expected Exposure",
    CIKM 2020) of each query's ranking under the RBP browsing model, cut at each ``k``.

    The user reads rank ``i`` (0-based) with probability ``gamma^i`` (``gamma = patience``), so
    an item at rank ``i < k`` gets exposure ``gamma^i`` and every other item 0; under
    ``ties="average"`` each item of a tied block gets the mean of its block's exposures (its
    expectation over the block's orders). The target gives items of one relevance level one
    exposure: the ideal ranking puts the relevant items by descending label, then the
    ``catalog - R`` non-relevant items, and each level shares the (cut) exposure of its ranks
    equally. With ``e`` the system's and ``t`` the target's exposure of every catalog item:
    EE-D ``= ||e||^2``, EE-R ``= 2 e.t``, EE-L ``= ||e - t||^2 = EE-D - EE-R + ||t||^2``.

    Args:
        ranked: a batch ranked with ``ideal=True``, ``count=True`` and ``runs=True``, every tied
            block whole under ``ties="average"`` (whole rows ranked).
        cutoffs: ascending cutoffs.
        patience: gamma, in (0, 1).
        catalog: ``(batch,)`` items each row ranks among (``>= R`` and the list's length).
        groups: ``(num_items,)`` int64 group id of each item (on ``ranked``'s device), or None.
        num_groups: the number of groups (``groups.max() + 1``).
    """
    gamma = patience
    labels = ranked.labels
    device = ranked.relevant.device
    batch, depth = ranked.relevant.shape
    blocks = ranked.blocks
    relevant = blocks.ranked_relevant if blocks is not None else ranked.relevant > 0
    if ranked.indices is not None:
        real = ranked.indices >= 0
    elif ranked.retrieved is not None:
        real = torch.arange(depth, device=device)[None, :] < ranked.retrieved[:, None]
    else:
        real = torch.ones(batch, depth, dtype=torch.bool, device=device)
    num_relevant = ranked.num_relevant
    nonrelevant = catalog - num_relevant
    start, size = _level_of(torch.where(relevant, labels, -math.inf), ranked)
    ideal_labels, ideal_relevant = ranked.ideal()
    ideal_start, ideal_size = _level_of(torch.where(ideal_relevant > 0, ideal_labels, -math.inf), ranked)
    ideal_ranks = torch.arange(ideal_labels.shape[1], dtype=_F64, device=device)
    ranks = torch.arange(depth, dtype=_F64, device=device)
    ideal_reach, reach = torch.pow(gamma, ideal_ranks), torch.pow(gamma, ranks)
    # Past the ranked positions and every row's catalog nothing is cut: those cutoffs share one value.
    deepest = max(depth, int(catalog.max()) if catalog.numel() else 0)
    distinct = sorted({min(k, deepest) for k in cutoffs})
    loss, disparity, relevance = (
        torch.empty(batch, len(distinct), dtype=_F64, device=device) for _ in range(3)
    )
    exposure_of_groups = (
        torch.zeros(batch, len(distinct), num_groups, dtype=_F64, device=device)
        if groups is not None
        else None
    )
    group_of = groups[ranked.indices.clamp(min=0)] if groups is not None else None
    for column, k in enumerate(distinct):
        # The target: each relevant level, then the non-relevant one (ranks R .. catalog - 1).
        rest = _share(gamma, num_relevant, nonrelevant, k)
        target = torch.where(relevant, _share(gamma, start, size, k), rest[:, None])
        ideal_weight = torch.where((ideal_relevant > 0) & (ideal_ranks < k), ideal_reach, 0.0)
        target_norm = (ideal_weight * _share(gamma, ideal_start, ideal_size, k)).sum(dim=1)
        target_norm = target_norm + rest * rest * nonrelevant
        # The system: gamma^i at the ranks i < k that hold an item, spread over tied blocks.
        weight = torch.where(real & (ranks < k), reach, 0.0)
        exposure = blocks.means(weight) if blocks is not None else weight
        disparity[:, column] = (exposure * exposure).sum(dim=1)
        relevance[:, column] = 2.0 * (exposure * target).sum(dim=1)
        loss[:, column] = disparity[:, column] - relevance[:, column] + target_norm
        if exposure_of_groups is not None:
            exposure_of_groups[:, column].scatter_add_(1, group_of, torch.where(real, exposure, 0.0))
    column_of = {k: column for column, k in enumerate(distinct)}
    at = torch.tensor([column_of[min(k, deepest)] for k in cutoffs], device=device)
    return ExposureValues(
        loss[:, at],
        disparity[:, at],
        relevance[:, at],
        exposure_of_groups[:, at] if exposure_of_groups is not None else None,
    )
