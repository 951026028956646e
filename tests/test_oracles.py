"""The library against independent implementations: ranx, pytrec_eval (trec_eval) and ignite.

ranx and trec_eval order documents with equal scores in their own way, so every batch here is
tie-free; they also only know queries with judged documents, so queries without a relevant item
are checked separately (both tools score them 0, and so must we).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from reference import tie_free_batch

import ignite_ranking as ir
from ignite_ranking import functional as F

NUM_QUERIES = 300
NUM_ITEMS = 30
KS = [1, 3, 5, 10, 20, 30, 45]  # 45 > NUM_ITEMS: a cutoff beyond the catalog


def _qid(i: int) -> str:
    return f"q{i:04d}"


def _did(j: int) -> str:
    return f"d{j:03d}"


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(2024)
    y_pred, y = tie_free_batch(rng, NUM_QUERIES, NUM_ITEMS, p_zero=0.75)
    y[rng.random(NUM_QUERIES) < 0.1] = 0.0  # some queries without a relevant item
    has_rel = (y >= 1).any(dim=1)
    assert 0 < int(has_rel.sum()) < NUM_QUERIES
    return y_pred, y, has_rel


def _ours(y_pred, y):
    """Per-query values of the library, keyed like the oracles' metric names."""
    return {
        "mrr": F.reciprocal_rank(y_pred, y, KS),
        "hit_rate": F.hit_rate(y_pred, y, KS),
        "precision": F.precision(y_pred, y, KS),
        "recall": F.recall(y_pred, y, KS),
        "map": F.average_precision(y_pred, y, KS),
        "ndcg": F.ndcg(y_pred, y, KS, gain_function="linear_rank"),
        "ndcg_burges": F.ndcg(y_pred, y, KS, gain_function="exp_rank"),
        "r-precision": F.r_precision(y_pred, y)[:, None],
    }


# --------------------------------------------------------------------------- ranx


@pytest.fixture(scope="module")
def ranx_scores(data):
    from ranx import Qrels, Run, evaluate

    y_pred, y, has_rel = data
    rows = [i for i in range(NUM_QUERIES) if has_rel[i]]
    qrels = Qrels({_qid(i): {_did(j): int(y[i, j]) for j in range(NUM_ITEMS) if y[i, j] >= 1} for i in rows})
    run = Run({_qid(i): {_did(j): float(y_pred[i, j]) for j in range(NUM_ITEMS)} for i in rows})
    names = [
        f"{m}@{k}"
        for m in ("mrr", "hit_rate", "precision", "recall", "map", "ndcg", "ndcg_burges")
        for k in KS
    ]
    names.append("r-precision")
    evaluate(qrels, run, names, threads=1)  # one call: ranx JIT-compiles on first use
    return rows, {name: [float(run.scores[name][_qid(i)]) for i in rows] for name in names}


@pytest.mark.parametrize(
    "metric", ["mrr", "hit_rate", "precision", "recall", "map", "ndcg", "ndcg_burges", "r-precision"]
)
def test_functional_matches_ranx(data, ranx_scores, metric):
    y_pred, y, _ = data
    rows, scores = ranx_scores
    ours = _ours(y_pred[rows], y[rows])[metric]
    if metric == "r-precision":
        assert ours[:, 0].tolist() == pytest.approx(scores["r-precision"], rel=1e-12, abs=1e-12)
        return
    for col, k in enumerate(KS):
        assert ours[:, col].tolist() == pytest.approx(scores[f"{metric}@{k}"], rel=1e-12, abs=1e-12), k


def test_metric_means_match_ranx(data, ranx_scores):
    y_pred, y, _ = data
    _, scores = ranx_scores
    group = ir.RankingMetrics(
        mrr=ir.MRR(KS),
        hit_rate=ir.HitRate(KS),
        precision=ir.Precision(KS),
        recall=ir.Recall(KS),
        map=ir.MAP(KS),
        ndcg=ir.NDCG(KS, gain_function="linear_rank"),
        ndcg_burges=ir.NDCG(KS),
        r_precision=ir.RPrecision(),
    )
    # Uneven batches; the queries without a relevant item are left out of the means, as in ranx.
    for chunk in torch.tensor_split(torch.arange(NUM_QUERIES), [7, 100, 101, 250]):
        group.update((y_pred[chunk], y[chunk]))
    got = group.compute()
    for name, values in scores.items():
        key = "r_precision" if name == "r-precision" else name
        assert got[key] == pytest.approx(float(np.mean(values)), rel=1e-12), name


