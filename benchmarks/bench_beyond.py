"""The beyond-accuracy metrics vs torch.topk of the same scores, side by side.

One process, the same tensors, timed round-robin (see ``common.py``); top_k=[10, 100]. Each
metric's ``update((y_pred, y))`` is timed next to its floor:

- ``topk``: ``torch.topk(y_pred, k=100)`` alone, the floor of any top-k measure. Novelty,
  AveragePopularity, LongTailShare and ShannonEntropy read the top 100 items' ids and per-item
  statistics (target: within 1.5x of it); Serendipity and ExpectedExposure also read every label
  (target: within 2x);
- ``topk + gram``: ``torch.topk`` plus intra-list diversity's own O(batch x k x d) work done
  plainly (gather the top 100 items' unit embeddings, one float64 ``(batch, k, k)`` Gram block):
  IntraListDiversity's floor (target: within 1.5x);
- ``group``: every metric above in one ``RankingMetrics`` (ranks each batch once), for scale.

The statistics are made from the data, nothing is read from disk: popularity is a count per
item, the tail its least popular fifth, embeddings ``d = 64`` random vectors, ten item groups.
Before timing, the script asserts that each metric equals a direct computation from the
contract's ranking (``torch.argsort(y_pred, descending=True, stable=True)``) and that the group
equals its members alone.

Usage::

    python benchmarks/bench_beyond.py              # full run (256 x 100,000)
    python benchmarks/bench_beyond.py --quick      # tiny sizes, one repeat
    python benchmarks/bench_beyond.py --threads 1  # one thread (steadier on a loaded machine)
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_line, make_batch, markdown_table, tie_rows_at_cutoff, time_side_by_side, verdict

from ignite_ranking import (
    AveragePopularity,
    ExpectedExposure,
    IntraListDiversity,
    LongTailShare,
    Novelty,
    RankingMetrics,
    Serendipity,
    ShannonEntropy,
)

TOP_K = [10, 100]
DIM = 64
GROUPS = 10
FULL_SIZES = [(256, 100_000)]
QUICK_SIZES = [(8, 2_000)]
TARGET_SIZE = (256, 100_000)
# metric -> (its floor, the target ratio to it)
TARGETS = {
    "novelty": ("topk", 1.5),
    "arp": ("topk", 1.5),
    "aplt": ("topk", 1.5),
    "entropy": ("topk", 1.5),
    "ild": ("topk + gram", 1.5),
    "serendipity": ("topk", 2.0),
    "ee": ("topk", 2.0),
    "ee + groups": ("topk", 2.0),
}


def make_statistics(items: int, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    popularity = torch.randint(1, 1000, (items,), generator=gen).to(torch.float64)
    return {
        "popularity": popularity,
        "tail": popularity <= torch.quantile(popularity, 0.2),
        "embeddings": torch.randn(items, DIM, generator=gen),
        "groups": torch.randint(0, GROUPS, (items,), generator=gen),
    }


def make_metrics(stats: dict[str, torch.Tensor], items: int) -> dict:
    return {
        "novelty": Novelty(TOP_K, stats["popularity"]),
        "arp": AveragePopularity(TOP_K, stats["popularity"]),
        "aplt": LongTailShare(TOP_K, stats["tail"]),
        "entropy": ShannonEntropy(TOP_K, items),
        "ild": IntraListDiversity(TOP_K, stats["embeddings"]),
        "serendipity": Serendipity(TOP_K, stats["popularity"]),
        "ee": ExpectedExposure(TOP_K),
        "ee + groups": ExpectedExposure(TOP_K, stats["groups"]),
    }


def gram_floor(y_pred: torch.Tensor, unit: torch.Tensor, k: int):
    """torch.topk and intra-list diversity's own work, written plainly."""

    def run():
        ids = torch.topk(y_pred, k, dim=1).indices
        vectors = unit[ids]
        return torch.bmm(vectors, vectors.transpose(1, 2))

    return run


