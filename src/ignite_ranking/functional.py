"""Per-query ranking metrics as plain functions.

Each function checks its inputs, ranks the batch once with the contract's tie rule and returns
float64 values, one row per query and one column per cutoff in ascending order; a query without
relevant items scores 0. The metric classes use the same kernel. The seven named functions take
``(y_pred, y)`` with ``y`` dense or sparse; :func:`per_query` takes every input form
(:doc:`/inputs`), the flat form and :class:`~ignite_ranking.Retrieved` included, and returns the
query id of each row.

The beyond-accuracy functions (:func:`novelty`, :func:`average_popularity`,
:func:`long_tail_share`, :func:`intra_list_diversity`, :func:`serendipity`,
:func:`expected_exposure`; see :doc:`/beyond_accuracy`) take ``(y_pred, y)``, scores alone
(``y_pred``, for the measures that read no label) or a :class:`~ignite_ranking.Retrieved`, and
item statistics indexed by item id. A list's value is NaN where it is not defined (no item; for
intra-list diversity fewer than two), the queries the metrics leave out.

Example:
    >>> import torch
    >>> from ignite_ranking.functional import reciprocal_rank
    >>> y_pred = torch.tensor([[4.0, 2.0, 3.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    >>> y = torch.tensor([[0, 0, 1, 1], [0, 0, 1, 0]])
    >>> reciprocal_rank(y_pred, y, top_k=[1, 2, 3])
    tensor([[0.0000, 0.5000, 0.5000],
            [0.0000, 0.0000, 0.3333]], dtype=torch.float64)
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from .kernels import (
    RankedBatch,
    beyond,
    check_gain_function,
    check_threshold,
    check_ties,
    normalize_top_k,
    scoring,
)
from .kernels.forms import Normalized, Ranking, Retrieved, check_ignore_index, normalize

__all__ = [
    "METRICS",
    "ExposureValues",
    "QueryValues",
    "average_popularity",
    "average_precision",
    "expected_exposure",
    "hit_rate",
    "intra_list_diversity",
    "long_tail_share",
    "ndcg",
    "novelty",
    "per_query",
    "precision",
    "r_precision",
    "recall",
    "reciprocal_rank",
    "serendipity",
]

ExposureValues = beyond.ExposureValues


def _rank(
    output: object,
    depth: int,
    relevance_threshold: float,
    ties: str,
    ideal: bool = False,
    count: bool = False,
    cover_relevant: bool = False,
    ignore_index: int | None = None,
) -> Normalized:
    """Checks the arguments and ranks every query of ``output`` (none held back)."""
    ranking = Ranking(
        depth,
        relevance_threshold=check_threshold(relevance_threshold),
        ties=check_ties(ties),
        ideal=ideal,
        cover_relevant=cover_relevant,
        count=count,
        ignore_index=check_ignore_index(ignore_index),
    )
    return normalize(output, ranking)


def _per_query(
    score: Callable[[RankedBatch, list[int]], torch.Tensor],
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float,
    ties: str,
    ideal: bool = False,
    count: bool = False,
) -> torch.Tensor:
    cutoffs = normalize_top_k(top_k)
    ranked = _rank((y_pred, y), cutoffs[-1], relevance_threshold, ties, ideal, count).ranked
    return score(ranked, cutoffs)


def reciprocal_rank(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
) -> torch.Tensor:
    """RR@k: ``1 / rank`` of the first relevant item if that rank is ``<= k``, else 0.

    Returns:
        ``(batch, len(top_k))`` float64.
    """
    return _per_query(scoring.reciprocal_rank, y_pred, y, top_k, relevance_threshold, ties)


def hit_rate(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
) -> torch.Tensor:
    """Hit@k: 1 if any relevant item is in the top k, else 0; ``(batch, len(top_k))``."""
    return _per_query(scoring.hit_rate, y_pred, y, top_k, relevance_threshold, ties)


def precision(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
) -> torch.Tensor:
    """P@k: relevant items in the top k divided by k (not by ``min(k, num_items)``)."""
    return _per_query(scoring.precision, y_pred, y, top_k, relevance_threshold, ties)


def recall(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
) -> torch.Tensor:
    """R@k: relevant items in the top k divided by the query's number of relevant items."""
    return _per_query(scoring.recall, y_pred, y, top_k, relevance_threshold, ties, count=True)


