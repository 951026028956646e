"""The provider's newer measures equal those of the provider ir_measures itself picks for them.

- ``judged_only=True`` on R, Rprec, Success (and P, RR, AP, nDCG) and ``nDCG(gains=...)``:
  pytrec_eval, on runs with ties (both order them as trec_eval does, on float32 scores).
- ``nDCG(dcg='exp-log2')``: gdeval (ir_measures' pick at a cutoff; it prints 5 decimals) and
  pytrec_eval's nDCG with the gains ``2**grade - 1`` spelled out (ir_measures picks ranx without
  a cutoff: its first evaluation compiles for minutes, and ir_measures' ranx provider fails
  under pandas 3), with ties (gdeval too orders them by document id descending).
- cwl_eval's BPM, INST, INSQ, SDCG, NERR8-11 and ``RBP(rel=...)``: ir_measures' cwl_eval
  provider, on tie-free runs (it keeps tied documents in input order); one query retrieves more
  than cwl_eval's 1000 ranks.
Qrels hold grades -1..3 (-1: judged negative), and runs retrieve unjudged documents.
"""

from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("pytrec_eval")
pytest.importorskip("cwl")

from ir_measures import (  # noqa: E402
    AP,
    BPM,
    INSQ,
    INST,
    NERR8,
    NERR9,
    NERR10,
    NERR11,
    RBP,
    RR,
    SDCG,
    P,
    R,
    Rprec,
    Success,
    nDCG,
)

from ignite_ranking import ir_measures as provider  # noqa: E402
from ignite_ranking.ir_measures import as_qrels, as_run  # noqa: E402
from ignite_ranking.trec import evaluate, parse_measure  # noqa: E402

logging.getLogger("ir_measures.cwl_eval").disabled = True  # its warnings about min_rel/max_rel

JUDGED_ONLY = [
    *(
        R(judged_only=True) @ 5,
        R(judged_only=True) @ 100,
        Rprec(judged_only=True),
        Rprec(rel=2, judged_only=True),
    ),
    *(Success(judged_only=True) @ 1, Success(judged_only=True) @ 5, Success(rel=2, judged_only=True) @ 3),
    *(P(judged_only=True) @ 5, RR(judged_only=True), AP(judged_only=True), nDCG(judged_only=True) @ 10),
]
GAINS = [
    nDCG(gains={0: 1, 1: 2, 2: 0, 3: 5}) @ 10,
    nDCG(gains={2: 7}),
    nDCG(gains={0: 0, 1: 1, 2: 3, 3: 7}) @ 20,
    nDCG(gains={1: 3, 3: 1}, judged_only=True) @ 5,
    nDCG(gains={0: 2}, judged_only=True),
]
CWL = [
    *(BPM(max_rel=3) @ 10, BPM(T=2.0, max_rel=3, min_rel=1) @ 5, BPM(T=0.5, max_rel=1) @ 2000),
    *(INST(max_rel=3), INST(T=2.5, max_rel=2), INST(T=0.25, max_rel=3, min_rel=-1)),
    *(INSQ(max_rel=3), INSQ(T=3.0, max_rel=1)),
    *(SDCG(max_rel=3) @ 10, SDCG(max_rel=2, min_rel=1) @ 1, SDCG(max_rel=3) @ 1500),
    *(NERR8(max_rel=3) @ 10, NERR8(max_rel=1) @ 1, NERR9(max_rel=3) @ 10, NERR9(max_rel=2) @ 3),
    *(NERR10(max_rel=3), NERR10(p=0.5, max_rel=3), NERR11(max_rel=3), NERR11(T=2.0, max_rel=2)),
    *(RBP(rel=1), RBP(rel=2, p=0.5), RBP(rel=1, p=0.95)),
]


