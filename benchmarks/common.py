"""Shared helpers of the benchmark scripts: test data, side-by-side timing, peak memory, tables.

Timing: every case of one table runs in the same process on the same tensors. After warm-up
calls, the cases are timed round-robin (case A, B, C, then A, B, C again, ...), so that a burst of
load on a shared machine hits every case alike, and each case reports the median of its runs and
their spread (min-max).

Peak memory: each case runs once in a fresh subprocess. The subprocess builds its inputs, warms
the code path up on a tiny batch, resets the kernel's resident-set high-water mark
(``/proc/self/clear_refs``), runs the case once, and reports ``VmHWM - VmRSS before the call``:
the most resident memory the call added on top of its inputs (torch's CPU allocator returns large
blocks to the OS, so this sees every tensor the call allocated, but also counts pages touched in
the allocator's caches). Where ``clear_refs`` cannot be written (not Linux), the fallback is the
``ru_maxrss`` growth over the call, which misses any peak that happened before it.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

TOP_K = [1, 5, 10, 20, 50, 100]
MAX_RELEVANT = 5  # each row gets 0..MAX_RELEVANT relevant items (some rows none)


# --------------------------------------------------------------------------------------------- data


def make_batch(batch: int, items: int, kind: str = "continuous", seed: int = 0):
    """``(y_pred, y)`` float32 scores and graded labels 0-3 with a few relevant items per row.

    Relevant items get a score boost, so that they often rank in the top 100 (as in a trained
    model) and the metrics are not all zero.

    kind:
        ``"continuous"``: ``randn`` scores rounded to 4 decimals (realistic: some rows have a tie
        at the cutoff, most do not).
        ``"quantized"``: scores rounded to multiples of 1/16, so most rows have a tie across the
        cutoff (low-precision or bucketed scores).
        ``"eighths"``: scores rounded to multiples of 1/8: every row has a tie across the cutoff
        of a few dozen items (at 100,000 items a row; the case of a tie pass that lists them).
    """
    gen = torch.Generator().manual_seed(seed)
    y = torch.zeros(batch, items)
    per_row = torch.randint(0, MAX_RELEVANT + 1, (batch,), generator=gen)
    for row in range(batch):
        count = int(per_row[row])
        if count:
            cols = torch.randperm(items, generator=gen)[:count]
            y[row, cols] = torch.randint(1, 4, (count,), generator=gen).float()
    y_pred = torch.randn(batch, items, generator=gen)
    y_pred += 1.5 * y
    if kind == "continuous":
        y_pred = y_pred.round(decimals=4)
    elif kind == "quantized":
        y_pred = (y_pred * 16).round() / 16
    elif kind == "eighths":
        y_pred = (y_pred * 8).round() / 8
    else:
        raise ValueError(f"kind must be 'continuous', 'quantized' or 'eighths', got {kind!r}")
    return y_pred.contiguous(), y


def tie_rows_at_cutoff(y_pred: torch.Tensor, k: int = 100) -> float:
    """Fraction of rows whose k-th best score equals the (k+1)-th (a tie across the cutoff)."""
    if k >= y_pred.shape[1]:
        return 0.0
    values = torch.topk(y_pred, k + 1, dim=1).values
    return (values[:, k] == values[:, k - 1]).float().mean().item()


# ------------------------------------------------------------------------------------------- timing


@dataclass
class Timing:
    """Wall-clock times of one case, in milliseconds."""

    runs: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def spread(self) -> str:
        return f"{min(self.runs):.1f}-{max(self.runs):.1f}"


def time_side_by_side(
    cases: dict[str, Callable[[], object]], repeats: int, warmup: int = 1
) -> dict[str, Timing]:
    """Times every case ``repeats`` times, interleaved, after ``warmup`` untimed calls each."""
    for _ in range(warmup):
        for fn in cases.values():
            fn()
    runs: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            start = time.perf_counter()
            fn()
            runs[name].append((time.perf_counter() - start) * 1e3)
    return {name: Timing(values) for name, values in runs.items()}


# ------------------------------------------------------------------------------------------- memory


def _status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _maxrss_kib() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak


def peak_beyond_current(fn: Callable[[], object]) -> tuple[float, str]:
    """Runs ``fn`` once; MiB of resident memory it added at its peak, and how that was measured."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # resets VmHWM to the current VmRSS
        before = _status_kib("VmRSS")
        method = "VmHWM-VmRSS"
    except OSError:
        before = None
    if before is None:
        before, method = _maxrss_kib(), "ru_maxrss delta"
        fn()
        return (_maxrss_kib() - before) / 1024, method
    fn()
    peak = _status_kib("VmHWM") or before
    return max(peak - before, 0) / 1024, method


def measure_in_subprocess(script: str, args: Sequence[str]) -> tuple[float, str]:
    """Runs ``script --memory-case ARGS...`` in a fresh interpreter; its ``(MiB, method)``."""
    done = subprocess.run(
        [sys.executable, script, "--memory-case", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["mib"], result["method"]


def report_memory_case(fn: Callable[[], object], warm: Callable[[], object]) -> None:
    """The subprocess side: warm the code path up, measure ``fn``, print one JSON line."""
    warm()
    mib, method = peak_beyond_current(fn)
    print(json.dumps({"mib": mib, "method": method}))


# ------------------------------------------------------------------------------------------- output


def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} logical CPUs, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), Python {platform.python_version()}"
    )


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        return f"{value:.1f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"