def average_precision(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
    denominator: str = "relevant",
) -> torch.Tensor:
    """AP@k: sum of P@i over the ranks ``i <= k`` of relevant items, divided by R (trec_eval's
    map_cut); ``denominator`` as in :class:`~ignite_ranking.MAP`: ``"min_k_relevant"`` divides
    by ``min(k, R)``, ``"relevant_retrieved"`` by the relevant items in the top k."""
    scoring.check_denominator(denominator, check_ties(ties))

    def score(ranked: RankedBatch, cutoffs: list[int]) -> torch.Tensor:
        return scoring.average_precision(ranked, cutoffs, denominator)

    return _per_query(score, y_pred, y, top_k, relevance_threshold, ties, count=True)


def ndcg(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k: int | list[int],
    relevance_threshold: float = 1.0,
    gain_function: str = "exp_rank",
    *,
    ties: str = "first",
) -> torch.Tensor:
    """NDCG@k with gain ``2**label - 1`` (``"exp_rank"``) or ``label`` (``"linear_rank"``).

    Gains are computed in float64 from the labels of relevant items (others gain 0); IDCG@k is the
    DCG@k of the row's own labels in descending order.
    """
    check_gain_function(gain_function, check_threshold(relevance_threshold))

    def score(ranked: RankedBatch, cutoffs: list[int]) -> torch.Tensor:
        return scoring.ndcg(ranked, cutoffs, gain_function)

    return _per_query(score, y_pred, y, top_k, relevance_threshold, ties, ideal=True)


def r_precision(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
) -> torch.Tensor:
    """R-Precision: relevant items in the top R divided by R, R the query's relevant count; ``(batch,)``."""
    ranked = _rank((y_pred, y), 1, relevance_threshold, ties, count=True, cover_relevant=True).ranked
    return scoring.r_precision(ranked)[:, 0]


class QueryValues(NamedTuple):
    """Per-query values of :func:`per_query`: ``values``, ``(queries, len(top_k))`` float64
    (``(queries, 1)`` for ``"r_precision"``), and ``query_ids``, ``(queries,)`` int64, each row's
    query id for the flat form (in order of appearance) and its row index for the other forms."""

    values: torch.Tensor
    query_ids: torch.Tensor


# name -> (scorer, what the ranking must gather: ideal, count, cover_relevant)
_SCORERS = {
    "mrr": (scoring.reciprocal_rank, False, False, False),
    "hit_rate": (scoring.hit_rate, False, False, False),
    "precision": (scoring.precision, False, False, False),
    "recall": (scoring.recall, False, True, False),
    "map": (scoring.average_precision, False, True, False),
    "ndcg": (scoring.ndcg, True, False, False),
    "r_precision": (lambda ranked, cutoffs: scoring.r_precision(ranked), False, True, True),
}
METRICS = tuple(_SCORERS)


def per_query(
    output: Sequence[torch.Tensor] | Retrieved,
    metric: str,
    top_k: int | list[int] | None = None,
    relevance_threshold: float = 1.0,
    *,
    gain_function: str = "exp_rank",
    ties: str = "first",
    ignore_index: int | None = None,
    denominator: str = "relevant",
) -> QueryValues:
    """Per-query values of one metric for an output in any input form.

    Args:
        output: ``(y_pred, y)`` (``y`` dense or sparse), ``(preds, target, indexes)`` (flat:
            every query complete, rows of one query contiguous) or a
            :class:`~ignite_ranking.Retrieved`.
        metric: one of ``"mrr"``, ``"hit_rate"``, ``"precision"``, ``"recall"``, ``"map"``,
            ``"ndcg"``, ``"r_precision"``.
        top_k: the cutoffs; None (and only None) for ``"r_precision"``.
        relevance_threshold, gain_function, ties: as in the metric classes.
        ignore_index: flat rows (dense items) whose label equals it are left out.
        denominator: ``"map"``'s, as in :class:`~ignite_ranking.MAP`.

    Example:
        >>> import torch
        >>> from ignite_ranking.functional import per_query
        >>> preds = torch.tensor([0.9, 0.2, 0.5, 0.1, 0.8])
        >>> target = torch.tensor([0, 1, 0, 1, 0])
        >>> indexes = torch.tensor([7, 7, 7, 3, 3])
        >>> values, query_ids = per_query((preds, target, indexes), "mrr", top_k=[1, 3])
        >>> query_ids.tolist(), values.tolist()
        ([7, 3], [[0.0, 0.3333333333333333], [0.0, 0.5]])
    """
    if metric not in _SCORERS:
        raise ValueError(f"metric must be one of {', '.join(map(repr, METRICS))}, got {metric!r}.")
    score, ideal, count, cover = _SCORERS[metric]
    if metric == "r_precision":
        if top_k is not None:
            raise ValueError(f"r_precision takes no top_k, got {top_k!r}.")
        cutoffs = [1]
    else:
        cutoffs = normalize_top_k(top_k)
    if metric == "ndcg":
        check_gain_function(gain_function)
        score = lambda ranked, cutoffs: scoring.ndcg(ranked, cutoffs, gain_function)  # noqa: E731
    if denominator != "relevant" and metric != "map":
        raise ValueError(f"denominator is an option of 'map' only, got metric={metric!r}.")
    if metric == "map":
        scoring.check_denominator(denominator, check_ties(ties))
        score = lambda ranked, cutoffs: scoring.average_precision(ranked, cutoffs, denominator)  # noqa: E731
    normalized = _rank(output, cutoffs[-1], relevance_threshold, ties, ideal, count, cover, ignore_index)
    return QueryValues(score(normalized.ranked, cutoffs), normalized.query_ids)


