"""The TREC evaluator against pytrec_eval (trec_eval's C code) on generated files with ties."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ignite_ranking.trec import Measure, evaluate, parse_measure, parse_measures, read_qrels, read_run
from ignite_ranking.trec.io import Qrels, Run

pytrec_eval = pytest.importorskip("pytrec_eval")

# our name -> pytrec_eval measure
PAIRS = {
    "recip_rank": "recip_rank",
    "P_5": "P_5",
    "P@10": "P_10",
    "recall_10": "recall_10",
    "recall@100": "recall_100",
    "map_cut_10": "map_cut_10",
    "map": "map",
    "ndcg_cut_10": "ndcg_cut_10",
    "ndcg_cut_5": "ndcg_cut_5",
    "ndcg": "ndcg",
    "Rprec": "Rprec",
    "success_1": "success_1",
    "success_5": "success_5",
}


def _generate(seed: int, num_queries: int = 400):
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[tuple[str, float]]] = {}
    for q in range(num_queries):
        qid = f"q{q}"
        pool = [f"d{rng.integers(0, 3000)}" for _ in range(120)]
        pool = list(dict.fromkeys(pool))
        judged = rng.choice(len(pool), size=int(rng.integers(1, 40)), replace=False)
        if q % 23 != 7:  # some queries are only in the run
            qrels[qid] = {pool[i]: int(rng.choice([0, 0, 1, 2, 3])) for i in judged}
        if q % 31 == 5:  # some qrels queries have no relevant document
            qrels[qid] = {pool[i]: 0 for i in judged}
        if q % 19 == 3:  # some qrels queries are missing from the run
            continue
        length = int(rng.integers(1, len(pool)))
        docs = rng.choice(len(pool), size=length, replace=False)
        # coarse scores: many ties, broken by trec_eval's docno rule
        scores = np.round(rng.random(length) * 5) / 2
        if q % 7 == 0:  # scores equal as float32, distinct as float64
            scores = scores + rng.integers(0, 3, length) * 1e-12
        run[qid] = [(pool[i], float(s)) for i, s in zip(docs, scores, strict=True)]
    return qrels, run


def _write(tmp_path, qrels, run):
    with open(tmp_path / "qrels.txt", "w") as f:
        for qid, docs in qrels.items():
            for doc, rel in docs.items():
                f.write(f"{qid} 0 {doc} {rel}\n")
    with open(tmp_path / "run.txt", "w") as f:
        for qid, docs in run.items():
            for rank, (doc, score) in enumerate(docs, 1):
                f.write(f"{qid} Q0 {doc} {rank} {score!r} tag\n")
    return tmp_path / "qrels.txt", tmp_path / "run.txt"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    qrels, run = _generate(0)
    qrels_path, run_path = _write(tmp_path_factory.mktemp("trec"), qrels, run)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(PAIRS.values()))
    expected = evaluator.evaluate({q: dict(docs) for q, docs in run.items()})
    return qrels_path, run_path, qrels, run, expected


def test_matches_pytrec_eval_with_ties(files):
    qrels_path, run_path, _, _, expected = files
    result = evaluate(
        read_qrels(qrels_path), read_run(run_path), list(PAIRS), score_precision="float32", batch_size=64
    )
    assert sorted(result.queries) == sorted(expected)
    per_query = result.per_query()
    for ours, theirs in PAIRS.items():
        got = np.array([per_query[q][ours] for q in expected])
        want = np.array([expected[q][theirs] for q in expected])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9, err_msg=ours)
        assert result.means[ours] == pytest.approx(want.mean(), abs=1e-9)


@pytest.mark.parametrize(
    "metrics", [["P_5", "ndcg_cut_5", "success_1"], ["map_cut_10", "recall_10", "Rprec"]]
)
def test_matches_pytrec_eval_when_only_the_top_is_ranked(files, metrics):
    # Cutoff metrics only: each query keeps just the documents that can reach the top k (ties at the
    # cut kept whole), which must not change any value.
    qrels_path, run_path, _, _, expected = files
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    result = evaluate(qrels, run, metrics, score_precision="float32", batch_size=64)
    per_query = result.per_query()
    for name in metrics:
        got = np.array([per_query[q][name] for q in expected])
        want = np.array([expected[q][PAIRS[name]] for q in expected])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9, err_msg=name)


def test_file_order_ties_only_the_top_is_ranked(files):
    qrels_path, run_path, _, _, _ = files
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    for ties in ("first", "last"):
        whole = evaluate(qrels, run, ["P_5", "ndcg_cut_5", "map"], ties=ties).per_query()  # map: no cut
        top = evaluate(qrels, run, ["P_5", "ndcg_cut_5"], ties=ties).per_query()
        assert {q: {m: v[m] for m in ("P_5", "ndcg_cut_5")} for q, v in whole.items()} == top


def test_missing_as_zero_counts_every_qrels_query(files):
    qrels_path, run_path, qrels, _, expected = files
    result = evaluate(
        read_qrels(qrels_path), read_run(run_path), ["P_5"], missing_as_zero=True, score_precision="float32"
    )
    assert sorted(result.queries) == sorted(qrels)
    want = sum(expected[q]["P_5"] for q in expected) / len(qrels)
    assert result.means["P_5"] == pytest.approx(want, abs=1e-12)


def test_file_order_ties_differ_from_trec():
    qrels = Qrels(["q"], np.zeros(2, np.int32), np.array([b"a", b"b"]), np.array([1, 0]))
    run = Run(["q"], np.zeros(2, np.int32), np.array([b"a", b"b"]), np.array([1.0, 1.0]))
    assert evaluate(qrels, run, ["mrr"], ties="trec").means["mrr"] == 0.5  # docno descending: b first
    assert evaluate(qrels, run, ["mrr"], ties="first").means["mrr"] == 1.0
    assert evaluate(qrels, run, ["mrr"], ties="last").means["mrr"] == 0.5


def test_idcg_and_r_from_qrels_not_the_run():
    # three relevant judged docs, the run finds one of them at rank 1
    qrels = Qrels(["q"], np.zeros(3, np.int32), np.array([b"a", b"b", b"c"]), np.array([1, 1, 1]))
    run = Run(["q"], np.zeros(1, np.int32), np.array([b"a"]), np.array([1.0]))
    means = evaluate(qrels, run, ["recall@10", "Rprec", "ndcg@10", "map"]).means
    assert means["recall@10"] == pytest.approx(1 / 3)
    assert means["Rprec"] == pytest.approx(1 / 3)
    assert means["map"] == pytest.approx(1 / 3)
    assert means["ndcg@10"] == pytest.approx(1 / (1 + 1 / np.log2(3) + 0.5))


@pytest.mark.parametrize("ties", ["trec", "first", "last", "average", "optimistic"])
def test_duplicate_document_in_run_is_refused(ties):
    qrels = Qrels(["q"], np.zeros(1, np.int32), np.array([b"a"]), np.array([1]))
    run = Run(["q"], np.zeros(2, np.int32), np.array([b"a", b"a"]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="'a' appears twice for query 'q'"):
        evaluate(qrels, run, ["mrr", "P@1"], ties=ties)


def test_nan_score_is_refused():
    qrels = Qrels(["q"], np.zeros(1, np.int32), np.array([b"a"]), np.array([1]))
    run = Run(["q"], np.zeros(2, np.int32), np.array([b"a", b"b"]), np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="NaN"):
        evaluate(qrels, run, ["mrr"])


@pytest.mark.parametrize("measure", ["P@1", "map"])  # only the top ranked / the whole ranking
@pytest.mark.parametrize("name", ["d7", "a-document-id-longer-than-8-bytes-7"])
def test_duplicate_below_the_cutoff_is_refused(name, measure):
    docnos = [name.replace("7", str(i)) for i in range(20)] + [name]
    qrels = Qrels(["q"], np.zeros(1, np.int32), np.array([b"d1"]), np.array([1]))
    run = Run(["q"], np.zeros(21, np.int32), np.array(docnos, dtype="S"), np.arange(21.0, 0.0, -1.0))
    with pytest.raises(ValueError, match=f"'{name}' appears twice for query 'q'"):
        evaluate(qrels, run, [measure])


@pytest.mark.parametrize(
    ("name", "family", "k", "rel"),
    [
        ("mrr@10", "recip_rank", 10, None),
        ("recip_rank", "recip_rank", None, None),
        ("P_10", "P", 10, None),
        ("P@10", "P", 10, None),
        ("P(rel=2)@5", "P", 5, 2),
        ("ndcg_cut_10", "ndcg", 10, None),
        ("nDCG@10", "ndcg", 10, None),
        ("nDCG", "ndcg", None, None),
        ("ndcg_burges@5", "ndcg_burges", 5, None),
        ("map_cut_100", "map", 100, None),
        ("AP@100", "map", 100, None),
        ("AP(rel=2)", "map", None, 2),
        ("R@100", "recall", 100, None),
        ("RR@10", "recip_rank", 10, None),
        ("RR", "recip_rank", None, None),
        ("success_1", "success", 1, None),
        ("Success@1", "success", 1, None),
        ("Rprec", "Rprec", None, None),
        ("r-precision", "Rprec", None, None),
        ("NumQ", "num_q", None, None),
        ("NumRel", "num_rel", None, None),
        ("NumRet", "num_ret", None, None),
        ("NumRelRet", "num_rel_ret", None, 1),
        ("num_rel_ret", "num_rel_ret", None, None),
        ("bpref", "bpref", None, None),
        ("Bpref(rel=2)", "bpref", None, 2),
        ("ERR@20", "err", 20, None),
        ("nERR@5", "nerr", 5, None),
        ("Judged@10", "judged", 10, None),
    ],
)
def test_parse_measure(name, family, k, rel):
    measure = parse_measure(name)
    assert (measure.name, measure.family, measure.k, measure.rel) == (name, family, k, rel)


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["P.5,10,20"], ["P_5", "P_10", "P_20"]),
        (["ndcg_cut.10"], ["ndcg_cut_10"]),
        (["recall.100,1000", "map_cut.10,100"], ["recall_100", "recall_1000", "map_cut_10", "map_cut_100"]),
        (["success.1,5"], ["success_1", "success_5"]),
        (["success"], ["success_1", "success_5", "success_10"]),
        (["P"], [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]),
        (["P.5", "map", "P.5"], ["P_5", "map"]),
        (["ndcg.1=0.5,2=3"], ["ndcg_1=0.5,2=3"]),
        (
            ["official"],
            ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref"]
            + ["recip_rank"]
            + [f"iprec_at_recall_{r / 10:.2f}" for r in range(11)]
            + [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)],
        ),
    ],
)
def test_parse_trec_eval_parameters(names, expected):
    assert [m.name for m in parse_measures(names)] == expected


@pytest.mark.parametrize(
    ("name", "family", "p", "judged_only"),
    [
        ("rbp", "rbp", 0.9, False),  # trec_eval's default p
        ("rbp.p=0.8", "rbp", 0.8, False),
        ("rbp_resid.p=0.5", "rbp_resid", 0.5, False),
        ("RBP", "rbp", 0.8, False),  # ir_measures' default p
        ("RBP(p=0.95)", "rbp", 0.95, False),
        ("P(judged_only=True)@10", "P", None, True),
        ("nDCG(judged_only=True)@10", "ndcg", None, True),
        ("AP(judged_only=True)", "map", None, True),
        ("RR(judged_only=False)", "recip_rank", None, False),
    ],
)
def test_parse_persistence_and_judged_only(name, family, p, judged_only):
    measure = parse_measure(name)
    assert (measure.family, measure.p, measure.judged_only) == (family, p, judged_only)


@pytest.mark.parametrize(
    "name",
    ["rbp.p=1", "rbp.p=x", "rbp.q=0.5", "RBP(p=0)", "NumQ(judged_only=True)", "bpref@10", "Judged(rel=2)@5"],
)
def test_bad_persistence_measures_are_refused(name):
    with pytest.raises(ValueError, match="measure"):
        parse_measure(name)


def test_parse_all_trec_has_every_measure_of_trec_eval():
    # trec_eval 10 -m all_trec prints 100 names (37 roots), in measures.c's order
    names = [m.name for m in parse_measures(["all_trec"])]
    assert len(names) == len(set(names)) == 100
    assert names[:7] == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map"]
    assert names[-8:-3] == ["set_map", "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid"]
    assert names[-3:] == ["unj_5", "unj_10", "unj_20"]


def test_parse_custom_gains():
    assert parse_measure("ndcg.1=0.5,2=3,-1=2").gains == ((1, 0.5), (2, 3.0), (-1, 2.0))


@pytest.mark.parametrize(
    "name",
    [
        *("foo@10", "P_0", "Rprec@5", "mrr@0", "P.x", "bpref.5", "ndcg.1=x", "ndcg.a=1", "P(rel=x)@5"),
        *("NumQ@5", "nDCG(judged_only=yes)@5", "R(rel=2)@5", "map.10"),
        *("ndcg.1=inf", "ndcg.1=1e400", "ndcg.1=nan"),  # an OverflowError once
    ],
)
def test_parse_measure_refuses(name):
    with pytest.raises(ValueError, match="measure"):
        parse_measure(name)


def test_parse_measure_one_name_one_measure():
    with pytest.raises(ValueError, match="stands for 3 measures"):
        parse_measure("P.5,10,20")


def _files(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> tuple[Qrels, Run]:
    """In-memory Qrels and Run from dicts (query order as given)."""
    qids = list(dict.fromkeys([*qrels, *run]))
    judged = [(qids.index(q), d, r) for q, docs in qrels.items() for d, r in docs.items()]
    ranked = [(qids.index(q), d, s) for q, docs in run.items() for d, s in docs.items()]
    return (
        Qrels(qids, np.array([j[0] for j in judged], np.int32), np.array([j[1] for j in judged], "S"),
              np.array([j[2] for j in judged], np.int64)),
        Run(qids, np.array([r[0] for r in ranked], np.int32), np.array([r[1] for r in ranked], "S"),
            np.array([r[2] for r in ranked], np.float64)),
    )  # fmt: skip


def test_ndcg_gains_ignore_the_relevance_level():
    # Regression: -l 2 used to zero the gain of grade 1 (0.3525 instead of trec_eval's 0.3894 on
    # one file). trec_eval's ndcg/ndcg_cut: gain = grade whatever -l, ideal over grades > 0.
    qrels, run = _files(
        {"q": {"a": 1, "b": 2, "c": 0, "d": 1}}, {"q": {"c": 4.0, "a": 3.0, "x": 2.0, "b": 1.0}}
    )
    dcg = 1 / np.log2(3) + 2 / np.log2(5)
    ideal = 2 + 1 / np.log2(3) + 1 / np.log2(4)
    for level in (0, 1, 2, 3):
        means = evaluate(qrels, run, ["ndcg", "ndcg_cut_3", "nDCG@10"], relevance_level=level).means
        assert means["ndcg"] == pytest.approx(dcg / ideal, abs=1e-12)
        assert means["nDCG@10"] == pytest.approx(dcg / ideal, abs=1e-12)
        assert means["ndcg_cut_3"] == pytest.approx((1 / np.log2(3)) / (2 + 1 / np.log2(3) + 0.5), abs=1e-12)


def test_level_zero_counts_judged_documents_only():
    # Regression: under -l 0 an unjudged document (label 0 >= 0) counted as relevant.
    qrels, run = _files({"q": {"a": 0, "b": 1}}, {"q": {"x": 3.0, "a": 2.0, "y": 1.5, "b": 1.0}})
    means = evaluate(
        qrels, run, ["P_2", "P_4", "num_rel", "num_rel_ret", "recip_rank"], relevance_level=0
    ).means
    assert means == {"P_2": 0.5, "P_4": 0.5, "num_rel": 2.0, "num_rel_ret": 2.0, "recip_rank": 0.5}


def test_minus_one_grade_is_pooled_but_unjudged():
    # trec_eval: a negative grade is never relevant (even at -l 0), not counted in R, gains nothing.
    qrels, run = _files({"q": {"a": -1, "b": 1, "c": 0}}, {"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
    for level in (0, 1):
        means = evaluate(qrels, run, ["P_1", "num_rel", "map", "ndcg"], relevance_level=level).means
        assert means["P_1"] == 0.0
        assert means["num_rel"] == (2.0 if level == 0 else 1.0)
        assert means["ndcg"] == pytest.approx(1 / np.log2(3))


def test_scores_compared_as_float64_by_default():
    # Regression: scores were always rounded to float32 (trec_eval 9); trec_eval 10 compares
    # doubles. 1 + 1e-12 and 1 are equal as float32: docno descending puts "b" first there.
    qrels, run = _files({"q": {"a": 1}}, {"q": {"a": 1.0 + 1e-12, "b": 1.0}})
    assert evaluate(qrels, run, ["recip_rank"]).means["recip_rank"] == 1.0
    assert evaluate(qrels, run, ["recip_rank"], score_precision="float32").means["recip_rank"] == 0.5
    with pytest.raises(ValueError, match="score_precision must be one of"):
        evaluate(qrels, run, ["recip_rank"], score_precision="float16")


@pytest.mark.parametrize("as_dicts", [False, True], ids=["columns", "dicts"])
def test_a_score_past_float32_range_rounds_to_inf_without_a_warning(as_dicts):
    # Regression: --score-precision float32 with a score of 1e308 printed numpy's overflow warning.
    judged, ranked = {"q": {"a": 1, "b": 0, "c": 1}}, {"q": {"a": float("inf"), "b": 1e308, "c": -1e308}}
    qrels, run = (judged, ranked) if as_dicts else _files(judged, ranked)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        means = evaluate(qrels, run, ["map", "recip_rank"], score_precision="float32").means
    # a and b are both +inf as float32, and trec_eval's docno descending puts b first.
    assert means == {"map": pytest.approx((1 / 2 + 2 / 3) / 2), "recip_rank": 0.5}


def test_a_relevance_level_past_int64_finds_nothing_relevant():
    # Regression: -l 99999999999999999999 raised OverflowError comparing it with int64 grades.
    qrels, run = _files({"q": {"a": 1, "b": 2}}, {"q": {"a": 2.0, "b": 1.0}})
    assert evaluate(qrels, run, ["map", "num_rel"], relevance_level=10**20).means == {
        "map": 0.0,
        "num_rel": 0.0,
    }


def test_custom_gains_follow_trec_eval():
    # trec_eval printed 0.4586 for ndcg.1=0.5,2=3 here: its level sort compares the integer part of
    # gain differences, so 0.5 ties with grade 0's gain and the ideal stops at grade 0.
    qrels, run = _files(
        {"q": {"d1": 1, "d2": 2, "d3": -1, "d4": 0}},
        {"q": {"x": 3.0, "d3": 2.0, "d4": 1.5, "d1": 1.0, "d2": 0.5}},
    )
    means = evaluate(qrels, run, ["ndcg.1=0.5,2=3", "ndcg.-1=5", "ndcg"]).means
    assert round(means["ndcg_1=0.5,2=3"], 4) == 0.4586
    assert round(means["ndcg_-1=5"], 4) == 2.3582  # a document not in the qrels has label -1
    assert round(means["ndcg"], 4) == 0.4578


def test_relevance_level_is_checked():
    qrels, run = _files({"q": {"a": 1}}, {"q": {"a": 1.0}})
    with pytest.raises(ValueError, match="relevance_level must be >= 0"):
        evaluate(qrels, run, ["P_1"], relevance_level=-1)
    with pytest.raises(TypeError, match="relevance_level must be an int"):
        evaluate(qrels, run, ["P_1"], relevance_level=1.5)
    with pytest.raises(ValueError, match="relevance level must be >= 0"):
        evaluate(qrels, run, [Measure("P@1", "P", 1, rel=-1)])


def test_ir_measures_rel_parameter_sets_the_level_per_measure():
    qrels, run = _files({"q": {"a": 1, "b": 2}}, {"q": {"a": 2.0, "b": 1.0}})
    means = evaluate(qrels, run, ["P@1", "P(rel=2)@1", "RR", "RR(rel=2)", "NumRelRet", "NumRet(rel=2)"]).means
    assert means == {
        "P@1": 1.0,
        "P(rel=2)@1": 0.0,
        "RR": 1.0,
        "RR(rel=2)": 0.5,
        "NumRelRet": 2.0,
        "NumRet(rel=2)": 1.0,
    }


def test_means_add_in_query_id_order_as_trec_eval():
    """trec_eval adds the per-query values one by one in query id order; with these P_10 values
    the mean is the double below 0.04375 (printed 0.0437 by trec_eval 10), where numpy's
    pairwise sum gives the one above (0.0438)."""
    p10 = {f"q{i}": 0.0 for i in range(1, 17)}
    p10.update(q10=0.1, q16=0.1, q3=0.1, q4=0.1, q5=0.1, q7=0.2)
    qids = list(p10)
    run_q, run_d, qrels_q, qrels_d = [], [], [], []
    for q, (qid, value) in enumerate(p10.items()):
        run_q += [q] * 10
        run_d += [f"{qid}-d{i}" for i in range(10)]
        relevant = round(value * 10)
        qrels_q += [q] * max(relevant, 1)
        qrels_d += [f"{qid}-d{i}" for i in range(relevant)] or [f"{qid}-unretrieved"]
    run = Run(
        qids, np.array(run_q, np.int32), np.array(run_d, dtype="S"), np.tile(np.arange(10.0, 0, -1), 16)
    )
    qrels = Qrels(
        qids, np.array(qrels_q, np.int32), np.array(qrels_d, dtype="S"), np.ones(len(qrels_q), np.int64)
    )
    mean = evaluate(qrels, run, ["P_10"]).means["P_10"]
    assert f"{mean:.4f}" == "0.0437"
    assert f"{np.mean(list(p10.values())):.4f}" == "0.0438"  # what a pairwise sum would print


@pytest.mark.parametrize(
    ("run_extra", "qrels_extra"),
    [("", "a-judged-document-name-of-40-bytes-x"), ("a-retrieved-document-name-of-40-bytes", ""), ("", "")],
)
def test_documents_join_whatever_the_widths_of_the_two_files(tmp_path, run_extra, qrels_extra):
    """The docno columns of a run and a qrels file have the width of their longest id, which
    differ: a run of short ids against qrels with one long id found nothing (P_1 = 0)."""
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text(f"q1 0 d1 1\nq1 0 d3 1\nq2 0 d2 2\nq2 0 {qrels_extra or 'd9'} 1\n")
    run_path.write_text(
        "q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\n"
        f"q2 Q0 d2 1 3.0 r\nq2 Q0 {run_extra or 'd8'} 2 2.0 r\nq2 Q0 d1 3 1.0 r\n"
    )
    result = evaluate(read_qrels(str(qrels_path)), read_run(str(run_path)), ["P_1", "num_rel_ret"])
    assert result.per_query() == {
        "q1": {"P_1": 1.0, "num_rel_ret": 1.0},
        "q2": {"P_1": 1.0, "num_rel_ret": 1.0},
    }


def _trec_eval_loops(grades, num_rel, num_nonrel, p=0.9, points=tuple(i / 10 for i in range(11))):
    """rbp_resid, 11pt_avg and bpref of one query as trec_eval 10's C loops compute them,
    operation by operation (m_rbp_resid.c, m_11pt_avg.c, m_bpref.c): ``grades`` in rank order
    (-1: pooled, unjudged; None: not in the qrels), relevance at grade >= 1."""
    unjudged, cur, total = 0, 1.0, 0.0
    for grade in grades:
        if grade is None or grade < 0:
            unjudged += 1
            total += cur
        cur = cur * p
    resid = cur + (1 - p) * total if unjudged else 0.0
    relevant = [g is not None and g >= 1 for g in grades]
    rel_ret, num_ret = sum(relevant), len(grades)
    cutoffs = [int(np.floor(c * num_rel + 0.5)) for c in points]  # lround of non-negative values
    current = len(points) - 1
    while current >= 0 and cutoffs[current] > rel_ret:
        current -= 1
    best = rel_ret / num_ret
    so_far, summed = rel_ret, 0.0
    for i in range(num_ret, 0, -1):
        if so_far <= 0:
            break
        best = max(best, so_far / i)
        if relevant[i - 1]:
            while current >= 0 and so_far == cutoffs[current]:
                summed += best
                current -= 1
            so_far -= 1
    while current >= 0:
        summed += best
        current -= 1
    return resid, summed / len(points), _bpref_loop(grades, num_rel, num_nonrel)


def _bpref_loop(grades, num_rel, num_nonrel):
    """m_bpref.c's loop: terms added rank by rank, unjudged and unpooled documents skipped."""
    nonrel_so_far, total = 0, 0.0
    for grade in grades:
        if grade is None or grade < 0:
            continue
        if grade < 1:
            nonrel_so_far += 1
        else:
            total += 1.0 - min(nonrel_so_far, num_rel) / min(num_nonrel, num_rel) if nonrel_so_far else 1.0
    return total / num_rel if num_rel else total


