"""The device path on one GPU: equal values, no synchronization per update, times against top-k.

One script, under 5 minutes on one GPU (issue 35), in five steps:

1. values: the six-metric family and the group on the device equal the CPU's (host-tuned
   kernels) on tied batches, bitwise, under ties first, last and average; a NaN batch is refused
   at ``compute()`` and adds nothing;
2. syncs: ``torch.cuda.set_sync_debug_mode("error")`` around loops of ``update`` (MRR, NDCG,
   the group; continuous and 1/8-quantized scores; ties first and last): "0" or the first error;
3. MRR([1, 10, 100]) and the six-metric group at 4,096 x 1,000,000 float32 against
   ``torch.topk(y_pred, 100)`` on the same device (medians of timed runs);
4. ``catalog.top_k`` at 16,384 queries x 10,000,000 items x 128 dimensions against a plain
   chunked matmul + top-k merge;
5. whether a metric's ``update`` can be captured in a CUDA graph.

It prints one table and, on a GPU (or with ``--write``), puts it in ``benchmarks/RESULTS.md``
under "GPU (bench_gpu.py)". ``--device cpu --quick`` runs every step on small sizes (the sync
step and the graph step say "n/a" there): a smoke test of the script itself.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch

import ignite_ranking as ir
from ignite_ranking import catalog

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADING = "## GPU (`benchmarks/bench_gpu.py`)"
KS = [1, 10, 100]


def family(ks: list[int], device: torch.device | str = "cpu") -> dict:
    kinds = {"mrr": ir.MRR, "ndcg": ir.NDCG, "recall": ir.Recall, "precision": ir.Precision}
    kinds |= {"hit_rate": ir.HitRate, "map": ir.MAP}
    return {name: kind(ks, device=device) for name, kind in kinds.items()}


def make_batch(batch: int, items: int, kind: str, device: torch.device, seed: int = 0):
    """Float32 scores (``continuous`` randn, or ``eighths``: multiples of 1/8, heavy ties) and
    int8 graded labels 0-3 with about 5 relevant items a row, made on ``device``."""
    gen = torch.Generator(device=device).manual_seed(seed)
    y_pred = torch.randn(batch, items, generator=gen, device=device)
    if kind == "eighths":
        y_pred = y_pred.mul_(8).round_().div_(8)
    hits = torch.rand(batch, items, generator=gen, device=device) < 5.0 / items
    grades = torch.randint(1, 4, (batch, items), generator=gen, device=device, dtype=torch.int8)
    y = torch.where(hits, grades, torch.zeros_like(grades))
    y_pred = torch.where(hits, y_pred + 1.0, y_pred)  # relevant items rank higher, as a model's
    return y_pred, y


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_ms(fn, device: torch.device, repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    synchronize(device)
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def step_values(device: torch.device) -> list[tuple[str, str]]:
    """The device's values against the CPU's host-tuned ones, bitwise; the deferred refusal."""
    rows = []
    for ties in ("first", "last", "average"):
        unequal = 0
        for seed, (batch, items) in enumerate([(64, 50), (32, 3000), (8, 100_000)]):
            y_pred, y = make_batch(batch, items, "eighths", torch.device("cpu"), seed)
            y = y.to(torch.int64)
            results = []
            for where in (torch.device("cpu"), device):
                group = ir.RankingMetrics(family([1, 5, 10, 50], where), ties=ties)
                group.update((y_pred.to(where), y.to(where)))
                results.append(group.compute())
            unequal += sum(results[0][name] != results[1][name] for name in results[0])
        rows.append(
            (f"values equal to the CPU's, ties={ties}", "yes" if unequal == 0 else f"{unequal} differ")
        )
    y_pred, y = make_batch(4, 20, "continuous", device, 1)
    y_pred[2, 3] = float("nan")
    metric = ir.MRR([1, 5], device=device)
    try:
        metric.update((y_pred, y))
    except ValueError:  # the host-tuned kernels (CPU tensors, IGNITE_RANKING_KERNELS=auto)
        return [*rows, ("NaN batch on the device", "refused at once (host-tuned kernels)")]
    try:
        metric.compute()
        refused = "not refused"
    except ValueError as error:
        refused = "refused at compute" if "update 1 since reset, row 2" in str(error) else str(error)
    rows.append(("NaN batch on the device", refused))
    return rows


def step_syncs(device: torch.device, batch: int, items: int) -> list[tuple[str, str]]:
    """``set_sync_debug_mode("error")`` around update loops: "0" or the first error's line."""
    if device.type != "cuda":
        return [("syncs per update (sync debug mode)", "n/a off CUDA")]
    rows = []
    for kind in ("continuous", "eighths"):
        y_pred, y = make_batch(batch, items, kind, device)
        for ties in ("first", "last"):
            makers = {
                "MRR": lambda t=ties: ir.MRR(KS, ties=t, device=device),
                "NDCG": lambda t=ties: ir.NDCG([10, 100], ties=t, device=device),
                "group": lambda t=ties: ir.RankingMetrics(family(KS, device), ties=t),
            }
            for name, make in makers.items():
                metric = make()
                metric.update((y_pred, y))  # a warm-up outside the check
                torch.cuda.set_sync_debug_mode("error")
                try:
                    for _ in range(3):
                        metric.update((y_pred, y))
                    found = "0"
                except RuntimeError as error:
                    found = str(error).splitlines()[0][:90]
                finally:
                    torch.cuda.set_sync_debug_mode("default")
                rows.append((f"syncs per update, {name}, {kind}, ties={ties}", found))
    return rows


