"""Item-sharded top-k: catalog.sharded_top_k on 1, 2 and 4 gloo processes, against 1 process.

4,096 queries x 1,000,000 items, d = 64, k = 100, float32 ``randn`` embeddings. The item table is
split over P processes (contiguous shards, sizes differing by at most one); each process makes
only its own shard (items are drawn in fixed blocks of 65,536 rows, one seed per block, so every
P sees the same catalog) and runs with ``torch.set_num_threads(1)``. Per process count, after one
warm-up call, each repeat times, in this order, with a barrier before each:

- ``sharded``: ``catalog.sharded_top_k(queries, shard, 100, item_offset=...)``, the whole call;
- ``shard alone``: ``catalog.top_k(queries, shard, 100)``, the same ranking without the group;
- ``all-gather alone``: ``all_gather_into_tensor`` of a buffer the size of the call's candidates.

A repeat's time is its slowest rank's; the table shows the median over repeats. ``sharded``
minus ``shard alone`` is what the distribution adds (the layout check, the all-gather and the
merge). ``sharded CPU`` is the slowest rank's CPU time (``time.process_time``) of the same
call: on a machine shared with other work, the wall-clock time of P processes says how much of
the cores they got, the CPU time how much work each did. The ids and scores of every P are
compared with the 1-process result (bitwise).

Usage::

    python benchmarks/bench_sharded.py                    # full size (minutes)
    python benchmarks/bench_sharded.py --small            # 256 x 20,000, one repeat
    python benchmarks/bench_sharded.py --processes 1 2    # a subset of process counts
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_line, markdown_table, verdict

from ignite_ranking import catalog

K = 100
DIM = 64
BLOCK = 65_536  # rows of the item table drawn from one seed
FULL = (4096, 1_000_000)
SMALL = (256, 20_000)
TARGET = (2, 0.75)  # (processes, at most this fraction of the 1-process time)


def make_queries(batch: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(batch, DIM, generator=torch.Generator().manual_seed(seed))


def make_items(start: int, stop: int, seed: int = 1) -> torch.Tensor:
    """Rows ``start .. stop - 1`` of the catalog, the same whichever process draws them."""
    out = torch.empty(stop - start, DIM)
    for block in range(start // BLOCK, (stop + BLOCK - 1) // BLOCK):
        first, last = block * BLOCK, (block + 1) * BLOCK
        lo, hi = max(first, start), min(last, stop)
        if lo < hi:
            rows = torch.randn(BLOCK, DIM, generator=torch.Generator().manual_seed(seed * 100_003 + block))
            out[lo - start : hi - start] = rows[lo - first : hi - first]
    return out


def shard_of(rank: int, world: int, items: int) -> tuple[int, int]:
    """``(start, stop)`` of rank's shard: contiguous, sizes differing by at most one."""
    base, extra = divmod(items, world)
    start = rank * base + min(rank, extra)
    return start, start + base + (rank < extra)


# ------------------------------------------------------------------------------------ one worker


