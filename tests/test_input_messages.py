"""Refusals of in-memory qrels and runs (dicts of dicts, ir_measures records, DataFrames) and of
the command line's integer flags name what was wrong: the query, the document, the expected form
and what was received (issue 32, items 9 and 14)."""

from __future__ import annotations

import collections
from fractions import Fraction

import numpy as np
import pytest

from ignite_ranking.cli import main
from ignite_ranking.trec import evaluate
from ignite_ranking.trec.io import Qrels

ir_measures = pytest.importorskip("ir_measures")
pd = pytest.importorskip("pandas")

from ir_measures import P, nDCG  # noqa: E402

from ignite_ranking import ir_measures as provider  # noqa: E402

QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"c": 1}}
BAD_SCORES = [
    (10**400, r"got an int beyond float64's range \(1329 bits\)"),
    ([1, 2], r"got list \[1, 2\]"),
    ("abc", "got str 'abc'"),
    (None, "got None"),
    (Fraction(10**400, 3), r"got Fraction Fraction\(1000\.\.\.0+, 3\)"),
    (float("nan"), "got NaN"),
]
Row = collections.namedtuple("Row", ["query_id", "doc_id", "score"])


def _forms(score, doc):
    """The run ``q2 -> {doc: score}`` after a good query, in each in-memory form."""
    run = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"x": 1.0, doc: score}}
    rows = [Row(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    frame = pd.DataFrame({"query_id": [r.query_id for r in rows], "doc_id": [r.doc_id for r in rows]})
    frame["score"] = pd.Series([r.score for r in rows], dtype=object)
    return {"dict": run, "records": rows, "frame": frame}


@pytest.mark.parametrize("doc", ["c", 7], ids=["str ids", "int ids"])
@pytest.mark.parametrize(("score", "received"), BAD_SCORES, ids=[str(s)[:8] for s, _ in BAD_SCORES])
def test_a_bad_score_names_query_document_and_value(score, received, doc):
    for form, run in _forms(score, doc).items():
        match = rf"run: query 'q2', document {doc!r}: the score must be a number \(.*\), {received}$"
        with pytest.raises(ValueError, match=match):
            provider.calc_aggregate([nDCG @ 10, P @ 1], QRELS, run)
        if form == "dict":  # trec.evaluate, through both of its dict paths
            qrels = provider.as_qrels(QRELS)
            for ties in ("trec", "first"):
                with pytest.raises(ValueError, match=match):
                    evaluate(qrels, run, ["P_1"], ties=ties)


@pytest.mark.parametrize(("grade", "received"), BAD_SCORES[:-1], ids=[str(s)[:8] for s, _ in BAD_SCORES[:-1]])
def test_a_bad_grade_names_query_document_and_value(grade, received):
    qrels = {"q1": {"a": 1}, "q2": {"c": 1, "d": grade}}
    match = rf"qrels: query 'q2', document 'd': the relevance grade must be a number \(.*\), {received}$"
    with pytest.raises(ValueError, match=match):
        provider.calc_aggregate([P @ 1], qrels, {"q1": {"a": 1.0}})


@pytest.mark.parametrize("kind", ["qrels", "run"])
def test_a_query_that_maps_to_none(kind):
    good = {"q1": {"a": 1.0}}
    data = {"q1": {"a": 1}, "q2": None}
    qrels, run = (data, good) if kind == "qrels" else (QRELS, data)
    match = rf"{kind}: a dict of dicts maps each query id to a dict of document id -> value; "
    match += "query 'q2' maps to None"
    with pytest.raises(TypeError, match=match):
        provider.calc_aggregate([P @ 1], qrels, run)
    if kind == "run":
        for ties in ("trec", "first"):
            with pytest.raises(TypeError, match=match):
                evaluate(provider.as_qrels(QRELS), run, ["P_1"], ties=ties, missing_as_zero=True)


def test_accepted_scores_keep_their_values():
    # numeric str, ints, bools, numpy scalars and infinities are read as numpy reads them
    run = {"q1": {"a": "0.5", "b": True}, "q2": {"c": np.float32(1.5), "x": float("inf"), "y": 3}}
    floats = {q: {d: float(s) for d, s in docs.items()} for q, docs in run.items()}
    measures = [nDCG @ 10, P @ 1]
    assert provider.calc_aggregate(measures, QRELS, run) == provider.calc_aggregate(measures, QRELS, floats)


def test_trec_evaluate_names_the_qrels_forms_it_takes():
    with pytest.raises(TypeError, match=r"qrels must be a Qrels from read_qrels .* got dict"):
        evaluate(QRELS, {"q1": {"a": 1.0}}, ["P_1"])
    with pytest.raises(TypeError, match=r"qrels must be a Qrels .* got dict"):
        evaluate(QRELS, {"q1": {"a": 1.0}}, ["alpha_nDCG@5"])
    qrels = Qrels(["q1"], np.zeros(1, np.int32), np.array([b"a"]), np.array([1]))
    with pytest.raises(TypeError, match="diversity measures need subtopic qrels: a DiversityQrels"):
        evaluate(qrels, {"q1": {"a": 1.0}}, ["alpha_nDCG@5"])


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels").write_text("q1 0 a 1\n")
    (tmp_path / "run").write_text("q1 Q0 a 1 1.0 t\n")
    (tmp_path / "run2").write_text("q1 Q0 a 1 2.0 u\n")
    return str(tmp_path / "qrels"), str(tmp_path / "run"), str(tmp_path / "run2")


@pytest.mark.parametrize(
    ("command", "flag", "value", "minimum"),
    [
        ("evaluate", "--threads", "0", 1),
        ("evaluate", "--threads", "-3", 1),
        ("evaluate", "--batch-size", "0", 1),
        ("compare", "--seed", "-1", 0),
        ("compare", "--resamples", "0", 1),
    ],
)
def test_integer_flags_out_of_range_are_argparse_errors(files, capsys, command, flag, value, minimum):
    runs = files[1:] if command == "compare" else files[1:2]
    with pytest.raises(SystemExit) as exit_:
        main([command, files[0], *runs, "-m", "P_1", flag, value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: must be an integer >= {minimum}, got {value}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("threads", [0, -3, 1.5, True])
def test_evaluate_refuses_a_thread_count_below_one(threads):
    qrels = Qrels(["q1"], np.zeros(1, np.int32), np.array([b"a"]), np.array([1]))
    with pytest.raises(ValueError, match=rf"num_threads must be None or an int >= 1, got {threads!r}"):
        evaluate(qrels, {"q1": {"a": 1.0}}, ["P_1"], num_threads=threads)