def check_values(y_pred: torch.Tensor, y: torch.Tensor, stats: dict[str, torch.Tensor]) -> None:
    """Each metric equals a direct computation from the contract's ranking; the group equals its
    members alone."""
    items = y_pred.shape[1]
    metrics = make_metrics(stats, items)
    group = RankingMetrics(make_metrics(stats, items))
    for metric in (*metrics.values(), group):
        metric.update((y_pred, y))
    together = group.compute()
    order = torch.argsort(y_pred, dim=1, descending=True, stable=True)
    popularity = stats["popularity"]
    novelty = -torch.log2(popularity / popularity.sum())
    unit = stats["embeddings"].to(torch.float64)
    unit = unit / unit.norm(dim=1, keepdim=True)
    by_popularity = torch.argsort(popularity, descending=True, stable=True)
    for column, k in enumerate(TOP_K):
        top = order[:, :k]
        held = top.shape[1]
        direct = {
            "novelty": novelty[top].mean(dim=1).mean().item(),
            "arp": popularity[top].mean(dim=1).mean().item(),
            "aplt": stats["tail"][top].to(torch.float64).mean(dim=1).mean().item(),
        }
        gram = unit[top] @ unit[top].transpose(1, 2)
        pairs = held * (held - 1) / 2
        direct["ild"] = (1 - (gram.sum(dim=(1, 2)) - held) / 2 / pairs).mean().item()
        relevant = torch.gather(y, 1, top) >= 1
        unexpected = ~torch.isin(top, by_popularity[:k])
        hits = (relevant & unexpected).sum(dim=1).to(torch.float64) / held
        counted = (y >= 1).any(dim=1)
        direct["serendipity"] = hits[counted].mean().item()
        counts = torch.bincount(top.reshape(-1), minlength=items).to(torch.float64)
        p = counts[counts > 0] / counts.sum()
        direct["entropy"] = -(p * torch.log2(p)).sum().item()
        for name, value in direct.items():
            got = metrics[name].compute()[column]
            assert math.isclose(got, value, rel_tol=1e-9, abs_tol=1e-9), (name, k, got, value)
    for name, metric in metrics.items():
        alone = metric.compute()
        if isinstance(alone, dict):
            for key, value in alone.items():
                assert together[name + key[len(metric.name) :]] == value, (name, key)
        else:
            for k, value in zip(TOP_K, alone, strict=True):
                assert together[f"{name}@{k}"] == value, (name, k)


def make_cases(y_pred: torch.Tensor, y: torch.Tensor, stats: dict[str, torch.Tensor]) -> dict:
    """Zero-argument callables, one per case, each performing one update (or its floor)."""
    items = y_pred.shape[1]
    k_max = min(TOP_K[-1], items)
    unit = stats["embeddings"].to(torch.float64)
    unit = unit / unit.norm(dim=1, keepdim=True)
    cases = {
        "topk": lambda: torch.topk(y_pred, k_max, dim=1),
        "topk + gram": gram_floor(y_pred, unit, k_max),
    }
    for name, metric in make_metrics(stats, items).items():
        cases[name] = lambda metric=metric: metric.update((y_pred, y))
    group = RankingMetrics(make_metrics(stats, items))
    cases["group"] = lambda: group.update((y_pred, y))
    return cases


def run(sizes, repeats: int, warmup: int) -> list[dict]:
    results = []
    for batch, items in sizes:
        y_pred, y = make_batch(batch, items, "continuous", seed=batch + items)
        stats = make_statistics(items, seed=items)
        check_values(y_pred, y, stats)
        cases = make_cases(y_pred, y, stats)
        timings = time_side_by_side(cases, repeats=repeats, warmup=warmup)
        results.append(
            {
                "size": (batch, items),
                "ties": tie_rows_at_cutoff(y_pred, min(TOP_K[-1], items)),
                "timings": timings,
            }
        )
        print(f"  {batch}x{items}: " + "  ".join(f"{n} {t.median:.1f} ms" for n, t in timings.items()))
    return results


def tables(results: list[dict]) -> str:
    header = ["batch x items", "case", "median (ms)", "spread (ms)", "floor", "case/floor", "target"]
    rows = []
    for r in results:
        t = r["timings"]
        for name, timing in t.items():
            floor, target = TARGETS.get(name, ("topk", None))
            ratio = timing.median / t[floor].median
            rows.append(
                [
                    f"{r['size'][0]}x{r['size'][1]:,}",
                    name,
                    timing.median,
                    timing.spread,
                    floor if name not in ("topk",) else "-",
                    f"{ratio:.2f}x" if name != "topk" else "-",
                    f"<= {target}x" if target else "-",
                ]
            )
    lines = [markdown_table(header, rows), ""]
    for r in results:
        lines.append(f"{r['size'][0]}x{r['size'][1]:,}: rows tied at k=100: {r['ties']:.0%}")
    return "\n".join(lines)


def targets(results: list[dict]) -> list[str]:
    if not any(r["size"] == TARGET_SIZE for r in results):
        return ["targets: not evaluated (they are set at 256 x 100,000; run without --quick)"]
    lines = []
    for r in results:
        if r["size"] != TARGET_SIZE:
            continue
        t = r["timings"]
        for name, (floor, target) in TARGETS.items():
            ratio = t[name].median / t[floor].median
            lines.append(f"target {name}/{floor} <= {target}x: {ratio:.2f}x, {verdict(ratio <= target)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per case (default 7)")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch.set_num_threads (default: leave torch's default)"
    )
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    repeats = args.repeats or (1 if args.quick else 7)
    warmup = 0 if args.quick else 1
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"machine: {machine_line()}")
    with contextlib.suppress(OSError):
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        print(f"load average: {load} ({os.cpu_count()} CPUs)")
    print(f"top_k={TOP_K}; median of {repeats} interleaved run(s) after {warmup} warm-up(s)")
    results = run(sizes, repeats, warmup)
    print()
    print(tables(results))
    print()
    for line in targets(results):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
