"""Every measure of trec_eval 10's ``all_trec`` set, line for line and in trec_eval's order.

Three layers: the output trec_eval 10 printed on the repo's generated fixture files
(tests/fixtures/trec_eval, written by make_fixtures.py; no binary needed); the binary itself,
run live when one is available (``TREC_EVAL``: a trec_eval 10 binary, or ``TREC_EVAL_SRC``: its
source, built here with ``make``) on trec_eval's own test files and on random runs; and small
hand cases whose values are worked out in the test.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess

import numpy as np
import pytest

from ignite_ranking.cli import main
from ignite_ranking.trec import evaluate, parse_measures
from ignite_ranking.trec.io import Qrels, Run

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "trec_eval")
with open(os.path.join(FIXTURES, "expected.json")) as f:
    EXPECTED = json.load(f)


def _parse(text: str) -> list[tuple[str, str, str]]:
    return [tuple(cell.strip() for cell in line.split("\t")) for line in text.splitlines() if line.strip()]


def _assert_same(got: str, want: str, ordered: bool = True) -> None:
    """Same names and queries in the same order (or in any, unless ``ordered``); values within
    trec_eval's 4 decimals."""
    got_lines, want_lines = _parse(got), _parse(want)
    if not ordered:  # trec_eval prints in its measure order, we in the order asked for
        got_lines, want_lines = sorted(got_lines), sorted(want_lines)
    assert [g[:2] for g in got_lines] == [w[:2] for w in want_lines]
    for (name, qid, ours), (_, _, theirs) in zip(got_lines, want_lines, strict=True):
        if theirs.startswith("'") or name == "runid" or "nan" in theirs:
            assert ours == theirs, (name, qid, ours, theirs)
        else:
            assert abs(float(ours) - float(theirs)) <= 1.01e-4, (name, qid, ours, theirs)


def _ours(capsys, qrels: str, run: str, flags: list[str], measures: list[str]) -> str:
    assert main(["evaluate", qrels, run, *flags, *(x for m in measures for x in ("-m", m))]) == 0
    return capsys.readouterr().out


# ------------------------------------------------------------------------ recorded trec_eval output


@pytest.mark.parametrize("case", sorted(c for c in EXPECTED["cases"] if c.startswith("all_trec")))
def test_all_trec_as_recorded(case, capsys):
    spec = EXPECTED["cases"][case]
    qrels, run = os.path.join(FIXTURES, spec["qrels"]), os.path.join(FIXTURES, EXPECTED["run"])
    ordered = spec["measures"] == ["all_trec"]
    _assert_same(_ours(capsys, qrels, run, spec["flags"], spec["measures"]), spec["output"], ordered)


def test_all_trec_prints_every_name_trec_eval_prints():
    names = {line[0].strip() for line in _parse(EXPECTED["cases"]["all_trec_q"]["output"])}
    assert len(names) == 100
    assert names == {m.name for m in parse_measures(["all_trec"])}


# ------------------------------------------------------------------------------ the binary, live


@pytest.fixture(scope="module")
def trec_eval(tmp_path_factory) -> str:
    """A trec_eval 10 binary: $TREC_EVAL, or one built from $TREC_EVAL_SRC in a temporary folder."""
    if os.environ.get("TREC_EVAL"):
        return os.environ["TREC_EVAL"]
    source = os.environ.get("TREC_EVAL_SRC")
    if not source:
        pytest.skip("set TREC_EVAL (a trec_eval 10 binary) or TREC_EVAL_SRC (its source) to run it live")
    if shutil.which("make") is None or not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("building trec_eval from TREC_EVAL_SRC needs make and a C compiler")
    build = tmp_path_factory.mktemp("trec_eval") / "src"
    shutil.copytree(source, build, ignore=shutil.ignore_patterns(".git", "*.o", "trec_eval"))
    done = subprocess.run(["make"], cwd=build, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"make failed in a copy of TREC_EVAL_SRC: {done.stderr[-300:]}")
    return str(build / "trec_eval")


