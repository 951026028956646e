"""compare() and `ignite-ranking compare`: against ranx, and the report's exports, end to end."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from ignite_ranking.cli import main
from ignite_ranking.compare import CompareWarning, compare, stats
from ignite_ranking.trec import evaluate, read_qrels, read_run

scipy_stats = pytest.importorskip("scipy.stats")

OURS = ["mrr@10", "ndcg@10", "map@100", "recall@10", "P@10"]
RANX = ["mrr@10", "ndcg@10", "map@100", "recall@10", "precision@10"]


def _write_trec(directory, num_queries=60, num_runs=3, docs=40, seed=0):
    """Qrels and ``num_runs`` tie-free runs (distinct scores) answering every judged query."""
    rng = np.random.default_rng(seed)
    qrels_lines, runs = [], [[] for _ in range(num_runs)]
    for q in range(num_queries):
        judged = rng.choice(docs, 12, replace=False)
        grades = rng.choice([0, 1, 2, 3], 12)
        grades[0] = max(grades[0], 1)  # every query has a relevant document
        qrels_lines += [f"q{q} 0 d{d} {g}\n" for d, g in zip(judged, grades, strict=True)]
        gain = np.zeros(docs)
        gain[judged] = grades
        for r in range(num_runs):
            scores = rng.permutation(docs) + 0.3 * r * gain * docs / 4 + rng.random(docs) * 1e-3
            order = np.argsort(-scores)
            # Integer scores by rank: exactly distinct in float32 too (trec_eval's score type).
            runs[r] += [f"q{q} Q0 d{d} {i + 1} {docs - i} sys{r}\n" for i, d in enumerate(order)]
    qrels = directory / "qrels.txt"
    qrels.write_text("".join(qrels_lines))
    paths = []
    for r, lines in enumerate(runs):
        path = directory / f"run{r}.txt"
        path.write_text("".join(lines))
        paths.append(str(path))
    return str(qrels), paths


@pytest.fixture(scope="module")
def trec_files(tmp_path_factory):
    return _write_trec(tmp_path_factory.mktemp("compare"))


def test_means_and_t_test_equal_ranx_compare(trec_files):
    ranx = pytest.importorskip("ranx")
    qrels_path, run_paths = trec_files
    qrels = read_qrels(qrels_path)
    ours = compare(
        {f"sys{r}": evaluate(qrels, read_run(p), OURS) for r, p in enumerate(run_paths)}, correction="none"
    )
    ranx_runs = []
    for r, path in enumerate(run_paths):
        run = ranx.Run.from_file(path, kind="trec")
        run.name = f"sys{r}"
        ranx_runs.append(run)
    theirs = ranx.compare(ranx.Qrels.from_file(qrels_path, kind="trec"), ranx_runs, RANX, stat_test="student")
    means = ours.means()
    for system in ours.systems:
        for o, t in zip(OURS, RANX, strict=True):
            assert means[system][o] == pytest.approx(theirs.results[system][t], abs=1e-9, rel=0)
    for c in ours.comparisons:
        t = RANX[OURS.index(c.metric)]
        p = theirs.comparisons[c.system_a, c.system_b][t]["p_value"]
        assert c.p["t-test"] == pytest.approx(p, abs=1e-9, rel=0), (c.metric, c.system_a, c.system_b)
        wtl = theirs.win_tie_loss[c.system_b, c.system_a][t]
        assert (c.wins, c.ties, c.losses) == (wtl["W"], wtl["T"], wtl["L"])


def _systems(seed=0, n=40):
    rng = np.random.default_rng(seed)
    base = np.round(rng.random((n, 2)), 2)
    return {
        "bm25": {"ndcg@10": base[:, 0], "mrr@10": base[:, 1]},
        "dense": {"ndcg@10": np.clip(base[:, 0] + rng.normal(0.1, 0.1, n), 0, 1), "mrr@10": base[:, 1]},
        "hybrid": {
            "ndcg@10": np.clip(base[:, 0] + rng.normal(0.12, 0.1, n), 0, 1),
            "mrr@10": np.clip(base[:, 1] + rng.normal(0.0, 0.1, n), 0, 1),
        },
    }


@pytest.mark.parametrize("correction", stats.CORRECTIONS)
def test_report_values_are_the_statistics_of_each_pair(correction):
    systems = _systems()
    tests = list(stats.TESTS)
    report = compare(systems, tests=tests, correction=correction, seed=3, resamples=2000)
    assert [(c.metric, c.system_a, c.system_b) for c in report.comparisons] == [
        (m, a, b)
        for m in ("ndcg@10", "mrr@10")
        for a, b in (("bm25", "dense"), ("bm25", "hybrid"), ("dense", "hybrid"))
    ]
    for metric in ("ndcg@10", "mrr@10"):
        rows = [c for c in report.comparisons if c.metric == metric]
        for test in tests:
            expected = stats.adjust([c.p[test] for c in rows], correction)
            np.testing.assert_allclose([c.p_adjusted[test] for c in rows], expected, rtol=0, atol=1e-15)
        for c in rows:
            a, b = np.asarray(systems[c.system_a][metric]), np.asarray(systems[c.system_b][metric])
            d = b - a
            assert c.mean_a == pytest.approx(a.mean()) and c.difference == pytest.approx(d.mean())
            assert (c.wins, c.ties, c.losses) == ((d > 0).sum(), (d == 0).sum(), (d < 0).sum())
            if np.any(d != 0):
                assert c.p["t-test"] == pytest.approx(scipy_stats.ttest_rel(b, a).pvalue, abs=1e-12)
                assert c.p["wilcoxon"] == pytest.approx(scipy_stats.wilcoxon(b, a).pvalue, abs=1e-12)
                assert c.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
                assert c.ci_bca[0] <= c.difference <= c.ci_bca[1]
                assert c.ci_percentile[0] <= c.difference <= c.ci_percentile[1]
            else:  # identical systems: nothing to test, an interval of one point
                assert np.isnan(c.p["t-test"]) and c.p["randomization"] == 1.0
                assert c.ci_percentile == (0.0, 0.0)


def test_report_is_reproducible_with_a_seed():
    kwargs = {"tests": ["randomization", "bootstrap"], "seed": 5, "resamples": 500}
    systems = {name: {"m": values["ndcg@10"]} for name, values in _systems(n=60).items()}
    one, two = compare(systems, **kwargs), compare(systems, **kwargs)
    assert one.to_dict() == two.to_dict()
    assert one.to_dict() != compare(systems, **{**kwargs, "seed": 6}).to_dict()


def test_baseline_and_keyed_alignment():
    systems = _systems()
    report = compare(systems, baseline="dense")
    assert [(c.system_a, c.system_b) for c in report.comparisons][:2] == [
        ("dense", "bm25"),
        ("dense", "hybrid"),
    ]
    # Keyed inputs (trec results) are aligned by query id, whatever their order.
    from ignite_ranking.trec import EvaluationResult

    def result(queries, column):
        return EvaluationResult(means={}, queries=queries, values=np.asarray(column)[:, None], metrics=["m"])

    a = result(["q1", "q2", "q3"], [0.1, 0.2, 0.3])
    b = result(["q3", "q1", "q2"], [0.7, 0.4, 0.5])
    report = compare({"a": a, "b": b})
    assert report.queries == ["q1", "q2", "q3"]
    np.testing.assert_allclose(report.differences("m", "a", "b"), [0.3, 0.3, 0.4])
    short = result(["q1", "q2"], [0.1, 0.25])
    with pytest.raises(ValueError, match="same queries"):
        compare({"a": short, "b": b})
    assert compare({"a": short, "b": b}, missing="intersect").num_queries == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tests": ["z-test"]}, "tests must be among"),
        ({"correction": "sidak"}, "correction must be one of"),
        ({"alpha": 1.5}, "alpha must be"),
        ({"resamples": 0}, "resamples must be"),
        ({"baseline": "nope"}, "baseline must be one of"),
        ({"metrics": ["p@5"]}, "lacks metrics"),
        ({"missing": "drop"}, "missing must be"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        compare(_systems(), **kwargs)


def test_bad_systems_are_refused():
    with pytest.raises(ValueError, match="at least two"):
        compare({"a": {"m": [1.0]}})
    with pytest.raises(ValueError, match="same queries"):
        compare({"a": {"m": [1.0, 2.0]}, "b": {"m": [1.0]}})
    with pytest.raises(TypeError, match="must be a mapping"):
        compare({"a": [1.0], "b": [2.0]})
    with pytest.raises(ValueError, match="NaN or infinite"):
        compare({"a": {"m": [1.0, np.nan]}, "b": {"m": [1.0, 2.0]}})


def test_exports():
    report = compare(_systems(), tests=["t-test", "wilcoxon"], seed=0, resamples=500)
    text = str(report)
    assert "bm25" in text and "p adj t-test" in text and "W/T/L" in text
    markdown = report.to_markdown()
    assert "| metric | A | B |" in markdown
    payload = json.loads(report.to_json())
    assert payload["settings"]["tests"] == ["t-test", "wilcoxon"] and len(payload["comparisons"]) == 6
    # mrr@10 of bm25 and dense are equal: the undefined t-test p-value is null in JSON.
    equal = next(c for c in payload["comparisons"] if c["metric"] == "mrr@10" and c["system_b"] == "dense")
    assert equal["p"]["t-test"] is None
    rows = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert len(rows) == 6 and float(rows[0]["p_t-test"]) == pytest.approx(report.comparisons[0].p["t-test"])
    latex = report.to_latex()
    assert r"\toprule" in latex and r"\bottomrule" in latex and r"\caption{" in latex
    means = report.means()
    best = max(means, key=lambda s: means[s]["ndcg@10"])
    assert r"\textbf{" + f"{means[best]['ndcg@10']:.4f}" + "}" in latex
    # hybrid and dense both beat bm25 on ndcg@10 with these data: both carry bm25's letter (a).
    assert report.significant(report.comparisons[0]) and "$^{a}$" in latex
    assert "superscript letter marks a significant improvement" in latex
    with pytest.raises(ValueError, match="format must be one of"):
        report.format("html")
    one_sided = compare(_systems(), alternative="greater", seed=0, resamples=200)
    assert "one-sided: B greater than A" in str(one_sided)
    two_sided = compare(_systems(), seed=0, resamples=200)
    for mine, both in zip(one_sided.comparisons, two_sided.comparisons, strict=True):
        if mine.difference > 0 and not np.isnan(both.p["t-test"]):
            assert mine.p["t-test"] == pytest.approx(both.p["t-test"] / 2)


def test_plot_writes_a_png(tmp_path):
    report = compare(_systems(), seed=0, resamples=200)
    path = tmp_path / "diff.png"
    report.plot(path, "ndcg@10", "bm25", "hybrid")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="metric must be one of"):
        report.plot(path, "ndcg@5")


def test_cli_compare(trec_files, tmp_path, capsys):
    qrels_path, run_paths = trec_files
    plot = tmp_path / "d.png"
    args = ["compare", qrels_path, *run_paths, "-m", "ndcg@10", "P_10", "--seed", "1", "--resamples", "300"]
    assert (
        main(
            [
                *args,
                "--format",
                "json",
                "--baseline",
                "sys0",
                "--test",
                "t-test",
                "bootstrap",
                "--plot",
                str(plot),
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["systems"] == ["sys0", "sys1", "sys2"] and out["num_queries"] == 60
    assert [(c["system_a"], c["system_b"]) for c in out["comparisons"][:2]] == [
        ("sys0", "sys1"),
        ("sys0", "sys2"),
    ]
    assert plot.read_bytes()[:4] == b"\x89PNG"
    # The same numbers as the Python API on the same evaluations.
    qrels = read_qrels(qrels_path)
    expected = compare(
        {f"sys{r}": evaluate(qrels, read_run(p), ["ndcg@10", "P_10"]) for r, p in enumerate(run_paths)},
        baseline="sys0",
        tests=["t-test", "bootstrap"],
        seed=1,
        resamples=300,
    )
    assert out == json.loads(expected.to_json())
    # A baseline named by its path; every format prints.
    for fmt in ("table", "markdown", "latex", "csv"):
        assert main([*args, "--format", fmt, "--baseline", run_paths[1]]) == 0
        assert "sys1" in capsys.readouterr().out


def test_cli_missing_queries(tmp_path, capsys):
    qrels_path, run_paths = _write_trec(tmp_path, num_queries=10, num_runs=2)
    lines = Path(run_paths[1]).read_text().splitlines(keepends=True)
    short = tmp_path / "short.txt"
    short.write_text("".join(line for line in lines if not line.startswith("q3 ")))
    args = ["compare", qrels_path, run_paths[0], str(short), "-m", "mrr@10", "--format", "json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["num_queries"] == 9
    assert "1 of 10 evaluated queries of run sys0" in captured.err
    assert main([*args, "-c"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["num_queries"] == 10
    assert out["means"]["sys1"]["mrr@10"] == pytest.approx(
        evaluate(read_qrels(qrels_path), read_run(str(short)), ["mrr@10"], missing_as_zero=True).means[
            "mrr@10"
        ]
    )
    assert main(["compare", qrels_path, run_paths[0], "-m", "mrr@10"]) == 2
    assert "at least two runs" in capsys.readouterr().err
    assert main(["compare", qrels_path, run_paths[0], run_paths[0], "-m", "mrr@10"]) == 2
    assert "each run may be given once" in capsys.readouterr().err
    assert main([*args, "--baseline", "nope"]) == 2
    assert "--baseline must name one of the runs" in capsys.readouterr().err


def test_cli_compares_only_means_of_per_query_numbers(trec_files, tmp_path, capsys):
    """Regressions: runid alone stopped on numpy's 'need at least one array to stack'; gm_map's
    row showed the mean of AP as its summary (map's); a tag two runs share picked one."""
    qrels_path, run_paths = trec_files
    for strings in (["runid"], ["relstring"], ["gm_map", "runid"]):
        assert main(["compare", qrels_path, *run_paths[:2], "-m", *strings]) == 2
        assert "has no per-query number to compare" in capsys.readouterr().err
    assert main(["compare", qrels_path, *run_paths[:2], "-m", "gm_map", "map", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "gm_map left out" in captured.err and list(json.loads(captured.out)["means"]["sys0"]) == ["map"]
    twin = tmp_path / "twin.txt"
    twin.write_text(Path(run_paths[0]).read_text())  # the same tag, sys0
    assert main(["compare", qrels_path, run_paths[0], str(twin), "-m", "map", "--baseline", "sys0"]) == 2
    assert "--baseline 'sys0' is the tag of runs" in capsys.readouterr().err


def test_cli_compares_counts_by_their_mean_per_query(trec_files, capsys):
    """Counts are per-query values in a comparison: their mean, where evaluate prints the sum
    (docs/compare.md)."""
    qrels_path, run_paths = trec_files
    measures = ["num_rel_ret", "num_rel"]
    result = evaluate(read_qrels(qrels_path), read_run(run_paths[0]), measures)
    assert main(["compare", qrels_path, *run_paths[:2], "-m", *measures, "--format", "json"]) == 0
    means = json.loads(capsys.readouterr().out)["means"]["sys0"]
    for column, name in enumerate(result.metrics):
        per_query = result.values[:, column]
        assert means[name] == pytest.approx(np.mean(per_query), rel=1e-12)
        assert result.means[name] == np.sum(per_query) > means[name]


def test_cli_names_a_missing_extra_instead_of_a_traceback(trec_files, monkeypatch, capsys):
    qrels_path, run_paths = trec_files

    def without_scipy():
        raise ImportError("ignite_ranking.compare needs scipy; pip install 'ignite-ranking[compare]'")

    monkeypatch.setattr(stats, "_scipy_stats", without_scipy)
    assert main(["compare", qrels_path, *run_paths[:2], "-m", "mrr@10"]) == 1
    assert "pip install 'ignite-ranking[compare]'" in capsys.readouterr().err


# ----------------------------------------------------------------------------- reproducible by default


def test_default_seed_gives_the_same_report():
    systems = _systems()
    kwargs = {"tests": ["randomization", "bootstrap"], "resamples": 300}
    one, two = compare(systems, **kwargs), compare(systems, **kwargs)
    assert one.seed == 0 and one.to_dict() == two.to_dict()
    assert "seed 0" in str(one)
    assert compare(systems, seed=None, **kwargs).seed is None  # fresh randomness on request


# ----------------------------------------------------------------------------- one shared query


def test_one_shared_query_warns_clearly_instead_of_scipy():
    systems = {"a": {"m": [0.1]}, "b": {"m": [0.5]}}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # scipy's raw warnings would raise here
        with pytest.warns(CompareWarning, match="only 1 query in common"):
            report = compare(systems, tests=list(stats.TESTS))
    c = report.comparisons[0]
    assert c.difference == pytest.approx(0.4)
    for value in (c.p["t-test"], c.p["bootstrap"], c.effect_size, *c.ci_t, *c.ci_bca, *c.ci_percentile):
        assert np.isnan(value)
    assert c.p["wilcoxon"] == 1.0 and c.p["randomization"] == 1.0


# ----------------------------------------------------------------------------- t-interval


@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_t_interval_equals_scipy(alpha):
    systems = _systems(n=25)
    report = compare(systems, alpha=alpha, resamples=200)
    for c in report.comparisons:
        d = np.asarray(systems[c.system_b][c.metric]) - np.asarray(systems[c.system_a][c.metric])
        if d.std() > 0:
            expected = scipy_stats.t.interval(1 - alpha, len(d) - 1, loc=d.mean(), scale=scipy_stats.sem(d))
            assert c.ci_t == tuple(map(float, expected))  # the same numbers, to the bit
        else:  # no spread: the point
            assert c.ci_t == (c.difference, c.difference)
    first = report.comparisons[0]
    level = round(100 * (1 - alpha))
    assert f"{level}% CI (t)" in str(report)
    assert f"[{first.ci_t[0]:+.4f}, {first.ci_t[1]:+.4f}]" in str(report)
    assert json.loads(report.to_json())["comparisons"][0]["ci_t"] == list(first.ci_t)
    row = next(csv.DictReader(io.StringIO(report.to_csv())))
    assert (float(row["ci_t_low"]), float(row["ci_t_high"])) == first.ci_t


def test_t_interval_function():
    d = np.array([[0.2, 0.1], [0.1, 0.1], [0.3, 0.1], [0.0, 0.1]])
    got = stats.t_interval(d, alpha=0.05)
    expected = scipy_stats.t.interval(0.95, 3, loc=d[:, 0].mean(), scale=scipy_stats.sem(d[:, 0]))
    assert tuple(got[:, 0]) == expected
    assert tuple(got[:, 1]) == (d[:, 1].mean(), d[:, 1].mean())
    assert np.isnan(stats.t_interval([0.3])).all()


# ----------------------------------------------------------------------------- the command line


def test_cli_same_inputs_same_report(trec_files, capsys):
    qrels_path, run_paths = trec_files
    args = ["compare", qrels_path, *run_paths[:2], "-m", "ndcg@10", "--test", "t-test", "bootstrap"]
    outputs = []
    for _ in range(2):
        assert main([*args, "--resamples", "300"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and ", seed 0" in outputs[0]
    assert main([*args, "--resamples", "300", "--seed", "7"]) == 0
    other = capsys.readouterr().out
    assert ", seed 7" in other and other != outputs[0]


def test_cli_one_shared_query(tmp_path, capsys):
    (tmp_path / "qrels").write_text("q1 0 a 1\nq2 0 a 1\n")
    (tmp_path / "a").write_text("q1 Q0 a 1 1.0 a\nq2 Q0 b 1 1.0 a\n")
    (tmp_path / "b").write_text("q1 Q0 b 1 1.0 b\nq1 Q0 a 2 0.5 b\n")
    paths = [str(tmp_path / n) for n in ("qrels", "a", "b")]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert main(["compare", *paths, "-m", "mrr@10"]) == 0
    err = capsys.readouterr().err
    assert "ignite-ranking: warning: the systems have only 1 query in common" in err
    assert "RuntimeWarning" not in err


def test_cli_compare_progress(trec_files, monkeypatch, capsys):
    qrels_path, run_paths = trec_files
    args = ["compare", qrels_path, *run_paths[:2], "-m", "mrr@10", "--resamples", "100"]

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(args) == 0
    assert "\r" in terminal.getvalue() and "reading" in terminal.getvalue()
    terminal.seek(0), terminal.truncate()
    assert main([*args, "--no-progress"]) == 0
    assert terminal.getvalue() == ""
    monkeypatch.undo()
    # A pipe gets no bars unless asked.
    base = [sys.executable, "-m", "ignite_ranking", *args]
    assert b"\r" not in subprocess.run(base, capture_output=True, check=True).stderr
    assert b"\r" in subprocess.run([*base, "--progress"], capture_output=True, check=True).stderr
