"""The metric family in one group vs torch.topk, vs ignite's HitRate + NDCG, vs six separate metrics.

One process, the same tensors, timed side by side (see ``common.py``); top_k=[1, 5, 10, 20, 50, 100]:

- ``group``: ``RankingMetrics(mrr=MRR(ks), hit_rate=HitRate(ks), ndcg=NDCG(ks),
  precision=Precision(ks), recall=Recall(ks), map=MAP(ks)).update`` (ranks each batch once);
- ``topk``: ``torch.topk(y_pred, k=100)`` alone (the floor of any top-k method);
- ``ignite``: ``ignite.metrics.HitRate(ks)`` and ``ignite.metrics.NDCG(ks)`` both updated (the
  two ranking metrics ignite 0.5.x has, covering less than the group);
- ``six alone``: the same six ignite_ranking metrics, each updating on its own (it ranks six
  times; the in-library baseline the group is meant to beat).

Peak memory beyond the inputs is measured for each case in a fresh subprocess (the high-water
mark of resident memory during one update minus the resident memory just before it; see
``common.py``). Before timing, the script asserts that the group's results equal those of the
six metrics updated alone, and prints how far ignite's values are from ours.

Usage::

    python benchmarks/bench_family.py            # full run
    python benchmarks/bench_family.py --quick    # tiny sizes, one repeat, no memory runs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    TOP_K,
    machine_line,
    make_batch,
    markdown_table,
    measure_in_subprocess,
    report_memory_case,
    tie_rows_at_cutoff,
    time_side_by_side,
    verdict,
)
from ignite.metrics import NDCG as IgniteNDCG
from ignite.metrics import HitRate as IgniteHitRate

from ignite_ranking import MAP, MRR, NDCG, HitRate, Precision, RankingMetrics, Recall

FULL_SIZES = [(256, 100_000), (512, 10_000)]
QUICK_SIZES = [(8, 2_000)]
CASES = ["group", "topk", "ignite", "six alone"]
LABELS = ["binary", "graded 0-4"]
TARGET_SIZE = (256, 100_000)


def make_data(batch: int, items: int, labels: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``make_batch``'s continuous scores, with its 0-5 relevant items a row labelled 1
    (``"binary"``) or graded 1-4 (``"graded 0-4"``; 0 elsewhere)."""
    y_pred, y = make_batch(batch, items, "continuous", seed=batch + items)
    if labels == "binary":
        return y_pred, (y > 0).to(y.dtype)
    if labels == "graded 0-4":
        grades = torch.randint(1, 5, y.shape, generator=torch.Generator().manual_seed(batch)).to(y.dtype)
        return y_pred, torch.where(y > 0, grades, y)
    raise ValueError(f"labels must be one of {LABELS}, got {labels!r}")


def six_metrics(top_k: list[int]) -> dict:
    return {
        "mrr": MRR(top_k),
        "hit_rate": HitRate(top_k),
        "ndcg": NDCG(top_k),
        "precision": Precision(top_k),
        "recall": Recall(top_k),
        "map": MAP(top_k),
    }


def make_case(name: str, y_pred: torch.Tensor, y: torch.Tensor):
    """A zero-argument callable that performs one update of case ``name`` on ``(y_pred, y)``."""
    k_max = min(TOP_K[-1], y_pred.shape[1])
    if name == "group":
        group = RankingMetrics(**six_metrics(TOP_K))
        return lambda: group.update((y_pred, y))
    if name == "topk":
        return lambda: torch.topk(y_pred, k=k_max, dim=1)
    if name == "ignite":
        hit_rate, ndcg = IgniteHitRate(top_k=TOP_K), IgniteNDCG(top_k=TOP_K)

        def both():
            hit_rate.update((y_pred, y))
            ndcg.update((y_pred, y))

        return both
    if name == "six alone":
        members = list(six_metrics(TOP_K).values())

        def each():
            for metric in members:
                metric.update((y_pred, y))

        return each
    raise ValueError(f"unknown case {name!r}")


def check_agreement(y_pred: torch.Tensor, y: torch.Tensor) -> float:
    """Asserts group == members alone; returns the largest |ours - ignite| over HitRate and NDCG."""
    group = RankingMetrics(**six_metrics(TOP_K))
    group.update((y_pred, y))
    together = group.compute()
    for name, metric in six_metrics(TOP_K).items():
        metric.update((y_pred, y))
        alone = dict(zip((f"{name}@{k}" for k in TOP_K), metric.compute(), strict=True))
        for key, value in alone.items():
            assert together[key] == value, (key, together[key], value)
    hit_rate, ndcg = IgniteHitRate(top_k=TOP_K), IgniteNDCG(top_k=TOP_K)
    hit_rate.update((y_pred, y))
    ndcg.update((y_pred, y))
    gaps = [abs(together[f"hit_rate@{k}"] - v) for k, v in zip(TOP_K, hit_rate.compute(), strict=True)]
    gaps += [abs(together[f"ndcg@{k}"] - v) for k, v in zip(TOP_K, ndcg.compute(), strict=True)]
    return max(gaps)


