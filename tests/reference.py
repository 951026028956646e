"""A brute-force reference for every ranking metric, and random batches to feed it.

The reference is written to be obviously correct rather than fast: each query is ranked with
``torch.argsort(stable=True)`` on its own and every value is computed with plain Python floats
(float64) in loops, straight from the definitions in DESIGN.md.
"""

from __future__ import annotations

import decimal
import functools
import itertools
import math
from collections.abc import Iterable, Sequence

import numpy as np
import pytest
import torch

# Where tests that take a ``device`` run: CPU always, CUDA when this machine has it.
DEVICES = (
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")),
)

METRIC_NAMES = ("mrr", "hit_rate", "precision", "recall", "map", "ndcg", "r_precision")
LABEL_DTYPES = (torch.bool, torch.int64, torch.int32, torch.uint8, torch.float16, torch.float32)
SCORE_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


# --------------------------------------------------------------------------- ranking


def rank_order(scores: Sequence[float], ties: str = "first") -> list[int]:
    """Item indices best first: descending score, equal scores by index (ascending for "first")."""
    row = torch.as_tensor(scores, dtype=torch.float64)
    if ties == "first":
        return torch.argsort(row, descending=True, stable=True).tolist()
    if ties == "last":
        n = row.shape[0]
        return [n - 1 - i for i in torch.argsort(row.flip(0), descending=True, stable=True).tolist()]
    raise ValueError(ties)


def _row_lists(y_pred: torch.Tensor, y: torch.Tensor) -> list[tuple[list[float], list[float]]]:
    """Per row: scores and labels as Python floats (the float64 value of each element)."""
    scores = y_pred.to(torch.float64).tolist()
    labels = y.to(torch.float64).tolist()
    return list(zip(scores, labels, strict=True))


# --------------------------------------------------------------------------- one query


_EXACT = decimal.Context(prec=40, Emax=10**9, Emin=-(10**9))


def _gain(label: float, relevant: bool, gain_function: str) -> decimal.Decimal:
    """The gain as an exact-enough Decimal: 2**1024 and beyond do not overflow there."""
    if not relevant:
        return decimal.Decimal(0)
    value = decimal.Decimal(label)  # the float's exact value
    if gain_function == "exp_rank":
        return _EXACT.subtract(_EXACT.power(2, value), 1)
    if gain_function == "linear_rank":
        return value
    raise ValueError(gain_function)


@functools.cache
def _discount(rank: int) -> decimal.Decimal:
    """1 / log2(rank + 1)."""
    return _EXACT.divide(_EXACT.ln(2), _EXACT.ln(rank + 1))


def _ndcg(
    ranked: Sequence[float],
    rel: Sequence[bool],
    k: int,
    gain_function: str,
    judged: Sequence[float],
    judged_rel: Sequence[bool],
) -> float:
    """DCG@k / IDCG@k, the ideal order being the judged items' gains in descending order.

    Gains are Decimals (no overflow). Infinite labels are their limit: when relevant labels of
    +inf are present, they gain 1 each and every other item 0 (the other gains vanish next to
    theirs).
    """
    infinite = any(r and label == math.inf for label, r in zip(judged, judged_rel, strict=True))

    def gain(label: float, r: bool) -> decimal.Decimal:
        return decimal.Decimal(int(r and label == math.inf)) if infinite else _gain(label, r, gain_function)

    gains = [gain(label, r) for label, r in zip(ranked, rel, strict=True)]
    ideal = sorted((gain(label, r) for label, r in zip(judged, judged_rel, strict=True)), reverse=True)
    dcg = idcg = decimal.Decimal(0)
    for i in range(min(k, len(gains))):
        dcg = _EXACT.fma(gains[i], _discount(i + 1), dcg)
    for i in range(min(k, len(ideal))):
        idcg = _EXACT.fma(ideal[i], _discount(i + 1), idcg)
    return float(_EXACT.divide(dcg, idcg)) if idcg > 0 else 0.0


def query_values(
    scores: Sequence[float],
    labels: Sequence[float],
    metric: str,
    top_k: Iterable[int] | None,
    relevance_threshold: float = 1.0,
    ties: str = "first",
    gain_function: str = "exp_rank",
) -> list[float]:
    """The values of one query, one per cutoff in ascending order (one value for r_precision)."""
    ranked = [labels[i] for i in rank_order(scores, ties)]
    return ranked_values(ranked, metric, top_k, relevance_threshold, gain_function)


