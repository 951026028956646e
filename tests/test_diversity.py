"""Diversity measures (alpha-nDCG, ERR-IA, NRBP, P-IA, subtopic recall) against ndeval.

The oracle is pyndeval (ndeval 4.5's C code). It breaks equal scores by docno *ascending*, where
ndeval -traditional (and trec_eval, and we) break them by docno descending: the runs given to it
carry distinct scores that spell out our order. The Ignite metrics must give the TREC path's
values on the same data, in one process or two, dense or sparse.
"""

from __future__ import annotations

import json
import socket
import warnings

import numpy as np
import pytest
import torch

pyndeval = pytest.importorskip("pyndeval")

from ignite_ranking import ERRIA, NRBP, AlphaNDCG, PrecisionIA, SubtopicRecall  # noqa: E402
from ignite_ranking.cli import main  # noqa: E402
from ignite_ranking.trec import evaluate, read_diversity_qrels, read_run  # noqa: E402
from ignite_ranking.trec.diversity import evaluate_diversity  # noqa: E402
from ignite_ranking.trec.io import DiversityQrels, Run  # noqa: E402

ND_NAMES = ["alpha-nDCG@5", "alpha-nDCG@20", "ERR-IA@5", "ERR-IA@20", "NRBP", "P-IA@5", "P-IA@20", "strec@5"]


