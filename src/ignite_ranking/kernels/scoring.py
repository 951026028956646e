"""Per-query scorers over a :class:`~ignite_ranking.kernels.ranking.RankedBatch`.

Each takes the ranked batch and the ascending cutoffs and returns float64 values of shape
``(batch, len(cutoffs))``; a query without relevant items scores 0. A cutoff larger than the
number of ranked positions sees all of them (precision still divides by the cutoff itself).
Under ``ties="average"`` the batch carries its tied blocks and every scorer returns the expected
value over the orders of each block (:mod:`ignite_ranking.kernels.expected`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import torch

from . import constants, expected
from .batch import RankedBatch, at_cutoffs, stacked_gains, sum_to_cutoffs

__all__ = [
    "AP_DENOMINATORS",
    "average_precision",
    "check_denominator",
    "hit_rate",
    "list_precision",
    "ndcg",
    "precision",
    "r_precision",
    "recall",
    "reciprocal_rank",
]


def _cutoff_tensor(ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
    """The cutoffs as a float64 tensor on the batch's device (read only; built once per list:
    a tensor of 100,000 Python ints takes about 10 ms to build)."""
    return _cutoffs_on(tuple(cutoffs), ranked.relevant.device)


@functools.lru_cache(maxsize=16)
def _cutoffs_on(cutoffs: tuple[int, ...], device: torch.device) -> torch.Tensor:
    return torch.tensor(cutoffs, dtype=torch.float64, device=device)


@functools.lru_cache(maxsize=16)
def _ranks(depth: int, first: int, device: torch.device) -> torch.Tensor:
    """float64 ``first, first + 1, ..., first + depth - 1`` (read only; built once per depth)."""
    return torch.arange(first, first + depth, dtype=torch.float64, device=device)


@functools.lru_cache(maxsize=16)
def _discount(depth: int, device: torch.device) -> torch.Tensor:
    """NDCG's ``1 / log2(rank + 1)`` for ranks ``1..depth``, float64 (read only)."""
    return 1.0 / torch.log2(_ranks(depth, 2, device))


_SMALLEST = math.ulp(0.0)  # the least positive float64


def _divide(numerator: torch.Tensor, denominator: torch.Tensor) -> torch.Tensor:
    """``numerator / denominator`` with 0 where the denominator is not positive (the quotients
    there, inf or NaN, are not kept)."""
    zero = constants.scalar(0.0, denominator.dtype, denominator.device)
    return torch.where(denominator > 0, numerator / denominator, zero)


