"""Two source trees timed alternately: does a change move the CPU figures?

Runs each tree's own bench_mrr, bench_family and bench_worst in fresh processes (``PYTHONPATH``
set to the tree's ``src``), round 1 before then after, round 2 after then before, and so on. From
each run it takes the "ours" time of every case (bench_family: the group) and the ``torch.topk``
timed beside it in the same run; the ratio of the two takes out the machine's drift between
runs. It prints one markdown row per case: each round's ours ms (ours/topk) per tree, and the
median of the after ratios over the median of the before ratios.

Usage: python benchmarks/compare_trees.py BEFORE_TREE AFTER_TREE [--rounds 2] [--quick]
(a tree is a checkout's root, e.g. one made by ``git worktree add --detach DIR COMMIT``).
Run it on a machine with nothing else running; under load the ratios mean little.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

BENCHES = {
    "mrr": ["--repeats", "5"],
    "family": ["--no-memory", "--repeats", "3"],
    "worst": ["--no-memory"],
}


def tables(text: str) -> list[list[list[str]]]:
    """The markdown tables in ``text``: each a list of rows of cells, header first."""
    found, current = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-:") for c in cells):
                current.append(cells)
        elif current:
            found.append(current)
            current = []
    return found


def number(cell: str) -> float:
    return float(cell.replace(",", ""))


def timings(text: str) -> dict[str, tuple[float, float]]:
    """{case: (ours ms, topk ms)} from one benchmark's output."""
    out = {}
    for header, *rows in tables(text):
        if "case" in header and "median (ms)" in header:  # bench_family: one row per case
            case, median = header.index("case"), header.index("median (ms)")
            by_key: dict[str, dict[str, float]] = {}
            for row in rows:
                key = f"{row[0].split(' (')[0]} {row[1]}"
                by_key.setdefault(key, {})[row[case]] = number(row[median])
            out.update(
                {k: (v["group"], v["topk"]) for k, v in by_key.items() if {"group", "topk"} <= v.keys()}
            )
        for ours_name, topk_name in (("ours (ms)", "topk (ms)"), ("ours ms", "topk ms")):
            if ours_name in header and topk_name in header:  # bench_mrr, bench_worst
                ours, topk = header.index(ours_name), header.index(topk_name)
                key_cells = 2 if header[0] == "scores" else 1
                for row in rows:
                    out[" ".join(row[:key_cells])] = (number(row[ours]), number(row[topk]))
    return out


def run(tree: Path, bench: str, quick: bool) -> dict[str, tuple[float, float]]:
    args = ["--quick"] if quick else BENCHES[bench]
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    script = tree / "benchmarks" / f"bench_{bench}.py"
    result = subprocess.run(
        [sys.executable, str(script), *args], env=env, capture_output=True, text=True, check=True
    )
    return timings(result.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--benches", nargs="+", default=list(BENCHES), choices=list(BENCHES))
    parser.add_argument("--quick", action="store_true", help="each bench's --quick sizes (a smoke test)")
    args = parser.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    results: dict[tuple[str, str], list[dict]] = {}
    for r in range(args.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        for bench in args.benches:
            for side in order:
                print(f"round {r + 1}: {side} bench_{bench}", file=sys.stderr, flush=True)
                results.setdefault((bench, side), []).append(run(trees[side], bench, args.quick))
    print(f"before: {trees['before']}\nafter: {trees['after']}\n")
    sides = "before: ours ms (ours/topk) | after: ours ms (ours/topk)"
    print(f"| bench | case | {sides} | after/before of ours/topk |")
    print("|---|---|---|---|---|")
    changes = []
    for bench in args.benches:
        for case in results[bench, "before"][0]:
            cells, medians = [], []
            for side in ("before", "after"):
                pairs = [run_[case] for run_ in results[bench, side] if case in run_]
                cells.append(" / ".join(f"{o:,.1f} ({o / t:.2f})" for o, t in pairs))
                medians.append(statistics.median(o / t for o, t in pairs))
            change = medians[1] / medians[0]
            changes.append(change)
            print(f"| {bench} | {case} | {cells[0]} | {cells[1]} | {change:.2f}x |")
    print(
        f"\nmedian of after/before over {len(changes)} cases: {statistics.median(changes):.2f}x; "
        f"range {min(changes):.2f}-{max(changes):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
