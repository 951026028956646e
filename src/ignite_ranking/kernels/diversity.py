"""Diversity (intent-aware) measures on subtopic judgements, as TREC's ``ndeval`` defines them.

A query has subtopics (intents); an item is relevant to some of them. A ranked batch is a
:class:`SubtopicBatch`: which subtopics each ranked item covers, in rank order, and which ones
every relevant item of the query covers (for the ideal ranking). With ``N`` the number of
subtopics that have a relevant item, ``c(i, s)`` the number of items above rank ``i`` relevant to
subtopic ``s`` and ``g_i = sum over the subtopics s of item i of (1 - alpha) ** c(i, s)`` its
novelty gain (all 1-based ranks):

- ``alpha_ndcg``: ``sum_{i<=k} g_i / log2(i + 1)``, divided by the same sum for the ideal ranking
  (Clarke et al., 2008), which is approximated greedily as ndeval does: at each rank, the item
  with the largest gain given the items above it; equal gains go to the earlier candidate.
- ``err_ia``: ``sum_{i<=k} g_i / i``, divided by ``sum_{i<=k} N (1 - alpha) ** (i - 1) / i``, the
  value of a ranking that covered every subtopic at every rank (ndeval's "collection-independent"
  normalisation of Chapelle et al.'s ERR-IA, 2009).
- ``nrbp``: ``(1 - (1 - alpha) beta) / N * sum_i g_i beta ** (i - 1)`` over the whole ranking
  (Clarke et al., 2009).
- ``precision_ia``: ``sum_{i<=k} |subtopics of item i| / (k N)`` (Agrawal et al., 2009).
- ``subtopic_recall``: subtopics covered by the top k / ``N`` (Zhai et al., 2003).

Every measure is 0 for a query without subtopics (``N = 0``). The functions are vectorized over
the batch; the greedy ideal ranking loops over ranks (at most the largest cutoff), not queries.

Example:
    >>> import torch
    >>> y = torch.tensor([[[1, 0], [1, 0], [0, 1]]])  # 3 items, 2 subtopics
    >>> batch = subtopic_batch(torch.tensor([[0.9, 0.8, 0.1]]), y, depth=3)
    >>> alpha_ndcg(batch, [2], alpha=0.5).tolist()
    [[0.8065735963827293]]
    >>> subtopic_recall(batch, [1, 3]).tolist()
    [[0.5, 1.0]]
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import torch

from . import constants
from .ranking import top_indices

__all__ = [
    "SubtopicBatch",
    "alpha_ndcg",
    "check_alpha",
    "err_ia",
    "nrbp",
    "precision_ia",
    "subtopic_batch",
    "subtopic_recall",
]


@dataclass
class SubtopicBatch:
    """Ranked subtopic judgements of a batch of queries.

    Attributes:
        ranked: ``(batch, depth, S)`` bool: the subtopics each ranked item is relevant to, in rank
            order (rows padded with False past the items of a query).
        candidates: ``(batch, M, S)`` bool: the subtopics of every item of the query relevant to
            one or more, in the order that breaks ties in the ideal ranking (earlier first).
    """

    ranked: torch.Tensor
    candidates: torch.Tensor

    @property
    def num_subtopics(self) -> torch.Tensor:
        """``(batch,)`` float64: the subtopics with a relevant item (N)."""
        return self.candidates.any(dim=1).sum(dim=1).to(torch.float64)


def check_alpha(name: str, value: object) -> float:
    """``value`` as a float in [0, 1], else a ``TypeError``/``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in [0, 1], got {type(value).__name__}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


def _powers(alpha: float, count: int, device: torch.device) -> torch.Tensor:
    """``(count,)`` float64 ``(1 - alpha) ** c`` for c = 0, 1, ..., by repeated multiplication
    (ndeval's arithmetic, to the bit)."""
    factors = torch.full((count,), 1.0 - alpha, dtype=torch.float64, device=device)
    factors[0] = 1.0
    return torch.cumprod(factors, dim=0)


def _novelty_gains(ranked: torch.Tensor, alpha: float) -> torch.Tensor:
    """``(batch, depth)`` float64 gains ``g_i`` of the ranked items."""
    seen = torch.cumsum(ranked, dim=1, dtype=torch.int64)
    seen_above = seen - ranked.to(torch.int64)
    value = _powers(alpha, ranked.shape[1] + 1, ranked.device)[seen_above]
    return torch.where(ranked, value, 0.0).sum(dim=2)


