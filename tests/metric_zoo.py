"""Every exported metric, built from a small table, and the input forms it takes.

``ZOO`` maps the name of each :class:`~ignite_ranking.RankingMetric` subclass in
``ignite_ranking.__all__`` (and of the group, :class:`~ignite_ranking.RankingMetrics`) to its
variants: how to build it for some cutoffs, the forms it accepts and the item statistic it reads.
``tests/test_every_metric.py`` checks that the table names exactly the exported metrics, so that a
new metric without an entry fails the suite; add one here for it.

The forms describe one ranking: a dense batch with ties (``reference.tied_batch``), its labels as
a sparse COO tensor with every label stored (so every item is judged, as in the dense form), the
flat ``(preds, target, indexes)`` rows of every item, and a :class:`~ignite_ranking.Retrieved` of
every item in the dense order with sparse labels. ``short_forms`` adds forms whose lists are
shorter than most cutoffs: flat queries of a few rows and ``-1``-padded Retrieved lists.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from reference import tied_batch

import ignite_ranking as ir

NUM_ITEMS = 9
BATCH = 6
NUM_SUBTOPICS = 3
# Below, at and past the rows' 9 items, and past every short list (at most 4 items).
KS = [1, 2, 3, 5, 9, 13, 30]

DENSE, SPARSE, FLAT, RETRIEVED = "dense", "sparse", "flat", "retrieved"
SUBTOPIC_DENSE, SUBTOPIC_SPARSE = "subtopic_dense", "subtopic_sparse"
ITEM_FORMS = (DENSE, SPARSE, RETRIEVED)  # the forms that name catalog items
ALL_FORMS = (DENSE, SPARSE, FLAT, RETRIEVED)
SUBTOPIC_FORMS = (SUBTOPIC_DENSE, SUBTOPIC_SPARSE)


@dataclass(frozen=True)
class Statistics:
    """Item statistics for ``NUM_ITEMS`` items (popularity with ties, descending in the id)."""

    popularity: torch.Tensor
    tail: torch.Tensor
    embeddings: torch.Tensor
    groups: torch.Tensor


def statistics(num_items: int = NUM_ITEMS, seed: int = 0) -> Statistics:
    rng = np.random.default_rng(seed)
    popularity = torch.from_numpy(np.sort(rng.integers(1, 5, size=num_items))[::-1].astype(np.float64))
    return Statistics(
        popularity=popularity,
        tail=popularity <= 2,
        embeddings=torch.from_numpy(rng.normal(size=(num_items, 3))),
        groups=torch.from_numpy(rng.integers(0, 3, size=num_items)),
    )


@dataclass(frozen=True)
class Variant:
    """One way to build a metric: ``build(top_k, stats)`` (``top_k`` None for a metric without
    cutoffs), the forms it takes, and the argument that holds its item statistics (or None)."""

    build: Callable[[list[int] | None, Statistics], object]
    forms: tuple[str, ...]
    statistic: str | None = None
    min_k: int = 1

    @property
    def cutoffs(self) -> bool:
        return self.min_k > 0

    def make(self, top_k: list[int] | None, stats: Statistics | None = None):
        stats = statistics() if stats is None else stats
        ks = [k for k in top_k if k >= self.min_k] if top_k is not None else None
        return self.build(ks, stats)


def _single(build, forms, statistic=None) -> Variant:
    return Variant(lambda _ks, s: build(s), forms, statistic, min_k=0)


ZOO: dict[str, list[Variant]] = {
    "MRR": [
        Variant(lambda ks, s: ir.MRR(ks), ALL_FORMS),
        Variant(lambda ks, s: ir.MRR(ks, per_query=True, confidence=0.9), ALL_FORMS),
    ],
    "HitRate": [Variant(lambda ks, s: ir.HitRate(ks), ALL_FORMS)],
    "Precision": [
        Variant(lambda ks, s: ir.Precision(ks), ALL_FORMS),
        Variant(lambda ks, s: ir.Precision(ks, adaptive_k=True), ALL_FORMS),
    ],
    "Recall": [Variant(lambda ks, s: ir.Recall(ks), ALL_FORMS)],
    "MAP": [
        Variant(lambda ks, s: ir.MAP(ks), ALL_FORMS),
        Variant(lambda ks, s: ir.MAP(ks, denominator="min_k_relevant", ignore_zero_hits=False), ALL_FORMS),
        Variant(lambda ks, s: ir.MAP(ks, denominator="relevant_retrieved"), ALL_FORMS),
    ],
    "NDCG": [
        Variant(lambda ks, s: ir.NDCG(ks), ALL_FORMS),
        Variant(lambda ks, s: ir.NDCG(ks, gain_function="linear_rank", ignore_zero_hits=False), ALL_FORMS),
    ],
    "Judged": [Variant(lambda ks, s: ir.Judged(ks, ignore_zero_hits=False), ALL_FORMS)],
    "RBP": [Variant(lambda ks, s: ir.RBP(ks, p=0.7), ALL_FORMS)],
    "RBPResidual": [Variant(lambda ks, s: ir.RBPResidual(ks, p=0.7, ignore_zero_hits=False), ALL_FORMS)],
    "ERR": [Variant(lambda ks, s: ir.ERR(ks, max_grade=3), ALL_FORMS)],
    "NERR": [Variant(lambda ks, s: ir.NERR(ks, max_grade=3), ALL_FORMS)],
    "RPrecision": [_single(lambda s: ir.RPrecision(), ALL_FORMS)],
    "Bpref": [_single(lambda s: ir.Bpref(), ALL_FORMS)],
    "AUC": [_single(lambda s: ir.AUC(), (DENSE, FLAT))],
    "GAUC": [_single(lambda s: ir.GAUC(), (DENSE, FLAT))],
    "Novelty": [Variant(lambda ks, s: ir.Novelty(ks, s.popularity), ITEM_FORMS, "item_popularity")],
    "AveragePopularity": [
        Variant(lambda ks, s: ir.AveragePopularity(ks, s.popularity), ITEM_FORMS, "item_popularity")
    ],
    "LongTailShare": [Variant(lambda ks, s: ir.LongTailShare(ks, s.tail), ITEM_FORMS, "tail_items")],
    "IntraListDiversity": [
        Variant(lambda ks, s: ir.IntraListDiversity(ks, s.embeddings), ITEM_FORMS, "item_embeddings", min_k=2)
    ],
    "Serendipity": [
        Variant(lambda ks, s: ir.Serendipity(ks, s.popularity), ITEM_FORMS, "item_popularity"),
        Variant(
            lambda ks, s: ir.Serendipity(ks, s.popularity, ignore_zero_hits=False),
            ITEM_FORMS,
            "item_popularity",
        ),
    ],
    "ExpectedExposure": [
        Variant(
            lambda ks, s: ir.ExpectedExposure(ks, patience=0.7, num_items=s.popularity.shape[0]),
            ALL_FORMS,
            "num_items",
        ),
        Variant(
            lambda ks, s: ir.ExpectedExposure(ks, s.groups, ignore_zero_hits=False), ITEM_FORMS, "groups"
        ),
    ],
    "Coverage": [Variant(lambda ks, s: ir.Coverage(ks, s.popularity.shape[0]), ITEM_FORMS, "num_items")],
    "GiniIndex": [Variant(lambda ks, s: ir.GiniIndex(ks, s.popularity.shape[0]), ITEM_FORMS, "num_items")],
    "ShannonEntropy": [
        Variant(lambda ks, s: ir.ShannonEntropy(ks, s.popularity.shape[0]), ITEM_FORMS, "num_items")
    ],
    "AlphaNDCG": [Variant(lambda ks, s: ir.AlphaNDCG(ks, alpha=0.5), SUBTOPIC_FORMS)],
    "ERRIA": [Variant(lambda ks, s: ir.ERRIA(ks, alpha=0.5, ignore_zero_hits=False), SUBTOPIC_FORMS)],
    "PrecisionIA": [Variant(lambda ks, s: ir.PrecisionIA(ks), SUBTOPIC_FORMS)],
    "SubtopicRecall": [Variant(lambda ks, s: ir.SubtopicRecall(ks), SUBTOPIC_FORMS)],
    "NRBP": [_single(lambda s: ir.NRBP(alpha=0.5, beta=0.5), SUBTOPIC_FORMS)],
    "RankingMetrics": [
        Variant(
            lambda ks, s: ir.RankingMetrics(
                mrr=ir.MRR(ks), p=ir.Precision(ks), serendipity=ir.Serendipity(ks, s.popularity)
            ),
            ITEM_FORMS,
            "item_popularity",
        ),
        Variant(
            lambda ks, s: ir.RankingMetrics(ndcg=ir.NDCG(ks), rbp=ir.RBP(ks), judged=ir.Judged(ks)), ALL_FORMS
        ),
    ],
}


def exported_metrics() -> set[str]:
    """The names in ``ignite_ranking.__all__`` of concrete RankingMetric subclasses and the group."""
    found = set()
    for name in ir.__all__:
        value = getattr(ir, name)
        if not inspect.isclass(value):
            continue
        if value is ir.RankingMetrics or (
            issubclass(value, ir.RankingMetric) and value is not ir.RankingMetric
        ):
            found.add(name)
    return found


def variants() -> list[tuple[str, Variant]]:
    """``(id, variant)`` for every variant of the table, ids such as ``"NDCG-1"``."""
    return [(f"{name}-{i}", v) for name, vs in sorted(ZOO.items()) for i, v in enumerate(vs)]


# --------------------------------------------------------------------------- the forms


def dense_batch(seed: int, num_items: int = NUM_ITEMS) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores with ties and graded labels; row 0 without a relevant item."""
    y_pred, y = tied_batch(np.random.default_rng(seed), BATCH, num_items, levels=3, max_label=3)
    y[0] = 0.0
    y[1, 0] = 2.0  # at least one relevant item somewhere
    return y_pred, y