# ------------------------------------------------------------------------------ beyond accuracy


def _ranked_lists(
    output: torch.Tensor | Sequence[torch.Tensor] | Retrieved,
    cutoffs: list[int],
    ties: str,
    ignore_index: int | None,
    *,
    relevance_threshold: float = 1.0,
    exposure: bool = False,
) -> RankedBatch:
    """The ranked lists of ``output`` (scores alone, ``(y_pred, y)`` or a Retrieved) with their
    item ids; with ``exposure``, what expected exposure reads (whole rows under ``"average"``)."""
    if isinstance(output, torch.Tensor):  # scores alone: no label is read
        output = (output, torch.zeros((), dtype=torch.bool, device=output.device).expand(output.shape))
    if isinstance(output, Sequence) and not isinstance(output, (str, bytes)) and len(output) == 3:
        raise ValueError(
            "the beyond-accuracy measures read item ids: pass y_pred, (y_pred, y) or a Retrieved, not "
            "flat (preds, target, indexes) rows."
        )
    ties = check_ties(ties)
    if ties == "average" and not exposure:
        raise ValueError("ties='average' is offered by expected_exposure only; got ties='average'.")
    average = exposure and ties == "average"
    ranking = Ranking(
        sys.maxsize // 2 if average else cutoffs[-1],
        relevance_threshold=check_threshold(relevance_threshold),
        ties=ties,
        ideal=exposure,
        count=exposure,
        ignore_index=check_ignore_index(ignore_index),
        keep_indices=True,
        labels=exposure,
        runs=exposure,
    )
    return normalize(output, ranking).ranked


def _list_measure(output, top_k, ties, ignore_index, statistic, name, score) -> torch.Tensor:
    cutoffs = normalize_top_k(top_k)
    ranked = _ranked_lists(output, cutoffs, ties, ignore_index)
    beyond.check_catalog(output, statistic.shape[0], name, name)
    return score(ranked, cutoffs, statistic.to(ranked.indices.device))


def novelty(
    output: torch.Tensor | Sequence[torch.Tensor] | Retrieved,
    top_k: int | list[int],
    item_popularity: torch.Tensor,
    *,
    ties: str = "first",
    ignore_index: int | None = None,
) -> torch.Tensor:
    """Novelty@k of each list: the mean of ``-log2(pop_i / sum_j pop_j)`` over its first
    ``min(k, n)`` items (:class:`~ignite_ranking.Novelty`); ``(batch, len(top_k))``, NaN for a
    list of no item.

    Example:
        >>> import torch
        >>> from ignite_ranking.functional import novelty
        >>> novelty(torch.tensor([[0.9, 0.1, 0.8, 0.0]]), [1, 2], torch.tensor([4.0, 2.0, 1.0, 1.0]))
        tensor([[1., 2.]], dtype=torch.float64)
    """
    values = beyond.novelty_of_items(
        beyond.check_popularity("item_popularity", item_popularity, positive=True)
    )

    def score(ranked, cutoffs, stat):
        lengths = beyond.list_lengths(ranked.indices)
        return beyond.list_means(beyond.values_at(stat, ranked.indices), lengths, cutoffs)

    return _list_measure(output, top_k, ties, ignore_index, values, "item_popularity", score)


def average_popularity(
    output: torch.Tensor | Sequence[torch.Tensor] | Retrieved,
    top_k: int | list[int],
    item_popularity: torch.Tensor,
    *,
    ties: str = "first",
    ignore_index: int | None = None,
) -> torch.Tensor:
    """ARP@k of each list: the mean popularity of its first ``min(k, n)`` items
    (:class:`~ignite_ranking.AveragePopularity`); ``(batch, len(top_k))``, NaN for no item."""
    values = beyond.check_popularity("item_popularity", item_popularity)

    def score(ranked, cutoffs, stat):
        lengths = beyond.list_lengths(ranked.indices)
        return beyond.list_means(beyond.values_at(stat, ranked.indices), lengths, cutoffs)

    return _list_measure(output, top_k, ties, ignore_index, values, "item_popularity", score)


