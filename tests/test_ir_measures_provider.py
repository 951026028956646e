"""The ir_measures provider: same values as ir_measures' pytrec_eval provider, every input form."""

from __future__ import annotations

import numpy as np
import pytest

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("pytrec_eval")
pd = pytest.importorskip("pandas")

from ir_measures import AP, RR, NumQ, NumRel, NumRelRet, NumRet, P, R, Rprec, Success, nDCG  # noqa: E402

from ignite_ranking import ir_measures as provider  # noqa: E402

MEASURES = [
    *(nDCG @ 10, nDCG, nDCG @ 3, P @ 5, P(rel=2) @ 5, R @ 100, R @ 5, AP, AP @ 100, AP(rel=2), RR, RR(rel=2)),
    *(Success @ 1, Success @ 10, Rprec, Rprec(rel=2), NumQ, NumRel, NumRet, NumRelRet, NumRet(rel=2)),
]


def _data(seed: int, ties: bool):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(150):
        pool = [f"d{i}" for i in rng.choice(2000, 80, replace=False)]
        judged = rng.choice(80, int(rng.integers(1, 30)), replace=False)
        if q % 13 != 4:  # some run queries are not judged
            qrels[f"q{q}"] = {pool[i]: int(rng.choice([0, 0, 1, 2, 3])) for i in judged}
        if q % 11 == 2:  # some judged queries are not in the run: they count as 0
            continue
        docs = rng.choice(80, int(rng.integers(1, 80)), replace=False)
        scores = np.round(rng.random(len(docs)) * 6) / 3 if ties else rng.random(len(docs))
        if ties and q % 5 == 0:  # equal as float32, as pytrec_eval stores them
            scores = scores + rng.integers(0, 2, len(docs)) * 1e-12
        run[f"q{q}"] = {pool[i]: float(s) for i, s in zip(docs, scores, strict=True)}
    return qrels, run


def _per_query(metrics) -> dict:
    return {(str(m.measure), m.query_id): m.value for m in metrics}


@pytest.fixture(scope="module")
def data():
    return _data(0, ties=True)


def test_equals_pytrec_eval_provider_with_ties(data):
    qrels, run = data
    want = _per_query(ir_measures.pytrec_eval.iter_calc(MEASURES, qrels, run))
    got = _per_query(provider.iter_calc(MEASURES, qrels, run))
    assert got.keys() == want.keys()
    np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=0, atol=1e-12)
    aggregate = provider.calc_aggregate(MEASURES, qrels, run)
    expected = ir_measures.pytrec_eval.calc_aggregate(MEASURES, qrels, run)
    assert aggregate == pytest.approx(expected, abs=1e-12)


def test_rr_at_k_equals_ir_measures_without_ties():
    # ir_measures computes RR@k with its msmarco provider (ties by doc id ascending): compare on
    # tie-free scores.
    qrels, run = _data(1, ties=False)
    measures = [RR @ 10, RR(rel=2) @ 5]
    want = ir_measures.calc_aggregate(measures, qrels, run)
    assert provider.calc_aggregate(measures, qrels, run) == pytest.approx(want, abs=1e-12)


def test_input_forms_give_the_same_values(data, tmp_path):
    qrels, run = data
    want = provider.calc_aggregate(MEASURES, qrels, run)
    qrels_rows = [ir_measures.Qrel(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]
    run_rows = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    (tmp_path / "qrels").write_text("".join(f"{r.query_id} 0 {r.doc_id} {r.relevance}\n" for r in qrels_rows))
    (tmp_path / "run").write_text("".join(f"{r.query_id} Q0 {r.doc_id} 0 {r.score!r} t\n" for r in run_rows))
    forms = [
        (pd.DataFrame(qrels_rows), pd.DataFrame(run_rows)),
        (iter(qrels_rows), iter(run_rows)),
        (str(tmp_path / "qrels"), str(tmp_path / "run")),
        (
            ir_measures.read_trec_qrels(str(tmp_path / "qrels")),
            ir_measures.read_trec_run(str(tmp_path / "run")),
        ),
    ]
    for form_qrels, form_run in forms:
        assert provider.calc_aggregate(MEASURES, form_qrels, form_run) == pytest.approx(want, abs=1e-12)


def test_evaluator_scores_several_runs(data):
    qrels, run = data
    evaluator = provider.evaluator([P @ 5, nDCG @ 10], qrels)
    first = evaluator.calc_aggregate(run)
    assert evaluator.calc_aggregate(run) == first
    reversed_run = {q: {d: -s for d, s in docs.items()} for q, docs in run.items()}
    assert evaluator.calc_aggregate(reversed_run) != first


def test_float64_option_and_registry():
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0 + 1e-12, "b": 1.0}}
    assert provider.calc_aggregate([RR], qrels, run)[RR] == 0.5  # float32: tie, "b" first
    exact = provider.IgniteRankingProvider(score_precision="float64")
    assert exact.calc_aggregate([RR], qrels, run)[RR] == 1.0
    assert ir_measures.providers.registry["ignite_ranking"] is provider.provider


def test_unsupported_measures_are_refused():
    with pytest.raises(ValueError, match="not supported"):
        provider.calc_aggregate(
            [ir_measures.parse_measure("Compat(p=0.95)")], {"q": {"a": 1}}, {"q": {"a": 1.0}}
        )
    with pytest.raises(ValueError, match="integer gains >= 0"):  # pytrec_eval: a negative grade is unjudged
        provider.calc_aggregate([nDCG(gains={0: 1, 1: -1}) @ 10], {"q": {"a": 1}}, {"q": {"a": 1.0}})
    assert not provider.provider.supports(ir_measures.parse_measure("Compat(p=0.95)"))
    assert provider.provider.supports(ir_measures.parse_measure("R(judged_only=True)@10"))
    assert provider.provider.supports(ir_measures.parse_measure("ERR@10"))