def test_rbp_resid_11pt_avg_and_bpref_take_trec_eval_operations_to_the_bit(tmp_path):
    """Regression: p**n at once, the 11 points added from the first and bpref's terms summed
    pairwise made the last bits differ from trec_eval's loops, which flipped printed values that
    fell halfway (trec_eval printed rbp_resid 0.4231, 11pt_avg 0.4187 and bpref 0.3938 where ours
    printed 0.4230, 0.4188 and 0.3937)."""
    rng = np.random.default_rng(11)
    qrels_lines, run_lines, truth = [], [], {}
    for q in range(40):
        docs = [f"d{i}" for i in range(int(rng.integers(1, 30)))]
        judged = {d: int(rng.choice([-1, 0, 1, 2])) for d in docs if rng.random() < 0.7}
        judged[f"x{q}"] = 1  # one relevant document the run never retrieves
        qrels_lines += [f"q{q} 0 {d} {g}\n" for d, g in judged.items()]
        order = rng.permutation(len(docs))
        run_lines += [f"q{q} Q0 {docs[j]} {r} {len(docs) - r} t\n" for r, j in enumerate(order)]
        grades = [judged.get(docs[j]) for j in order]
        truth[f"q{q}"] = (grades, sum(g >= 1 for g in judged.values()), sum(g == 0 for g in judged.values()))
    (tmp_path / "qrels").write_text("".join(qrels_lines))
    (tmp_path / "run").write_text("".join(run_lines))
    measures = ["rbp_resid", "11pt_avg", "bpref"]
    per_query = evaluate(read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run"), measures).per_query()
    for query, (grades, num_rel, num_nonrel) in truth.items():
        expected = dict(zip(measures, _trec_eval_loops(grades, num_rel, num_nonrel), strict=True))
        assert {m: per_query[query][m] for m in measures} == expected, query


def test_iprec_at_recall_follows_trec_eval_10_where_pytrec_eval_differs():
    """docs/trec.md: the lround(x*R)-th relevant document (trec_eval 10) where pytrec_eval (trec_eval
    9.x) takes the first rank whose recall reaches x. R = 4, relevant at ranks 1, 5, 7, 10."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = {"q": {"r1": 1, "r2": 1, "r3": 1, "r4": 1}}
    ranking = ["r1", "n1", "n2", "n3", "r2", "n4", "r3", "n5", "n6", "r4"]
    run = {"q": {d: float(len(ranking) - i) for i, d in enumerate(ranking)}}
    ours = evaluate(qrels, run, ["iprec_at_recall.0.3,0.8"], score_precision="float32").per_query()["q"]
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall"}).evaluate(run)["q"]
    assert ours == {"iprec_at_recall_0.30": 1.0, "iprec_at_recall_0.80": 3 / 7}  # trec_eval 10's
    assert (theirs["iprec_at_recall_0.30"], theirs["iprec_at_recall_0.80"]) == (3 / 7, 0.4)
