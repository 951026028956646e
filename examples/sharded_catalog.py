"""Full-catalog evaluation with the item table split over processes (item shards).

The two-tower recommender of ``examples/full_catalog.py`` is trained once; its item table is
then split over the processes of ``idist.Parallel``: process r holds the vectors of one
contiguous range of items and never sees the others. Each evaluation step ranks the whole
catalog for a batch of users with :func:`ignite_ranking.catalog.sharded_top_k`: every process
ranks its shard (training items excluded), one all-gather of the ``(batch, 100)`` candidates
merges them, and every process gets the same top 100 of the whole catalog, equal bit for bit
to :func:`~ignite_ranking.catalog.top_k` over the whole table.

Every process gets every user's top 100, so each user must be counted by one process only:
here rank 0 hands the metrics the ``Retrieved`` batch and the other processes hand them the
same batch with no rows. ``compute()`` adds their zero sums to rank 0's, so the metrics equal a
one-process run to the bit.

Checks: rank 0 compares every step's scores and ids with ``catalog.top_k`` over the whole item
table (this needs the whole table on rank 0, which only the check does), and the launching
process compares the metrics with the one-process evaluator of ``examples/full_catalog.py``.

Run on CPUs (gloo):
    python examples/sharded_catalog.py --items 1000000 --nproc-per-node 2
On a machine with GPUs, one process per GPU:
    python examples/sharded_catalog.py --backend nccl --nproc-per-node 4
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import time
from pathlib import Path

import ignite.distributed as idist
import torch
from ignite.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent))

from full_catalog import K, TwoTower, make_data, make_evaluator, train

from ignite_ranking import MRR, NDCG, RankingMetrics, Recall, Retrieved, catalog


def evaluate(local_rank: int, config: dict) -> None:
    """One process: its shard of the item table, the whole evaluation, the result on rank 0."""
    torch.set_num_threads(config["threads"])
    rank, world, device = idist.get_rank(), idist.get_world_size(), idist.device()
    model = TwoTower(*config["model_shape"])
    model.load_state_dict(config["model"])
    model.to(device).eval()
    category, log_popularity = config["category"], config["log_popularity"]
    train_ids, test_ids = config["train_ids"].to(device), config["test_ids"].to(device)

    # This process's shard: items start .. stop - 1, sizes differing by at most one.
    shard = torch.tensor_split(torch.arange(category.numel()), world)[rank]
    start, stop = (int(shard[0]), int(shard[-1]) + 1) if shard.numel() else (0, 0)
    with torch.no_grad():
        items = model.item_vectors(category[start:stop].to(device), log_popularity[start:stop].to(device))
        whole = None
        if rank == 0:  # for the check only: the one-process ranking needs the whole table
            whole = model.item_vectors(category.to(device), log_popularity.to(device))
    print(f"rank {rank}/{world} on {device}: items {start:,}..{stop - 1:,}", flush=True)
    mismatches = []

    @torch.no_grad()
    def evaluate_step(engine: Engine, users: torch.Tensor) -> Retrieved:
        users = users.to(device)
        queries, exclude = model.users(users), train_ids[users]
        scores, ids = catalog.sharded_top_k(queries, items, K, item_offset=start, exclude=exclude)
        if whole is not None:
            want_scores, want_ids = catalog.top_k(queries, whole, K, exclude=exclude)
            if not (torch.equal(ids, want_ids) and torch.equal(scores, want_scores)):
                mismatches.append(engine.state.iteration)
        counted = slice(None) if rank == 0 else slice(0)  # each user counted once, on rank 0
        return Retrieved(ids[counted], test_ids[users][counted], scores[counted])

    evaluator = Engine(evaluate_step)
    cutoffs = [10, 100]
    RankingMetrics(
        mrr=MRR(cutoffs, device=device),
        ndcg=NDCG(cutoffs, device=device),
        recall=Recall(cutoffs, device=device),
    ).attach(evaluator, "ranking")
    started = time.perf_counter()
    state = evaluator.run(torch.arange(config["users"]).split(config["batch_size"]))
    seconds = time.perf_counter() - started
    if rank == 0:
        metrics = {name: value for name, value in state.metrics.items() if "@" in name}
        result = {"metrics": metrics, "seconds": seconds, "world_size": world}
        Path(config["out"]).write_text(json.dumps(result | {"ranking_mismatches": mismatches}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="gloo", help="gloo (CPU) or nccl (one GPU per process)")
    parser.add_argument("--nproc-per-node", type=int, default=2)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--clicks", type=int, default=25)
    parser.add_argument("--held-out", type=int, default=5)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--master-port", type=int, default=None, help="default: a free port")
    parser.add_argument("--out", default="", help="write the result here as JSON")
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)

    category, log_popularity, train_ids, test_ids = make_data(
        args.users, args.items, args.clicks, args.held_out, args.seed
    )
    model_shape = (args.users, int(category.max()) + 1, args.dim)
    model = TwoTower(*model_shape)
    train(model, category, log_popularity, train_ids, args.epochs, args.seed)

    with tempfile.TemporaryDirectory() as tmp:
        config = {
            "model": model.state_dict(),
            "model_shape": model_shape,
            "category": category,
            "log_popularity": log_popularity,
            "train_ids": train_ids,
            "test_ids": test_ids,
            "users": args.users,
            "batch_size": args.batch_size,
            "threads": args.threads,
            "out": str(Path(tmp) / "rank0.json"),
        }
        with idist.Parallel(
            backend=args.backend,
            nproc_per_node=args.nproc_per_node,
            master_addr="127.0.0.1",
            master_port=args.master_port or free_port(),
        ) as parallel:
            parallel.run(evaluate, config)
        sharded = json.loads(Path(config["out"]).read_text())

    # The reference: one process, the whole item table, catalog.top_k (full_catalog.py's evaluator).
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)  # as the workers: a product's rounding may depend on it
    try:
        with torch.no_grad():
            item_vectors = model.item_vectors(category, log_popularity)
        evaluator = make_evaluator(model, item_vectors, train_ids, test_ids)
        state = evaluator.run(torch.arange(args.users).split(args.batch_size))
    finally:
        torch.set_num_threads(threads)
    single = {name: value for name, value in state.metrics.items() if "@" in name}

    same_metrics = sharded["metrics"] == single
    same_ranking = not sharded["ranking_mismatches"]
    print(
        f"{args.users:,} users x {args.items:,} items on {sharded['world_size']} processes "
        f"({args.backend}) in {sharded['seconds']:.1f} s: "
        + ", ".join(f"{name} {value:.4f}" for name, value in sharded["metrics"].items())
    )
    print(f"top {K} ids and scores equal to catalog.top_k on the whole table at every step: {same_ranking}")
    print(f"metrics equal to the one-process run, to the bit: {same_metrics}")
    result = {**sharded, "single_process": single, "same_metrics": same_metrics, "same_ranking": same_ranking}
    if args.out:
        Path(args.out).write_text(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