def memory_case(argv: list[str]) -> int:
    """Subprocess side of the memory measurement: ``--memory-case NAME BATCH ITEMS LABELS``."""
    name, batch, items, labels = argv[0], int(argv[1]), int(argv[2]), argv[3]
    y_pred, y = make_data(batch, items, labels)
    tiny_pred, tiny_y = make_batch(4, 500, "continuous", seed=1)
    report_memory_case(make_case(name, y_pred, y), warm=make_case(name, tiny_pred, tiny_y))
    return 0


def run(sizes, repeats: int, warmup: int, memory: bool) -> list[dict]:
    script = str(Path(__file__).resolve())
    results = []
    for (batch, items), labels in ((size, labels) for size in sizes for labels in LABELS):
        y_pred, y = make_data(batch, items, labels)
        ignite_gap = check_agreement(y_pred, y)
        timings = time_side_by_side(
            {name: make_case(name, y_pred, y) for name in CASES}, repeats=repeats, warmup=warmup
        )
        peaks = {}
        if memory:
            for name in CASES:
                peaks[name], method = measure_in_subprocess(script, [name, str(batch), str(items), labels])
        else:
            method = None
        input_mib = (y_pred.nbytes + y.nbytes) / 2**20
        results.append(
            {
                "size": (batch, items),
                "labels": labels,
                "ties": tie_rows_at_cutoff(y_pred, min(TOP_K[-1], items)),
                "timings": timings,
                "peaks": peaks,
                "method": method,
                "input_mib": input_mib,
                "ignite_gap": ignite_gap,
            }
        )
        print(
            f"  {batch}x{items} {labels}: "
            + "  ".join(f"{name} {t.median:.1f} ms" for name, t in timings.items())
            + (f"; peak MiB {', '.join(f'{n} {p:.0f}' for n, p in peaks.items())}" if peaks else ""),
            flush=True,
        )
    return results


def tables(results: list[dict]) -> str:
    header = ["batch x items", "labels", "case", "median (ms)", "spread (ms)", "case/group"]
    header.append("peak MiB beyond input")
    rows = []
    for r in results:
        group = r["timings"]["group"].median
        for name in CASES:
            t = r["timings"][name]
            peak = r["peaks"].get(name)
            rows.append(
                [
                    f"{r['size'][0]}x{r['size'][1]:,} (inputs {r['input_mib']:.0f} MiB)",
                    r["labels"],
                    name,
                    t.median,
                    t.spread,
                    f"{t.median / group:.2f}x",
                    "-" if peak is None else f"{peak:.0f}",
                ]
            )
    lines = [markdown_table(header, rows), ""]
    for r in results:
        lines.append(
            f"{r['size'][0]}x{r['size'][1]:,} {r['labels']}: rows tied at k=100: {r['ties']:.0%}; "
            f"max |ours - ignite| over HitRate@k and NDCG@k: {r['ignite_gap']:.1e}"
        )
    methods = {r["method"] for r in results if r["method"]}
    if methods:
        lines.append(f"peak memory measured as: {', '.join(sorted(methods))} (one update, fresh process)")
    return "\n".join(lines)


def targets(results: list[dict]) -> list[str]:
    lines = []
    if not any(r["size"] == TARGET_SIZE for r in results):
        return ["targets: not evaluated (they are set at the full sizes; run without --quick)"]
    for r in results:
        t = {name: r["timings"][name].median for name in CASES}
        size = f"{r['size'][0]}x{r['size'][1]:,} {r['labels']}"
        over_topk = t["group"] / t["topk"]
        lines.append(f"target {size}: group/topk <= 1.6x: {over_topk:.2f}x, {verdict(over_topk <= 1.6)}")
        vs_ignite = t["ignite"] / t["group"]
        if r["size"] == TARGET_SIZE:
            lines.append(f"target {size}: ignite/group >= 10x: {vs_ignite:.1f}x, {verdict(vs_ignite >= 10)}")
        else:
            lines.append(f"info {size}: ignite/group: {vs_ignite:.1f}x")
        lines.append(f"info {size}: six alone/group: {t['six alone'] / t['group']:.1f}x")
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--memory-case"]:
        return memory_case(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat, no memory runs")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per case (default 5)")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch.set_num_threads (default: leave torch's default)"
    )
    parser.add_argument(
        "--memory",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="measure peak memory in subprocesses (default: on, off with --quick)",
    )
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    repeats = args.repeats or (1 if args.quick else 5)
    warmup = 0 if args.quick else 1
    memory = (not args.quick) if args.memory is None else args.memory

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"machine: {machine_line()}")
    print(f"top_k={TOP_K}; median of {repeats} interleaved run(s) after {warmup} warm-up(s)")
    results = run(sizes, repeats, warmup, memory)
    print()
    print(tables(results))
    print()
    for line in targets(results):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