def _data(seed: int, num_queries: int = 8, covered: bool = False):
    """Random qrels ``(qid, subtopic, docno, rel)`` and run ``(qid, docno, score)`` tuples: ties,
    documents judged for several subtopics, unjudged documents retrieved, judged ones not
    retrieved (unless ``covered``), and every fifth query without a relevant document."""
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for q in range(num_queries):
        qid = str(100 + q)
        num_subtopics = int(rng.integers(1, 6))
        judged = [f"d{int(x):03d}" for x in rng.choice(200, int(rng.integers(1, 30)), replace=False)]
        share = rng.uniform(0.1, 0.6) if q % 5 else 0.0
        for doc in judged:
            for s in range(num_subtopics):
                if rng.random() < 0.7:
                    qrels.append((qid, str(s + 1), doc, int(rng.random() < share) * int(rng.integers(1, 3))))
        others = [f"d{int(x):03d}" for x in rng.choice(200, int(rng.integers(1, 30)), replace=False)]
        docs = list(dict.fromkeys(judged + others if covered else others[: len(others) // 2] + judged[::2]))
        run += [(qid, doc, float(rng.integers(0, 6))) for doc in docs]
    return qrels, run


def _ours(qrels, run) -> tuple[DiversityQrels, Run]:
    qids = list(dict.fromkeys(q for q, *_ in qrels))
    subtopics = list(dict.fromkeys(s for _, s, _, _ in qrels))
    judgements = DiversityQrels(
        qids,
        np.array([qids.index(q) for q, *_ in qrels], np.int32),
        np.array([d.encode() for _, _, d, _ in qrels]),
        np.array([r for *_, r in qrels], np.int64),
        subtopics=subtopics,
        subtopic=np.array([subtopics.index(s) for _, s, _, _ in qrels], np.int32),
    )
    run_qids = list(dict.fromkeys(q for q, *_ in run))
    ranking = Run(
        run_qids,
        np.array([run_qids.index(q) for q, *_ in run], np.int32),
        np.array([d.encode() for _, d, _ in run]),
        np.array([s for *_, s in run], np.float64),
    )
    return judgements, ranking


def _trec_order(run):
    """The run with distinct scores in our order: descending score, then descending docno."""
    by_query: dict[str, list] = {}
    for qid, doc, score in run:
        by_query.setdefault(qid, []).append((score, doc))
    return [
        (qid, doc, float(-i))
        for qid, docs in by_query.items()
        for i, (_, doc) in enumerate(sorted(docs, reverse=True))
    ]


def _pyndeval(qrels, run, names, alpha=0.5, beta=0.5, rel=1):
    evaluator = pyndeval.RelevanceEvaluator(qrels, names, relevance_level=rel, alpha=alpha, beta=beta)
    return evaluator.evaluate(_trec_order(run))


def _our_names(alpha: float, rel: int) -> list[str]:
    """ND_NAMES in ir_measures' spelling with the parameters."""
    out = []
    for name in ND_NAMES:
        base, _, k = name.partition("@")
        params = [f"rel={rel}"]
        if base in ("alpha-nDCG", "ERR-IA", "NRBP"):
            params.append(f"alpha={alpha}")
        spelled = {"alpha-nDCG": "alpha_nDCG", "ERR-IA": "ERR_IA", "P-IA": "P_IA", "strec": "StRecall"}
        out.append(f"{spelled.get(base, base)}({','.join(params)})" + (f"@{k}" if k else ""))
    return out


@pytest.mark.parametrize(("alpha", "rel"), [(0.5, 1), (0.3, 2), (1.0, 1)])
def test_trec_path_equals_pyndeval(alpha, rel):
    for seed in range(6):
        qrels, run = _data(seed)
        names = _our_names(alpha, rel)
        got = evaluate_diversity(*_ours(qrels, run), names).per_query()
        want = _pyndeval(qrels, run, ND_NAMES, alpha=alpha, rel=rel)
        assert set(got) == set(want)
        for qid in want:
            for ours, theirs in zip(names, ND_NAMES, strict=True):
                assert got[qid][ours] == pytest.approx(want[qid][theirs], abs=1e-12), (seed, qid, ours)


def test_each_measure_alone_and_ndeval_spellings():
    qrels, run = _data(11)
    want = _pyndeval(qrels, run, ND_NAMES)
    for nd in ND_NAMES:
        got = evaluate_diversity(*_ours(qrels, run), [nd]).per_query()
        for qid in want:
            assert got[qid][nd] == pytest.approx(want[qid][nd], abs=1e-12), (nd, qid)


def test_nrbp_beta_and_cutoff_one():
    qrels, run = _data(5)
    got = evaluate_diversity(*_ours(qrels, run), ["NRBP(beta=0.8)", "alpha_nDCG@1", "ERR_IA@1"]).per_query()
    want = _pyndeval(qrels, run, ["NRBP", "alpha-nDCG@1", "ERR-IA@1"], beta=0.8)
    for qid in want:
        assert got[qid]["NRBP(beta=0.8)"] == pytest.approx(want[qid]["NRBP"], abs=1e-12)
        assert got[qid]["alpha_nDCG@1"] == pytest.approx(want[qid]["alpha-nDCG@1"], abs=1e-12)
        # ndeval leaves ERR-IA@1 undivided by the number of subtopics N; we divide it.
        n = len({s for q, s, _, r in qrels if q == qid and r >= 1})
        assert got[qid]["ERR_IA@1"] == pytest.approx(want[qid]["ERR-IA@1"] / max(n, 1), abs=1e-12)


def test_query_set_and_means_follow_ndeval():
    qrels, run = _data(3)
    run = [r for r in run if r[0] != "101"] + [("999", "d001", 1.0)]  # one missing, one unknown
    judgements, ranking = _ours(qrels, run)
    result = evaluate_diversity(judgements, ranking, ["alpha_nDCG@20"])
    assert "101" not in result.queries and "999" not in result.queries
    assert "100" in result.queries  # no relevant document: scores 0 and counts
    assert result.per_query()["100"]["alpha_nDCG@20"] == 0.0
    assert result.means["alpha_nDCG@20"] == pytest.approx(result.values[:, 0].mean(), abs=1e-15)
    padded = evaluate_diversity(judgements, ranking, ["alpha_nDCG@20"], missing_as_zero=True)
    assert padded.per_query()["101"]["alpha_nDCG@20"] == 0.0 and padded.num_queries == result.num_queries + 1


def _write(tmp_path, qrels, run):
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text("".join(f"{q} {s} {d} {r}\n" for q, s, d, r in qrels))
    run_path.write_text("".join(f"{q} Q0 {d} {i} {s} tag\n" for i, (q, d, s) in enumerate(run)))
    return qrels_path, run_path


def test_reader_command_line_and_evaluate(tmp_path, capsys):
    qrels, run = _data(7)
    qrels_path, run_path = _write(tmp_path, qrels, run)
    read = read_diversity_qrels(qrels_path)
    assert read.subtopics == list(dict.fromkeys(s for _, s, _, _ in qrels))
    assert [read.subtopics[i] for i in read.subtopic] == [s for _, s, _, _ in qrels]
    names = ["alpha_nDCG@20", "ERR-IA@10", "NRBP", "P_IA@5", "strec@20"]
    result = evaluate(read, read_run(run_path), names)
    want = _pyndeval(qrels, run, ["alpha-nDCG@20", "ERR-IA@10", "NRBP", "P-IA@5", "strec@20"])
    for qid, row in result.per_query().items():
        assert list(row.values()) == pytest.approx(list(want[qid].values()), abs=1e-12)
    assert main(["evaluate", str(qrels_path), str(run_path), "-m", *names, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["metrics"] == result.means and printed["num_queries"] == result.num_queries


def test_command_line_table_per_query_and_compare(tmp_path, capsys):
    # issue 32: the table and -q crashed on DiversityMeasure.is_text, compare on plain qrels
    qrels, run = _data(7)
    qrels_path, run_path = _write(tmp_path, qrels, run)
    names = ["alpha_nDCG@20", "NRBP", "strec@5"]
    result = evaluate(read_diversity_qrels(qrels_path), read_run(run_path), names)
    assert main(["evaluate", str(qrels_path), str(run_path), "-m", *names, "-q"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    per_query = result.per_query()
    want = [[f"{m:<22}", q, f"{per_query[q][m]:6.4f}"] for q in sorted(per_query) for m in names]
    want += [[f"{m:<22}", "all", f"{result.means[m]:6.4f}"] for m in names]
    assert lines == want
    other = tmp_path / "other"
    other.write_text("".join(f"{q} Q0 {d} {i} {-s} other\n" for i, (q, d, s) in enumerate(run)))
    command = ["compare", str(qrels_path), str(run_path), str(other), "-m", "alpha_nDCG@20"]
    assert main([*command, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["means"]["tag"]["alpha_nDCG@20"] == pytest.approx(result.means["alpha_nDCG@20"])


def test_dict_runs_equal_pyndeval():
    # issue 32: a dict-of-dicts run raised AttributeError in trec.evaluate and the provider
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import ERR_IA, NRBP, P_IA, StRecall, alpha_nDCG

    from ignite_ranking.ir_measures import IgniteRankingProvider

    qrels, run = _data(4)
    ordered = _trec_order(run)
    as_dict: dict = {}
    for qid, doc, score in ordered:
        as_dict.setdefault(qid, {})[doc] = score
    got = evaluate(_ours(qrels, run)[0], as_dict, ND_NAMES).per_query()
    want = _pyndeval(qrels, ordered, ND_NAMES)
    assert got == {q: pytest.approx(want[q], abs=1e-12) for q in want}
    judged = [ir_measures.Qrel(q, d, r, s) for q, s, d, r in qrels]
    scored = [ir_measures.ScoredDoc(q, d, s) for q, d, s in ordered]
    group = [alpha_nDCG @ 20, ERR_IA @ 10, NRBP, P_IA @ 5, StRecall @ 20]
    ours = IgniteRankingProvider(score_precision="float64").calc_aggregate(group, judged, as_dict)
    theirs = ir_measures.pyndeval.calc_aggregate(group, judged, scored)
    assert {str(m): v for m, v in ours.items()} == pytest.approx({str(m): v for m, v in theirs.items()})
    with pytest.raises(TypeError, match=r"run must be a Run \(read_run\) or a dict of dicts"):
        evaluate_diversity(_ours(qrels, run)[0], list(as_dict.items()), ["NRBP"])


def test_ir_measures_provider_equals_pyndeval_provider():
    ir_measures = pytest.importorskip("ir_measures")
    import pandas as pd
    from ir_measures import ERR_IA, NRBP, P_IA, StRecall, alpha_nDCG

    from ignite_ranking.ir_measures import IgniteRankingProvider

    qrels, run = _data(9)
    judged = [ir_measures.Qrel(q, d, r, s) for q, s, d, r in qrels]
    scored = [ir_measures.ScoredDoc(q, d, s) for q, d, s in _trec_order(run)]
    provider = IgniteRankingProvider(score_precision="float64")
    # ir_measures' pyndeval provider computes one parameter set per call (it exhausts the run).
    for group in ([alpha_nDCG @ 20, ERR_IA @ 10, NRBP, P_IA @ 5, StRecall @ 20], [alpha_nDCG(alpha=0.3) @ 5]):
        ours = provider.calc_aggregate(group, judged, scored)
        theirs = ir_measures.pyndeval.calc_aggregate(group, judged, scored)
        assert {str(m): v for m, v in ours.items()} == pytest.approx({str(m): v for m, v in theirs.items()})
    listed = provider.calc_aggregate([alpha_nDCG @ 20], judged, scored)
    assert provider.calc_aggregate([alpha_nDCG @ 20], pd.DataFrame(judged), scored) == listed
    with pytest.raises(ValueError, match="apart from the other measures"):
        provider.calc_aggregate([alpha_nDCG @ 20, ir_measures.P @ 5], judged, scored)


# ------------------------------------------------------------------------ Ignite metrics


def _dense(qrels, run):
    """``(y_pred, y, qids)``: items of each row in descending docno order (so that the kernel's
    lower-index-first ties are ndeval's larger-docno-first), padded with -inf; y the grades."""
    judged = {q for q, *_ in qrels}
    queries = [q for q in dict.fromkeys(q for q, *_ in run) if q in judged]
    subtopics = {q: sorted({s for qq, s, _, _ in qrels if qq == q}) for q in queries}
    docs = {q: sorted({d for qq, d, _ in run if qq == q}, reverse=True) for q in queries}
    width = max(len(d) for d in docs.values())
    depth = max(max((len(s) for s in subtopics.values()), default=1), 1)
    y_pred = torch.full((len(queries), width), -torch.inf, dtype=torch.float64)
    y = torch.zeros((len(queries), width, depth), dtype=torch.int64)
    for b, q in enumerate(queries):
        for qq, d, s in run:
            if qq == q:
                y_pred[b, docs[q].index(d)] = s
        for qq, s, d, r in qrels:
            if qq == q and d in docs[q]:
                y[b, docs[q].index(d), subtopics[q].index(s)] = r
    return y_pred, y, queries


def _metrics(**kwargs):
    return {
        "alpha_nDCG(alpha=0.3)@20": (AlphaNDCG([5, 20], alpha=0.3, **kwargs), 1),
        "ERR_IA@20": (ERRIA([5, 20], **kwargs), 1),
        "NRBP(beta=0.8)": (NRBP(beta=0.8, **kwargs), None),
        "P_IA@5": (PrecisionIA([5, 20], **kwargs), 0),
        "StRecall@20": (SubtopicRecall([5, 20], **kwargs), 1),
    }


@pytest.mark.parametrize("sparse", [False, True])
def test_ignite_metrics_equal_the_trec_path(sparse):
    qrels, run = _data(21, num_queries=10, covered=True)
    y_pred, y, queries = _dense(qrels, run)
    trec = evaluate_diversity(*_ours(qrels, run), list(_metrics())).per_query()
    for name, (metric, column) in _metrics(ignore_zero_hits=False, per_query=True).items():
        for rows in (slice(0, 4), slice(4, None)):
            ids = torch.arange(len(queries))[rows]
            metric.update((y_pred[rows], y[rows].to_sparse() if sparse else y[rows], {"query_ids": ids}))
        values = metric.per_query_values().values
        got = next(iter(values.values())) if column is None else list(values.values())[column]
        assert got.tolist() == pytest.approx([trec[q][name] for q in queries], abs=1e-12), name


@pytest.mark.parametrize("per_query", [False, True])
def test_cutoffs_past_the_items_equal_each_cutoff_scored_alone(per_query):
    """alpha-nDCG and S-recall repeat their value past the ranked items and P-IA divides its hits
    by k: those cutoffs are summed without a value each, and equal each cutoff scored alone."""
    torch.manual_seed(3)
    y_pred = torch.randn(9, 12)
    y = (torch.rand(9, 12, 3) < 0.2).to(torch.int64)
    cutoffs = [1, 5, 12, 13, 40, 1000]
    for make in (AlphaNDCG, PrecisionIA, SubtopicRecall, ERRIA):
        many = make(cutoffs, ignore_zero_hits=False, per_query=per_query)
        many.update((y_pred, y))
        got = many.compute()
        for column, k in enumerate(cutoffs):
            alone = make([k], ignore_zero_hits=False, per_query=per_query)
            alone.update((y_pred, y))
            assert [got[column]] == alone.compute(), (make.__name__, k)
            if per_query:
                mine = list(many.per_query_values().values.values())[column]
                assert torch.equal(mine, next(iter(alone.per_query_values().values.values())))


def test_a_score_past_float32_range_rounds_to_inf_without_a_warning():
    qrels, run = _ours([("q", "1", "a", 1), ("q", "1", "b", 0)], [("q", "a", 1e308), ("q", "b", 1.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rounded = evaluate_diversity(qrels, run, ["ERR-IA@20"], score_precision="float32")
    assert rounded.means == evaluate_diversity(qrels, run, ["ERR-IA@20"]).means  # the same order


def test_queries_without_subtopics_are_skipped_by_default():
    y_pred = torch.tensor([[0.3, 0.2], [0.5, 0.1]])
    y = torch.tensor([[[0, 0], [0, 0]], [[0, 1], [1, 1]]])
    metric = AlphaNDCG(2)
    metric.update((y_pred, y))
    assert metric._num_examples.item() == 1
    with pytest.raises(ValueError, match="no subtopic label"):
        AlphaNDCG(2, empty_target_action="error").update((y_pred, y))


def test_ties_last_is_first_on_reversed_items():
    rng = np.random.default_rng(0)
    y_pred = torch.from_numpy(rng.integers(0, 3, (6, 12)).astype(np.float64))
    y = torch.from_numpy(rng.integers(0, 2, (6, 12, 3)))
    first, last = AlphaNDCG([3, 10]), AlphaNDCG([3, 10], ties="last")
    first.update((y_pred.flip(1), y.flip(1)))
    last.update((y_pred, y))
    assert first.compute() == last.compute()


def test_state_dict_round_trip_and_settings():
    y_pred, y, _ = _dense(*_data(2, covered=True))
    metric = NRBP(alpha=0.3)
    metric.update((y_pred, y))
    restored = NRBP(alpha=0.3)
    restored.load_state_dict(metric.state_dict())
    assert restored.compute() == metric.compute()
    with pytest.raises(ValueError, match="alpha"):
        NRBP(alpha=0.5).load_state_dict(metric.state_dict())


@pytest.mark.parametrize(
    ("make", "output", "error", "match"),
    [
        (lambda: AlphaNDCG(5), (torch.rand(2, 3), torch.zeros(2, 3)), ValueError, "num_subtopics"),
        (lambda: AlphaNDCG(5), (torch.rand(2, 3), torch.zeros(2, 4, 1)), ValueError, "num_subtopics"),
        (
            lambda: AlphaNDCG(5),
            (torch.tensor([[float("nan"), 1.0]]), torch.zeros(1, 2, 1)),
            ValueError,
            "NaN",
        ),
        (
            lambda: AlphaNDCG(5),
            (torch.rand(2, 3), torch.zeros(2, 3, 1), torch.zeros(2)),
            TypeError,
            "y_pred, y",
        ),
        (lambda: AlphaNDCG(5), (torch.rand(2, 3), torch.zeros(2, 3, 1), {"judged": 1}), ValueError, "judged"),
        (
            lambda: AlphaNDCG(5),
            (torch.ones(2, 3, dtype=torch.int64), torch.zeros(2, 3, 1)),
            ValueError,
            "floating",
        ),
    ],
)
def test_bad_input_is_refused_and_leaves_the_state(make, output, error, match):
    metric = make()
    with pytest.raises(error, match=match):
        metric.update(output)
    assert metric._num_examples.item() == 0


def test_bad_arguments_are_refused():
    from ignite_ranking import MRR, RankingMetrics

    with pytest.raises(TypeError, match="subtopic labels"):
        RankingMetrics(alpha=AlphaNDCG(5), mrr=MRR(5))
    with pytest.raises(ValueError, match="alpha"):
        AlphaNDCG(5, alpha=1.5)
    with pytest.raises(TypeError, match="beta"):
        NRBP(beta="x")
    with pytest.raises(ValueError, match="ties"):
        ERRIA(5, ties="average")
    qrels, run = _data(1)
    judgements, ranking = _ours(qrels, run)
    for names, match in [
        (["NRBP@10"], "no cutoff"),
        (["alpha_nDCG"], "cutoff"),
        (["alpha_nDCG(gamma=1)@5"], "unknown parameter"),
        (["alpha_nDCG@5", "P@5"], "unknown diversity measure"),
    ]:
        with pytest.raises(ValueError, match=match):
            evaluate(judgements, ranking, names)
    plain = read_qrels_from(qrels)
    with pytest.raises(TypeError, match="read_diversity_qrels"):
        evaluate(plain, ranking, ["alpha_nDCG@5"])
    twice = [*qrels, qrels[0]]
    with pytest.raises(ValueError, match="judged twice"):
        evaluate(_ours(twice, run)[0], ranking, ["alpha_nDCG@5"])


def read_qrels_from(qrels):
    """Plain :class:`~ignite_ranking.trec.io.Qrels` of the tuples (subtopics dropped)."""
    judgements, _ = _ours(qrels, [("x", "y", 0.0)])
    from ignite_ranking.trec.io import Qrels

    return Qrels(judgements.qids, judgements.qid, judgements.docno, judgements.rel)


# ------------------------------------------------------------------------ two processes


def _batches_of(rank: int, world_size: int):
    y_pred, y, _ = _dense(*_data(4, num_queries=10, covered=True))
    rows = torch.arange(y_pred.shape[0])[rank::world_size]
    return [
        (y_pred[rows[i : i + 2]], y[rows[i : i + 2]], {"query_ids": rows[i : i + 2]})
        for i in range(0, len(rows), 2)
    ]


def _results(rank: int, world_size: int) -> dict:
    out = {}
    for name, (metric, _) in _metrics(per_query=True).items():
        for batch in _batches_of(rank, world_size):
            metric.update(batch)
        out[name] = (metric.compute(), {k: v.tolist() for k, v in metric.per_query_values().values.items()})
    return out


def _worker(local_rank: int, world_size: int, out_dir: str) -> None:
    import ignite.distributed as idist

    torch.save(_results(idist.get_rank(), world_size), f"{out_dir}/rank{idist.get_rank()}.pt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_gloo_processes_give_the_one_process_bits(tmp_path):
    import ignite.distributed as idist

    with idist.Parallel(
        backend="gloo", nproc_per_node=2, master_addr="127.0.0.1", master_port=_free_port()
    ) as p:
        p.run(_worker, 2, str(tmp_path))
    alone = _results(0, 1)
    for rank in range(2):
        assert torch.load(tmp_path / f"rank{rank}.pt", weights_only=False) == alone


# ------------------------------------------------------------------------ ndeval's own output

FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "ndeval"
NDEVAL_MEASURES = ["alpha-nDCG@5", "alpha-nDCG@20", "ERR-IA@5", "ERR-IA@20", "NRBP", "P-IA@10", "strec@20"]


@pytest.mark.parametrize("case", ["default", "alpha_beta_c"])
def test_ndeval_traditional_on_tied_runs(case, tmp_path, capsys):
    """ndeval -traditional's printed values (tests/fixtures/ndeval/make_fixtures.py wrote them)."""
    expected = json.loads((FIXTURES / "expected.json").read_text())[case]
    flags = expected["flags"]
    alpha = float(flags[flags.index("-alpha") + 1]) if "-alpha" in flags else 0.5
    beta = float(flags[flags.index("-beta") + 1]) if "-beta" in flags else 0.5
    names = [
        f"NRBP(alpha={alpha},beta={beta})"
        if n == "NRBP"
        else n.replace("@", f"(alpha={alpha})@")
        if n.startswith(("alpha", "ERR"))
        else n
        for n in NDEVAL_MEASURES
    ]
    result = evaluate(
        read_diversity_qrels(FIXTURES / "diversity.qrels"),
        read_run(FIXTURES / "ties.run"),
        names,
        missing_as_zero="-c" in flags,
    )
    rows = list(__import__("csv").DictReader(expected["output"].splitlines()))
    per_query = result.per_query()
    printed = {row["topic"] for row in rows}
    # ndeval also prints the run's queries that the qrels lack (as zeros), but leaves them out of
    # the mean; with -c the mean counts the qrels queries that the run lacks.
    assert printed - set(per_query) == {"99", "amean"}
    assert set(per_query) - printed == ({"62"} if "-c" in flags else set())
    for row in rows:
        for ours, theirs in zip(names, NDEVAL_MEASURES, strict=True):
            if row["topic"] == "99":
                assert float(row[theirs]) == 0.0
                continue
            got = result.means[ours] if row["topic"] == "amean" else per_query[row["topic"]][ours]
            assert got == pytest.approx(float(row[theirs]), abs=6e-7), (row["topic"], ours)