def test_a_parameter_of_the_wrong_type_is_a_value_error():
    # Regression: ir_measures checks parameters by assert, which reached the user as AssertionError.
    qrels, run = {"q": {"a": 1, "b": 3}}, {"q": {"a": 0.9, "b": 0.5}}
    with pytest.raises(ValueError, match=r"invalid measure INST\(.*'T': 2\}\): invalid param T=2 .*T=2\.0"):
        provider.calc_aggregate([ir_measures.INST(max_rel=3, T=2)], qrels, run)
    with pytest.raises(ValueError, match=r"unsupported params found: \['foo'\]$"):  # no repr: a KeyError
        provider.calc_aggregate([ir_measures.INST(max_rel=3, foo=1)], qrels, run)
    assert provider.calc_aggregate([ir_measures.INST(max_rel=3, T=2.0)], qrels, run)


def test_non_ascii_and_integer_document_ids():
    qrels = {"q": {"dé": 1, "b": 0}, "r": {7: 1}}
    run = {"q": {"dé": 1.0, "b": 2.0}, "r": {7: 1.0, 8: 2.0}}
    as_str = {q: {str(d): v for d, v in docs.items()} for q, docs in qrels.items()}
    want = ir_measures.pytrec_eval.calc_aggregate(
        [RR, P @ 1], as_str, {q: {str(d): v for d, v in docs.items()} for q, docs in run.items()}
    )
    assert provider.calc_aggregate([RR, P @ 1], qrels, run) == pytest.approx(want)
    frame = pd.DataFrame([("q", "dé", 1)], columns=["query_id", "doc_id", "relevance"])
    assert provider.calc_aggregate([RR], frame, run)[RR] == 0.5


def test_iter_calc_order_matches_the_base_evaluator(data):
    # unanswered qrels queries come last, sorted by measure name then query id, with value 0
    qrels, run = data
    tail = 2 * len(set(qrels) - set(run))
    ours = [(m.query_id, str(m.measure), m.value) for m in provider.iter_calc([P @ 5, AP], qrels, run)]
    theirs = [
        (m.query_id, str(m.measure), m.value)
        for m in ir_measures.pytrec_eval.iter_calc([P @ 5, AP], qrels, run)
    ]
    assert tail and ours[-tail:] == theirs[-tail:]
    assert {(q, m): v for q, m, v in ours} == pytest.approx({(q, m): v for q, m, v in theirs})


def test_calc_aggregate_is_the_aggregators_value_bit_for_bit(data):
    # the mean and sum are taken in C; they must equal ir_measures' aggregators fed one value at a
    # time (unanswered queries' defaults last), as the base evaluator feeds them
    qrels, run = data
    measures = [AP, nDCG @ 10, P @ 5, RR, NumQ, NumRelRet, NumRet]
    values = {}
    for m in provider.iter_calc(measures, qrels, run):
        values.setdefault(m.measure, []).append(m.value)
    want = {}
    for m, listed in values.items():
        aggregator = m.aggregator()
        for v in listed:
            aggregator.add(v)
        want[m] = aggregator.result()
    got = provider.calc_aggregate(measures, qrels, run)
    assert set(got) == set(want) and all(got[m] == want[m] for m in measures)
    # -0.0 and NaN added in order, and no value at all
    aggregate = provider._aggregate
    for m in (AP, NumQ):
        column = np.array([-0.0, 1e-300, 3.0, 1e16, -1e16, 0.1])
        fed = m.aggregator()
        for v in [*column.tolist(), m.DEFAULT, m.DEFAULT]:
            fed.add(v)
        assert aggregate(m.aggregator(), column, 2, m.DEFAULT) == fed.result()
        empty = aggregate(m.aggregator(), np.zeros(0), 0, m.DEFAULT)
        assert repr(empty) == repr(m.aggregator().result())  # NaN for a mean, 0 for a sum
    assert np.isnan(aggregate(AP.aggregator(), np.array([1.0, np.nan]), 0, AP.DEFAULT))


@pytest.mark.parametrize("grade", [10**30, 2**53, -(2**53) - 2, float("inf"), float("nan"), 1.5])
@pytest.mark.parametrize("form", ["dict", "int ids", "frame"])
def test_grades_that_are_not_exact_integers_are_refused_naming_the_entry(grade, form):
    # Issue 32: 10**30 was cast to -2**63 (judged, but neither relevant nor non-relevant).
    run = {"q1": {"d1": 1.0}}
    if form == "dict":
        qrels = {"q0": {"a": 1}, "q1": {"d1": 1, "dé": grade}}
        doc = "'dé'"
    elif form == "int ids":
        qrels = {"q0": {5: 1}, "q1": {6: 1, 7: grade}}
        doc = "'7'"
    else:
        qrels = pd.DataFrame(
            [("q0", "a", 1), ("q1", "d1", 1), ("q1", "dé", grade)],
            columns=["query_id", "doc_id", "relevance"],
        )
        doc = "'dé'"
    with pytest.raises(
        ValueError, match=f"qrels: relevance must be integers .* for query 'q1', document {doc}"
    ):
        provider.calc_aggregate([P @ 5], qrels, run)


def test_grades_just_below_two_to_the_53_are_kept():
    qrels = {"q": {"a": 2**53 - 1, "b": 1 - 2**53, "c": 2}}
    assert provider.as_qrels(qrels).rel.tolist() == [2**53 - 1, 1 - 2**53, 2]
