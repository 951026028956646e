"""MRR@k update speed: ignite_ranking.MRR vs a full stable argsort vs torch.topk alone.

All three run in one process on the same tensors, timed side by side (see ``common.py``):

- ``ours``: ``MRR(top_k=[1, 5, 10, 20, 50, 100]).update((y_pred, y))`` (input checks included);
- ``argsort``: the straightforward exact kernel, a stable descending ``torch.argsort`` of every
  row, labels gathered in that order, the first relevant rank, RR per k, summed;
- ``topk``: ``torch.topk(y_pred, k=100)`` alone, the floor any top-k method pays (it does not
  follow the tie rule, so it is a speed reference, not a correct alternative).

Before timing, the script asserts that our per-query RR@k values equal the argsort kernel's on
the very tensors it times, and that ``MRR.compute()`` is their mean.

Usage::

    python benchmarks/bench_mrr.py                 # full run (a few minutes on 2 cores)
    python benchmarks/bench_mrr.py --quick         # tiny sizes, one repeat (smoke test)
    python benchmarks/bench_mrr.py --plot docs/_static/benchmark.png
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    TOP_K,
    machine_line,
    make_batch,
    markdown_table,
    tie_rows_at_cutoff,
    time_side_by_side,
    verdict,
)

import ignite_ranking
from ignite_ranking.functional import reciprocal_rank

FULL_SIZES = [(512, 1_000), (512, 10_000), (256, 100_000)]
QUICK_SIZES = [(16, 300), (8, 2_000)]
KINDS = ["continuous", "quantized", "eighths"]
TARGET_SIZE = (256, 100_000)


def argsort_reciprocal_rank(y_pred: torch.Tensor, y: torch.Tensor, top_k: list[int]) -> torch.Tensor:
    """Per-query RR@k by sorting every row in full: ``(batch, len(top_k))`` float64."""
    order = torch.argsort(y_pred, dim=1, descending=True, stable=True)
    relevant = y.gather(1, order) >= 1.0
    found = relevant.any(dim=1)
    rank = relevant.to(torch.uint8).argmax(dim=1).to(torch.float64) + 1.0
    cutoffs = torch.tensor(top_k, dtype=torch.float64)
    within = found[:, None] & (rank[:, None] <= cutoffs)
    return torch.where(within, 1.0 / rank[:, None], torch.zeros((), dtype=torch.float64))


def check_agreement(y_pred: torch.Tensor, y: torch.Tensor) -> None:
    """Our per-query values must equal the argsort kernel's exactly, and MRR their mean."""
    ours = reciprocal_rank(y_pred, y, TOP_K)
    reference = argsort_reciprocal_rank(y_pred, y, TOP_K)
    assert torch.equal(ours, reference), (
        f"per-query RR@k differ from the stable-argsort kernel in "
        f"{int((ours != reference).any(dim=1).sum())} rows"
    )
    metric = ignite_ranking.MRR(top_k=TOP_K)
    metric.update((y_pred, y))
    counted = (y >= 1.0).any(dim=1)
    expected = reference[counted].mean(dim=0).tolist()
    got = metric.compute()
    assert all(
        math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) for a, b in zip(got, expected, strict=True)
    ), (
        got,
        expected,
    )


def run(sizes, repeats: int, warmup: int) -> list[dict]:
    results = []
    for kind in KINDS:
        for batch, items in sizes:
            y_pred, y = make_batch(batch, items, kind, seed=batch + items)
            check_agreement(y_pred, y)
            metric = ignite_ranking.MRR(top_k=TOP_K)
            k_max = min(TOP_K[-1], items)

            def argsort_case(y_pred=y_pred, y=y):
                return argsort_reciprocal_rank(y_pred, y, TOP_K).sum(dim=0)

            timings = time_side_by_side(
                {
                    "ours": lambda metric=metric, y_pred=y_pred, y=y: metric.update((y_pred, y)),
                    "argsort": argsort_case,
                    "topk": lambda y_pred=y_pred, k=k_max: torch.topk(y_pred, k=k, dim=1),
                },
                repeats=repeats,
                warmup=warmup,
            )
            results.append(
                {
                    "kind": kind,
                    "size": (batch, items),
                    "ties": tie_rows_at_cutoff(y_pred, k_max),
                    "timings": timings,
                }
            )
            print(
                f"  {kind:10s} {batch}x{items:<7d} ours {timings['ours'].median:8.1f} ms  "
                f"argsort {timings['argsort'].median:8.1f} ms  topk {timings['topk'].median:7.1f} ms",
                flush=True,
            )
    return results