def stored_sparse(y: torch.Tensor) -> torch.Tensor:
    """``y`` as a sparse COO tensor that stores every label, zeros too: every item judged."""
    index = torch.ones_like(y, dtype=torch.bool).nonzero().T
    return torch.sparse_coo_tensor(index, y[tuple(index)], y.shape, check_invariants=True).coalesce()


def dense_order(y_pred: torch.Tensor) -> torch.Tensor:
    """The contract's order of each row: descending score, ties by the lower index."""
    return torch.argsort(y_pred, dim=1, descending=True, stable=True)


def same_ranking_forms(seed: int) -> dict[str, object]:
    """One ranking in each form of the catalog-wide metrics (every item listed and judged)."""
    y_pred, y = dense_batch(seed)
    order = dense_order(y_pred)
    indexes = torch.arange(BATCH)[:, None].expand(BATCH, NUM_ITEMS)
    return {
        DENSE: (y_pred, y),
        SPARSE: (y_pred, stored_sparse(y)),
        FLAT: (y_pred.reshape(-1), y.reshape(-1), indexes.reshape(-1)),
        RETRIEVED: ir.Retrieved(order, stored_sparse(y)),
    }


def short_forms(seed: int) -> dict[str, list[object]]:
    """Batches of each form, with lists shorter than most cutoffs where the form allows."""
    forms = {name: [batch] for name, batch in same_ranking_forms(seed).items()}
    y_pred, y = dense_batch(seed + 1000)
    rng = np.random.default_rng(seed)
    lengths = torch.from_numpy(rng.integers(0, 5, size=BATCH))
    lengths[1] = max(int(lengths[1]), 1)
    order = dense_order(y_pred)
    short = torch.where(torch.arange(NUM_ITEMS)[None, :] < lengths[:, None], order, -1)[:, :4]
    # Each row's relevant items and item 8 (judged non-relevant where its label is 0), padded.
    lists = [sorted({*torch.nonzero(row > 0).flatten().tolist(), NUM_ITEMS - 1}) for row in y]
    judged = torch.tensor([ids + [-1] * (NUM_ITEMS - len(ids)) for ids in lists])
    grades = torch.where(judged >= 0, y.gather(1, judged.clamp(min=0)), 0.0)
    # The last items (the least popular of ``statistics()``) listed and relevant: past these
    # lists Serendipity's PM_k still grows.
    last = torch.tensor([[8, 7, 6], [5, 8, -1], [-1, -1, -1], [3, 6, 7], [7, -1, -1], [4, 5, 6]])
    forms[RETRIEVED] += [
        ir.Retrieved(short, judged, grades=grades),
        ir.Retrieved(short, stored_sparse(y)),
        ir.Retrieved(last, last),
    ]
    keep = torch.arange(NUM_ITEMS)[None, :] < (lengths + 1)[:, None]
    indexes = torch.arange(BATCH)[:, None].expand(BATCH, NUM_ITEMS)
    forms[FLAT].append((y_pred[keep], y[keep], indexes[keep]))
    return forms