def ranked_values(
    ranked: Sequence[float],
    metric: str,
    top_k: Iterable[int] | None,
    relevance_threshold: float = 1.0,
    gain_function: str = "exp_rank",
    judged: Sequence[float] | None = None,
) -> list[float]:
    """The values of one query given its listed labels in ranked order.

    ``judged`` holds the labels of all the query's judged items (R and the ideal order come from
    them); by default the ranked labels are all of them, as in a dense row.
    """
    labels = ranked if judged is None else judged
    rel = [label >= relevance_threshold for label in ranked]
    num_rel = sum(label >= relevance_threshold for label in labels)
    n = len(ranked)

    if metric == "r_precision":
        if num_rel == 0:
            return [0.0]
        return [sum(rel[:num_rel]) / num_rel]

    out = []
    for k in sorted(set(top_k)):
        if metric == "mrr":
            value = 0.0
            for i in range(min(k, n)):
                if rel[i]:
                    value = 1.0 / (i + 1)
                    break
        elif metric == "hit_rate":
            value = 1.0 if any(rel[:k]) else 0.0
        elif metric == "precision":
            value = sum(rel[:k]) / k
        elif metric == "recall":
            value = sum(rel[:k]) / num_rel if num_rel else 0.0
        elif metric == "map":
            total, hits = 0.0, 0
            for i in range(min(k, n)):
                if rel[i]:
                    hits += 1
                    total += hits / (i + 1)
            value = total / num_rel if num_rel else 0.0
        elif metric == "ndcg":
            judged_rel = [label >= relevance_threshold for label in labels]
            value = _ndcg(ranked, rel, k, gain_function, labels, judged_rel)
        else:
            raise ValueError(metric)
        out.append(value)
    return out


def num_relevant(labels: Sequence[float], relevance_threshold: float = 1.0) -> int:
    return sum(label >= relevance_threshold for label in labels)


def list_orders(scores: Sequence[float] | None, index: Sequence[int], labels: Sequence[float], ties: str):
    """Every order of a query's listed items (positions into the lists) that ``ties`` asks for:
    one order, or for ``"average"`` every order of every tied block (a generator).

    ``scores`` None means the lists are in rank order. Otherwise items are sorted by descending
    score, equal scores by ``index`` ascending (``"first"``, ``"average"``) or descending
    (``"last"``), or by label descending / ascending and then index (the bounds).
    """
    n = len(index)
    if scores is None:
        yield list(range(n))
        return
    if ties == "first" or ties == "average":
        key = lambda i: (-scores[i], index[i])  # noqa: E731
    elif ties == "last":
        key = lambda i: (-scores[i], -index[i])  # noqa: E731
    elif ties == "optimistic":
        key = lambda i: (-scores[i], -labels[i], index[i])  # noqa: E731
    elif ties == "pessimistic":
        key = lambda i: (-scores[i], labels[i], index[i])  # noqa: E731
    else:
        raise ValueError(ties)
    order = sorted(range(n), key=key)
    if ties != "average":
        yield order
        return
    blocks = [[i for i in order if scores[i] == v] for v in sorted(set(scores), reverse=True)]
    for combo in itertools.product(*(itertools.permutations(b) for b in blocks)):
        yield [i for block in combo for i in block]


def list_values(
    scores: Sequence[float] | None,
    index: Sequence[int],
    labels: Sequence[float],
    judged: Sequence[float],
    metric: str,
    top_k: Iterable[int] | None,
    relevance_threshold: float = 1.0,
    ties: str = "first",
    gain_function: str = "exp_rank",
) -> list[float]:
    """Values of one query given as a list of items (score, tie index, label) and the labels of
    all its judged items; for ``"average"`` the mean over every order of every tied block."""
    total = None
    count = 0
    for order in list_orders(scores, index, labels, ties):
        values = ranked_values(
            [labels[i] for i in order], metric, top_k, relevance_threshold, gain_function, judged
        )
        total = values if total is None else [a + b for a, b in zip(total, values, strict=True)]
        count += 1
    return [v / count for v in total]


# --------------------------------------------------------------------------- batches


def per_query(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    metric: str,
    top_k: Iterable[int] | None = None,
    relevance_threshold: float = 1.0,
    ties: str = "first",
    gain_function: str = "exp_rank",
) -> list[list[float]]:
    """``(batch, len(top_k))`` values as nested lists (``(batch, 1)`` for r_precision)."""
    return [
        query_values(s, lab, metric, top_k, relevance_threshold, ties, gain_function)
        for s, lab in _row_lists(y_pred, y)
    ]