def _at_cutoffs(running: torch.Tensor, cutoffs: list[int]) -> torch.Tensor:
    """``(batch, len(cutoffs))``: the running sums at ranks k (the last one past the depth)."""
    depth = running.shape[1]
    if depth == 0:
        return running.new_zeros((running.shape[0], len(cutoffs)))
    index = constants.listed(tuple(min(k, depth) - 1 for k in cutoffs), torch.int64, running.device)
    return running[:, index]


def _ideal_gains(candidates: torch.Tensor, depth: int, alpha: float) -> torch.Tensor:
    """``(batch, depth)`` gains of ndeval's greedy ideal ranking of the candidates."""
    batch, num_candidates, num_subtopics = candidates.shape
    steps = min(depth, num_candidates)
    rel = candidates.to(torch.float64)
    weight = torch.ones((batch, num_subtopics, 1), dtype=torch.float64, device=rel.device)
    # -inf on the candidates already placed (the float sum of weights cannot reach it)
    taken = torch.zeros((batch, num_candidates), dtype=torch.float64, device=rel.device)
    gains = torch.zeros((batch, depth), dtype=torch.float64, device=rel.device)
    rows = torch.arange(batch, device=rel.device)
    for rank in range(steps):
        score = torch.bmm(rel, weight).squeeze(2) + taken
        pick = score.argmax(dim=1)  # the first of equal maxima: the earlier candidate
        gains[:, rank] = score[rows, pick].clamp_min(0.0)
        taken[rows, pick] = -torch.inf
        weight = torch.where(candidates[rows, pick][:, :, None], weight * (1.0 - alpha), weight)
    return gains