def reciprocal_rank(ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
    """``1 / rank`` of the first relevant item if that rank is ``<= k``, else 0."""
    if ranked.depth == 0:
        return torch.zeros(
            ranked.relevant.shape[0], len(cutoffs), dtype=torch.float64, device=ranked.relevant.device
        )
    if ranked.blocks is not None:
        return expected.expected_reciprocal_rank(ranked.blocks, cutoffs)
    # argmax gives the first of equal maxima: the first relevant rank where there is one.
    first = ranked.relevant.argmax(dim=1, keepdim=True)
    rank = first.to(torch.float64) + 1.0
    value = ranked.relevant.gather(1, first) / rank  # 1 / rank where found (relevance is 1.0), else 0
    zero = constants.scalar(0.0, torch.float64, rank.device)
    return torch.where(rank <= _cutoff_tensor(ranked, cutoffs), value, zero)


def hit_rate(ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
    """1 if a relevant item is in the top k, else 0."""
    if ranked.depth == 0:
        return torch.zeros(
            ranked.relevant.shape[0], len(cutoffs), dtype=torch.float64, device=ranked.relevant.device
        )
    if ranked.blocks is not None:
        return expected.expected_hit_rate(ranked.blocks, cutoffs)
    return (at_cutoffs(ranked.cumulative_relevant(), cutoffs) > 0).to(torch.float64)


def precision(ranked: RankedBatch, cutoffs: Sequence[int], adaptive_k: bool = False) -> torch.Tensor:
    """Relevant items in the top k, divided by k, or with ``adaptive_k`` by ``min(k, n)``, n the
    items of the row's ranking (a row without items scores 0)."""
    if not adaptive_k:
        return ranked.hits(cutoffs) / _cutoff_tensor(ranked, cutoffs)
    shown = torch.minimum(_cutoff_tensor(ranked, cutoffs)[None, :], _listed(ranked)[:, None])
    return _divide(ranked.hits(cutoffs), shown)


def list_precision(ranked: RankedBatch) -> torch.Tensor:
    """Relevant items of each row's whole ranking, divided by its number of items: ``(batch, 1)``.

    The batch must hold every item of each row (ranked to a depth at least the row's length).
    """
    return _divide(ranked.relevant.sum(dim=1), _listed(ranked))[:, None]


def _listed(ranked: RankedBatch) -> torch.Tensor:
    """``(batch,)`` float64: the ranked positions of each row that hold an item."""
    if ranked.retrieved is not None:
        return ranked.retrieved.to(torch.float64)
    rows = ranked.relevant.shape[0]
    return torch.full((rows,), float(ranked.depth), dtype=torch.float64, device=ranked.relevant.device)


def recall(ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
    """Relevant items in the top k, divided by the row's number of relevant items R."""
    return _divide(ranked.hits(cutoffs), ranked.num_relevant[:, None])


AP_DENOMINATORS = ("relevant", "min_k_relevant", "relevant_retrieved")
"""What AP@k divides by: R (trec_eval), ``min(k, R)`` (sentence-transformers, RecBole) or the
relevant items within the top k (torchmetrics)."""


def check_denominator(denominator: object, ties: str | None = None) -> str:
    """``denominator`` if one of :data:`AP_DENOMINATORS` and defined under ``ties``; else a ValueError."""
    if denominator not in AP_DENOMINATORS:
        raise ValueError(
            f"denominator must be one of {', '.join(map(repr, AP_DENOMINATORS))}, got {denominator!r}"
        )
    if denominator == "relevant_retrieved" and ties == "average":
        raise ValueError(
            "denominator='relevant_retrieved' divides by a count that is random under "
            "ties='average'; rank with another tie policy"
        )
    return denominator


def average_precision(
    ranked: RankedBatch, cutoffs: Sequence[int], denominator: str = "relevant"
) -> torch.Tensor:
    """Sum of precision at the ranks ``i <= k`` of relevant items, divided by R, by ``min(k, R)``
    or by the relevant items within k (``denominator``, one of :data:`AP_DENOMINATORS`; the
    last is not defined under ``"average"`` ties, whose expectation of a ratio it is not)."""
    num_relevant = ranked.num_relevant[:, None]
    if ranked.blocks is not None:
        values = expected.expected_average_precision(ranked.blocks, ranked.num_relevant, cutoffs)
        if denominator == "relevant":
            return values
        if denominator != "min_k_relevant":
            raise ValueError(f"denominator={denominator!r} is not defined under ties='average'")
        shown = torch.minimum(_cutoff_tensor(ranked, cutoffs)[None, :], num_relevant)
        return _divide(values * num_relevant, shown)
    relevant = ranked.relevant
    if ranked.depth == 0:
        return sum_to_cutoffs(relevant, cutoffs)
    precision_at_rank = ranked.cumulative_relevant() / _ranks(ranked.depth, 1, relevant.device)
    summed = sum_to_cutoffs(relevant * precision_at_rank, cutoffs)
    if denominator == "min_k_relevant":
        return _divide(summed, torch.minimum(_cutoff_tensor(ranked, cutoffs)[None, :], num_relevant))
    if denominator == "relevant_retrieved":
        return _divide(summed, ranked.hits(cutoffs))
    return _divide(summed, num_relevant)


def ndcg(ranked: RankedBatch, cutoffs: Sequence[int], gain_function: str = "exp_rank") -> torch.Tensor:
    """``DCG@k / IDCG@k`` with discount ``1 / log2(rank + 1)``; IDCG from the row's own labels."""
    discount = _discount(ranked.depth, ranked.relevant.device)
    stacked = ranked.ranked_and_ideal()
    if stacked is not None:  # the generic kernels' form: ranked and ideal gains in one pass
        dcg, idcg = sum_to_cutoffs(stacked_gains(stacked, gain_function), cutoffs, discount)
        if gain_function == "exp_rank":
            # Under a threshold >= 0 (the stacked form's) these gains are +0.0 or positive, and
            # IDCG is 0 only where every gain is: DCG is +0.0 there, and so is the quotient.
            return dcg / idcg.clamp(min=_SMALLEST)
        return _divide(dcg, idcg)
    dcg = ranked.dcg(gain_function, cutoffs, discount)
    idcg = ranked.ideal_dcg(gain_function, cutoffs, discount)
    return _divide(dcg, idcg)


def r_precision(ranked: RankedBatch) -> torch.Tensor:
    """Relevant items in the top R, divided by R: ``(batch, 1)``.

    The batch must be ranked with ``cover_relevant=True``: the kernel then counts them
    (``ranked.relevant_within_r``), or ranks deep enough that rank R is always held.
    """
    if ranked.relevant_within_r is not None:
        return _divide(ranked.relevant_within_r, ranked.num_relevant)[:, None]
    r = ranked.num_relevant.to(torch.int64)[:, None]
    if ranked.depth == 0:  # then R is 0 too
        return _divide(ranked.relevant.new_zeros((len(r), 1)), ranked.num_relevant[:, None])
    within = ranked.cumulative_relevant().gather(1, (r - 1).clamp(min=0)) * (r > 0)
    return _divide(within, ranked.num_relevant[:, None])
