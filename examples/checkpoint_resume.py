"""Kill an evaluation after a checkpoint, resume it in a fresh process: the same result to the bit.

A long evaluation (many queries, a preemptible machine) is checkpointed with Ignite's
``Checkpoint`` handler, which saves the metric group and the evaluator Engine. Here a process
evaluates, saves a checkpoint at iteration ``--kill-at`` and is killed there with ``SIGKILL``
(as a preempted machine would be); a fresh process builds the same evaluator, loads the
checkpoint with ``Checkpoint.load_objects`` and runs to the end. Its result equals, bit for bit,
that of an uninterrupted run: the metrics keep their loaded state through the resumed epoch's
start, the data loader's ``EvaluationSampler`` skips the queries already counted, and the sums
are exact fixed-point integers (int64 limbs), which add up to the same bits in any order and at
any batching. See docs/distributed.md, "Resuming an interrupted evaluation".

Run:  python examples/checkpoint_resume.py [--batches 40] [--items 800] [--kill-at 17]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from ignite.engine import Engine, Events
from ignite.handlers import Checkpoint, DiskSaver
from torch.utils.data import DataLoader, TensorDataset

from ignite_ranking import MAP, MRR, NDCG, RankingMetrics
from ignite_ranking.distributed import EvaluationSampler

BATCH = 64


def dataset(batches: int, items: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    rows = batches * BATCH - 5  # a short last batch
    y = torch.randint(0, 3, (rows, items), generator=g) * (torch.rand(rows, items, generator=g) < 0.02)
    return TensorDataset(y + torch.randn(rows, items, generator=g), y)


def build(args, folder: Path):
    """The evaluator, its metrics and data, built the same way by every process."""
    data = dataset(args.batches, args.items, args.seed)
    loader = DataLoader(data, batch_size=BATCH, sampler=EvaluationSampler(data))
    evaluator = Engine(lambda engine, batch: tuple(batch))  # a real one scores with the model
    metrics = RankingMetrics(mrr=MRR([1, 10]), ndcg=NDCG([10]), map=MAP([100]))
    metrics.attach(evaluator, "ranking")  # before the Checkpoint handler: it saves after the update
    to_save = {"metrics": metrics, "evaluator": evaluator}
    saver = DiskSaver(str(folder), require_empty=False)
    checkpoint = Checkpoint(to_save, saver, n_saved=1, filename_pattern="{name}.{ext}")
    evaluator.add_event_handler(Events.ITERATION_COMPLETED(every=args.every), checkpoint)
    return evaluator, loader, to_save


def evaluate_and_die(args, folder: Path) -> None:
    evaluator, loader, _ = build(args, folder)

    @evaluator.on(Events.ITERATION_COMPLETED(once=args.kill_at))
    def preempted(engine):  # after the checkpoint of this iteration
        print(f"killed after iteration {engine.state.iteration} of {len(loader)}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    evaluator.run(loader)


def resume(args, folder: Path) -> dict[str, float]:
    evaluator, loader, to_save = build(args, folder)
    Checkpoint.load_objects(to_save, str(folder / "checkpoint.pt"))
    print(f"resuming after iteration {evaluator.state.iteration}", flush=True)
    return evaluator.run(loader).metrics["ranking"]


def _child(role: str, argv: list[str], folder: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, __file__, *argv, "--role", role, "--dir", str(folder)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--items", type=int, default=800)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kill-at", type=int, default=None, help="iteration (default: past the middle)")
    parser.add_argument("--role", choices=["main", "evaluate", "resume"], default="main")
    parser.add_argument("--dir", type=Path, default=None)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    args.kill_at = args.kill_at or args.batches // 2 + 1
    args.every = args.kill_at  # a checkpoint at the iteration of the kill (in practice, every N)
    if args.role == "evaluate":
        return evaluate_and_die(args, args.dir)
    if args.role == "resume":
        print(json.dumps(resume(args, args.dir)))  # floats as repr: exact
        return {}

    with tempfile.TemporaryDirectory() as folder:
        evaluator, loader, _ = build(args, Path(folder) / "uninterrupted")
        expected = evaluator.run(loader).metrics["ranking"]
        killed = _child("evaluate", argv, Path(folder))
        print(killed.stdout.strip())
        if killed.returncode != -signal.SIGKILL:
            raise SystemExit(f"the evaluating process was not killed: {killed.returncode}\n{killed.stderr}")
        resumed = _child("resume", argv, Path(folder))
        if resumed.returncode:
            raise SystemExit(f"the resumed process failed:\n{resumed.stderr}")
        print(resumed.stdout.splitlines()[0])
        result = json.loads(resumed.stdout.splitlines()[-1])

    for name in expected:
        print(f"{name:>10}  uninterrupted {expected[name]:.12f}  resumed {result[name]:.12f}")
    same = result == expected
    print(f"resumed result equals the uninterrupted run exactly: {same}")
    if not same:
        raise SystemExit(1)
    return {"expected": expected, "resumed": result, "killed_by": signal.Signals(-killed.returncode).name}


if __name__ == "__main__":
    main()
