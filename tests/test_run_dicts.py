"""A run given as a dict of dicts is ranked at its judged documents (trec/run_dicts.py): every
trec_eval measure equals what the same run read into columns gives, ties and all."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from ignite_ranking.trec import Qrels, Run, evaluate
from ignite_ranking.trec.columns import DictQrels, columns, doc_ids, str_keyed_columns
from ignite_ranking.trec.run_dicts import DictQueries

SCORES = (0.5, 1.0, 1.5, 2.0, -np.inf, np.inf, 1.0 + 2**-30)  # ties, infinities, a float32 tie
IDS = ("d1", "d2", "d10", "D1", "é", "ä9", "z", "ab", "a", "ß", "0")  # str order = UTF-8 byte order


def _random(seed: int, queries: int = 25):
    rng = random.Random(seed)
    docs = [*IDS, *(f"x{i}" for i in range(40))]
    qrels, run = {}, {}
    for q in range(queries):
        listed = rng.sample(docs, rng.randint(0, 35))
        run[f"q{q}"] = {d: rng.choice(SCORES) if rng.random() < 0.7 else rng.random() for d in listed}
        judged = rng.sample(docs, rng.randint(0, 20))
        qrels[f"q{q}"] = {d: rng.choice((-1, 0, 0, 1, 2, 3)) for d in judged}
    run["not_judged"] = {"d1": 1.0}
    return {q: v for q, v in qrels.items() if v}, run


def _qrels(data, keep_ids: bool = False) -> Qrels:
    """The qrels' columns; with ``keep_ids``, also their ``str`` ids, as ``as_qrels`` keeps them
    (the dict path then looks those up instead of decoding the docnos)."""
    qids, codes, docno, rel, ids = str_keyed_columns(data, "qrels")
    if keep_ids and ids is not None:
        return DictQrels(qids, codes, None, rel.astype(np.int64), ids=ids)
    return Qrels(qids, codes, doc_ids(ids.tolist()) if docno is None else docno, rel.astype(np.int64))


def _run(data) -> Run:
    return Run(*columns(data, "run"))


@pytest.fixture
def dict_calls(monkeypatch):
    """How many batches the dict path ranked."""
    calls = []
    ranked = DictQueries.ranked

    def counting(self, *args, **kwargs):
        calls.append(1)
        return ranked(self, *args, **kwargs)

    monkeypatch.setattr(DictQueries, "ranked", counting)
    return calls


OPTIONS = [
    {},
    {"missing_as_zero": True},
    {"judged_only": True},
    {"relevance_level": 0},
    {"relevance_level": 2, "score_precision": "float32"},
    {"score_precision": "float32", "missing_as_zero": True},
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "default")
def test_every_trec_measure_equals_the_columns_path(seed, options, dict_calls):
    qrels, run = _random(seed)
    expected = evaluate(_qrels(qrels), _run(run), ["all_trec"], **options)
    got = evaluate(_qrels(qrels, keep_ids=seed % 2 == 1), run, ["all_trec"], **options)
    assert dict_calls, "the dict path was not taken"
    assert got.queries == expected.queries and got.metrics == expected.metrics
    np.testing.assert_array_equal(got.values, expected.values)  # bitwise, NaN where NaN
    assert got.texts == {**expected.texts, "runid": [""] * len(got.queries)}
    assert got.means == pytest.approx(expected.means, nan_ok=True, rel=0, abs=0)


def test_small_batches_and_cutoffs_only(dict_calls):
    qrels, run = _random(7, queries=40)
    measures = ["P.1,5", "ndcg_cut.3", "recip_rank", "success.1"]
    expected = evaluate(_qrels(qrels), _run(run), measures, batch_size=3)
    got = evaluate(_qrels(qrels), run, measures, batch_size=3)
    assert len(dict_calls) > 5
    np.testing.assert_array_equal(got.values, expected.values)


@pytest.mark.parametrize("keep_ids", [False, True])
def test_qrels_not_grouped_by_query(keep_ids, dict_calls):
    ids = np.array(["a", "c", "b", "a"], dtype=object) if keep_ids else None
    qrels = Qrels(["q", "r"], np.array([0, 1, 0, 1], np.int32), np.array([b"a", b"c", b"b", b"a"]),
                  np.array([1, 2, 0, 1]), ids=ids)  # fmt: skip
    run = {"q": {"a": 1.0, "b": 2.0, "x": 2.0}, "r": {"a": 3.0, "c": 3.0}}
    expected = evaluate(qrels, _run(run), ["all_trec"])
    got = evaluate(qrels, run, ["all_trec"])
    assert dict_calls
    np.testing.assert_array_equal(got.values, expected.values)


def test_the_trec_order_of_tied_documents():
    # all tied: trec_eval ranks them by docno, descending (strcmp): "é" > "z" > "b" > "a" > "B"
    run = {"q": {"a": 1.0, "é": 1.0, "B": 1.0, "z": 1.0, "b": 1.0}}
    for relevant, rank in [("é", 1), ("z", 2), ("b", 3), ("a", 4), ("B", 5)]:
        result = evaluate(_qrels({"q": {relevant: 1}}), run, ["recip_rank"])
        assert result.means["recip_rank"] == 1 / rank


def test_ids_that_are_not_str_go_through_columns(dict_calls):
    # 7 and "7" are one document there, as in a file
    qrels = {"q": {"7": 1, "8": 1}}
    result = evaluate(_qrels(qrels), {"q": {7: 2.0, 8: 1.0}}, ["P.2"])
    assert result.means["P_2"] == 1.0 and not dict_calls
    with pytest.raises(ValueError, match="'7' appears twice for query 'q'"):
        evaluate(_qrels(qrels), {"q": {7: 2.0, "7": 1.0}}, ["P.2"])


def test_a_run_mixing_str_and_int_ids_goes_through_columns_whatever_its_key_order(dict_calls):
    # the dict path looks "5" up as it is: a str first id once sent 5 there, where it matched nothing
    qrels = _qrels({"q": {"5": 1, "a": 0}})
    orders = ({"q": {"a": 1.0, 5: 2.0}}, {"q": {5: 2.0, "a": 1.0}}, {"p": {"x": 1}, "q": {"a": 1.0, 5: 2.0}})
    for run in orders:
        result = evaluate(qrels, run, ["recip_rank", "P.1"])
        assert result.means == {"recip_rank": 1.0, "P_1": 1.0}, run
    assert not dict_calls
    with pytest.raises(ValueError, match="'7' appears twice for query 'q'"):
        evaluate(qrels, {"q": {"7": 1.0, 7: 2.0}}, ["P.2"])


def test_other_tie_policies_go_through_columns(dict_calls):
    qrels, run = _random(3)
    got = evaluate(_qrels(qrels), run, ["map", "P.5"], ties="first")
    expected = evaluate(_qrels(qrels), _run(run), ["map", "P.5"], ties="first")
    np.testing.assert_array_equal(got.values, expected.values)
    assert not dict_calls


def test_bad_runs_are_refused():
    qrels = _qrels({"q": {"a": 1}, "r": {"a": 1}})
    with pytest.raises(ValueError, match=r"run: query 'r', document 'a': the score must be .* got NaN"):
        evaluate(qrels, {"q": {"a": 1.0}, "r": {"b": 2.0, "a": float("nan")}}, ["P.5"])
    with pytest.raises(TypeError, match=r"run: a dict of dicts .* query 'q' maps to list \['a'\]"):
        evaluate(qrels, {"q": ["a"]}, ["P.5"])
    with pytest.raises(ValueError, match="no query of the run is in the qrels"):
        evaluate(qrels, {"x": {"a": 1.0}}, ["P.5"])
    duplicate = Qrels(["q"], np.zeros(2, np.int32), np.array([b"a", b"a"]), np.array([1, 0]))
    with pytest.raises(ValueError, match="'a' is judged twice for query 'q'"):
        evaluate(duplicate, {"q": {"a": 1.0}}, ["P.5"])


def test_scores_of_other_types_are_read_as_numpy_reads_them(dict_calls):
    # ints, bools, numpy scalars and Fractions through struct; a str through numpy's conversion
    qrels = _qrels({"q": {"a": 1, "b": 1, "c": 0}, "r": {"a": 1}})
    run = {"q": {"a": 2, "b": np.float32(1.5), "c": True, "d": Fraction(7, 4)}, "r": {"a": "2.5", "b": 3}}
    floats = {q: {d: float(s) for d, s in docs.items()} for q, docs in run.items()}
    got = evaluate(qrels, run, ["map", "P.2", "recip_rank"])
    assert dict_calls
    np.testing.assert_array_equal(got.values, evaluate(qrels, floats, ["map", "P.2", "recip_rank"]).values)
    with pytest.raises(ValueError, match=r"run: query 'r', document 'a': the score must be .* got None"):
        evaluate(qrels, {"q": {"a": 1.0}, "r": {"a": None}}, ["P.5"])


def test_a_docno_with_a_newline():
    qrels = {"q": {"a\nb": 1, "c": 1}}
    run = {"q": {"a\nb": 1.0, "c": 1.0, "d": 2.0}}
    got = evaluate(_qrels(qrels), run, ["map", "P.3"])
    expected = evaluate(_qrels(qrels), _run(run), ["map", "P.3"])
    np.testing.assert_array_equal(got.values, expected.values)


def test_qrels_docnos_that_are_not_utf8_match_nothing():
    qrels = Qrels(["q"], np.zeros(2, np.int32), np.array([b"\xe9t\xe9", b"a"]), np.array([1, 1]))
    run = {"q": {"\xe9t\xe9": 2.0, "a": 1.0}}  # "été": its UTF-8 bytes are not the qrels' Latin-1
    got = evaluate(qrels, run, ["P.1", "P.2", "num_rel_ret"])
    expected = evaluate(qrels, _run(run), ["P.1", "P.2", "num_rel_ret"])
    np.testing.assert_array_equal(got.values, expected.values)
    assert got.means == {"P_1": 0.0, "P_2": 0.5, "num_rel_ret": 1.0}