def long_tail_share(
    output: torch.Tensor | Sequence[torch.Tensor] | Retrieved,
    top_k: int | list[int],
    tail_items: torch.Tensor,
    *,
    ties: str = "first",
    ignore_index: int | None = None,
) -> torch.Tensor:
    """APLT@k of each list: the share of its first ``min(k, n)`` items in the tail
    (:class:`~ignite_ranking.LongTailShare`); ``(batch, len(top_k))``, NaN for no item."""
    values = beyond.check_tail_items(tail_items).to(torch.float64)

    def score(ranked, cutoffs, stat):
        lengths = beyond.list_lengths(ranked.indices)
        return beyond.list_means(beyond.values_at(stat, ranked.indices), lengths, cutoffs)

    return _list_measure(output, top_k, ties, ignore_index, values, "tail_items", score)


def intra_list_diversity(
    output: torch.Tensor | Sequence[torch.Tensor] | Retrieved,
    top_k: int | list[int],
    item_embeddings: torch.Tensor,
    *,
    ties: str = "first",
    ignore_index: int | None = None,
) -> torch.Tensor:
    """ILD@k of each list: the mean cosine distance over the pairs of its first ``min(k, n)``
    items (:class:`~ignite_ranking.IntraListDiversity`); ``(batch, len(top_k))``, NaN for fewer
    than two items."""
    unit = beyond.check_embeddings(item_embeddings)

    def score(ranked, cutoffs, stat):
        return beyond.intra_list_diversity(ranked.indices, cutoffs, stat)

    return _list_measure(output, top_k, ties, ignore_index, unit, "item_embeddings", score)


def serendipity(
    output: Sequence[torch.Tensor] | Retrieved,
    top_k: int | list[int],
    item_popularity: torch.Tensor,
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
    ignore_index: int | None = None,
) -> torch.Tensor:
    """Serendipity@k of each list (Ge et al., RecSys 2010): the share of its first ``min(k, n)``
    items that are relevant and not among the k most popular (:class:`~ignite_ranking.Serendipity`);
    ``(batch, len(top_k))``, 0 for a list of no item."""
    ranks = beyond.popularity_ranks(beyond.check_popularity("item_popularity", item_popularity))
    cutoffs = normalize_top_k(top_k)
    ranked = _ranked_lists(output, cutoffs, ties, ignore_index, relevance_threshold=relevance_threshold)
    beyond.check_catalog(output, ranks.shape[0], "item_popularity", "serendipity")
    return beyond.serendipity(ranked.relevant, ranked.indices, cutoffs, ranks.to(ranked.indices.device))


def expected_exposure(
    output: Sequence[torch.Tensor] | Retrieved,
    top_k: int | list[int],
    patience: float = 0.5,
    groups: torch.Tensor | None = None,
    relevance_threshold: float = 1.0,
    *,
    ties: str = "first",
    ignore_index: int | None = None,
    num_items: int | None = None,
) -> beyond.ExposureValues:
    """Expected exposure of each query (:class:`~ignite_ranking.ExpectedExposure`): EE-L, EE-D
    and EE-R, each ``(batch, len(top_k))``, and with ``groups`` each group's exposure,
    ``(batch, len(top_k), num_groups)``.

    Example:
        >>> import torch
        >>> from ignite_ranking.functional import expected_exposure
        >>> values = expected_exposure((torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[0, 1, 1]])), [1, 3])
        >>> values.loss.tolist(), values.disparity.tolist(), values.relevance.tolist()
        ([[1.5, 0.875]], [[1.0, 1.3125]], [[0.0, 1.625]])
    """
    gamma = beyond.check_patience(patience)
    group_ids = None if groups is None else beyond.check_groups(groups)
    if not check_threshold(relevance_threshold) > 0:
        raise ValueError(f"expected exposure needs relevance_threshold > 0, got {relevance_threshold}.")
    cutoffs = normalize_top_k(top_k)
    ranked = _ranked_lists(
        output, cutoffs, ties, ignore_index, relevance_threshold=relevance_threshold, exposure=True
    )
    given = num_items if num_items is not None else (None if group_ids is None else group_ids.shape[0])
    catalog = beyond.exposure_catalog(ranked, given)
    if group_ids is None:
        return beyond.expected_exposure(ranked, cutoffs, gamma, catalog)
    beyond.check_catalog(output, group_ids.shape[0], "groups", "expected_exposure")
    group_ids = group_ids.to(ranked.indices.device)
    return beyond.expected_exposure(ranked, cutoffs, gamma, catalog, group_ids, int(group_ids.max()) + 1)
