"""Sampled evaluation: SampledMetrics.update vs torch.topk, and compute() per estimator.

One process, the same tensors, timed side by side (see ``common.py``):

- update, ``batch x (m + 1)`` scores with one relevant item per row:
  ``SampledMetrics(n, m, [1, 5, 10, 20]).update`` (checks the batch, counts each row's sampled
  rank, adds a bincount to the histogram) against ``torch.topk(y_pred, k=20)`` of the same tensor
  (what a top-k evaluation of the sampled candidates costs at least), and against the library's
  sorting kernel ``rank_batch`` on the same rows (what ranking them would cost);
- compute, per estimator, for a catalog of ``n`` items at ``m`` negatives, from a histogram of
  5,000 queries whose full ranks are log-uniform (``P(r) ~ 1 / r``, so that the sampled ranks
  spread over all ``m + 1`` values; the "full" column is their exact HitRate@10): "cold" is the first
  ``compute()`` of a process (it builds the quadrature design, cached after), "warm" a later one.
  ``compute()`` estimates MRR@k, HitRate@k and NDCG@k at four cutoffs and AUC.

Targets (full run): update within 2x of topk at 4,096 x 100; sampled, rank, bv and cls under
1 s cold at n = 10**6, m = 99; mle as measured.

Usage::

    python benchmarks/bench_sampled.py            # full run
    python benchmarks/bench_sampled.py --quick    # tiny sizes, one repeat
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_line, markdown_table, time_side_by_side, verdict

from ignite_ranking import sampled
from ignite_ranking.kernels import rank_batch
from ignite_ranking.sampled import _quadrature, estimators

TOP_K = [1, 5, 10, 20]
FULL_UPDATE = (4096, 99)
QUICK_UPDATE = (64, 19)
FULL_COMPUTE = [(10**6, 99), (10**6, 999)]
QUICK_COMPUTE = [(10**4, 19)]
QUERIES = 5000


def load_average() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "n/a"


def update_batch(batch: int, m: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    y_pred = torch.randn(batch, m + 1, generator=gen).round(decimals=3)  # a few ties
    y = torch.zeros(batch, m + 1)
    y[torch.arange(batch), torch.randint(0, m + 1, (batch,), generator=gen)] = 1
    y_pred += 1.5 * y
    return y_pred, y


def run_update(batch: int, m: int, repeats: int, warmup: int) -> dict:
    y_pred, y = update_batch(batch, m)
    metric = sampled.SampledMetrics(10**6, m, TOP_K)
    # the counted ranks are the sorting kernel's
    ranked = rank_batch(y_pred, y, m + 1, count=False, labels=False)
    assert torch.equal(sampled.sampled_ranks(y_pred, y), ranked.relevant.argmax(dim=1) + 1)
    cases = {
        "SampledMetrics.update": lambda: metric.update((y_pred, y)),
        "torch.topk k=20": lambda: torch.topk(y_pred, max(TOP_K), dim=1),
        "rank_batch (sort)": lambda: rank_batch(y_pred, y, m + 1, count=False, labels=False),
    }
    return {"size": (batch, m + 1), "timings": time_side_by_side(cases, repeats, warmup)}


def full_ranks(n: int, seed: int = 0) -> np.ndarray:
    """Log-uniform full ranks of ``QUERIES`` queries."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n + 1)
    return rng.choice(np.arange(1, n + 1), QUERIES, p=weights / weights.sum())


def metric_with_histogram(n: int, m: int, estimator: str, seed: int = 0) -> sampled.SampledMetrics:
    """A SampledMetrics fed (through update) rows whose sampled ranks follow the model's law."""
    rng = np.random.default_rng(seed + 1)
    full = full_ranks(n, seed)
    drawn = rng.hypergeometric(full - 1, n - full, m)  # r' - 1 for each query
    metric = sampled.SampledMetrics(n, m, TOP_K, estimator=estimator)
    for start in range(0, QUERIES, 500):
        part = torch.as_tensor(drawn[start : start + 500])
        y_pred = -torch.arange(m + 1, dtype=torch.float32).expand(part.numel(), m + 1)
        y = torch.zeros(part.numel(), m + 1)
        y[torch.arange(part.numel()), part] = 1  # column j is ranked j + 1
        metric.update((y_pred, y))
    return metric