# --------------------------------------------------------------------------- trec_eval


@pytest.fixture(scope="module")
def trec_scores(data):
    import pytrec_eval

    y_pred, y, _ = data
    qrels = {_qid(i): {_did(j): int(y[i, j]) for j in range(NUM_ITEMS)} for i in range(NUM_QUERIES)}
    run = {_qid(i): {_did(j): float(y_pred[i, j]) for j in range(NUM_ITEMS)} for i in range(NUM_QUERIES)}
    cut = ",".join(map(str, KS))
    measures = {"recip_rank", "Rprec", f"P.{cut}", f"recall.{cut}", f"map_cut.{cut}", f"ndcg_cut.{cut}"}
    measures.add(f"success.{cut}")
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


@pytest.mark.parametrize(
    ("trec", "ours"),
    [
        ("P", "precision"),
        ("recall", "recall"),
        ("map_cut", "map"),
        ("ndcg_cut", "ndcg"),
        ("success", "hit_rate"),
    ],
)
def test_functional_matches_trec_eval_at_cutoffs(data, trec_scores, trec, ours):
    y_pred, y, _ = data
    values = _ours(y_pred, y)[ours]
    for col, k in enumerate(KS):
        expected = [trec_scores[_qid(i)][f"{trec}_{k}"] for i in range(NUM_QUERIES)]
        assert values[:, col].tolist() == pytest.approx(expected, rel=1e-12, abs=1e-12), k


def test_functional_matches_trec_eval_without_cutoff(data, trec_scores):
    y_pred, y, _ = data
    # trec_eval's recip_rank reads the whole ranking: a cutoff covering every item.
    rr = F.reciprocal_rank(y_pred, y, NUM_ITEMS)[:, 0].tolist()
    assert rr == pytest.approx([trec_scores[_qid(i)]["recip_rank"] for i in range(NUM_QUERIES)], rel=1e-12)
    rp = F.r_precision(y_pred, y).tolist()
    assert rp == pytest.approx([trec_scores[_qid(i)]["Rprec"] for i in range(NUM_QUERIES)], rel=1e-12)


def test_queries_without_relevant_items_score_zero_like_the_oracles(data, trec_scores):
    y_pred, y, has_rel = data
    empty = (~has_rel).nonzero().squeeze(1)
    for values in _ours(y_pred[empty], y[empty]).values():
        assert (values == 0).all()
    for i in empty.tolist():
        assert all(v == 0 for v in trec_scores[_qid(i)].values())


# --------------------------------------------------------------------------- ignite's own metrics

# ignite keeps float32 sums and float32 discounts, so it agrees to float32 precision only.
IGNITE_REL = 2e-6


@pytest.mark.parametrize("ignore_zero_hits", [True, False])
def test_hit_rate_matches_ignite(data, ignore_zero_hits):
    from ignite.metrics import HitRate as IgniteHitRate

    y_pred, y, _ = data
    binary = (y >= 1).to(torch.float32)  # ignite's HitRate counts label > 0 as relevant
    ks = [k for k in KS if k <= NUM_ITEMS]  # ignite's HitRate needs k <= num_items
    ours, theirs = ir.HitRate(ks, ignore_zero_hits), IgniteHitRate(ks, ignore_zero_hits)
    for chunk in torch.tensor_split(torch.arange(NUM_QUERIES), 4):
        for m in (ours, theirs):
            m.update((y_pred[chunk].to(torch.float32), binary[chunk]))
    assert ours.compute() == pytest.approx(theirs.compute(), rel=IGNITE_REL)


@pytest.mark.parametrize("gain_function", ["exp_rank", "linear_rank"])
@pytest.mark.parametrize("ignore_zero_hits", [True, False])
@pytest.mark.parametrize("relevance_threshold", [1.0, 2.0, 3.5])
def test_ndcg_matches_ignite(data, gain_function, ignore_zero_hits, relevance_threshold):
    from ignite.metrics import NDCG as IgniteNDCG

    y_pred, y, _ = data
    args = (KS, ignore_zero_hits, relevance_threshold, gain_function)
    ours, theirs = ir.NDCG(*args), IgniteNDCG(*args)
    for chunk in torch.tensor_split(torch.arange(NUM_QUERIES), 3):
        for m in (ours, theirs):
            m.update((y_pred[chunk], y[chunk]))
    assert ours.compute() == pytest.approx(theirs.compute(), rel=IGNITE_REL)