def _discounted(gains: torch.Tensor, discount: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(gains * discount[: gains.shape[1]], dim=1)


def alpha_ndcg(batch: SubtopicBatch, cutoffs: list[int], alpha: float = 0.5) -> torch.Tensor:
    """``(batch, len(cutoffs))`` alpha-nDCG@k (see the module docstring)."""
    depth = max(cutoffs)
    ranks = torch.arange(depth, dtype=torch.float64, device=batch.ranked.device)
    discount = 1.0 / torch.log2(ranks + 2.0)
    dcg = _at_cutoffs(_discounted(_novelty_gains(batch.ranked[:, :depth], alpha), discount), cutoffs)
    ideal = _at_cutoffs(_discounted(_ideal_gains(batch.candidates, depth, alpha), discount), cutoffs)
    return torch.where(dcg > 0, dcg / torch.where(ideal > 0, ideal, 1.0), 0.0)


def err_ia(batch: SubtopicBatch, cutoffs: list[int], alpha: float = 0.5) -> torch.Tensor:
    """``(batch, len(cutoffs))`` ERR-IA@k, ndeval's collection-independent normalisation."""
    depth = max(cutoffs)
    ranks = torch.arange(1, depth + 1, dtype=torch.float64, device=batch.ranked.device)
    err = _at_cutoffs(_discounted(_novelty_gains(batch.ranked[:, :depth], alpha), 1.0 / ranks), cutoffs)
    best = torch.cumsum(torch.pow(1.0 - alpha, ranks - 1.0) / ranks, dim=0)
    best = best[constants.listed(tuple(k - 1 for k in cutoffs), torch.int64, best.device)]
    n = batch.num_subtopics[:, None]
    return torch.where(n > 0, err / (torch.where(n > 0, n, 1.0) * best), 0.0)


def nrbp(batch: SubtopicBatch, alpha: float = 0.5, beta: float = 0.5) -> torch.Tensor:
    """``(batch, 1)`` NRBP over the whole ranked depth (see the module docstring)."""
    gains = _novelty_gains(batch.ranked, alpha)
    ranks = torch.arange(gains.shape[1], dtype=torch.float64, device=gains.device)
    weights = torch.pow(constants.scalar(beta, torch.float64, ranks.device), ranks)
    total = (gains * weights).sum(dim=1, keepdim=True)
    n = batch.num_subtopics[:, None]
    return torch.where(n > 0, total * (1.0 - (1.0 - alpha) * beta) / torch.where(n > 0, n, 1.0), 0.0)


def subtopic_hits(batch: SubtopicBatch, cutoffs: list[int]) -> torch.Tensor:
    """``(batch, len(cutoffs))`` the (item, subtopic) hits in the top k over the query's number of
    subtopics: P-IA@k times k, which stops growing past the ranked items."""
    depth = max(cutoffs)
    hits = _at_cutoffs(torch.cumsum(batch.ranked[:, :depth].sum(dim=2).to(torch.float64), dim=1), cutoffs)
    n = batch.num_subtopics[:, None]
    return torch.where(n > 0, hits / torch.where(n > 0, n, 1.0), 0.0)


def precision_ia(batch: SubtopicBatch, cutoffs: list[int]) -> torch.Tensor:
    """``(batch, len(cutoffs))`` intent-aware precision P-IA@k: :func:`subtopic_hits` over k."""
    hits = subtopic_hits(batch, cutoffs)
    return hits / constants.listed(tuple(cutoffs), torch.float64, hits.device)


def subtopic_recall(batch: SubtopicBatch, cutoffs: list[int]) -> torch.Tensor:
    """``(batch, len(cutoffs))`` subtopic recall S-recall@k."""
    depth = max(cutoffs)
    covered = torch.cummax(batch.ranked[:, :depth].to(torch.int8), dim=1).values.sum(dim=2)
    covered = _at_cutoffs(covered.to(torch.float64), cutoffs)
    n = batch.num_subtopics[:, None]
    return torch.where(n > 0, covered / torch.where(n > 0, n, 1.0), 0.0)


def _first_true(mask: torch.Tensor, count: int) -> torch.Tensor:
    """``(batch, count)`` indices of the first ``count`` True entries of each row (lowest first;
    rows with fewer are padded with indices of False entries)."""
    return torch.sort(mask.to(torch.int8), dim=1, descending=True, stable=True).indices[:, :count]


def subtopic_batch(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    depth: int,
    relevance_threshold: float = 1.0,
    ties: str = "first",
) -> SubtopicBatch:
    """Ranks ``y_pred`` and gathers the subtopic judgements of the top ``depth`` items.

    Args:
        y_pred: ``(batch, num_items)`` scores (checked by the caller).
        y: ``(batch, num_items, S)`` subtopic labels, dense or a sparse COO tensor; an item is
            relevant to subtopic s iff its label is ``>= relevance_threshold``.
        depth: how many ranked positions to keep (past ``num_items``: all).
        relevance_threshold: the relevance threshold.
        ties: ``"first"`` or ``"last"`` (see :mod:`ignite_ranking.kernels.ranking`); the ideal
            ranking's ties go to the lower item index.
    """
    batch, num_items = y_pred.shape
    top = top_indices(y_pred, min(depth, num_items), ties)
    if y.is_sparse:
        return _sparse_batch(top, y.coalesce(), relevance_threshold)
    relevant = y >= relevance_threshold
    ranked = relevant.gather(1, top[:, :, None].expand(-1, -1, relevant.shape[2]))
    any_relevant = relevant.any(dim=2)
    most = int(any_relevant.sum(dim=1).max()) if batch else 0
    chosen = _first_true(any_relevant, most)
    candidates = relevant.gather(1, chosen[:, :, None].expand(-1, -1, relevant.shape[2]))
    return SubtopicBatch(ranked, candidates)


def _sparse_batch(top: torch.Tensor, y: torch.Tensor, relevance_threshold: float) -> SubtopicBatch:
    """:func:`subtopic_batch` for coalesced sparse labels: only the stored entries are read."""
    batch, num_items, num_subtopics = y.shape
    row, item, subtopic = y.indices()
    keep = y.values() >= relevance_threshold
    row, item, subtopic = row[keep], item[keep], subtopic[keep]
    # Rank of each relevant entry's item, -1 where it is not in the top.
    position = torch.full((batch, num_items), -1, dtype=torch.int64, device=top.device)
    position.scatter_(1, top, torch.arange(top.shape[1], device=top.device).expand_as(top))
    rank = position[row, item]
    ranked = torch.zeros((batch, top.shape[1], num_subtopics), dtype=torch.bool, device=top.device)
    hit = rank >= 0
    ranked[row[hit], rank[hit], subtopic[hit]] = True
    # Candidates: the distinct (row, item) pairs, in ascending item order within a row (coalesced).
    key = row * num_items + item
    pairs, slot = torch.unique_consecutive(key, return_inverse=True)
    pair_row = pairs // num_items
    per_row = torch.bincount(pair_row, minlength=batch)
    first = torch.cumsum(per_row, dim=0) - per_row
    column = torch.arange(len(pairs), device=top.device) - first[pair_row]
    most = int(per_row.max()) if batch else 0
    candidates = torch.zeros((batch, most, num_subtopics), dtype=torch.bool, device=top.device)
    candidates[row, column[slot], subtopic] = True
    return SubtopicBatch(ranked, candidates)
