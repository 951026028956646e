"""Start-up of the command line: ``ignite-ranking evaluate`` on trec_eval's 3-query test files
against ``python -c "import torch"`` (the floor: the evaluation needs torch) and trec_eval itself.

Each case is a fresh process, timed wall-clock from start to exit; the cases run round-robin, so
that a burst of load hits all of them alike, after one untimed warm-up round, which puts the
files and libraries in the page cache and our compiled modules in ``__pycache__`` (as an install
does). Each case also reports the CPU time (user + system) its process used, which a busy machine
inflates less than the wall time. Ours runs as ``python -m ignite_ranking``, which imports what
the ``ignite-ranking`` script imports, from the sources this script imports. Target: ours within
torch's import + 0.5 s.

The files: ``test/qrels.test`` and ``test/results.test`` of a trec_eval source directory
(--trec-eval-src); without it, the repository's fixtures (tests/fixtures/trec_eval/), and the
output says which.

Usage: python benchmarks/bench_startup.py [--runs 5] [--trec-eval-src DIR] [--trec-eval BINARY]
                                          [--before OTHER_CHECKOUT/src]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import ignite_ranking

TARGET_S = 0.5  # ours may take at most this much longer than importing torch
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "trec_eval"


def input_files(trec_eval_src: Path) -> tuple[str, str, str]:
    """``(qrels, run, where)``: trec_eval's test files, else the repository's fixtures."""
    qrels, run = trec_eval_src / "test" / "qrels.test", trec_eval_src / "test" / "results.test"
    if qrels.is_file() and run.is_file():
        return str(qrels), str(run), f"trec_eval's test files ({qrels.parent})"
    return (
        str(FIXTURES / "graded.qrels"),
        str(FIXTURES / "ties.run"),
        f"the repository's fixtures ({FIXTURES}; no test files under {trec_eval_src})",
    )


def environment(src: str, bytecode: bool) -> dict[str, str]:
    """This process's environment with ``src`` first on PYTHONPATH; with ``bytecode``, without
    PYTHONDONTWRITEBYTECODE, so that the warm-up round caches the compiled modules under ``src``
    as an install does (else every run compiles the package's sources again)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(command: Sequence[str], env: dict[str, str] | None) -> tuple[float, float]:
    """``(wall, cpu)``: seconds from starting ``command`` to its exit, and the CPU seconds (user +
    system) it used, which a busy machine inflates less. Its output is discarded; a failure raises."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each case (default 5)")
    parser.add_argument(
        "--quick", action="store_true", help="one run, no warm-up, no bytecode written (the smoke test)"
    )
    parser.add_argument("--trec-eval-src", type=Path, default=Path("/work/trec_eval_src"))
    parser.add_argument("--trec-eval", help="trec_eval binary (default: trec_eval in --trec-eval-src)")
    parser.add_argument(
        "--before",
        metavar="SRC",
        help="also time `evaluate` with the package under SRC (another checkout's src/): A/B in one run",
    )
    args = parser.parse_args(argv)
    runs, warm_up = (1, False) if args.quick else (args.runs, True)

    qrels, run, where = input_files(args.trec_eval_src)
    src = str(Path(ignite_ranking.__file__).resolve().parent.parent)
    evaluate = [sys.executable, "-m", "ignite_ranking", "evaluate", qrels, run]
    cases = {
        "ignite-ranking evaluate": (evaluate, environment(src, warm_up)),
        "python -c 'import torch'": ([sys.executable, "-c", "import torch"], None),
        "python -c pass": ([sys.executable, "-c", "pass"], None),
    }
    if args.before:
        cases["ignite-ranking evaluate, --before"] = (evaluate, environment(args.before, warm_up))
    binary = args.trec_eval or str(args.trec_eval_src / "trec_eval")
    if shutil.which(binary):
        cases["trec_eval"] = ([binary, qrels, run], None)
        note = ""
    else:
        note = f"trec_eval skipped: no binary at {binary} (--trec-eval)"

    print(f"files: {where}")
    print(f"ours: {sys.executable} -m ignite_ranking (ignite_ranking from {src})")
    if args.before:
        print(f"--before: the same, ignite_ranking from {args.before}")
    if note:
        print(note)
    if warm_up and os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("PYTHONDONTWRITEBYTECODE ignored for ours: the warm-up caches its bytecode, as an install does")
    print(f"load average before: {load()}")
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for round_ in range(runs + warm_up):
        for name, (command, env) in cases.items():
            wall, used = timed(command, env)
            if round_ >= warm_up:
                times[name].append(wall)
                cpu[name].append(used)
    print(f"load average after: {load()}\n")

    print(f"| case | median (s) | min (s) | runs ({runs}, s) | CPU median (s) |")
    print("|---|---:|---:|---|---:|")
    for name, values in times.items():
        spread = " ".join(f"{t:.3f}" for t in values)
        print(
            f"| {name} | {statistics.median(values):.3f} | {min(values):.3f} | {spread} "
            f"| {statistics.median(cpu[name]):.3f} |"
        )

    ours, torch_ = times["ignite-ranking evaluate"], times["python -c 'import torch'"]
    gap_median = statistics.median(ours) - statistics.median(torch_)
    gap_min = min(ours) - min(torch_)
    gap_cpu = statistics.median(cpu["ignite-ranking evaluate"]) - statistics.median(
        cpu["python -c 'import torch'"]
    )
    print(
        f"\nours - import torch: {gap_median:+.3f} s median, {gap_min:+.3f} s min, "
        f"{gap_cpu:+.3f} s CPU median; "
        f"ours / import torch: {statistics.median(ours) / statistics.median(torch_):.2f}x median "
        f"(target: within +{TARGET_S} s: {'met' if gap_median <= TARGET_S else 'NOT met'})"
    )
    if "trec_eval" in times:
        ratio = statistics.median(ours) / statistics.median(times["trec_eval"])
        print(f"ours / trec_eval: {ratio:.0f}x median (a C program that needs no runtime)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
