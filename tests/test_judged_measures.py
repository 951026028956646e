"""RBP, ERR, bpref, Judged@k and judged-only lists against ir_measures, on random runs.

trec_eval 10 itself is checked in tests/test_trec_conformance.py (fixtures it printed); here
ir_measures' providers are the oracle: pytrec_eval for Bpref and judged_only=True, its own
Judged@k, and gdeval (the TREC Web track script, 5 decimals) for ERR@k. ir_measures counts a
qrels grade of -1 as judged where trec_eval does not, so these qrels have none.
"""

from __future__ import annotations

import numpy as np
import pytest

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("pytrec_eval")

from ignite_ranking.trec import Qrels, Run, evaluate  # noqa: E402


def _data(seed: int):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(60):
        qid = str(100 + q)  # gdeval wants numeric query ids
        pool = [f"d{i}" for i in rng.choice(2000, 60, replace=False)]
        judged = rng.choice(60, int(rng.integers(1, 40)), replace=False)
        grades = [0, 0, 1, 2, 3] if q % 9 else [0]  # some queries without a relevant document
        qrels[qid] = {pool[i]: int(rng.choice(grades)) for i in judged}
        docs = rng.choice(60, int(rng.integers(1, 60)), replace=False)
        run[qid] = {pool[i]: float(s) for i, s in zip(docs, rng.random(len(docs)), strict=True)}
    return qrels, run


def _ours(qrels: dict, run: dict, names: list[str]) -> dict:
    q_ids = list(qrels)
    rows = [(q_ids.index(q), d, g) for q in qrels for d, g in qrels[q].items()]
    qr = Qrels(
        q_ids,
        np.array([r[0] for r in rows], np.int32),
        np.array([r[1].encode() for r in rows]),
        np.array([r[2] for r in rows]),
    )
    runs = [(q_ids.index(q), d, s) for q in run for d, s in run[q].items()]
    ru = Run(
        q_ids,
        np.array([r[0] for r in runs], np.int32),
        np.array([r[1].encode() for r in runs]),
        np.array([r[2] for r in runs], np.float64),
    )
    return evaluate(qr, ru, names).per_query()


MEASURES = [
    "Judged@5",
    "Judged@20",
    "Bpref",
    "Bpref(rel=2)",
    "P(judged_only=True)@5",
    "P(judged_only=True)@20",
    "RR(judged_only=True)",
    "AP(judged_only=True)",
    "nDCG(judged_only=True)@10",
    "nDCG(judged_only=True)",
]


@pytest.mark.parametrize("seed", [0, 1])
def test_judged_measures_equal_ir_measures(seed):
    qrels, run = _data(seed)
    ours = _ours(qrels, run, MEASURES)
    parsed = [ir_measures.parse_measure(m) for m in MEASURES]
    theirs = {(v.query_id, str(v.measure)): v.value for v in ir_measures.iter_calc(parsed, qrels, run)}
    assert set(ours) == {q for q, _ in theirs}
    for (q, name), value in theirs.items():
        assert ours[q][name] == pytest.approx(value, abs=1e-12), (q, name)


def test_err_equals_gdeval():
    qrels, run = _data(2)
    names = ["ERR@5", "ERR@20"]
    ours = _ours(qrels, run, names)
    theirs = list(ir_measures.iter_calc([ir_measures.parse_measure(m) for m in names], qrels, run))
    assert theirs
    for value in theirs:
        # gdeval prints 5 decimals
        assert ours[value.query_id][str(value.measure)] == pytest.approx(value.value, abs=6e-6)


def _err(grades: list[float], k: int, max_grade: float = 4.0) -> float:
    """ERR@k from the definition, one rank at a time."""
    value, reach = 0.0, 1.0
    for rank, grade in enumerate(grades[:k], 1):
        stop = (2.0 ** min(max(grade, 0.0), max_grade) - 1.0) / 2.0**max_grade
        value += reach * stop / rank
        reach *= 1.0 - stop
    return value


def test_nerr_is_err_over_the_ideal_err():
    qrels, run = _data(3)
    ours = _ours(qrels, run, ["nERR@10", "nERR"])
    for q, docs in run.items():
        ranked = [qrels[q].get(d, -1) for d in sorted(docs, key=docs.get, reverse=True)]
        ideal = sorted(qrels[q].values(), reverse=True)
        for name, k in (("nERR@10", 10), ("nERR", 10**6)):
            best = _err(ideal, k)
            want = _err(ranked, k) / best if best > 0 else 0.0
            assert ours[q][name] == pytest.approx(want, abs=1e-12), (q, name)


def test_the_ir_measures_provider_computes_them_too():
    from ignite_ranking import ir_measures as provider

    qrels, run = _data(4)
    names = [*MEASURES, "ERR@10"]
    parsed = [ir_measures.parse_measure(m) for m in names]
    ours = {(v.query_id, str(v.measure)): v.value for v in provider.iter_calc(parsed, qrels, run)}
    theirs = {(v.query_id, str(v.measure)): v.value for v in ir_measures.iter_calc(parsed, qrels, run)}
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=6e-6 if key[1].startswith("ERR") else 1e-6), key