def _theirs(binary: str, qrels: str, run: str, flags: list[str], measures: list[str]) -> str:
    command = [binary, *flags, *(x for m in measures for x in ("-m", m)), qrels, run]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


FLAGS = [[], ["-q"], ["-c", "-q"], ["-l", "2", "-q"], ["-J", "-q"]]


@pytest.mark.parametrize("flags", FLAGS, ids=" ".join)
def test_all_trec_live_on_trec_eval_test_files(trec_eval, flags, capsys):
    source = os.environ.get("TREC_EVAL_SRC")
    if not source or not os.path.isfile(os.path.join(source, "test", "qrels.test")):
        pytest.skip("trec_eval's test files are read from TREC_EVAL_SRC/test")
    qrels, run = os.path.join(source, "test", "qrels.test"), os.path.join(source, "test", "results.test")
    want = _theirs(trec_eval, qrels, run, flags, ["all_trec"])
    _assert_same(_ours(capsys, qrels, run, flags, ["all_trec"]), want)


def _write_random(directory, seed: int) -> tuple[str, str, str]:
    """Qrels with grades -1 to 3 (and queries without a relevant document), a run with tied
    scores and unjudged documents, and a second qrels with queries the run lacks (for -c)."""
    rng = np.random.default_rng(seed)
    qrels, run, extra = [], [], []
    for q in range(12):
        pool = rng.choice(200, 40, replace=False)
        judged = pool[: rng.integers(1, 30)]
        choices = [-1, 0, 0, 1, 1, 2, 3] if q % 5 else [-1, 0]  # every fifth: nothing relevant
        grades = rng.choice(choices, len(judged))
        qrels += [f"{q} 0 D{d} {g}" for d, g in zip(judged, grades, strict=True)]
        shown = rng.choice(pool, rng.integers(1, 40), replace=False)
        scores = rng.integers(0, 6, len(shown)) / 2  # many ties
        run += [f"{q} Q0 D{d} {r} {s} rnd{seed}" for r, (d, s) in enumerate(zip(shown, scores, strict=True))]
    for q in range(12, 14):
        extra += [f"{q} 0 D{d} {d % 3}" for d in range(5)]
    paths = [directory / f"{seed}.qrels", directory / f"{seed}.run", directory / f"{seed}.more.qrels"]
    for path, lines in zip(paths, (qrels, run, qrels + extra), strict=True):
        path.write_text("\n".join(lines) + "\n")
    return tuple(map(str, paths))


@pytest.mark.parametrize("seed", [1, 2])
def test_all_trec_live_on_random_runs(trec_eval, seed, tmp_path, capsys):
    qrels, run, more = _write_random(tmp_path, seed)
    params = ["all_trec", "iprec_at_recall.0.25,.6", "Rprec_mult.0.5,3", "set_F.0.3", "11pt_avg.0.2,0.8"]
    params += ["utility.1,-2,0.5,0", "G.1=2,2=1.5", "ndcg_rel.1=0.5", "Rndcg.2=5", "relstring.4", "unj.2"]
    for flags in FLAGS:
        path = more if "-c" in flags else qrels
        want = _theirs(trec_eval, path, run, flags, ["all_trec"])
        _assert_same(_ours(capsys, path, run, flags, ["all_trec"]), want)
        for measure in params[1:]:  # one at a time: trec_eval keeps one instance per measure
            want = _theirs(trec_eval, path, run, flags, [measure])
            _assert_same(_ours(capsys, path, run, flags, [measure]), want)


# ------------------------------------------------------------------------------------ hand cases