def table(results: list[dict]) -> str:
    header = [
        "scores",
        "batch x items",
        "rows tied at k=100",
        "ours (ms)",
        "argsort (ms)",
        "topk (ms)",
        "argsort/ours",
        "ours/topk",
        "spread ours / argsort / topk (ms)",
    ]
    rows = []
    for r in results:
        t = r["timings"]
        rows.append(
            [
                r["kind"],
                f"{r['size'][0]}x{r['size'][1]:,}",
                f"{r['ties']:.0%}",
                t["ours"].median,
                t["argsort"].median,
                t["topk"].median,
                f"{t['argsort'].median / t['ours'].median:.1f}x",
                f"{t['ours'].median / t['topk'].median:.2f}x",
                f"{t['ours'].spread} / {t['argsort'].spread} / {t['topk'].spread}",
            ]
        )
    return markdown_table(header, rows)


def targets(results: list[dict]) -> list[str]:
    at = {r["kind"]: r["timings"] for r in results if r["size"] == TARGET_SIZE}
    if len(at) < len(KINDS):
        return ["targets: not evaluated (they are set at 256x100,000; run without --quick)"]
    cont, quant = at["continuous"], at["quantized"]
    speedup = cont["argsort"].median / cont["ours"].median
    over_topk = cont["ours"].median / cont["topk"].median
    speedup_q = quant["argsort"].median / quant["ours"].median
    eighths = at["eighths"]["ours"].median / at["eighths"]["topk"].median
    return [
        f"target continuous 256x100,000: argsort/ours >= 10x: {speedup:.1f}x, {verdict(speedup >= 10)}",
        f"target continuous 256x100,000: ours/topk <= 2x: {over_topk:.2f}x, {verdict(over_topk <= 2)}",
        f"target quantized 256x100,000: argsort/ours >= 3x: {speedup_q:.1f}x, {verdict(speedup_q >= 3)}",
        f"target eighths 256x100,000: ours/topk <= 3x: {eighths:.2f}x, {verdict(eighths <= 3)}",
    ]


def plot(results: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = [
        ("ours", "ignite_ranking.MRR.update"),
        ("argsort", "stable argsort"),
        ("topk", "torch.topk alone"),
    ]
    fig, axes = plt.subplots(1, len(KINDS), figsize=(11, 4.2), sharey=True)
    for ax, kind in zip(axes, KINDS, strict=True):
        rows = [r for r in results if r["kind"] == kind]
        width = 0.27
        for i, (key, label) in enumerate(methods):
            xs = [j + (i - 1) * width for j in range(len(rows))]
            ys = [r["timings"][key].median for r in rows]
            ax.bar(xs, ys, width, label=label)
        for j, r in enumerate(rows):
            t = r["timings"]
            ax.annotate(
                f"{t['argsort'].median / t['ours'].median:.1f}x",
                (j - width, t["ours"].median),
                textcoords="offset points",
                xytext=(0, 3),
                ha="center",
                fontsize=8,
            )
        ax.set_xticks(range(len(rows)), [f"{r['size'][0]}x{r['size'][1]:,}" for r in rows])
        ax.set_yscale("log")
        ax.set_title(f"{kind} scores (label: argsort / ours)")
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0].set_ylabel("median ms per update (log)")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(f"MRR@[1..100] update, CPU: {machine_line()}", fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"chart written to {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat, no warm-up")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per case (default 7)")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch.set_num_threads (default: leave torch's default)"
    )
    parser.add_argument("--plot", metavar="PATH", help="write a bar chart (PNG) of the medians")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    repeats = args.repeats or (1 if args.quick else 7)
    warmup = 0 if args.quick else 1

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"machine: {machine_line()}")
    print(f"top_k={TOP_K}; median of {repeats} interleaved run(s) after {warmup} warm-up(s)")
    results = run(sizes, repeats, warmup)
    print()
    print(table(results))
    print()
    for line in targets(results):
        print(line)
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
