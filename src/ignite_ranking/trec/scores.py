"""Per-query values of the supported measures on one ranked batch, as trec_eval defines them.

The binary measures (P, recall, map, recip_rank, success, Rprec, num_rel_ret) are the kernel's
scorers on a batch ranked at their relevance level, with R (``num_relevant``) taken from the
qrels; NDCG is computed here because its gains follow trec_eval's rules
(:mod:`ignite_ranking.trec.gains`), not the kernel's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..kernels import RankedBatch, scoring
from .gains import GainRule

__all__ = ["Batch", "family_values"]


@dataclass
class Batch:
    """What the scorers need of one batch of queries.

    Attributes:
        ranked: the batch ranked at each relevance level, ``num_relevant`` = R at that level.
        retrieved: ``(n,)`` documents the run retrieved for each query.
        ideal: ``(n, width)`` float64 ideal gains per gain rule, best first, 0-padded.
    """

    ranked: dict[int, RankedBatch]
    retrieved: np.ndarray
    ideal: dict[GainRule, torch.Tensor]


def _cumulative(per_rank: torch.Tensor, cutoffs: Sequence[int]) -> torch.Tensor:
    """Sums of ``per_rank`` over the first k ranks, for each cutoff k: ``(n, len(cutoffs))``."""
    cumulative = torch.nn.functional.pad(per_rank.cumsum(dim=1), (1, 0))
    return cumulative[:, [min(k, per_rank.shape[1]) for k in cutoffs]]


def _discounted(gains: torch.Tensor, cutoffs: Sequence[int]) -> torch.Tensor:
    ranks = torch.arange(2, gains.shape[1] + 2, dtype=torch.float64)
    return _cumulative(gains / torch.log2(ranks), cutoffs)


def _ndcg(ranked: RankedBatch, ideal: torch.Tensor, rule: GainRule, cutoffs: Sequence[int]) -> torch.Tensor:
    gains = torch.from_numpy(rule.of(ranked.labels.numpy().astype(np.int64)))
    if ranked.blocks is not None:  # expected gain at each rank: its tied block's mean gain
        blocks = ranked.blocks
        sums = torch.zeros_like(gains).scatter_add_(1, blocks.block_id, gains)
        gains = sums.gather(1, blocks.block_id) / blocks.size
    dcg, idcg = _discounted(gains, cutoffs), _discounted(ideal, cutoffs)
    positive = idcg > 0
    return torch.where(positive, dcg / torch.where(positive, idcg, 1.0), 0.0)


def family_values(
    batch: Batch, family: str, level: int, rule: GainRule | None, cutoffs: Sequence[int]
) -> np.ndarray:
    """``(n, len(cutoffs))`` values of one family at one relevance level (cutoffs are ints:
    the caller substitutes a cutoff covering the whole ranking for "no cutoff")."""
    ranked = batch.ranked[level]
    n = ranked.labels.shape[0]
    if family == "P":
        values = scoring.precision(ranked, cutoffs)
    elif family == "recall":
        values = scoring.recall(ranked, cutoffs)
    elif family == "map":
        values = scoring.average_precision(ranked, cutoffs)
    elif family == "recip_rank":
        values = scoring.reciprocal_rank(ranked, cutoffs)
    elif family == "success":
        values = scoring.hit_rate(ranked, cutoffs)
    elif family == "Rprec":
        values = scoring.r_precision(ranked)
    elif family in ("ndcg", "ndcg_burges"):
        assert rule is not None
        values = _ndcg(ranked, batch.ideal[rule], rule, cutoffs)
    elif family == "num_q":
        values = torch.ones(n, 1, dtype=torch.float64)
    elif family == "num_ret":
        values = torch.from_numpy(batch.retrieved.astype(np.float64))[:, None]
    elif family == "num_rel":
        values = ranked.num_relevant[:, None]
    elif family == "num_rel_ret":
        values = ranked.relevant.sum(dim=1, keepdim=True)
    else:  # pragma: no cover - parse_measures only makes the families above
        raise ValueError(f"unknown family {family!r}")
    return values.numpy()