def _hand(missing: bool = False) -> tuple[Qrels, Run]:
    """q1: a=2, b=0, c=1, d=-1 (pooled, unjudged), e=1 (not retrieved): R = 3 at level 1.
    Its ranking: x (not in the pool), a, b, d, c: labels -1, 2, 0, -2, 1.
    q2: only a grade-0 document, retrieved at rank 1 (no relevant document).
    q3 (qrels only): a query the run lacks."""
    rows = [("q1", "a", 2), ("q1", "b", 0), ("q1", "c", 1), ("q1", "d", -1), ("q1", "e", 1), ("q2", "z", 0)]
    rows += [("q3", "a", 1)] if missing else []
    qids = sorted({r[0] for r in rows})
    qrels = Qrels(
        qids,
        np.array([qids.index(r[0]) for r in rows], np.int32),
        np.array([r[1].encode() for r in rows]),
        np.array([r[2] for r in rows]),
    )
    docs = [("q1", "x", 5.0), ("q1", "a", 4.0), ("q1", "b", 3.0), ("q1", "d", 2.0), ("q1", "c", 1.0)]
    docs += [("q2", "z", 1.0)]
    run = Run(
        ["q1", "q2"],
        np.array([0 if r[0] == "q1" else 1 for r in docs], np.int32),
        np.array([r[1].encode() for r in docs]),
        np.array([r[2] for r in docs]),
        tag="hand",
    )
    return qrels, run


def _q1(measures: list[str], **options) -> dict[str, float]:
    return evaluate(*_hand(), measures, **options).per_query()["q1"]


def test_set_measures_on_a_hand_case():
    got = _q1(["set_P", "set_recall", "set_relative_P", "set_map", "set_F", "set_F.0.5"])
    p, r = 2 / 5, 2 / 3  # 2 relevant of 5 retrieved, R = 3
    assert got == pytest.approx(
        {
            "set_P": p,
            "set_recall": r,
            "set_relative_P": 2 / 3,  # 2 / min(5, 3)
            "set_map": p * r,
            "set_F": 2 * p * r / (p + r),
            "set_F_0.5": 1.5 * p * r / (0.5 * p + r),
        }
    )


def test_counts_utility_unjudged_and_relative_precision_on_a_hand_case():
    got = _q1(["num_nonrel_judged_ret", "utility", "utility.2,-1,-0.5,0", "unj.1,5,10", "relative_P.2,5,50"])
    assert got == pytest.approx(
        {
            "num_nonrel_judged_ret": 1,  # b
            "utility": 2 - 3,  # relevant retrieved - non-relevant retrieved
            "utility_2,-1,-0.5,0": 2 * 2 - 3 - 0.5 * 1,
            "unj_1": 1.0,  # x is outside the pool
            "unj_5": 2 / 5,  # x and d
            "unj_10": 2 / 10,  # k past the ranking: still / k
            "relative_P_2": 1 / 2,
            "relative_P_5": 2 / 3,  # / min(5, R)
            "relative_P_50": 2 / 3,
        }
    )


def test_interpolated_precision_on_a_hand_case():
    # P@1..5 = 0, 1/2, 1/3, 1/4, 2/5; relevant documents at ranks 2 and 5
    names = ["iprec_at_recall.0,0.3,0.5,1", "11pt_avg.0,0.5", "Rprec_mult.0.2,1,2"]
    got = _q1(names)
    assert got == pytest.approx(
        {
            "iprec_at_recall_0.00": 1 / 2,  # from the first relevant document on
            "iprec_at_recall_0.30": 1 / 2,  # lround(0.9) = 1 relevant document
            "iprec_at_recall_0.50": 2 / 5,  # lround(1.5) = 2
            "iprec_at_recall_1.00": 0.0,  # 3 relevant documents never reached
            "11pt_avg_0,0.5": (1 / 2 + 2 / 5) / 2,
            "Rprec_mult_0.20": 0.0,  # P@(int)(0.6 + 0.9) = P@1
            "Rprec_mult_1.00": 1 / 3,  # P@3
            "Rprec_mult_2.00": 2 / 6,  # 6 past the 5 retrieved: / 6
        }
    )


