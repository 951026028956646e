"""Runs examples/demo.py at a tiny size: the metrics must rise as the model learns."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_demo_metrics_rise_and_plot_is_written(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    args = ["--users", "500", "--items", "300", "--epochs", "4", "--seed", "3", "--out", str(out)]
    args += ["--beyond-plot", str(out / "accuracy_novelty.png")]
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), *args],
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:].decode()
    # Output to a pipe: no progress bars, whose carriage-return redraws would flood a log. (Bytes:
    # text mode would turn every \r into \n.)
    assert b"\r" not in run.stderr and b"\r" not in run.stdout
    stdout = run.stdout.decode()

    result = json.loads((out / "metrics.json").read_text())
    history = result["history"]
    assert len(history) == 1 + 4  # before training, then one evaluation per epoch
    expected = {f"mrr@{k}" for k in (1, 5, 10, 100)} | {"hit_rate@10", "ndcg@10", "recall@10", "recall@50"}
    assert expected <= set(history[-1])
    first, last = history[1], history[-1]
    for name in expected:
        assert last[name] > first[name], f"{name} did not rise: epoch 1 {first[name]}, last {last[name]}"

    assert (out / "metrics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "accuracy_novelty.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert all(math.isfinite(h["novelty@10"]) for h in history)
    assert str(out / "metrics.png") in stdout
    assert "typically around rank" in stdout
    table = stdout[stdout.index("metric ") :]
    assert "mrr@100" in table and "trained" in table