def run_compute(n: int, m: int, repeats: int) -> dict:
    rows = {}
    for estimator in sampled.ESTIMATORS:
        metric = metric_with_histogram(n, m, estimator)
        cold, warm = [], []
        for _ in range(repeats if estimator != "mle" else 1):
            estimators._design.cache_clear()
            _quadrature.discrete_gauss.cache_clear()
            start = time.perf_counter()
            result = metric.compute()
            cold.append(time.perf_counter() - start)
            start = time.perf_counter()
            metric.compute()
            warm.append(time.perf_counter() - start)
        rows[estimator] = {"cold": cold, "warm": warm, "hit_rate@10": result["hit_rate@10"]}
        print(
            f"  n={n:,} m={m} {estimator}: cold {np.median(cold):.3f} s, warm {np.median(warm):.3f} s",
            flush=True,
        )
    truth = float(np.mean(full_ranks(n) <= 10))
    return {"n": n, "m": m, "rows": rows, "truth": truth}


def tables(update: dict, computes: list[dict]) -> str:
    t = update["timings"]
    base = t["torch.topk k=20"].median
    batch, columns = update["size"]
    rows = [
        [f"{batch:,} x {columns}", name, timing.median, timing.spread, f"{timing.median / base:.2f}x"]
        for name, timing in t.items()
    ]
    lines = [markdown_table(["batch x (m + 1)", "case", "median (ms)", "spread (ms)", "case/topk"], rows), ""]
    rows = []
    for c in computes:
        for estimator, r in c["rows"].items():
            rows.append(
                [
                    f"{c['n']:,}",
                    c["m"],
                    estimator,
                    f"{np.median(r['cold']):.3f}",
                    f"{np.median(r['warm']):.3f}",
                    f"{r['hit_rate@10']:.4f}",
                    f"{c['truth']:.4f}",
                ]
            )
    header = ["n", "m", "estimator", "compute cold (s)", "compute warm (s)", "hit_rate@10", "full"]
    lines.append(markdown_table(header, rows))
    return "\n".join(lines)


def targets(update: dict, computes: list[dict], quick: bool) -> list[str]:
    if quick:
        return ["targets: not evaluated (they are set at the full sizes; run without --quick)"]
    t = update["timings"]
    ratio = t["SampledMetrics.update"].median / t["torch.topk k=20"].median
    lines = [f"target update/topk <= 2x at 4,096 x 100: {ratio:.2f}x, {verdict(ratio <= 2)}"]
    for c in computes:
        for estimator, r in c["rows"].items():
            cold = float(np.median(r["cold"]))
            if c["m"] == 99 and estimator != "mle":
                lines.append(f"target {estimator} cold < 1 s at m=99: {cold:.3f} s, {verdict(cold < 1)}")
            else:
                lines.append(f"info {estimator} at n={c['n']:,}, m={c['m']}: {cold:.3f} s cold")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per case (default 5)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    repeats = args.repeats or (1 if args.quick else 5)
    warmup = 0 if args.quick else 1
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"machine: {machine_line()}")
    print(f"load average at start (1, 5, 15 min): {load_average()}")
    batch, m = QUICK_UPDATE if args.quick else FULL_UPDATE
    update = run_update(batch, m, repeats, warmup)
    computes = [
        run_compute(n, m, 1 if args.quick else 3) for n, m in (QUICK_COMPUTE if args.quick else FULL_COMPUTE)
    ]
    print(f"load average at end (1, 5, 15 min): {load_average()}")
    print()
    print(tables(update, computes))
    print()
    for line in targets(update, computes, args.quick):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