def test_inferred_ap_and_binary_gain_on_a_hand_case():
    got = _q1(["infAP", "binG"])
    eps = 1e-5
    # a at j=1: nothing judged above; c at j=4: one relevant, one non-relevant, one pooled above
    infap = (0.5 + (1 / 5 + (4 / 5) * (3 / 4) * ((1 + eps) / (2 + 2 * eps)))) / 3
    # a has 1 non-relevant document above it (x), c has 3 (x, b, d)
    bing = (1 / math.log2(3) + 1 / math.log2(5)) / 3
    assert got == pytest.approx({"infAP": infap, "binG": bing})


def test_gain_walk_measures_on_a_hand_case():
    # gains by rank 0, 2, 0, 0, 1; ideal gains 2, 1, 1 (a, c, e)
    got = _q1(["G", "ndcg_rel", "Rndcg"])
    dcg = [0, 2 / math.log2(3), 2 / math.log2(3), 2 / math.log2(3), 2 / math.log2(3) + 1 / math.log2(6)]
    idcg = [2, 2 + 1 / math.log2(3), 2 + 1 / math.log2(3) + 1 / math.log2(4)]
    # G: costs max(ideal, 1) = 2, 1, 1, 1, 1 (cumulative 2, 3, 4, 5, 6), gains so far 0, 2, 2, 2, 3
    g = (2 / math.log2(2 + 3 - 2) + 1 / math.log2(2 + 6 - 3)) / 4
    # ndcg_rel: NDCG at ranks 2 and 5, and DCG@end / IDCG for the third relevant document (e)
    ndcg_rel = (dcg[1] / idcg[1] + dcg[4] / idcg[2] + dcg[4] / idcg[2]) / 3
    # Rndcg: NDCG@1 (the ideal gain drops 2 -> 1), NDCG@3 (1 -> 0), NDCG@5 (the list's end)
    rndcg = (dcg[0] / idcg[0] + dcg[2] / idcg[2] + dcg[4] / idcg[2]) / 3
    assert got == pytest.approx({"G": g, "ndcg_rel": ndcg_rel, "Rndcg": rndcg})


def test_geometric_means_floor_zero_at_trec_eval_min():
    result = evaluate(*_hand(), ["gm_map", "map", "gm_bpref"])
    ap = (1 / 2 + 2 / 5) / 3  # q2 has AP 0: floored at 1e-5
    assert result.means["gm_map"] == pytest.approx(math.sqrt(ap * 1e-5))
    assert result.per_query()["q1"]["gm_map"] == result.per_query()["q1"]["map"]


def test_query_without_relevant_document():
    got = evaluate(*_hand(), ["all_trec"]).per_query()["q2"]
    assert got["num_nonrel_judged_ret"] == 1
    assert got["utility"] == -1
    others = set(got) - {"num_q", "num_ret", "num_nonrel_judged_ret", "utility"}
    assert all(got[name] == 0 for name in others)


def test_relstring_and_runid():
    result = evaluate(*_hand(), ["relstring", "relstring.3", "runid", "P_5"])
    assert result.metrics == ["P_5"]  # the strings are not numbers to average
    assert result.texts["relstring"] == ["-20.1", "0"]  # outside the pool, 2, 0, pooled unjudged, 1
    assert result.texts["relstring_3"] == ["-20", "0"]
    assert result.texts["runid"] == ["hand", "hand"]


def test_query_missing_from_the_run_scores_as_trec_eval_scores_it():
    # trec_eval -c ranks one document outside the pool for it, then empties a few measures
    names = ["all_trec", "utility.1,2,3,4", "relstring.3", "rbp_resid.p=0.8"]
    result = evaluate(*_hand(missing=True), names, missing_as_zero=True)
    got = result.per_query()["q3"]
    kept = {"num_q": 1, "num_rel": 1, "utility_1,2,3,4": 2 + 3 * 1 - 4 * 2, "rbp_resid_p=0.8": 1.0}
    assert {name: value for name, value in got.items() if value} == kept
    assert result.texts["relstring"][-1] == "" and result.texts["relstring_3"][-1] == "-"


