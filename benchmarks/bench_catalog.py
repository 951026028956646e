"""Full-catalog top-k: catalog.top_k vs faiss's exact IndexFlatIP and vs the dense torch.topk.

One process, the same tensors, cases timed side by side (see ``common.py``); float32, d=64,
k=100, ``randn`` embeddings:

- 4,096 queries x 1,000,000 items: ``ours`` = ``catalog.top_k(queries, items, 100)``;
  ``ours, 100 excluded`` = the same with 100 random excluded items per query (a ``(batch, 100)``
  id tensor); ``faiss`` = ``faiss.IndexFlatIP.search`` on the same arrays (the index is built
  once, outside the timing). The ids are compared where the scores are distinct (faiss's BLAS
  rounds differently, so two nearly equal scores can swap).
- 512 queries x 1,000,000 items, where the full score matrix fits (2 GiB): ``ours`` vs
  ``dense`` = ``(queries @ items.T).topk(100)``.

Peak memory beyond the inputs is measured for each case in a fresh subprocess (the high-water
mark of resident memory during one call minus the resident memory just before it).

Usage::

    python benchmarks/bench_catalog.py              # full run (minutes)
    python benchmarks/bench_catalog.py --quick      # tiny sizes, one repeat, no memory runs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    machine_line,
    markdown_table,
    measure_in_subprocess,
    report_memory_case,
    time_side_by_side,
    verdict,
)

from ignite_ranking import catalog

K = 100
DIM = 64
EXCLUDED = 100
FULL = {"faiss": (4096, 1_000_000), "dense": (512, 1_000_000)}
QUICK = {"faiss": (256, 20_000), "dense": (64, 20_000)}
CASES = {"faiss": ["ours", "ours, 100 excluded", "faiss"], "dense": ["ours", "dense"]}
TARGETS = {  # (case, baseline, at most)
    "faiss": [("ours", "faiss", 1.3), ("ours, 100 excluded", "ours", 1.15)],
    "dense": [("ours", "dense", 1.1)],
}


def make_inputs(batch: int, items: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    queries = torch.randn(batch, DIM, generator=gen)
    catalog_items = torch.randn(items, DIM, generator=gen)
    exclude = torch.randint(0, items, (batch, EXCLUDED), generator=gen)
    return queries, catalog_items, exclude


def make_case(name: str, queries, items, exclude):
    """A zero-argument callable running case ``name`` once."""
    if name == "ours":
        return lambda: catalog.top_k(queries, items, K)
    if name == "ours, 100 excluded":
        return lambda: catalog.top_k(queries, items, K, exclude=exclude)
    if name == "faiss":
        import faiss

        index = faiss.IndexFlatIP(DIM)
        index.add(items.numpy())
        return lambda: index.search(queries.numpy(), K)
    if name == "dense":
        return lambda: (queries @ items.T).topk(K, dim=1)
    raise ValueError(f"unknown case {name!r}")


def agreement(table: str, queries, items, exclude) -> str:
    """Checks the results against the baseline; a line saying how they agree."""
    scores, ids = catalog.top_k(queries, items, K)
    distinct = torch.ones_like(scores, dtype=torch.bool)
    distinct[:, 1:] &= scores[:, 1:] != scores[:, :-1]
    distinct[:, :-1] &= scores[:, :-1] != scores[:, 1:]
    excluded_ids = catalog.top_k(queries, items, K, exclude=exclude)[1]
    assert not (excluded_ids[:, :, None] == exclude[:, None, :]).any(), "an excluded item was returned"
    if table == "faiss":
        other_scores, other_ids = make_case("faiss", queries, items, exclude)()
        other_scores, other_ids = torch.from_numpy(other_scores), torch.from_numpy(other_ids)
    else:
        other_scores, other_ids = make_case("dense", queries, items, exclude)()
    same = (ids == other_ids)[distinct].float().mean().item()
    gap = (scores - other_scores).abs().max().item()
    return (
        f"ids equal to {table}'s at {same:.4%} of the ranks whose score is distinct from its "
        f"neighbours'; max |score difference| {gap:.1e}; no excluded item returned"
    )


def memory_case(argv: list[str]) -> int:
    """Subprocess side of the memory measurement: ``--memory-case NAME BATCH ITEMS``."""
    name, batch, items = argv[0], int(argv[1]), int(argv[2])
    case = make_case(name, *make_inputs(batch, items))
    report_memory_case(case, warm=make_case(name, *make_inputs(8, 1000, seed=1)))
    return 0


def run(sizes: dict, repeats: int, memory: bool) -> list[dict]:
    script = str(Path(__file__).resolve())
    results = []
    for table, (batch, items) in sizes.items():
        inputs = make_inputs(batch, items)
        note = agreement(table, *inputs)
        tiny = make_inputs(8, 1000, seed=1)
        for name in CASES[table]:  # warm every code path up on a tiny input
            make_case(name, *tiny)()
        cases = {name: make_case(name, *inputs) for name in CASES[table]}
        timings = time_side_by_side(cases, repeats=repeats, warmup=0)
        peaks = {}
        if memory:
            for name in CASES[table]:
                peaks[name], _ = measure_in_subprocess(script, [name, str(batch), str(items)])
        input_mib = sum(t.nbytes for t in inputs[:2]) / 2**20
        results.append(
            {
                "table": table,
                "size": (batch, items),
                "timings": timings,
                "peaks": peaks,
                "input_mib": input_mib,
                "note": note,
            }
        )
        print(
            f"  {batch}x{items}: "
            + "  ".join(f"{name} {t.median:.0f} ms" for name, t in timings.items())
            + (f"; peak MiB {', '.join(f'{n} {p:.0f}' for n, p in peaks.items())}" if peaks else ""),
            flush=True,
        )
    return results


def tables(results: list[dict]) -> str:
    header = ["queries x items", "case", "median (ms)", "spread (ms)", "peak MiB beyond inputs"]
    rows = []
    for r in results:
        for name, t in r["timings"].items():
            peak = r["peaks"].get(name)
            rows.append(
                [
                    f"{r['size'][0]:,}x{r['size'][1]:,} (inputs {r['input_mib']:.0f} MiB)",
                    name,
                    t.median,
                    t.spread,
                    "-" if peak is None else f"{peak:.0f}",
                ]
            )
    lines = [markdown_table(header, rows), ""]
    lines += [f"{r['size'][0]:,}x{r['size'][1]:,}: {r['note']}" for r in results]
    return "\n".join(lines)


def targets(results: list[dict], quick: bool) -> list[str]:
    lines = []
    for r in results:
        size = f"{r['size'][0]:,}x{r['size'][1]:,}"
        for case, baseline, bound in TARGETS[r["table"]]:
            ratio = r["timings"][case].median / r["timings"][baseline].median
            status = "(not a target at --quick sizes)" if quick else verdict(ratio <= bound)
            lines.append(f"target {size}: {case} / {baseline} <= {bound}x: {ratio:.2f}x {status}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat, no memory runs")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--memory-case", nargs=3, metavar=("CASE", "BATCH", "ITEMS"))
    args = parser.parse_args(argv)
    if args.memory_case:
        return memory_case(args.memory_case)
    print(machine_line())
    print(f"score block budget: catalog.BLOCK_BYTES = {catalog.BLOCK_BYTES / 2**20:.0f} MiB")
    results = run(QUICK if args.quick else FULL, 1 if args.quick else args.repeats, memory=not args.quick)
    print()
    print(tables(results))
    print()
    print("\n".join(targets(results, args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