def subtopic_forms(seed: int) -> dict[str, list[object]]:
    """Subtopic judgements ``(batch, items, subtopics)``, dense and sparse, with ties in scores."""
    rng = np.random.default_rng(seed)
    y_pred = torch.from_numpy(rng.integers(0, 3, size=(BATCH, NUM_ITEMS)).astype(np.float64))
    y = torch.from_numpy((rng.random((BATCH, NUM_ITEMS, NUM_SUBTOPICS)) < 0.3).astype(np.int64))
    y[0] = 0
    y[1, 0, 0] = 1
    return {SUBTOPIC_DENSE: [(y_pred, y)], SUBTOPIC_SPARSE: [(y_pred, y.to_sparse())]}


def batches_of(form: str, seed: int) -> list[object]:
    if form in SUBTOPIC_FORMS:
        return subtopic_forms(seed)[form]
    return short_forms(seed)[form]


# --------------------------------------------------------------------------- results and states


def values(metric) -> dict[str, float]:
    """``compute()`` keyed by value name (``"mrr@3"``, ``"ee_l@2"``, ``"r_precision"``)."""
    result = metric.compute()
    if isinstance(result, dict):
        return dict(result)
    names = metric.value_names
    return dict(zip(names, result if isinstance(result, list) else [result], strict=True))


def outcome(metric) -> object:
    """What ``compute()`` gives a copy of ``metric`` (the value, or the exception's type)."""
    try:
        return values(copy.deepcopy(metric))
    except Exception as error:  # the type is the outcome
        return type(error)


def same_state(a, b) -> bool:
    """Whether two saved states are equal: tensors bitwise (dtype and shape too), the rest by ==."""
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor) or a.dtype != b.dtype or a.shape != b.shape:
            return False
        bits = [t.detach().cpu().reshape(-1).contiguous().view(torch.uint8) for t in (a, b)]
        return bool(torch.equal(*bits))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same_state(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(same_state(x, y) for x, y in zip(a, b, strict=True))
        )
    return a == b


def leaf_states(state) -> list[dict]:
    """The per-metric dicts (holding ``_sum_per_k``) of a saved state, a group's members too."""
    if isinstance(state, dict):
        if "_sum_per_k" in state:
            return [state]
        return [leaf for value in state.values() for leaf in leaf_states(value)]
    if isinstance(state, list):
        return [leaf for value in state for leaf in leaf_states(value)]
    return []
