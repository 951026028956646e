"""Evaluations checkpointed with ignite's Checkpoint and resumed, shared by the resume tests.

A case is an input form ("dense", or "flat" rows whose queries straddle batches) and a metric
kind ("group": a per-query RankingMetrics with intervals; "single": MAP alone). The data are
rows of a TensorDataset read through ``DataLoader(..., sampler=EvaluationSampler(dataset))``;
flat queries never straddle two processes' shards (each shard is cut into whole queries).
"""

from __future__ import annotations

from pathlib import Path

import ignite.distributed as idist
import torch
from ignite.engine import Engine, Events
from ignite.handlers import Checkpoint, DiskSaver
from torch.utils.data import DataLoader, TensorDataset

from ignite_ranking import MAP, MRR, NDCG, RankingMetrics, Recall
from ignite_ranking.distributed import EvaluationSampler

CASES = [(form, kind) for form in ("dense", "flat") for kind in ("group", "single")]
BATCH = 4
# world size -> (rows, checkpoint iterations: first, middle, last-but-one of rank 0). Rank 0 runs
# one batch more than the others on 2 and 3 processes, so the last checkpoint is their last batch.
PLANS = {1: (25, (1, 3, 6)), 2: (25, (1, 2, 3)), 3: (37, (1, 2, 3))}
ITEMS = 12


def dataset(form: str, world: int, rows: int | None = None, seed: int = 0) -> TensorDataset:
    rows = PLANS[world][0] if rows is None else rows
    g = torch.Generator().manual_seed(seed)
    if form == "dense":
        scores = torch.randint(0, 5, (rows, ITEMS), generator=g).to(torch.float32) / 4  # ties
        judged = torch.rand(rows, ITEMS, generator=g) < 0.3
        labels = torch.randint(0, 3, (rows, ITEMS), generator=g) * judged
        return TensorDataset(scores, labels)
    ids, query = [], 0
    for rank in range(world):  # whole queries of 1..4 rows inside each shard
        shard = len(EvaluationSampler(range(rows), num_replicas=world, rank=rank))
        left = shard
        while left:
            length = min(left, int(torch.randint(1, 5, (), generator=g)))
            ids += [query] * length
            query, left = query + 1, left - length
    scores = torch.randint(0, 5, (rows,), generator=g).to(torch.float32) / 4
    labels = torch.randint(0, 3, (rows,), generator=g) * (torch.rand(rows, generator=g) < 0.4)
    return TensorDataset(scores, labels, torch.tensor(ids))


def make(form: str, kind: str, data: TensorDataset, batch_size: int = BATCH, sampler: bool = True):
    """A fresh evaluator, its attached metric and its data loader."""
    evaluator = Engine(lambda engine, batch: tuple(batch))
    if kind == "group":
        metric = RankingMetrics(
            mrr=MRR([1, 5]), ndcg=NDCG([5]), recall=Recall([5]), per_query=True, confidence=0.9
        )
        metric.attach(evaluator, "ranking")
    else:
        metric = MAP([3, 5])
        metric.attach(evaluator, "map")
    loader = DataLoader(data, batch_size=batch_size, sampler=EvaluationSampler(data) if sampler else None)
    return evaluator, metric, loader


def result(evaluator: Engine, metric) -> dict:
    out = {key: value for key, value in evaluator.state.metrics.items()}
    if isinstance(metric, RankingMetrics):
        per_query = metric.per_query_values()
        out["per_query"] = (per_query.keys.tolist(), {k: v.tolist() for k, v in per_query.values.items()})
    return out


def checkpointed_run(form: str, kind: str, world: int, folder: Path) -> dict:
    """The uninterrupted run, saving a checkpoint at each planned iteration."""
    evaluator, metric, loader = make(form, kind, dataset(form, world))
    saver = DiskSaver(str(folder), require_empty=False, create_dir=True)
    checkpoint = Checkpoint(
        {"metric": metric, "evaluator": evaluator},
        saver,
        n_saved=None,
        filename_pattern="{name}_{global_step}.{ext}",
        global_step_transform=lambda engine, _: engine.state.iteration,
    )
    iterations = PLANS[world][1]
    evaluator.add_event_handler(Events.ITERATION_COMPLETED(lambda _, i: i in iterations), checkpoint)
    evaluator.run(loader)
    return result(evaluator, metric)


def resumed_run(form: str, kind: str, world: int, path: Path) -> dict:
    """A fresh evaluator and metric loaded from ``path`` (both) and run to the epoch's end."""
    evaluator, metric, loader = make(form, kind, dataset(form, world))
    Checkpoint.load_objects({"metric": metric, "evaluator": evaluator}, str(path))
    evaluator.run(loader)
    return result(evaluator, metric)


def worker(local_rank: int, phase: str, folder: str, out: str) -> None:
    """Under idist.Parallel: "run" every case with checkpoints, or "resume" each from each one
    (and, on 3 processes, try to load the checkpoints of 2)."""
    world, rank, root = idist.get_world_size(), idist.get_rank(), Path(folder)
    results = {}
    for form, kind in CASES:
        where = root / f"w{world}-{form}-{kind}"
        if phase == "run":
            results[form, kind] = checkpointed_run(form, kind, world, where)
            continue
        for k in PLANS[world][1]:
            results[form, kind, k] = resumed_run(form, kind, world, where / f"checkpoint_{k}.pt")
        if world == 3:
            _, metric, _ = make(form, kind, dataset(form, world))
            two = root / f"w2-{form}-{kind}" / "checkpoint_1.pt"
            try:
                Checkpoint.load_objects({"metric": metric}, str(two))
            except ValueError as error:
                results[form, kind, "w2"] = str(error)
    torch.save(results, Path(out) / f"{phase}-w{world}-rank{rank}.pt")
