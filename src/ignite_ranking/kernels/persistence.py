"""User-persistence measures over one :class:`~.batch.RankedBatch`: RBP and ERR.

- RBP(p) (Moffat & Zobel, TOIS 2008): ``(1 - p) * sum over ranks i <= k of g_i * p**(i - 1)``,
  with gains ``g_i`` in [0, 1] (by default the relevance of rank i).
- RBP residual, trec_eval 10's ``rbp_resid``: the most RBP could still rise if every unjudged
  retrieved item had gain 1, plus the weight beyond the ranking:
  ``p**n + (1 - p) * sum over unjudged ranks i of p**(i - 1)`` with n the retrieved items
  (within k). As in trec_eval it is 0 when no retrieved item is unjudged.
- ERR@k (Chapelle, Metzler, Zhang & Grinspan, CIKM 2009): ``sum over ranks r <= k of
  1/r * R_r * prod over i < r of (1 - R_i)``, ``R_i = (2**g_i - 1) / 2**g_max`` for a relevant
  item of grade g_i (0 otherwise). The max-grade convention: ``g_max`` is a parameter, 4 by
  default as in gdeval (TREC Web track) and ir_measures' ``ERR@k``; grades above it count as
  ``g_max``, so ``R_i`` stays in [0, 1).
- nERR@k: ERR@k divided by the ERR@k of the ideal order of the row's grades (0 if that is 0).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch

from .batch import RankedBatch, sum_to_cutoffs
from .judged import judged_flags, refuse_blocks, retrieved_counts

__all__ = ["expected_reciprocal_rank", "normalized_err", "rank_biased_precision", "rbp_residual"]


def _check_p(p: float) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 < p < 1.0:
        raise ValueError(f"p (RBP's persistence) must be a number in (0, 1), got {p!r}")
    return float(p)


def _weights(depth: int, p: float, device: torch.device) -> torch.Tensor:
    """``p**(i - 1)`` for the ranks i = 1..depth, float64, each the one before times ``p`` (as
    trec_eval's loops take them: a power computed at once can differ in its last bit)."""
    steps = torch.full((depth,), p, dtype=torch.float64, device=device)
    steps[:1] = 1.0
    return steps.cumprod(dim=0)


def rank_biased_precision(
    ranked: RankedBatch, cutoffs: Sequence[int], p: float = 0.9, gains: torch.Tensor | None = None
) -> torch.Tensor:
    """RBP(p) truncated at each cutoff: ``(batch, len(cutoffs))``.

    Args:
        ranked: the ranked batch.
        cutoffs: ascending cutoffs (a cutoff past the depth sees the whole ranked depth).
        p: the persistence, in (0, 1).
        gains: ``(batch, K)`` gains in [0, 1] per rank; default the relevance (binary, or its
            expectation under ``ties="average"``, RBP being linear in it).

    Example:
        >>> import torch
        >>> from ignite_ranking.kernels import RankedBatch
        >>> ranked = RankedBatch(labels=torch.tensor([[1.0, 0.0, 1.0]]),
        ...     relevant=torch.tensor([[1.0, 0.0, 1.0]]), num_relevant=torch.tensor([2.0]))
        >>> rank_biased_precision(ranked, [1, 3], p=0.5).tolist()  # 0.5 * 1, 0.5 * (1 + 0.25)
        [[0.5, 0.625]]
    """
    p = _check_p(p)
    values = ranked.relevant if gains is None else gains
    return (1.0 - p) * sum_to_cutoffs(values, cutoffs, _weights(ranked.depth, p, values.device))


def rbp_residual(ranked: RankedBatch, cutoffs: Sequence[int], p: float = 0.9) -> torch.Tensor:
    """trec_eval's ``rbp_resid`` within each cutoff: ``(batch, len(cutoffs))``.

    Example:
        >>> import torch
        >>> from ignite_ranking.kernels import RankedBatch
        >>> ranked = RankedBatch(labels=torch.tensor([[1.0, 0.0, 0.0]]),
        ...     relevant=torch.tensor([[1.0, 0.0, 0.0]]), num_relevant=torch.tensor([1.0]),
        ...     judged=torch.tensor([[1.0, 0.0, 1.0]]))
        >>> rbp_residual(ranked, [1, 3], p=0.5).tolist()  # none unjudged in the top 1; 0.125 + 0.5 * 0.5
        [[0.0, 0.375]]
    """
    refuse_blocks(ranked, "rbp_resid")
    p = _check_p(p)
    device = ranked.labels.device
    positions = torch.arange(ranked.depth, device=device)
    real = positions[None, :] < retrieved_counts(ranked)[:, None]
    unjudged = (real & ~judged_flags(ranked)).to(torch.float64)
    open_weight = (1.0 - p) * sum_to_cutoffs(unjudged, cutoffs, _weights(ranked.depth, p, device))
    any_unjudged = sum_to_cutoffs(unjudged, cutoffs) > 0
    ks = torch.tensor(cutoffs, dtype=torch.float64, device=device)
    shown = torch.minimum(ks[None, :], retrieved_counts(ranked)[:, None])
    beyond = _weights(ranked.depth + 1, p, device)[shown.long()]  # p**shown, as trec_eval's loop
    return torch.where(any_unjudged, beyond + open_weight, torch.zeros_like(open_weight))


def _stop_probability(labels: torch.Tensor, relevant: torch.Tensor, max_grade: float) -> torch.Tensor:
    grades = labels.to(torch.float64).clamp(0.0, max_grade)
    return torch.where(relevant > 0, (torch.exp2(grades) - 1.0) / 2.0**max_grade, torch.zeros_like(grades))


def _err(stop: torch.Tensor, cutoffs: Sequence[int]) -> torch.Tensor:
    reach = torch.nn.functional.pad(torch.cumprod(1.0 - stop, dim=1)[:, :-1], (1, 0), value=1.0)
    ranks = torch.arange(1, stop.shape[1] + 1, dtype=torch.float64, device=stop.device)
    return sum_to_cutoffs(reach * stop / ranks, cutoffs)


def _check_max_grade(max_grade: float) -> float:
    if isinstance(max_grade, bool) or not isinstance(max_grade, numbers.Real) or not max_grade > 0:
        raise ValueError(f"max_grade (ERR's largest grade) must be a positive number, got {max_grade!r}")
    return float(max_grade)


def expected_reciprocal_rank(
    ranked: RankedBatch, cutoffs: Sequence[int], max_grade: float = 4
) -> torch.Tensor:
    """ERR@k of every row: ``(batch, len(cutoffs))``; grades are the ranked items' labels.

    Example:
        >>> import torch
        >>> from ignite_ranking.kernels import RankedBatch
        >>> ranked = RankedBatch(labels=torch.tensor([[2.0, 0.0, 1.0]]),
        ...     relevant=torch.tensor([[1.0, 0.0, 1.0]]), num_relevant=torch.tensor([2.0]))
        >>> expected_reciprocal_rank(ranked, [1, 3], max_grade=2).tolist()  # 3/4, 3/4 + 1/4 * 1/4 / 3
        [[0.75, 0.7708333333333334]]
    """
    refuse_blocks(ranked, "ERR")
    stop = _stop_probability(ranked.labels, ranked.relevant, _check_max_grade(max_grade))
    return _err(stop, cutoffs)


def normalized_err(ranked: RankedBatch, cutoffs: Sequence[int], max_grade: float = 4) -> torch.Tensor:
    """nERR@k: ERR@k over the ERR@k of the row's ideal order (needs ``ideal=True``).

    Example:
        >>> import torch
        >>> from ignite_ranking.kernels import RankedBatch
        >>> ranked = RankedBatch(labels=torch.tensor([[0.0, 1.0]]), relevant=torch.tensor([[0.0, 1.0]]),
        ...     num_relevant=torch.tensor([1.0]), ideal_labels=torch.tensor([[1.0, 0.0]]),
        ...     ideal_relevant=torch.tensor([[1.0, 0.0]]))
        >>> normalized_err(ranked, [2], max_grade=1).tolist()  # (1/2 * 1/2) / (1/2)
        [[0.5]]
    """
    ideal_labels, ideal_relevant = ranked.ideal()
    err = expected_reciprocal_rank(ranked, cutoffs, max_grade)
    ideal = _err(_stop_probability(ideal_labels, ideal_relevant, float(max_grade)), cutoffs)
    safe = torch.where(ideal > 0, ideal, torch.ones_like(ideal))
    return torch.where(ideal > 0, err / safe, torch.zeros_like(err))