def mean_values(
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    metric: str,
    top_k: Iterable[int] | None = None,
    relevance_threshold: float = 1.0,
    ignore_zero_hits: bool = True,
    ties: str = "first",
    gain_function: str = "exp_rank",
) -> list[float] | None:
    """The mean over the counted queries of all batches; None when no query is counted."""
    counted: list[list[float]] = []
    for y_pred, y in batches:
        for s, lab in _row_lists(y_pred, y):
            if ignore_zero_hits and num_relevant(lab, relevance_threshold) == 0:
                continue
            counted.append(query_values(s, lab, metric, top_k, relevance_threshold, ties, gain_function))
    if not counted:
        return None
    return [math.fsum(column) / len(counted) for column in zip(*counted, strict=True)]


# --------------------------------------------------------------------------- random data


def random_k_list(rng: np.random.Generator, num_items: int) -> list[int]:
    """A few cutoffs, unsorted, possibly with duplicates, and often one beyond ``num_items``."""
    size = int(rng.integers(1, 5))
    ks = [int(k) for k in rng.integers(1, max(num_items, 1) + 4, size=size)]
    if rng.random() < 0.5:
        ks.append(num_items + int(rng.integers(1, 10)))
    return ks


def tied_batch(
    rng: np.random.Generator,
    batch: int,
    num_items: int,
    *,
    levels: int | None = None,
    max_label: int = 4,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 scores with many ties (few distinct values, ±inf, -0.0) and graded labels 0..max_label.

    About a quarter of the rows have no label >= 1, and labels are sparse so that most rows also
    have non-relevant items.
    """
    levels = levels if levels is not None else int(rng.integers(1, 6))
    scores = rng.integers(0, levels, size=(batch, num_items)).astype(np.float64) / 2.0 - 1.0
    special = rng.random(size=(batch, num_items))
    scores[special < 0.05] = np.inf
    scores[(special >= 0.05) & (special < 0.10)] = -np.inf
    scores[(special >= 0.10) & (special < 0.15)] = -0.0
    labels = rng.integers(1, max_label + 1, size=(batch, num_items)).astype(np.float64)
    labels[rng.random(size=(batch, num_items)) < 0.6] = 0.0
    labels[rng.random(size=batch) < 0.25] = 0.0
    return torch.from_numpy(scores), torch.from_numpy(labels)


def tie_free_batch(
    rng: np.random.Generator, batch: int, num_items: int, *, max_label: int = 4, p_zero: float = 0.6
) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 scores that are distinct within every row, and graded labels 0..max_label."""
    scores = np.stack([rng.permutation(num_items) for _ in range(batch)]).astype(np.float64)
    scores = scores + rng.random(size=(batch, 1))  # distinct rows, still distinct within a row
    labels = rng.integers(1, max_label + 1, size=(batch, num_items)).astype(np.float64)
    labels[rng.random(size=(batch, num_items)) < p_zero] = 0.0
    return torch.from_numpy(scores).reshape(batch, num_items), torch.from_numpy(labels)


def cast_labels(y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Labels in ``dtype``; bool keeps ``y >= 1`` (binary relevance)."""
    if dtype == torch.bool:
        return y >= 1
    return y.to(dtype)


# --------------------------------------------------------------------------- the library side


def build_metric(name: str, top_k=None, gain_function: str = "exp_rank", **kwargs):
    """The library's metric class for ``name`` (``top_k`` ignored for r_precision)."""
    import ignite_ranking as ir

    classes = {
        "mrr": ir.MRR,
        "hit_rate": ir.HitRate,
        "precision": ir.Precision,
        "recall": ir.Recall,
        "map": ir.MAP,
        "ndcg": ir.NDCG,
    }
    if name == "r_precision":
        return ir.RPrecision(**kwargs)
    if name == "ndcg":
        return ir.NDCG(top_k, gain_function=gain_function, **kwargs)
    return classes[name](top_k, **kwargs)


def functional_values(
    name: str,
    y_pred: torch.Tensor,
    y: torch.Tensor,
    top_k=None,
    relevance_threshold: float = 1.0,
    ties: str = "first",
    gain_function: str = "exp_rank",
) -> torch.Tensor:
    """The library's functional for ``name``, as ``(batch, len(top_k))`` (``(batch, 1)`` for r_precision)."""
    from ignite_ranking import functional as F

    if name == "r_precision":
        return F.r_precision(y_pred, y, relevance_threshold, ties=ties)[:, None]
    if name == "ndcg":
        return F.ndcg(y_pred, y, top_k, relevance_threshold, gain_function, ties=ties)
    fn = {
        "mrr": F.reciprocal_rank,
        "hit_rate": F.hit_rate,
        "precision": F.precision,
        "recall": F.recall,
        "map": F.average_precision,
    }[name]
    return fn(y_pred, y, top_k, relevance_threshold, ties=ties)


# Metrics whose per-query values are exact ratios of small integers: equal bit for bit.
EXACT_PER_QUERY = frozenset({"mrr", "hit_rate", "precision", "recall", "r_precision"})
