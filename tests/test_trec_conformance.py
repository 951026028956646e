"""``ignite-ranking evaluate`` prints what trec_eval 10 prints, line for line, on fixture files.

tests/fixtures/trec_eval/ holds generated qrels and run files (graded and -1 judgements, comment
lines, extra run columns, ties, unjudged documents, missing queries) and, in expected.json, the
output of trec_eval 10 on them for default flags, -c, -q, -l 2, -l 0, parameters (P.1,2,3,7),
custom NDCG gains, the official and all_trec sets (every measure trec_eval prints; their order
is checked in test_trec_all.py); make_fixtures.py wrote both. The binary is not needed.
"""

from __future__ import annotations

import json
import os

import pytest

from ignite_ranking.cli import main
from ignite_ranking.trec import evaluate, read_qrels, read_run

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "trec_eval")
with open(os.path.join(FIXTURES, "expected.json")) as f:
    EXPECTED = json.load(f)


def _lines(text: str) -> set[tuple[str, str, str]]:
    return {tuple(line.split("\t")) for line in text.splitlines()}


@pytest.mark.parametrize("case", sorted(EXPECTED["cases"]))
def test_cli_prints_what_trec_eval_prints(case, capsys):
    spec = EXPECTED["cases"][case]
    args = ["evaluate", os.path.join(FIXTURES, spec["qrels"]), os.path.join(FIXTURES, EXPECTED["run"])]
    args += [x for m in spec["measures"] for x in ("-m", m)] + spec["flags"]
    assert main(args) == 0
    got, want = _lines(capsys.readouterr().out), _lines(spec["output"])
    assert got == want, (sorted(got - want)[:5], sorted(want - got)[:5])


def test_scores_are_float64_by_default():
    # Scores equal as float32 but not as float64 tie under trec_eval 9 / pytrec_eval only.
    qrels = read_qrels(os.path.join(FIXTURES, "graded.qrels"))
    run = read_run(os.path.join(FIXTURES, EXPECTED["run"]))
    f64 = evaluate(qrels, run, ["map", "P_5"]).per_query()
    f32 = evaluate(qrels, run, ["map", "P_5"], score_precision="float32").per_query()
    # only the queries 400, 403, 406... have scores 1e-12 apart (the others, some by chance)
    differ = {q for q in f64 if f64[q] != f32[q]}
    assert differ and all((int(q) - 400) % 3 == 0 for q in differ)
