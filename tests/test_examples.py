"""Runs every script in examples/ at a small size and checks what it promises.

The single-process examples are imported and their ``main(argv)`` called (one interpreter, so
torch is imported once); the distributed ones start real worker processes, so they run as a
subprocess, as a user would run them.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_attach_to_engine(capsys: pytest.CaptureFixture[str]) -> None:
    results = load("attach_to_engine").main(["--queries", "300", "--items", "200"])
    printed = capsys.readouterr().out
    for name in ("hit_rate@1", "hit_rate@10", "ndcg@5", "ndcg@10", "recall@10", "recall@100", "map@10"):
        assert name in printed
        assert 0.0 <= results[name] <= 1.0
    # HitRate@1 and MRR@1 are the same number: both ask whether rank 1 is relevant.
    assert results["hit_rate@1"] == pytest.approx(results["mrr@1"])
    assert results["mrr@1"] <= results["mrr@10"] <= results["hit_rate@10"]


def test_plain_loop() -> None:
    results = load("plain_loop").main(["--queries", "400", "--items", "300", "--batch-size", "150"])
    mrr = results["mrr"]
    assert len(mrr) == 3 and mrr[0] <= mrr[1] <= mrr[2] <= 1.0
    assert isinstance(results["r_precision"], float)


def test_checkpoint_resume_after_sigkill_equals_uninterrupted_run(capsys: pytest.CaptureFixture[str]) -> None:
    """A process killed with SIGKILL after its checkpoint; a fresh one resumes it exactly."""
    results = load("checkpoint_resume").main(["--batches", "5", "--items", "100", "--kill-at", "2"])
    printed = capsys.readouterr().out
    assert "killed after iteration 2 of 5" in printed and "resuming after iteration 2" in printed
    assert results["killed_by"] == "SIGKILL"
    assert results["resumed"] == results["expected"]


@pytest.mark.slow
def test_distributed_two_gloo_processes(tmp_path: Path) -> None:
    out = tmp_path / "metrics.json"
    run = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "distributed.py"),
            "--queries",
            "301",
            "--items",
            "200",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "rank 0/2" in run.stdout and "rank 1/2" in run.stdout
    result = json.loads(out.read_text())
    assert result["matches_single_process"] is True
    assert set(result["metrics"]) == {"mrr@1", "mrr@10", "hit_rate@10", "ndcg@10", "recall@50"}


@pytest.mark.slow
@pytest.mark.parametrize("processes", [2, 3])
def test_sharded_catalog_equals_one_process(tmp_path: Path, processes: int) -> None:
    out = tmp_path / "result.json"
    size = ["--items", "20000", "--users", "300", "--epochs", "1", "--batch-size", "128"]
    launch = ["--nproc-per-node", str(processes), "--out", str(out)]
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "sharded_catalog.py"), *size, *launch],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    for rank in range(processes):
        assert f"rank {rank}/{processes}" in run.stdout
    result = json.loads(out.read_text())
    assert result["world_size"] == processes
    assert result["same_ranking"] is True and result["ranking_mismatches"] == []
    assert result["same_metrics"] is True
    assert set(result["metrics"]) == {f"{m}@{k}" for m in ("mrr", "ndcg", "recall") for k in (10, 100)}
    assert 0.0 < result["metrics"]["recall@100"] <= 1.0


def test_sampled_vs_full(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plot = tmp_path / "sampled.png"
    argv = ["--items", "3000", "--queries", "300", "--negatives", "49", "--plot", str(plot)]
    results = load("sampled_vs_full").main(argv)
    printed = capsys.readouterr().out
    assert plot.stat().st_size > 10_000
    assert "hit_rate@10" in printed and "mle" in printed
    full, estimates = results["full"], results["estimates"]
    assert set(estimates) == {"sampled", "rank", "cls", "bv", "mle"}
    # the uncorrected sampled HitRate@10 overstates the full one; BV is nearer; AUC agrees
    assert estimates["sampled"]["hit_rate@10"] > full["hit_rate@10"]
    bv_error = abs(estimates["bv"]["hit_rate@10"] - full["hit_rate@10"])
    assert bv_error < abs(estimates["sampled"]["hit_rate@10"] - full["hit_rate@10"])
    assert estimates["sampled"]["auc"] == pytest.approx(full["auc"], abs=0.01)


@pytest.mark.slow
def test_dense_retrieval_on_one_and_two_processes_agree(tmp_path: Path) -> None:
    histories = []
    for processes in (1, 2):
        out = tmp_path / f"result{processes}.json"
        size = ["--docs", "400", "--queries", "120", "--epochs", "2", "--nproc-per-node", str(processes)]
        run = subprocess.run(
            [sys.executable, str(EXAMPLES / "dense_retrieval.py"), *size, "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
        result = json.loads(out.read_text())
        assert result["world_size"] == processes and len(result["history"]) == 2
        histories.append(result["history"])
    assert histories[0] == histories[1]  # the same numbers, to the bit
    assert histories[0][-1]["recall@100"] > 0.5  # it learned something
