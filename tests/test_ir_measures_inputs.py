"""The provider's in-memory inputs (dicts of dicts, DataFrames, rows): the file readers' columns,
the file path's values, and pytrec_eval's provider's where files cannot say it (empty queries)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("pytrec_eval")
pd = pytest.importorskip("pandas")

from ir_measures import AP, RR, NumQ, NumRel, NumRelRet, NumRet, P, R, Rprec, nDCG  # noqa: E402

from ignite_ranking import ir_measures as provider  # noqa: E402
from ignite_ranking.trec import read_qrels, read_run  # noqa: E402
from ignite_ranking.trec.columns import columns, doc_ids  # noqa: E402

MEASURES = [nDCG @ 10, P @ 5, R @ 20, AP @ 20, AP, RR, Rprec, NumQ, NumRel, NumRet, NumRelRet]


def _write(tmp_path, qrels: dict, run: dict):
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()))
    run_path.write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, ds in run.items() for d, s in ds.items()))
    return str(qrels_path), str(run_path)


def _per_query(qrels, run, source=provider) -> dict:
    return {(m.query_id, str(m.measure)): m.value for m in source.iter_calc(MEASURES, qrels, run)}


def _data(seed: int, make_id):
    """Qrels and run with tied scores; some run queries unjudged, some judged queries not run."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(60):
        pool = [make_id(int(i)) for i in rng.choice(3000, 60, replace=False)]
        if q % 7 != 3:
            judged = rng.choice(60, int(rng.integers(1, 25)), replace=False)
            qrels[make_id(q)] = {pool[i]: int(rng.choice([0, 0, 1, 2])) for i in judged}
        if q % 9 != 5:
            docs = rng.choice(60, int(rng.integers(1, 60)), replace=False)
            run[make_id(q)] = {pool[i]: float(rng.integers(0, 8)) / 4 for i in docs}
    return qrels, run


@pytest.mark.parametrize(
    "make_id",
    [lambda i: f"d{i}", lambda i: i, lambda i: f"dé{i}", lambda i: f"id-{i}" if i % 2 else i],
    ids=["ascii", "int", "non-ascii", "mixed"],
)
def test_dicts_give_the_readers_columns_and_the_file_values(tmp_path, make_id):
    qrels, run = _data(0, make_id)
    qrels_path, run_path = _write(tmp_path, qrels, run)
    for data, read, name in ((qrels, read_qrels, "qrels"), (run, read_run, "run")):
        qids, codes, docs, values = columns(data, name)
        want = read(qrels_path if name == "qrels" else run_path)
        assert qids == want.qids
        np.testing.assert_array_equal(codes, want.qid)
        assert docs.dtype == want.docno.dtype
        np.testing.assert_array_equal(docs, want.docno)
        np.testing.assert_array_equal(values, want.rel if name == "qrels" else want.score)
    assert _per_query(qrels, run) == _per_query(qrels_path, run_path)
    frames = [
        pd.DataFrame(
            [(q, d, v) for q, ds in data.items() for d, v in ds.items()], columns=["query_id", "doc_id", f]
        )
        for data, f in ((qrels, "relevance"), (run, "score"))
    ]
    assert _per_query(*frames) == _per_query(qrels_path, run_path)


def test_qrels_from_dicts_keep_their_str_ids():
    # the dict path looks these up in a run's dicts as they are (trec/run_dicts.py)
    data = {"q": {"a": 1, "b": 0}, "r": {"é": 2, "x\ny": 1}, "s": {}}
    qrels = provider.as_qrels(data)
    assert qrels.ids.dtype == object and qrels.ids.tolist() == ["a", "b", "é", "x\ny"]
    # the bytes column is built only when read, which the dict path never does
    judged = provider.as_qrels({q: docs for q, docs in data.items() if docs})
    values = provider.calc_aggregate([P @ 2, AP], judged, {"q": {"a": 1.0, "c": 2.0}, "r": {"é": 0.5}})
    assert values == {P @ 2: 0.5, AP: 0.5}  # q: a at rank 2 of 1 relevant; r: é at 1 of 2
    assert judged._docno is None
    assert dataclasses.replace(judged, path="x").docno.tolist() == [b"a", b"b", "\xe9".encode(), b"x\ny"]
    for got, expected in zip(
        (qrels.qids, qrels.qid, qrels.docno, qrels.rel), columns(data, "qrels"), strict=True
    ):
        np.testing.assert_array_equal(got, expected)  # the same columns as every other input
    assert provider.as_qrels({"q": {"a": 1, 7: 0}}).ids is None  # 7 is judged as "7"
    # grades of other types read as numpy reads a column of them, packed or not
    for grades in ({"a": 2.0, "b": True, "c": np.int8(3)}, {"a": 2, "b": "1", "c": 3}):
        assert provider.as_qrels({"q": {"z": 0}, "r": grades}).rel.tolist() == [0, 2, 1, 3]


