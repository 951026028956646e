"""trec_eval's ideal NDCG gains (trec/gains.py) against brute force, for ordinary grades and for
grades of 10**9 and more, whose cost must follow the judgements, not the grades (issue 32).

The brute force lists every level 0..top of a query with the given pairs, sorts them with glibc's
merge sort and trec_eval's comparator (the integer part of the difference), and visits them from
the highest (gain_init.c, m_ndcg.c). Where every gain is an integer the comparator is a total
order, and the levels without documents can be left out of the list: that oracle takes any grade.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from ignite_ranking.trec import evaluate
from ignite_ranking.trec.gains import GainRule
from ignite_ranking.trec.io import Qrels, read_qrels, read_run


def _msort(items: list, compare) -> list:
    if len(items) <= 1:
        return list(items)
    left, right = _msort(items[: len(items) // 2], compare), _msort(items[len(items) // 2 :], compare)
    merged = []
    while left and right:
        merged.append(left.pop(0) if compare(left[0], right[0]) <= 0 else right.pop(0))
    return merged + left + right


def _visit(order: list, grades: list[int]) -> list[float]:
    """The ideal gains of a query's judged grades, taking ``order`` (levels, best first)."""
    if order[0][1] <= 0:
        return []
    present, taken = set(grades), {}
    for place, (level, gain) in enumerate(order):
        if level not in present:
            continue
        if gain <= 0:
            break
        taken[level] = (place, gain)  # a level named twice: the later one
    kept = sorted((taken[g] for g in grades if g in taken), key=lambda pg: pg[0])
    return [gain for _, gain in kept]


def _brute(rule: GainRule, grades: list[int]) -> list[float]:
    grades = [g for g in grades if g >= 0]
    if not grades:
        return []
    if rule.kind != "custom" or not rule.pairs:
        return [float(rule.of(np.array([g]))[0]) for g in sorted((g for g in grades if g > 0), reverse=True)]
    named = dict(rule.pairs)
    levels = list(rule.pairs) + [(g, float(g)) for g in range(max(grades) + 1) if g not in named]
    return _visit(_msort(levels, lambda a, b: int(a[1] - b[1]))[::-1], grades)


def _brute_integer_gains(rule: GainRule, grades: list[int]) -> list[float]:
    """:func:`_brute` for pairs of integer gains, listing only the levels that matter: those with
    documents, the given ones and the highest level no pair names (the order is total)."""
    grades = [g for g in grades if g >= 0]
    if not grades:
        return []
    top, named = max(grades), dict(rule.pairs)
    highest = next(g for g in range(top, -1, -1) if g not in named) if len(named) <= top else None
    unnamed = sorted({g for g in grades if g not in named} | ({highest} if highest is not None else set()))
    levels = list(rule.pairs) + [(g, float(g)) for g in unnamed]
    order = sorted(levels, key=lambda lg: lg[1])[::-1]  # stable: named before unnamed on ties
    return _visit(order, grades)


def _qrels(grades_by_query: list[list[int]]) -> Qrels:
    qid = np.array([q for q, grades in enumerate(grades_by_query) for _ in grades], dtype=np.int32)
    rel = np.array([g for grades in grades_by_query for g in grades], dtype=np.int64)
    docno = np.array([f"d{i}".encode() for i in range(len(rel))])
    return Qrels(qids=[f"q{q}" for q in range(len(grades_by_query))], qid=qid, docno=docno, rel=rel)


def _ideal_lists(rule: GainRule, qrels: Qrels) -> list[list[float]]:
    gains, start, count = rule.ideal(qrels)
    return [gains[s : s + c].tolist() for s, c in zip(start.tolist(), count.tolist(), strict=True)]


def _random_rule(rng: random.Random, top: int, integer: bool) -> GainRule:
    kind = rng.choice(["linear", "exp", "custom", "custom", "custom"])
    if kind != "custom":
        return GainRule(kind)
    values = [0.0, -1.0, 1.0, 3.0, 7.0] if integer else [0.0, 0.5, -1.0, 1.5, 2.9, 0.3, 7.0]
    pairs = tuple(
        (rng.randint(-2, top + 2), float(rng.choice([*values, rng.randint(-3, top + 3)])))
        for _ in range(rng.randint(0, 8))
    )
    return GainRule("custom", pairs)


@pytest.mark.parametrize("top", [0, 1, 3, 8, 40, 1500])
def test_ideal_gains_equal_the_brute_force_on_ordinary_grades(top):
    rng = random.Random(top)
    for _ in range(60 if top < 1500 else 6):
        grades = [[rng.randint(-2, top) for _ in range(rng.randint(1, 12))] for _ in range(rng.randint(1, 5))]
        rule = _random_rule(rng, top, integer=False)
        assert _ideal_lists(rule, _qrels(grades)) == [_brute(rule, g) for g in grades], rule


@pytest.mark.filterwarnings("ignore:overflow encountered in exp2")  # 2**huge - 1 is inf
@pytest.mark.parametrize("huge", [10**9, 10**15, 2**62])
def test_huge_grades_cost_their_judgements_and_equal_the_brute_force(huge):
    rng = random.Random(huge % 1000)
    for _ in range(40):
        grades = [
            [rng.choice([huge, huge - 1, huge // 3, 0, 1, 2, 3, -1]) for _ in range(rng.randint(1, 8))]
            for _ in range(rng.randint(1, 6))
        ]
        rule = _random_rule(rng, 5, integer=True)
        if rule.kind == "custom" and rng.random() < 0.5:  # name the huge grades too
            rule = GainRule(
                "custom", (*rule.pairs, (huge, float(rng.choice([0, 2, huge + 5]))), (huge - 1, -1.0))
            )
        expected = [
            _brute(rule, g) if rule.kind != "custom" else _brute_integer_gains(rule, g) for g in grades
        ]
        assert _ideal_lists(rule, _qrels(grades)) == expected, rule


def test_the_integer_gain_oracle_is_the_brute_force_where_both_run():
    rng = random.Random(5)
    for _ in range(150):
        top = rng.randint(0, 30)
        grades = [rng.randint(-1, top) for _ in range(rng.randint(1, 10))]
        rule = _random_rule(rng, top, integer=True)
        if rule.kind == "custom" and max(grades) >= 0:
            assert _brute_integer_gains(rule, grades) == _brute(rule, grades), rule


def test_ndcg_of_a_billion_grade_in_a_small_qrels(tmp_path):
    # 100 queries, one judgement of grade 10**9: the old dense table was 100 x (10**9 + 1).
    qrels_lines = [f"q{q} 0 d{d} {(q + d) % 3}" for q in range(100) for d in range(5)]
    qrels_lines[7] = "q1 0 d2 1000000000"
    (tmp_path / "qrels").write_text("\n".join(qrels_lines) + "\n")
    run_lines = [f"q{q} Q0 d{d} {d + 1} {10 - d} t" for q in range(100) for d in range(5)]
    (tmp_path / "run").write_text("\n".join(run_lines) + "\n")
    per_query = evaluate(read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run"), ["ndcg"]).per_query()
    for q in range(100):
        ranked = [int(line.split()[3]) for line in qrels_lines[5 * q : 5 * q + 5]]  # run order: d0..d4
        ideal = sorted((g for g in ranked if g > 0), reverse=True)
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(ranked))
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        assert per_query[f"q{q}"]["ndcg"] == pytest.approx(dcg / idcg, rel=1e-12)