def _data(seed: int, ties: bool, queries: int = 60):
    """Numeric query ids (gdeval reads only those); q1's run is 1200 documents long."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(queries):
        size = 1300 if q == 1 else 120
        pool = [f"d{i}" for i in rng.choice(5000, size, replace=False)]
        judged = rng.choice(size, int(rng.integers(1, 40)) + (300 if q == 1 else 0), replace=False)
        if q % 13 != 4:  # some run queries are not judged
            qrels[str(q)] = {pool[i]: int(rng.choice([-1, 0, 0, 1, 2, 3])) for i in judged}
        if q % 11 == 2:  # some judged queries are not in the run
            continue
        docs = rng.choice(size, 1200 if q == 1 else int(rng.integers(1, 100)), replace=False)
        tied = np.round(rng.random(len(docs)) * 6) / 3
        scores = tied if ties else (rng.permutation(len(docs)) + 1.0) / 8.0  # distinct in float32 too
        run[str(q)] = {pool[i]: float(s) for i, s in zip(docs, scores, strict=True)}
    return qrels, run


def _per_query(metrics) -> dict:
    return {(str(m.measure), m.query_id): m.value for m in metrics}


def _assert_agree(got: dict, want: dict, atol: float = 1e-6) -> None:
    assert got.keys() == want.keys()
    keys = list(want)
    np.testing.assert_allclose([got[k] for k in keys], [want[k] for k in keys], rtol=0, atol=atol)


@pytest.fixture(scope="module")
def tied():
    return _data(0, ties=True)


@pytest.fixture(scope="module")
def tie_free():
    return _data(1, ties=False)


@pytest.mark.parametrize("measures", [JUDGED_ONLY, GAINS], ids=["judged_only", "gains"])
def test_equals_pytrec_eval_with_ties(tied, measures):
    qrels, run = tied
    assert all(ir_measures.pytrec_eval.supports(m) for m in measures)
    want = _per_query(ir_measures.pytrec_eval.iter_calc(measures, qrels, run))
    _assert_agree(_per_query(provider.iter_calc(measures, qrels, run)), want)


def test_exp_log2_equals_gdeval_and_exponential_gains_of_pytrec_eval(tied):
    qrels, run = tied
    measures = [nDCG(dcg="exp-log2") @ 10, nDCG(dcg="exp-log2")]
    got = _per_query(provider.iter_calc(measures, qrels, run))
    # pytrec_eval's nDCG with the gains 2**grade - 1 spelled out
    exponential = [nDCG(gains={0: 0, 1: 1, 2: 3, 3: 7}) @ 10, nDCG(gains={0: 0, 1: 1, 2: 3, 3: 7})]
    want = _per_query(ir_measures.pytrec_eval.iter_calc(exponential, qrels, run))
    names = {str(e): str(m) for m, e in zip(measures, exponential, strict=True)}
    _assert_agree(got, {(names[name], q): value for (name, q), value in want.items()})
    if shutil.which("perl") is None:
        pytest.skip("gdeval needs perl")
    assert ir_measures.gdeval.supports(measures[0])
    gdeval = _per_query(ir_measures.gdeval.iter_calc(measures[:1], qrels, run))
    # gdeval leaves out the queries without a relevant document; it prints 5 decimals
    assert len(gdeval) > 30
    _assert_agree({k: got[k] for k in gdeval}, gdeval, atol=5e-6)


def test_cwl_measures_equal_cwl_eval(tie_free):
    qrels, run = tie_free
    assert all(ir_measures.cwl_eval.supports(m) for m in CWL)
    want = _per_query(ir_measures.cwl_eval.iter_calc(CWL, qrels, run))
    _assert_agree(_per_query(provider.iter_calc(CWL, qrels, run)), want)


def test_cwl_measures_under_float64_scores():
    # scores that differ only as float64: the provider's float64 precision ranks them as cwl_eval
    qrels, run = _data(2, ties=False, queries=20)
    run = {q: {d: 1.0 + s * 1e-12 for d, s in docs.items()} for q, docs in run.items()}
    want = _per_query(ir_measures.cwl_eval.iter_calc(CWL[:6], qrels, run))
    got = _per_query(provider.IgniteRankingProvider("float64").iter_calc(CWL[:6], qrels, run))
    _assert_agree(got, want)


def test_command_line_names_give_the_provider_values(tie_free):
    qrels, run = tie_free
    measures = [*CWL, *GAINS, *JUDGED_ONLY, nDCG(dcg="exp-log2") @ 10, RBP(p=0.8)]
    names = [str(m) for m in measures]
    result = evaluate(as_qrels(qrels), as_run(run), names, score_precision="float32")
    got = _per_query(provider.iter_calc(measures, qrels, run))
    for column, name in enumerate(names):
        want = [got[(name, q)] for q in result.queries]
        np.testing.assert_allclose(result.values[:, column], want, rtol=0, atol=0, err_msg=name)


def test_graded_rbp_is_trec_evals_rbp(tie_free):
    # no ir_measures provider computes RBP without rel= by default: it is trec_eval's graded rbp
    qrels, run = tie_free
    result = evaluate(as_qrels(qrels), as_run(run), ["RBP(p=0.7)", "rbp.p=0.7"])
    np.testing.assert_array_equal(result.values[:, 0], result.values[:, 1])


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("BPM(T=1.0)@10", "needs max_rel"),
        ("SDCG(max_rel=3)", "needs a cutoff"),
        ("INST(max_rel=3)@10", "takes no cutoff"),
        ("INST(max_rel=2,min_rel=2)", "min_rel must be less than max_rel"),
        ("INST(T=0,max_rel=2)", "T must be a positive number"),
        ("SDCG(T=2.0,max_rel=3)@10", "not supported"),
        ("NERR10(p=1.5,max_rel=3)", "in (0, 1)"),
        ("nDCG(gains={1: -1})", "integer gains >= 0"),
        ("nDCG(gains={1: 0.5})", "integer gains >= 0"),
        ("nDCG(gains={1: 2},dcg='exp-log2')", "not both"),
        ("nDCG(dcg='exp')", "not supported"),
        ("Bpref(judged_only=True)", "not supported"),
    ],
)
def test_bad_parameters_are_refused(name, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_measure(name)


def test_parsed_parameters():
    bpm = parse_measure("BPM(T=2.0, max_rel=3)@10")
    assert (bpm.family, bpm.k, bpm.params) == ("bpm", 10, (0.0, 3.0, 2.0))  # min_rel, max_rel, T
    assert parse_measure("SDCG(max_rel=2, min_rel=1)@5").params == (1.0, 2.0)
    assert parse_measure("NERR10(max_rel=1)").p == 0.9  # ir_measures' default
    assert parse_measure("nDCG(gains={0: 1, 2: 5})@5").gains == ((0, 1.0), (2, 5.0))
    assert parse_measure("nDCG(dcg='exp-log2')").family == "ndcg_burges"
    assert parse_measure("RBP(rel=2)").family == "rbp_rel"
    assert parse_measure("Success(judged_only=True)@3").judged_only


def test_names_on_the_command_line(tie_free, tmp_path, capsys):
    from ignite_ranking.cli import main

    qrels, run = tie_free
    qrels_lines = (f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
    (tmp_path / "qrels").write_text("".join(qrels_lines))
    run_lines = (f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run.items() for d, s in docs.items())
    (tmp_path / "run").write_text("".join(run_lines))
    measures = [INST(T=2.0, max_rel=3), nDCG(gains={0: 0, 1: 1, 2: 3}) @ 10, R(judged_only=True) @ 5]
    names = ["INST(T=2.0, max_rel=3)", "nDCG(gains={0: 0, 1: 1, 2: 3})@10", "R(judged_only=True)@5"]
    files = [str(tmp_path / "qrels"), str(tmp_path / "run")]
    assert main(["evaluate", *files, "-m", *names, "--json", "--per-query"]) == 0
    printed = json.loads(capsys.readouterr().out)["per_query"]
    want = _per_query(provider.iter_calc(measures, qrels, run))
    got = {(str(m), q): printed[q][name] for m, name in zip(measures, names, strict=True) for q in printed}
    _assert_agree(got, {k: want[k] for k in got})
