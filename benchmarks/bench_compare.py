"""Comparing systems end to end: `ignite-ranking compare` vs ranx `compare`, side by side in one run.

Generates (seeded, in-process) qrels and RUNS runs of QUERIES x DOCS lines into a temporary
directory (the runs rank the same candidates, better runs push relevant documents up; integer
scores by rank, so that no two documents tie and both libraries rank alike), then times, from
files to p-values, for 4 metrics, all pairs, a paired t-test and a randomization test with
RESAMPLES resamples:

- ignite-ranking: ``ignite-ranking compare QRELS RUN... --test t-test randomization`` through
  ``cli.main`` (reads the qrels and each run once, evaluates, compares; the report also carries
  bootstrap percentile and BCa intervals from RESAMPLES resamples, which ranx does not compute);
- ranx: ``Qrels.from_file`` + ``Run.from_file`` for each run, then ``compare(...,
  stat_test="student")`` and ``compare(..., stat_test="fisher", n_permutations=RESAMPLES)`` (one
  test per call, as ranx offers them). Its numba JIT compilation is done before the timing on a
  tiny input and reported apart.

The cases run interleaved (ours, ranx, ours, ranx, ...). Before timing, the script checks that
the means and t-test p-values of both agree to 1e-9.

Usage: python benchmarks/bench_compare.py [--queries 10000] [--docs 1000] [--runs 5]
       [--resamples 10000] [--repeats 2] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ignite_ranking.cli import main as cli_main

OURS = ["ndcg@10", "mrr@10", "map@100", "recall@100"]
RANX = ["ndcg@10", "mrr@10", "map@100", "recall@100"]


def generate(directory: str, queries: int, docs: int, runs: int, seed: int = 0) -> tuple[str, list[str]]:
    rng = np.random.default_rng(seed)
    qrels_path = os.path.join(directory, "qrels.txt")
    run_paths = [os.path.join(directory, f"run{r}.txt") for r in range(runs)]
    judged_per_query = min(50, docs)
    with contextlib.ExitStack() as stack:
        qf = stack.enter_context(open(qrels_path, "w"))
        files = [stack.enter_context(open(p, "w")) for p in run_paths]
        for q in range(queries):
            ids = rng.choice(5_000_000, docs, replace=False)
            judged = rng.choice(docs, judged_per_query, replace=False)
            rels = rng.choice([0, 0, 0, 1, 2], judged_per_query)
            qf.write("".join(f"q{q} 0 D{ids[i]} {r}\n" for i, r in zip(judged, rels, strict=True)))
            gain = np.zeros(docs)
            gain[judged] = rels
            for r, f in enumerate(files):
                order = np.argsort(-(rng.random(docs) + 0.15 * r * gain), kind="stable")
                f.write("".join(f"q{q} Q0 D{ids[i]} {k} {docs - k} run{r}\n" for k, i in enumerate(order)))
    return qrels_path, run_paths


def ours(qrels_path: str, run_paths: list[str], resamples: int) -> dict:
    args = ["compare", qrels_path, *run_paths, "-m", *OURS, "--test", "t-test", "randomization"]
    args += ["--resamples", str(resamples), "--seed", "0", "--format", "json", "--correction", "none"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(args) == 0
    return json.loads(out.getvalue())


def ranx_compare(qrels_path: str, run_paths: list[str], resamples: int):
    from ranx import Qrels, Run, compare

    qrels = Qrels.from_file(qrels_path, kind="trec")
    runs = []
    for r, path in enumerate(run_paths):
        run = Run.from_file(path, kind="trec")
        run.name = f"run{r}"
        runs.append(run)
    student = compare(qrels, runs, RANX, stat_test="student")
    fisher = compare(qrels, runs, RANX, stat_test="fisher", n_permutations=resamples, random_seed=0)
    return student, fisher


def check_agreement(mine: dict, student) -> float:
    """Largest gap between our and ranx's means and t-test p-values (asserted <= 1e-9)."""
    gap = 0.0
    for system, means in mine["means"].items():
        for o, t in zip(OURS, RANX, strict=True):
            gap = max(gap, abs(means[o] - student.results[system][t]))
    for c in mine["comparisons"]:
        t = RANX[OURS.index(c["metric"])]
        p_ranx = student.comparisons[c["system_a"], c["system_b"]][t]["p_value"]
        p = c["p"]["t-test"]
        gap = max(gap, 0.0 if p is None and np.isnan(p_ranx) else abs(p - p_ranx))
    assert gap <= 1e-9, f"ours and ranx disagree by {gap}"
    return gap


def timed(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - start, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat (the smoke test)")
    args = parser.parse_args(argv)
    if args.quick:
        args.queries, args.docs, args.runs, args.resamples, args.repeats = 40, 30, 3, 200, 1
    with tempfile.TemporaryDirectory() as directory:
        start = time.perf_counter()
        qrels_path, run_paths = generate(directory, args.queries, args.docs, args.runs)
        size = sum(os.path.getsize(p) for p in run_paths) / 2**20
        print(
            f"generated {args.runs} runs of {args.queries} x {args.docs} ({size:.0f} MiB) "
            f"in {time.perf_counter() - start:.1f}s"
        )
        tiny = Path(directory) / "tiny"
        tiny.mkdir()
        tiny_qrels, tiny_runs = generate(str(tiny), 20, 20, 2, seed=1)
        jit, _ = timed(ranx_compare, tiny_qrels, tiny_runs, 100)
        times: dict[str, list[float]] = {"ignite-ranking": [], "ranx": []}
        for _ in range(args.repeats):
            elapsed, mine = timed(ours, qrels_path, run_paths, args.resamples)
            times["ignite-ranking"].append(elapsed)
            elapsed, (student, _) = timed(ranx_compare, qrels_path, run_paths, args.resamples)
            times["ranx"].append(elapsed)
    gap = check_agreement(mine, student)
    ours_s, ranx_s = statistics.median(times["ignite-ranking"]), statistics.median(times["ranx"])
    print(
        f"\n{args.runs} runs x {args.queries} queries x {args.docs} docs, {len(OURS)} metrics, all pairs, "
        f"t-test + randomization ({args.resamples} resamples); seconds, median of {args.repeats}:\n"
    )
    print("| case | median s | runs (s) | x ours |")
    print("|---|---|---|---|")
    for name, runs in times.items():
        med = statistics.median(runs)
        print(f"| {name} | {med:.2f} | {' '.join(f'{t:.2f}' for t in runs)} | {med / ours_s:.1f} |")
    print(f"| ranx JIT warm-up (tiny input, before timing) | {jit:.2f} | | |")
    ratio = ranx_s / ours_s
    print(f"\nranx / ours = {ratio:.1f}x (target >= 5x: {'met' if ratio >= 5 else 'MISSED'}); ", end="")
    print(f"largest gap in means and t-test p-values: {gap:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
