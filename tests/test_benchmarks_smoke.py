"""The benchmark scripts run end to end with --quick (tiny sizes, one repeat).

No timing is asserted: timings belong in benchmarks/RESULTS.md, not in tests. What is checked is
that the scripts still run against the current API and that their own correctness assertions
(our values equal the stable-argsort kernel's; the group equals its members alone) hold. The
scripts are loaded and their ``main`` called in this process, which keeps the test to seconds.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_bench_mrr_quick(capsys):
    assert load("bench_mrr").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| scores | batch x items |" in out
    assert "| continuous |" in out and "| quantized |" in out


def test_bench_family_quick(capsys):
    assert load("bench_family").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| batch x items | labels | case |" in out
    for case in ("group", "topk", "ignite", "six alone"):
        assert f"| {case} |" in out


def test_bench_catalog_quick(capsys):
    pytest.importorskip("faiss")
    assert load("bench_catalog").main(["--quick"]) == 0
    out = capsys.readouterr().out
    for case in ("ours", "ours, 100 excluded", "faiss", "dense"):
        assert f"| {case} |" in out
    assert "no excluded item returned" in out


def test_bench_dense_quick(capsys):
    pytest.importorskip("sentence_transformers")
    assert load("bench_dense").main(["--quick"]) == 0  # asserts ours equals sentence-transformers
    out = capsys.readouterr().out
    for case in ("ours", "sentence-transformers", "matmul+topk"):
        assert f"| {case} |" in out


def test_bench_worst_quick(capsys):
    bench = load("bench_worst")
    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| case | batch x items |" in out
    for case in bench.CASES:
        assert f"| {case.name} |" in out


def test_bench_worst_memory_case_runs_in_a_fresh_process():
    bench = load("bench_worst")
    common = load("common")
    script = str(BENCHMARKS / "bench_worst.py")
    mib, method = common.measure_in_subprocess(script, ["0", "ours", "1"])
    assert method in ("VmHWM-VmRSS", "ru_maxrss delta")
    assert mib >= 0 and bench.CASES[0].name.startswith("all tied")


def test_peak_memory_sees_an_allocation():
    torch = pytest.importorskip("torch")
    common = load("common")
    mib, method = common.peak_beyond_current(lambda: torch.ones(64, 2**20).sum())
    assert method in ("VmHWM-VmRSS", "ru_maxrss delta")
    assert mib >= 0


def test_bench_readers_quick(capsys):
    bench = load("bench_readers")
    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| case | file MB | outcome | s | x ordinary | peak MiB | x ordinary |" in out
    for case, outcome in [
        ("ordinary run", "read, 500 lines"),
        ("64 KiB docno", "refused at line 11"),
        ("64 KiB score", "read, 500 lines"),
        ("64 KiB qid", "read, 500 lines"),
        ("3 MiB docno", "refused at line 1501"),
        ("gzip bomb", "refused at line 1"),
        ("NUL bomb", "refused at line 1"),
    ]:
        assert f"| {case} |" in out and outcome in out.split(f"| {case} |")[1].splitlines()[0]
    assert "| grade 1e9 ndcg |" in out and "| ordinary ndcg |" in out


def test_bench_readers_case_runs_in_a_fresh_process(tmp_path):
    bench = load("bench_readers")
    path = str(tmp_path / "run")
    bench._write(path, bench._run_lines(30))
    result = bench.in_subprocess("run", (path,), timeout=300)
    assert result["outcome"] == "read, 30 lines" and result["mib"] >= 0 and result["s"] > 0


def test_bench_ir_measures_quick(capsys):
    pytest.importorskip("ir_measures")
    pytest.importorskip("pandas")
    assert load("bench_ir_measures").main(["--quick"]) == 0  # asserts equal values itself
    out = capsys.readouterr().out
    for form in ("dicts:", "dataframe:", "files:"):
        assert form in out


def test_bench_compare_quick(capsys):
    pytest.importorskip("ranx")
    assert load("bench_compare").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| ignite-ranking |" in out and "| ranx |" in out
    assert "largest gap in means and t-test p-values" in out


def test_bench_forms_quick(capsys):
    assert load("bench_forms").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| flat | 500 queries x 20 candidates | torchmetrics |" in out
    assert "| retrieved | 500 queries x 20 candidates | ranx (dicts + build + evaluate) |" in out


def test_bench_sharded_small(capsys):
    # Worker processes of 1 and 2 ranks at a tiny size; the script asserts equal results itself.
    bench = load("bench_sharded")
    assert bench.main(["--small", "--queries", "64", "--items", "3000", "--processes", "1", "2"]) == 0
    out = capsys.readouterr().out
    assert "| processes | sharded (ms) |" in out
    assert "| 1 | " in out and "| 2 | " in out
    assert "equal to the 1-process run, bitwise: True" in out


def test_bench_beyond_quick(capsys):
    bench = load("bench_beyond")
    assert bench.main(["--quick"]) == 0  # asserts each metric equals a direct computation itself
    out = capsys.readouterr().out
    assert "| batch x items | case |" in out
    for case in ("topk", "topk + gram", *bench.TARGETS, "group"):
        assert f"| {case} |" in out


def test_bench_sampled_quick(capsys):
    assert load("bench_sampled").main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| batch x (m + 1) | case |" in out and "| n | m | estimator |" in out
    for case in ("SampledMetrics.update", "torch.topk k=20", "rank_batch (sort)"):
        assert f"| {case} |" in out
    for estimator in ("sampled", "rank", "cls", "bv", "mle"):
        assert f"| {estimator} |" in out


def test_bench_startup_quick(capsys, tmp_path):
    # One run of each command in a fresh process (the script raises if one fails), on the
    # repository's fixtures: an empty --trec-eval-src has neither test files nor binary.
    assert load("bench_startup").main(["--quick", "--trec-eval-src", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "files: the repository's fixtures" in out
    assert "trec_eval skipped: no binary at" in out and "| trec_eval |" not in out
    for case in ("ignite-ranking evaluate", "python -c 'import torch'"):
        assert f"| {case} |" in out
    assert "ours - import torch:" in out


def test_bench_gpu_runs_every_step_on_the_cpu(capsys, monkeypatch):
    monkeypatch.setenv("IGNITE_RANKING_KERNELS", "generic")
    assert load("bench_gpu").main(["--device", "cpu", "--quick", "--no-write"]) == 0
    table = capsys.readouterr().out
    assert "| values equal to the CPU's, ties=average | yes |" in table
    assert "| NaN batch on the device | refused at compute |" in table


def test_compare_trees_reads_every_case_of_both_trees(capsys):
    """Two trees timed in fresh processes: here this checkout twice, one round of bench_mrr and
    bench_family quick (each a different table to read)."""
    root = BENCHMARKS.parent
    args = [str(root), str(root), "--rounds", "1", "--quick", "--benches", "mrr", "family"]
    assert load("compare_trees").main(args) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(("| mrr |", "| family |"))]
    assert any(line.startswith("| mrr | continuous") for line in rows)
    assert any(line.startswith("| family |") for line in rows)
    for line in rows:  # bench, case, before, after, after/before: a positive ratio of ratios
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert len(cells) == 5 and float(cells[4].rstrip("x")) > 0, line
    assert f"median of after/before over {len(rows)} cases" in out
