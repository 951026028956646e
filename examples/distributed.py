"""Distributed evaluation with ``ignite.distributed``: each process ranks its own shard of
queries, and ``compute()`` all-reduces the metrics' sums once, so every process gets the
result over all queries.

The metrics keep per-cutoff exact sums (fixed-point int64 limbs) and an int64 query count, never
the scores, so the all-reduce moves a few numbers per cutoff however many queries there are. The
result equals a single-process run over the same queries, to the bit; this script checks that on
rank 0.

Run on CPUs with two processes (the gloo backend):
    python examples/distributed.py
On a machine with GPUs, one process per GPU:
    python examples/distributed.py --backend nccl --nproc-per-node 2

Each query is evaluated by exactly one process. Ignite's ``auto_dataloader`` uses a
``DistributedSampler`` by default, which pads the data set with repeated samples when its size
does not divide by the number of processes and would count some queries twice (the metrics then
warn with a ``PaddedSamplerWarning``); this script gives it an ``EvaluationSampler`` instead.
"""

from __future__ import annotations

import argparse
import json
import math
import socket
from pathlib import Path

import ignite.distributed as idist
import torch
from ignite.engine import Engine
from torch.utils.data import TensorDataset

from ignite_ranking import MRR, NDCG, HitRate, RankingMetrics, Recall
from ignite_ranking.distributed import EvaluationSampler
from ignite_ranking.functional import hit_rate, ndcg, recall, reciprocal_rank


def make_data(queries: int, items: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The same synthetic queries on every process (the seed fixes them)."""
    g = torch.Generator().manual_seed(seed)
    y = (torch.rand(queries, items, generator=g) < 0.01).to(torch.int64)
    y_pred = y + 1.5 * torch.randn(queries, items, generator=g)
    return y_pred, y


def evaluate(local_rank: int, config: dict) -> None:
    torch.set_num_threads(1)
    rank, world_size, device = idist.get_rank(), idist.get_world_size(), idist.device()
    y_pred, y = make_data(config["queries"], config["items"], config["seed"])
    dataset = TensorDataset(y_pred, y)
    # This process's shard: a contiguous block of queries; the blocks cover every query once and
    # differ in size by at most one. auto_dataloader splits the batch size over the processes.
    loader = idist.auto_dataloader(dataset, batch_size=256 * world_size, sampler=EvaluationSampler(dataset))

    def eval_step(engine: Engine, batch: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        return batch[0].to(device), batch[1].to(device)

    evaluator = Engine(eval_step)
    RankingMetrics(
        mrr=MRR([1, 10], device=device),
        hit_rate=HitRate([10], device=device),
        ndcg=NDCG([10], device=device),
        recall=Recall([50], device=device),
    ).attach(evaluator, "ranking")
    metrics = evaluator.run(loader).metrics["ranking"]
    print(f"rank {rank}/{world_size} on {device}: {len(loader.sampler)} queries ranked here", flush=True)

    if rank == 0:
        # The reference: every query in one process, averaged in float64.
        reference = {}
        for name, function, cutoffs in (
            ("mrr", reciprocal_rank, [1, 10]),
            ("hit_rate", hit_rate, [10]),
            ("ndcg", ndcg, [10]),
            ("recall", recall, [50]),
        ):
            values = function(y_pred, y, cutoffs)[y.sum(dim=1) > 0]  # ignore_zero_hits=True
            reference.update(
                {f"{name}@{k}": v for k, v in zip(cutoffs, values.mean(dim=0).tolist(), strict=True)}
            )
        same = all(math.isclose(metrics[n], reference[n], rel_tol=1e-12, abs_tol=1e-12) for n in reference)
        for name, value in metrics.items():
            print(f"{name:>12}  {value:.6f}")
        print(f"matches a single-process run over all {config['queries']} queries: {same}")
        if config["out"]:
            Path(config["out"]).write_text(json.dumps({"metrics": metrics, "matches_single_process": same}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="gloo", help="gloo (CPU) or nccl (one GPU per process)")
    parser.add_argument("--nproc-per-node", type=int, default=2)
    parser.add_argument("--queries", type=int, default=5001)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--master-port", type=int, default=None, help="default: a free port")
    parser.add_argument("--out", default="", help="rank 0 writes the metrics here as JSON")
    args = parser.parse_args(argv)
    config = {"queries": args.queries, "items": args.items, "seed": args.seed, "out": args.out}
    port = args.master_port or free_port()
    with idist.Parallel(
        backend=args.backend, nproc_per_node=args.nproc_per_node, master_port=port
    ) as parallel:
        parallel.run(evaluate, config)


if __name__ == "__main__":
    main()