def step_times(device: torch.device, batch: int, items: int, repeats: int) -> list[tuple[str, str]]:
    return [
        row for kind in ("continuous", "eighths") for row in _times_of(device, batch, items, kind, repeats)
    ]


def _times_of(device: torch.device, batch: int, items: int, kind: str, repeats: int) -> list[tuple[str, str]]:
    y_pred, y = make_batch(batch, items, kind, device)
    size = f"{kind}, {batch:,} x {items:,} (ms)"
    topk = median_ms(lambda: torch.topk(y_pred, KS[-1], dim=1), device, repeats)
    rows = []
    for name, metric in (
        ("MRR", ir.MRR(KS, device=device)),
        ("group", ir.RankingMetrics(family(KS, device))),
    ):
        ms = median_ms(lambda m=metric: m.update((y_pred, y)), device, repeats)
        rows.append((f"{name} update, {size}", f"{ms:.2f} ({ms / topk:.1f}x topk)"))
    return [*rows, (f"torch.topk(k=100), {size}", f"{topk:.2f}")]


def _matmul_top_k(queries: torch.Tensor, items: torch.Tensor, k: int, chunk: int):
    best_values = best_ids = None
    for start in range(0, items.shape[0], chunk):
        values, ids = torch.topk(queries @ items[start : start + chunk].T, k, dim=1)
        ids += start
        if best_values is not None:
            values, at = torch.topk(torch.cat((best_values, values), dim=1), k, dim=1)
            ids = torch.cat((best_ids, ids), dim=1).gather(1, at)
        best_values, best_ids = values, ids
    return best_values, best_ids


def step_catalog(device: torch.device, queries: int, items: int, dim: int) -> list[tuple[str, str]]:
    gen = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(queries, dim, generator=gen, device=device)
    embeddings = torch.randn(items, dim, generator=gen, device=device)
    ours = median_ms(lambda: catalog.top_k(q, embeddings, 100), device, 3, warmup=1)
    chunk = max(1, (1 << 28) // max(queries, 1))
    plain = median_ms(lambda: _matmul_top_k(q, embeddings, 100, chunk), device, 3, warmup=1)
    size = f"{queries:,} x {items:,} x {dim}"
    return [
        (f"catalog.top_k(k=100), {size} (ms)", f"{ours:.1f} ({ours / plain:.2f}x matmul + topk)"),
        (f"chunked matmul + topk merge, {size} (ms)", f"{plain:.1f}"),
    ]


def step_graph(device: torch.device) -> list[tuple[str, str]]:
    if device.type != "cuda":
        return [("update captured in a CUDA graph", "n/a off CUDA")]
    y_pred, y = make_batch(256, 10_000, "continuous", device)
    metric = ir.MRR(KS, device=device)
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(3):
            metric.update((y_pred, y))
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            metric.update((y_pred, y))
        graph.replay()
        found = "yes"
    except Exception as error:  # the answer is whether it works, and if not, why
        found = f"no: {type(error).__name__}: {str(error).splitlines()[0][:80]}"
    return [("update captured in a CUDA graph", found)]


def write_results(table: str, note: str) -> None:
    text = RESULTS.read_text()
    section = f"{HEADING}\n\n{note}\n\n{table}\n"
    if HEADING in text:
        start = text.index(HEADING)
        end = text.find("\n## ", start + len(HEADING))
        text = text[:start] + section + (text[end + 1 :] if end != -1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--write",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write the table to RESULTS.md (default: on a GPU only)",
    )
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    batch, items = (32, 5_000) if args.quick else (4096, 1_000_000)
    queries, catalog_items, dim = (64, 20_000, 16) if args.quick else (16_384, 10_000_000, 128)
    repeats = 1 if args.quick else args.repeats
    steps = [
        ("values", lambda: step_values(device)),
        ("syncs", lambda: step_syncs(device, min(batch, 1024), min(items, 100_000))),
        ("times", lambda: step_times(device, batch, items, repeats)),
        ("catalog", lambda: step_catalog(device, queries, catalog_items, dim)),
        ("graph", lambda: step_graph(device)),
    ]
    rows, failed = [], 0
    for name, step in steps:
        try:
            rows += step()
        except Exception:  # one step's failure is a result too; the others still run
            failed += 1
            rows.append((f"step {name}", "failed: " + traceback.format_exc().strip().splitlines()[-1][:100]))
        print(f"{name}: done", file=sys.stderr)
    table = "| check | result |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)
    print(table)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    note = f"On {name}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}; medians of {repeats} runs."
    if args.write if args.write is not None else device.type == "cuda":
        write_results(table, note)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