def worker(rank: int, world: int, port: int, batch: int, items: int, repeats: int, out_dir: str) -> int:
    """One process of a P-process run; prints its timings as one JSON line."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    queries = make_queries(batch)
    start, stop = shard_of(rank, world, items)
    shard = make_items(start, stop)
    largest = max(b - a for a, b in (shard_of(r, world, items) for r in range(world)))
    packet = 8 + batch * min(K, largest) * (queries.element_size() + 8)
    packet += -packet % 8
    send = torch.zeros(packet, dtype=torch.uint8)
    receive = torch.empty(world * packet, dtype=torch.uint8)
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor

    def sharded():
        return catalog.sharded_top_k(queries, shard, K, item_offset=start, num_items=items)

    cases = {
        "sharded": sharded,
        "shard alone": lambda: catalog.top_k(queries, shard, K),
        "all-gather alone": lambda: gather(receive, send),
    }
    scores, ids = sharded()  # the warm-up, and the result to compare
    if rank == 0:
        torch.save((scores, ids), Path(out_dir) / f"result-{world}.pt")
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            dist.barrier()
            began, began_cpu = time.perf_counter(), time.process_time()
            fn()
            times[name].append((time.perf_counter() - began) * 1e3)
            cpu[name].append((time.process_time() - began_cpu) * 1e3)
    dist.barrier()
    dist.destroy_process_group()
    report = {"rank": rank, "times": times, "cpu": cpu, "packet": packet, "shard": [start, stop]}
    print(json.dumps(report))
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_world(world: int, batch: int, items: int, repeats: int, out_dir: str) -> list[dict]:
    """Starts ``world`` worker processes of this script; their JSON reports, by rank."""
    port = free_port()
    script = str(Path(__file__).resolve())
    args = [str(world), str(port), str(batch), str(items), str(repeats), out_dir]
    # The workers import the ignite_ranking this process runs.
    source = str(Path(catalog.__file__).resolve().parents[2])
    env = os.environ | {"PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    procs = [
        subprocess.Popen(
            [sys.executable, script, "--worker", str(rank), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for rank in range(world)
    ]
    reports = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=3600)
            if proc.returncode:
                raise RuntimeError(f"a worker of the {world}-process run failed:\n{err[-3000:]}")
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    return sorted(reports, key=lambda report: report["rank"])


# ------------------------------------------------------------------------------------ the table


def slowest(reports: list[dict], name: str, clock: str = "times") -> list[float]:
    """Each repeat's time (``"times"``: wall-clock, ``"cpu"``: CPU) of its slowest rank."""
    return [max(values) for values in zip(*(r[clock][name] for r in reports), strict=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="256 queries x 20,000 items, one repeat")
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--items", type=int, default=None)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--repeats", type=int, default=None, help="default: 3 (1 with --small)")
    parser.add_argument("--worker", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        rank, world, port, batch, items, repeats = (int(v) for v in args.worker[:6])
        return worker(rank, world, port, batch, items, repeats, args.worker[6])
    batch, items = SMALL if args.small else FULL
    batch, items = args.queries or batch, args.items or items
    repeats = args.repeats or (1 if args.small else 3)
    worlds = sorted(set(args.processes) | {1})

    print(machine_line())
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"{batch:,} queries x {items:,} items, d={DIM}, k={K}, float32; 1 thread per process; "
        f"median of {repeats} repeat(s), each the slowest rank's time",
        flush=True,
    )
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as out_dir:
        for world in worlds:
            reports = run_world(world, batch, items, repeats, out_dir)
            results[world] = torch.load(Path(out_dir) / f"result-{world}.pt")
            medians = {name: statistics.median(slowest(reports, name)) for name in reports[0]["times"]}
            medians["cpu"] = statistics.median(slowest(reports, "sharded", "cpu"))
            spread = slowest(reports, "sharded")
            rows.append((world, medians, f"{min(spread):.0f}-{max(spread):.0f}", reports[0]["packet"]))
            print(f"  {world} process(es): sharded {medians['sharded']:.0f} ms", flush=True)
    base, base_cpu = rows[0][1]["sharded"], rows[0][1]["cpu"]
    header = [
        "processes",
        "sharded (ms)",
        "spread (ms)",
        "x 1 process",
        "sharded CPU (ms)",
        "CPU x 1 process",
        "shard alone (ms)",
        "sharded - shard alone (ms)",
        "all-gather alone (ms)",
        "all-gather MiB in / out per process",
    ]
    table = [
        [
            world,
            medians["sharded"],
            spread,
            f"{medians['sharded'] / base:.2f}x",
            medians["cpu"],
            f"{medians['cpu'] / base_cpu:.2f}x",
            medians["shard alone"],
            medians["sharded"] - medians["shard alone"],
            medians["all-gather alone"],
            f"{world * packet / 2**20:.2f} / {packet / 2**20:.2f}",
        ]
        for world, medians, spread, packet in rows
    ]
    print()
    print(markdown_table(header, table))
    print()
    one_scores, one_ids = results[1]
    same = all(torch.equal(s, one_scores) and torch.equal(i, one_ids) for s, i in results.values())
    print(f"ids and scores of every process count equal to the 1-process run, bitwise: {same}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    processes, bound = TARGET
    if processes in results:
        ratio = next(m["sharded"] for w, m, _, _ in rows if w == processes) / base
        status = "(not a target at these sizes)" if (batch, items) != FULL else verdict(ratio <= bound)
        print(f"target: {processes} processes <= {bound}x the 1-process time: {ratio:.2f}x {status}")
    assert same, "a sharded result differs from the 1-process one"
    return 0


if __name__ == "__main__":
    sys.exit(main())