def test_doc_ids_of_every_kind():
    ids = ["a", "bb", "", "ccc"]
    assert doc_ids(ids).tolist() == [b"a", b"bb", b"", b"ccc"]
    assert doc_ids([b"x", b"yz"]).tolist() == [b"x", b"yz"]
    assert doc_ids([7, "7", 1.5]).tolist() == [b"7", b"7", b"1.5"]
    assert doc_ids(["é", "line\nbreak", 3]).tolist() == ["é".encode(), b"line\nbreak", b"3"]
    assert doc_ids([]).shape == (0,)
    long = "x" * 100  # wider than the gather's padding
    assert doc_ids([long, "é"]).tolist() == [long.encode(), "é".encode()]


def test_empty_queries_as_pytrec_eval_provider():
    # A qrels query with no judgement is not evaluated (it counts as unanswered); a run query with
    # no document counts as trec_eval -c counts a query without results: NumQ 1, NumRel R, the
    # rest 0. pytrec_eval's NumRel of such a query is 0 or R from one process to the next (and
    # some measure sets crash it there): NumRel is left out of the comparison.
    qrels = {"q1": {}, "q2": {"a": 1, "b": 2}, "q3": {"b": 1}, "q5": {"a": 1}}
    run = {"q1": {"a": 1.0}, "q2": {}, "q4": {"a": 2.0}, "q3": {"b": 1.0, "c": 3.0}, "q6": {}}
    got, want = _per_query(qrels, run), _per_query(qrels, run, ir_measures.pytrec_eval)
    assert got.pop(("q2", "NumRel")) == 2.0 and want.pop(("q2", "NumRel")) in (0.0, 2.0)
    assert got == want
    measures = [m for m in MEASURES if m != NumRel]
    for only in (run, {"q2": {}}, {"q9": {"a": 1.0}}):  # also: only empty queries, no shared query
        want = ir_measures.pytrec_eval.calc_aggregate(measures, qrels, only)
        assert provider.calc_aggregate(measures, qrels, only) == pytest.approx(want, nan_ok=True)
    assert provider.calc_aggregate([NumRel], qrels, run)[NumRel] == 3.0


def test_queries_of_one_side_only_count_as_pytrec_eval_counts_them():
    qrels, run = _data(1, lambda i: f"d{i}")
    assert set(qrels) - set(run) and set(run) - set(qrels)
    want = _per_query(qrels, run, ir_measures.pytrec_eval)
    got = _per_query(qrels, run)
    assert got.keys() == want.keys()
    np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=0, atol=1e-12)


def test_duplicate_documents_are_refused_as_from_files(tmp_path):
    # 7 and "7" are one document, as "7" twice in a file
    with pytest.raises(ValueError, match="'7' appears twice for query 'q'"):
        provider.calc_aggregate([P @ 5], {"q": {"7": 1}}, {"q": {7: 1.0, "7": 2.0}})
    with pytest.raises(ValueError, match="'7' is judged twice for query 'q'"):
        provider.calc_aggregate([P @ 5], {"q": {7: 1, "7": 0}}, {"q": {"7": 1.0}})
    qrels_path, run_path = _write(tmp_path, {"q": {"7": 1}}, {"q": {"7": 1.0}})
    with open(run_path, "a") as f:
        f.write("q Q0 7 0 2.0 t\n")
    with pytest.raises(ValueError, match="'7' appears twice for query 'q'"):
        provider.calc_aggregate([P @ 5], qrels_path, run_path)


def test_bad_dicts_are_refused():
    with pytest.raises(TypeError, match=r"run: a dict of dicts .* query 'q' maps to list"):
        provider.calc_aggregate([P @ 5], {"q": {"a": 1}}, {"q": ["a"]})
    with pytest.raises(ValueError, match=r"run: query 'q', document 'a': the score must be .* got NaN"):
        provider.calc_aggregate([P @ 5], {"q": {"a": 1}}, {"q": {"a": float("nan")}})
    with pytest.raises(ValueError, match="qrels: relevance must be integers"):
        provider.calc_aggregate([P @ 5], {"q": {"a": 0.5}}, {"q": {"a": 1.0}})
