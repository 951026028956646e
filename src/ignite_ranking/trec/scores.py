"""Per-query values of the supported measures on one ranked batch, as trec_eval defines them.

The binary measures (P, recall, map, recip_rank, success, Rprec, num_rel_ret) are the kernel's
scorers on a batch ranked at their relevance level, with R (``num_relevant``) taken from the
qrels; NDCG is computed here because its gains follow trec_eval's rules
(:mod:`ignite_ranking.trec.gains`), not the kernel's.
cwl_eval's C/W/L measures (BPM, INST, INSQ, SDCG, NERR8-11) are :mod:`ignite_ranking.trec.cwl`'s.
The persistence and judgement measures (rbp, rbp_resid, bpref, ERR, nERR, Judged) are the
kernel's :mod:`~ignite_ranking.kernels.persistence` and :mod:`~ignite_ranking.kernels.judged`
scorers on the same batch, whose ``judged`` flags say which ranked documents the qrels judge
(grade >= 0); judged-only measures read the batch condensed by
:func:`~ignite_ranking.kernels.judged.condense`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from ..kernels import RankedBatch, judged, persistence, scoring
from .cwl import cwl_values
from .extra_measures import EXTRA_FAMILIES, Lists, extra_values
from .gains import GainRule
from .judgements import PADDING
from .measures import CWL_FAMILIES

__all__ = ["Batch", "family_values", "label_lists"]


@dataclass
class Batch:
    """What the scorers need of one batch of queries.

    Attributes:
        ranked: the batch ranked at each relevance level, ``num_relevant`` = R at that level.
        retrieved: ``(n,)`` documents the run retrieved for each query.
        ideal: ``(n, width)`` float64 ideal gains per gain rule, best first, 0-padded.
        condensed: ``ranked`` without the unjudged documents, per level (judged-only measures).
        max_grade: ``(n,)`` each query's largest judged grade (RBP's gains are grade / it).
        lists: :func:`label_lists`' cache, per (level, judged only).
    """

    ranked: dict[int, RankedBatch]
    retrieved: np.ndarray
    ideal: dict[GainRule, torch.Tensor]
    condensed: dict[int, RankedBatch]
    max_grade: torch.Tensor
    lists: dict[tuple[int, bool], Lists] = field(default_factory=dict)


def _cumulative(per_rank: torch.Tensor, cutoffs: Sequence[int]) -> torch.Tensor:
    """Sums of ``per_rank`` over the first k ranks, for each cutoff k: ``(n, len(cutoffs))``."""
    cumulative = torch.nn.functional.pad(per_rank.cumsum(dim=1), (1, 0))
    return cumulative[:, [min(k, per_rank.shape[1]) for k in cutoffs]]


def _discounted(gains: torch.Tensor, cutoffs: Sequence[int]) -> torch.Tensor:
    ranks = torch.arange(2, gains.shape[1] + 2, dtype=torch.float64)
    return _cumulative(gains / torch.log2(ranks), cutoffs)


def _ndcg(ranked: RankedBatch, ideal: torch.Tensor, rule: GainRule, cutoffs: Sequence[int]) -> torch.Tensor:
    labels = ranked.labels
    if ranked.blocks is None:  # the ranks past the deepest cutoff add nothing (a tied block may)
        labels = labels[:, : max(cutoffs)]
    gains = torch.from_numpy(rule.of(labels.numpy().astype(np.int64)))
    # Only the ranks that hold a document gain: past them, a condensed (judged-only) list keeps
    # the labels of the unjudged documents it moved out, which custom gains may reward.
    gains[torch.arange(gains.shape[1]) >= judged.retrieved_counts(ranked)[:, None]] = 0.0
    if ranked.blocks is not None:  # expected gain at each rank: its tied block's mean gain
        gains = ranked.blocks.means(gains)
    dcg, idcg = _discounted(gains, cutoffs), _discounted(ideal, cutoffs)
    positive = idcg > 0
    return torch.where(positive, dcg / torch.where(positive, idcg, 1.0), 0.0)


def _rbp_gains(ranked: RankedBatch, max_grade: torch.Tensor) -> torch.Tensor:
    """trec_eval's RBP gains: the grade, divided by the query's largest grade when that is > 1."""
    grades = ranked.labels.clamp(min=0.0)
    return grades / max_grade.clamp(min=1.0)[:, None]


def label_lists(batch: Batch, level: int, judged_only: bool) -> Lists:
    """The batch's ranked labels as trec_eval's lists (:mod:`~ignite_ranking.trec.extra_measures`)."""
    if (level, judged_only) in batch.lists:
        return batch.lists[level, judged_only]
    ranked = (batch.condensed if judged_only else batch.ranked)[level]
    retrieved = judged.retrieved_counts(ranked).numpy() if judged_only else batch.retrieved
    labels = ranked.labels.numpy().astype(np.int64)
    labels[np.arange(labels.shape[1])[None, :] >= retrieved[:, None]] = PADDING
    lists = Lists(labels, retrieved.astype(np.float64), ranked.num_relevant.numpy(), level)
    batch.lists[level, judged_only] = lists
    return lists


def family_values(
    batch: Batch,
    family: str,
    level: int,
    rule: GainRule | None,
    judged_only: bool,
    p: float | None,
    cutoffs: Sequence[int],
    params: Sequence[float] = (),
) -> np.ndarray:
    """``(n, len(cutoffs))`` values of one family at one relevance level (cutoffs are ints:
    the caller substitutes a cutoff covering the whole ranking for "no cutoff"); ``params``:
    the family's real parameters (:attr:`~ignite_ranking.trec.measures.Measure.params`)."""
    if family in EXTRA_FAMILIES:
        ideal = batch.ideal[rule].numpy() if rule is not None else None
        return extra_values(label_lists(batch, level, judged_only), family, cutoffs, params, rule, ideal)
    family = {"gm_map": "map", "gm_bpref": "bpref"}.get(family, family)  # geometric means of these
    ranked = (batch.condensed if judged_only else batch.ranked)[level]
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
    elif family == "num_ret" and judged_only:
        values = judged.retrieved_counts(ranked)[:, None]
    elif family == "num_ret":
        values = torch.from_numpy(batch.retrieved.astype(np.float64))[:, None]
    elif family == "rbp":
        assert p is not None
        values = persistence.rank_biased_precision(ranked, cutoffs, p, _rbp_gains(ranked, batch.max_grade))
    elif family == "rbp_rel":  # binary gains: relevant at the measure's level
        assert p is not None
        values = persistence.rank_biased_precision(ranked, cutoffs, p)
    elif family in CWL_FAMILIES:
        values = cwl_values(ranked, family, cutoffs, p, params)
    elif family == "rbp_resid":
        assert p is not None
        values = persistence.rbp_residual(ranked, cutoffs, p)
    elif family == "bpref":
        values = judged.bpref(ranked)
    elif family == "judged":
        values = judged.judged_at_k(ranked, cutoffs)
    elif family == "err":
        values = persistence.expected_reciprocal_rank(ranked, cutoffs)
    elif family == "nerr":
        ideal = batch.ideal[GainRule()]
        with_ideal = replace(ranked, ideal_labels=ideal, ideal_relevant=(ideal >= level).to(torch.float64))
        values = persistence.normalized_err(with_ideal, cutoffs)
    elif family == "num_rel":
        values = ranked.num_relevant[:, None]
    elif family == "num_rel_ret":
        values = ranked.relevant.sum(dim=1, keepdim=True)
    else:  # pragma: no cover - parse_measures only makes the families above
        raise ValueError(f"unknown family {family!r}")
    return values.numpy()