def test_judged_only_empty_list_gives_trec_eval_nan(capsys, tmp_path):
    # every retrieved document unjudged: under -J the list is empty and trec_eval divides 0 by 0
    (tmp_path / "qrels").write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    (tmp_path / "run").write_text("1 Q0 x 1 3 r\n1 Q0 y 2 2 r\n2 Q0 c 1 1 r\n")
    files = str(tmp_path / "qrels"), str(tmp_path / "run")
    out = _ours(capsys, *files, ["-J", "-q"], ["iprec_at_recall.0,0.5"])
    assert "iprec_at_recall_0.00  \t1\t  -nan" in out.splitlines()
    assert "iprec_at_recall_0.50  \t1\t0.0000" in out.splitlines()
    assert "iprec_at_recall_0.00  \tall\t  -nan" in out.splitlines()


def test_ir_measures_spellings_compute_the_trec_eval_measures():
    names = ["SetP", "SetR", "SetF", "SetF(beta=0.5)", "SetAP", "IPrec@0.5", "infAP", "SetP(relative=True)"]
    trec = ["set_P", "set_recall", "set_F", "set_F.0.5", "set_map", "iprec_at_recall.0.5", "infAP"]
    trec += ["set_relative_P"]
    ours, theirs = _q1(names), _q1(trec)
    assert list(ours.values()) == list(theirs.values())
    judged = _q1(["SetP(judged_only=True)", "IPrec(judged_only=True)@0"])
    assert judged == pytest.approx({"SetP(judged_only=True)": 2 / 3, "IPrec(judged_only=True)@0": 1.0})


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("utility.1,2", "4 coefficients"),
        ("ndcg_cut.0", "positive integer"),
        ("iprec_at_recall.0.5,0.5", "duplicate"),
        ("set_F.x", "must be a number"),
        ("IPrec", "recall point"),
        ("set_P.", "parameters after the dot"),
    ],
)
def test_bad_parameters_are_refused(name, message):
    with pytest.raises(ValueError, match=message):
        parse_measures([name])


def test_trec_eval_reads_cutoffs_as_atol():
    # trec_eval's own test asks ndcg_cut.10,20,23.4: 23.4 is read as 23
    names = [m.name for m in parse_measures(["ndcg_cut.10,20,23.4"])]
    assert names == ["ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"]


def test_new_measures_need_an_ordered_tie_policy():
    with pytest.raises(ValueError, match="one order"):
        evaluate(*_hand(), ["infAP"], ties="average")


def test_ir_measures_provider_computes_the_set_and_interpolated_measures():
    ir_measures = pytest.importorskip("ir_measures")
    pytest.importorskip("pytrec_eval")
    from ir_measures import IPrec, SetAP, SetF, SetP, SetR, SetRelP, infAP

    from ignite_ranking import ir_measures as provider

    rng = np.random.default_rng(3)
    qrels, run = {}, {}
    for q in range(20):
        judged = rng.choice(60, rng.integers(1, 30), replace=False)
        qrels[f"q{q}"] = {f"d{d}": int(rng.choice([-1, 0, 0, 1, 2])) for d in judged}
        shown = rng.choice(60, rng.integers(1, 40), replace=False)
        run[f"q{q}"] = {f"d{d}": float(rng.integers(0, 10)) for d in shown}  # ties
    measures = [SetP, SetR, SetF, SetF(beta=0.5), SetAP, IPrec @ 0.0, IPrec @ 0.5, IPrec @ 1.0, infAP]
    measures += [SetRelP, SetP(rel=2), SetR(rel=2), infAP(rel=2), SetF(judged_only=True)]
    measures += [SetAP(judged_only=True), IPrec(judged_only=True) @ 0.3]
    ours = provider.calc_aggregate(measures, qrels, run)
    theirs = ir_measures.pytrec_eval.calc_aggregate(measures, qrels, run)
    want = {str(m): theirs[m] for m in measures}  # NaN where trec_eval divides 0 by 0, in both
    assert {str(m): ours[m] for m in measures} == pytest.approx(want, nan_ok=True)
