"""Input forms side by side: the flat form vs torchmetrics, retrieved ids vs ranx.

- ``flat``: 100,000 queries x 100 candidates as torchmetrics' ``(preds, target, indexes)``, in
  batches of 1,000 queries; one epoch of ``update`` on every batch and ``compute`` of MRR@10 and
  NDCG@10: ``RankingMetrics(mrr=MRR(10), ndcg=NDCG(10, gain_function="linear_rank"))`` vs
  torchmetrics' ``RetrievalMRR(top_k=10)`` + ``RetrievalNormalizedDCG(top_k=10)`` (both with
  queries without a relevant item skipped). An epoch of torchmetrics takes a minute or more, so
  the two are timed in two interleaved rounds. Memory: each side runs one epoch in a fresh
  process on batches made one at a time and dropped after their update (as from a data loader),
  and reads the resident memory added after 10%, 50% and 100% of the updates: ours holds a few
  numbers (and one query's rows), torchmetrics keeps every row.
- ``retrieved``: 100,000 queries x 100 retrieved ids with distinct scores, graded relevant
  sets (1-10 judged items per query, some never retrieved), six metrics at k=10 (MRR, HitRate,
  NDCG, Precision, Recall, MAP): ``RankingMetrics.update(Retrieved(ids, relevant, scores))`` in
  batches of 10,000 queries vs ranx, whose ``Qrels`` and ``Run`` are built from the same arrays
  (the dicts and the build are timed with ``evaluate``).

The retrieved cases are timed interleaved (see ``common.py``). Both sides give the same values
(asserted, 1e-6). torch runs one thread: torchmetrics' per-query loop gains nothing from more,
and on a small shared machine thread wake-ups dominate small operations.

Usage::

    python benchmarks/bench_forms.py            # full run
    python benchmarks/bench_forms.py --quick    # tiny sizes, one repeat, no memory runs
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import _status_kib, machine_line, markdown_table, time_side_by_side, verdict

from ignite_ranking import MAP, MRR, NDCG, HitRate, Precision, RankingMetrics, Recall, Retrieved

FULL = {"queries": 100_000, "candidates": 100, "flat_batch": 1_000, "retrieved_batch": 10_000}
QUICK = {"queries": 500, "candidates": 20, "flat_batch": 100, "retrieved_batch": 200}
K = 10


# ---------------------------------------------------------------------------------------- flat form


def iter_flat_batches(size: dict, seed: int = 0):
    """Batches of whole queries, made one at a time: distinct positive float32 scores, binary
    targets."""
    gen = torch.Generator().manual_seed(seed)
    per_batch, n = size["flat_batch"], size["candidates"]
    for start in range(0, size["queries"], per_batch):
        target = (torch.rand(per_batch, n, generator=gen) < 0.05).to(torch.int64)
        preds = torch.rand(per_batch, n, generator=gen) + 0.5 * target + 0.01
        indexes = torch.arange(start, start + per_batch).repeat_interleave(n)
        yield preds.reshape(-1), target.reshape(-1), indexes


def flat_batches(size: dict, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    return list(iter_flat_batches(size, seed))


def ours_flat(batches, checkpoint=None):
    group = RankingMetrics(mrr=MRR(K), ndcg=NDCG(K, gain_function="linear_rank"))
    for i, batch in enumerate(batches):
        group.update(batch)
        if checkpoint is not None:
            checkpoint(i)
    return group.compute()


def torchmetrics_flat(batches, checkpoint=None):
    from torchmetrics.retrieval import RetrievalMRR, RetrievalNormalizedDCG

    mrr = RetrievalMRR(top_k=K, empty_target_action="skip")
    ndcg = RetrievalNormalizedDCG(top_k=K, empty_target_action="skip")
    for i, (preds, target, indexes) in enumerate(batches):
        mrr.update(preds, target, indexes=indexes)
        ndcg.update(preds, target, indexes=indexes)
        if checkpoint is not None:
            checkpoint(i)
    return {"mrr@10": mrr.compute().item(), "ndcg@10": ndcg.compute().item()}


def flat_memory(side: str, size: dict) -> dict:
    """Resident memory (MiB) added after 10%, 50% and 100% of the updates of one epoch whose
    batches are made one at a time and dropped after their update, as a data loader does. Run in
    a fresh process (after a tiny warm-up), so that no freed memory is there to be reused."""
    run = ours_flat if side == "ours" else torchmetrics_flat
    run(flat_batches(QUICK))
    count = -(-size["queries"] // size["flat_batch"])
    marks = {max(count // 10, 1) - 1: "10%", count // 2 - 1: "50%", count - 1: "100%"}
    memory = {}
    base = _status_kib("VmRSS") or 0

    def checkpoint(i):
        if i in marks:
            memory[marks[i]] = ((_status_kib("VmRSS") or 0) - base) / 1024

    run(iter_flat_batches(size, seed=1), checkpoint)
    return memory


# ------------------------------------------------------------------------------------ retrieved ids


def retrieved_data(size: dict, seed: int = 1):
    """ids ``(queries, candidates)`` with distinct descending scores, and padded graded judgements."""
    rng = np.random.default_rng(seed)
    queries, n = size["queries"], size["candidates"]
    catalog = 1_000_000
    ids = _distinct_rows(rng, queries, n, catalog)
    scores = np.sort(rng.random((queries, n)), axis=1)[:, ::-1].copy()
    judged = 10
    relevant = np.full((queries, judged), -1, dtype=np.int64)
    grades = np.zeros((queries, judged))
    counts = rng.integers(1, judged + 1, size=queries)
    for q in range(queries):
        c = counts[q]
        found = rng.choice(n, size=c, replace=False)
        picked = ids[q, found].copy()
        unretrieved = rng.random(c) < 0.3
        picked[unretrieved] = catalog + rng.choice(10_000, size=int(unretrieved.sum()), replace=False)
        relevant[q, :c] = picked
        grades[q, :c] = rng.integers(1, 4, size=c)
    return (
        torch.from_numpy(ids),
        torch.from_numpy(scores),
        torch.from_numpy(relevant),
        torch.from_numpy(grades),
    )


def _distinct_rows(rng, queries, n, catalog):
    """Row-distinct ids: a random offset plus distinct steps."""
    steps = rng.integers(1, catalog // (2 * n), size=(queries, n)).cumsum(axis=1)
    return (steps + rng.integers(0, catalog // 2, size=(queries, 1))) % catalog


def six_metrics():
    return RankingMetrics(
        mrr=MRR(K),
        hit_rate=HitRate(K),
        ndcg=NDCG(K, gain_function="linear_rank"),
        precision=Precision(K),
        recall=Recall(K),
        map=MAP(K),
    )


def ours_retrieved(data, per_batch):
    ids, scores, relevant, grades = data
    group = six_metrics()
    for start in range(0, ids.shape[0], per_batch):
        rows = slice(start, start + per_batch)
        group.update(Retrieved(ids[rows], relevant[rows], scores[rows], grades[rows]))
    return group.compute()


RANX_NAMES = {
    "mrr@10": "mrr@10",
    "hit_rate@10": "hit_rate@10",
    "ndcg@10": "ndcg@10",
    "precision@10": "precision@10",
    "recall@10": "recall@10",
    "map@10": "map@10",
}


def ranx_retrieved(data):
    from ranx import Qrels, Run, evaluate

    ids, scores, relevant, grades = (t.numpy() for t in data)
    qids = [str(q) for q in range(ids.shape[0])]
    qrels, run = {}, {}
    for q, qid in enumerate(qids):
        keep = relevant[q] >= 0
        qrels[qid] = dict(
            zip(map(str, relevant[q][keep].tolist()), grades[q][keep].astype(int).tolist(), strict=True)
        )
        run[qid] = dict(zip(map(str, ids[q].tolist()), scores[q].tolist(), strict=True))
    return evaluate(Qrels(qrels), Run(run), list(RANX_NAMES.values()))


# -------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    threads = torch.get_num_threads()
    try:
        return _main(argv)
    finally:
        torch.set_num_threads(threads)  # the smoke test calls main() in its own process


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--flat-memory", choices=["ours", "torchmetrics"])
    args = parser.parse_args(argv)
    size = QUICK if args.quick else FULL
    repeats = 1 if args.quick else 3
    if args.flat_memory:
        torch.set_num_threads(1)
        print(json.dumps(flat_memory(args.flat_memory, size)))
        return 0
    torch.set_num_threads(1)
    print(machine_line())
    memory = {}
    if not args.quick:
        for side in ("ours", "torchmetrics"):
            done = subprocess.run(
                [sys.executable, __file__, "--flat-memory", side], capture_output=True, text=True, check=True
            )
            memory[side] = json.loads(done.stdout.strip().splitlines()[-1])
    batches = flat_batches(size)
    ours, theirs = ours_flat(batches), torchmetrics_flat(batches)  # also the warm-up
    for key in theirs:
        assert abs(ours[key] - theirs[key]) < 1e-6, (key, ours, theirs)
    # An epoch of torchmetrics takes a minute or more: two rounds, interleaved with ours.
    flat_ms = time_side_by_side(
        {"ours": lambda: ours_flat(batches), "torchmetrics": lambda: torchmetrics_flat(batches)},
        repeats=min(repeats, 2),
        warmup=0,
    )

    data = retrieved_data(size)
    ours_values = ours_retrieved(data, size["retrieved_batch"])
    ranx_values = ranx_retrieved(data)
    for ours_key, ranx_key in RANX_NAMES.items():
        assert abs(ours_values[ours_key] - ranx_values[ranx_key]) < 1e-6, (ours_key, ours_values, ranx_values)
    retrieved = time_side_by_side(
        {"ours": lambda: ours_retrieved(data, size["retrieved_batch"]), "ranx": lambda: ranx_retrieved(data)},
        repeats=repeats,
        warmup=0,
    )

    shape = f"{size['queries']:,} queries x {size['candidates']} candidates"
    rows = []
    for form, timings, base in (("flat", flat_ms, "ours"), ("retrieved", retrieved, "ours")):
        for case, t in timings.items():
            label = "ranx (dicts + build + evaluate)" if case == "ranx" else case
            rows.append([form, shape, label, t.median, t.spread, f"{t.median / timings[base].median:.1f}x"])
    print(markdown_table(["form", "data", "case", "median (ms)", "spread (ms)", "case/ours"], rows))
    print()
    if memory:
        print()
        header = ["flat case", "RSS added after 10% of updates (MiB)", "after 50%", "after 100%"]
        print(
            markdown_table(
                header,
                [[side, *(m.get(p, 0.0) for p in ("10%", "50%", "100%"))] for side, m in memory.items()],
            )
        )
    if not args.quick:
        flat_ratio = flat_ms["torchmetrics"].median / flat_ms["ours"].median
        ranx_ratio = retrieved["ranx"].median / retrieved["ours"].median
        print(f"target flat: torchmetrics/ours >= 50x: {flat_ratio:.1f}x, {verdict(flat_ratio >= 50)}")
        print(f"target retrieved: ranx/ours >= 10x: {ranx_ratio:.1f}x, {verdict(ranx_ratio >= 10)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
