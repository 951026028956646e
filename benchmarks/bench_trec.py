"""End-to-end TREC evaluation: ignite-ranking vs pytrec_eval vs ranx, side by side in one run.

Generates (seeded, in-process) a run of QUERIES x DOCS lines and qrels into a temporary
directory, then times, for the same metric set, each library from file to scores:

- ignite-ranking: read_qrels + read_run + evaluate (ties="trec");
- pytrec_eval: parse both files into dicts in Python + RelevanceEvaluator.evaluate;
- ranx: Qrels.from_file + Run.from_file + evaluate; its first call JIT-compiles with numba and is
  reported on its own ("ranx first call"), the median is over later calls.

Usage: python benchmarks/bench_trec.py [--queries 10000] [--docs 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import defaultdict

import numpy as np

from ignite_ranking.trec import evaluate, read_qrels, read_run

OURS = ["mrr@10", "ndcg@10", "recall@100", "map@100", "P@10"]
TREC = ["recip_rank", "ndcg_cut_10", "recall_100", "map_cut_100", "P_10"]
RANX = ["mrr@10", "ndcg@10", "recall@100", "map@100", "precision@10"]


def generate(directory: str, queries: int, docs: int, seed: int = 0) -> tuple[str, str]:
    rng = np.random.default_rng(seed)
    qrels_path, run_path = os.path.join(directory, "qrels.txt"), os.path.join(directory, "run.txt")
    with open(qrels_path, "w") as qf, open(run_path, "w") as rf:
        for q in range(queries):
            ids = rng.choice(5_000_000, docs, replace=False)
            scores = np.round(rng.random(docs) * 100, 3)  # some ties
            order = np.argsort(-scores, kind="stable")
            rf.write("".join(f"q{q} Q0 D{ids[i]} {r} {scores[i]} run\n" for r, i in enumerate(order, 1)))
            judged = rng.choice(docs, 50, replace=False)
            rels = rng.choice([0, 0, 0, 1, 2], 50)
            qf.write("".join(f"q{q} 0 D{ids[i]} {r}\n" for i, r in zip(judged, rels, strict=True)))
    return qrels_path, run_path


def ours(qrels_path, run_path):
    return evaluate(read_qrels(qrels_path), read_run(run_path), OURS).means


def pytrec(qrels_path, run_path):
    import pytrec_eval

    qrels, run = defaultdict(dict), defaultdict(dict)
    with open(qrels_path) as f:
        for line in f:
            q, _, d, r = line.split()
            qrels[q][d] = int(r)
    with open(run_path) as f:
        for line in f:
            q, _, d, _, s, _ = line.split()
            run[q][d] = float(s)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(TREC)).evaluate(run)
    return {m: statistics.fmean(v[m] for v in per_query.values()) for m in TREC}


def ranx_eval(qrels_path, run_path):
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    qrels = Qrels.from_file(qrels_path, kind="trec")
    run = Run.from_file(run_path, kind="trec")
    return ranx_evaluate(qrels, run, RANX)


def timed(fn, *args):
    start = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        start = time.perf_counter()
        qrels_path, run_path = generate(directory, args.queries, args.docs)
        size = os.path.getsize(run_path) / 2**20
        print(
            f"generated {args.queries} x {args.docs} run ({size:.0f} MiB)"
            f" in {time.perf_counter() - start:.1f}s"
        )
        ranx_first, _ = timed(ranx_eval, qrels_path, run_path)
        times: dict[str, list[float]] = defaultdict(list)
        values = {}
        for _ in range(args.repeats):
            for name, fn in (("ignite-ranking", ours), ("pytrec_eval", pytrec), ("ranx", ranx_eval)):
                elapsed, values[name] = timed(fn, qrels_path, run_path)
                times[name].append(elapsed)
    base = statistics.median(times["ignite-ranking"])
    print(f"\n{'':16}{'median s':>10}{'x ours':>9}   runs")
    for name in ("ignite-ranking", "pytrec_eval", "ranx"):
        med = statistics.median(times[name])
        runs = " ".join(f"{t:.2f}" for t in times[name])
        print(f"{name:16}{med:10.2f}{med / base:9.1f}   {runs}")
    print(f"{'ranx first call':16}{ranx_first:10.2f}{ranx_first / base:9.1f}   (includes numba JIT compile)")
    print(
        "\nmeans (ours | pytrec_eval | ranx; pytrec_eval recip_rank has no cutoff,"
        " ranx breaks ties its own way):"
    )
    for o, t, r in zip(OURS, TREC, RANX, strict=True):
        print(
            f"  {o:12} {values['ignite-ranking'][o]:.6f} | {values['pytrec_eval'][t]:.6f}"
            f" | {values['ranx'][r]:.6f}"
        )


if __name__ == "__main__":
    main()
