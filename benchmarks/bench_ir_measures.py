"""ir_measures providers side by side: ignite-ranking's vs ir_measures' pytrec_eval provider.

Generates (seeded) qrels and a run of QUERIES x DOCS documents and times what a user calls,
``provider.calc_aggregate(measures, qrels, run)`` (ours: ``ignite_ranking.ir_measures``; theirs:
``ir_measures.pytrec_eval``), on the same measures, interleaved, for each input form:

- ``dicts``: dicts of dicts, the form most ir_measures users pass;
- ``dataframe``: pandas DataFrames (query_id, doc_id, relevance / score columns);
- ``files``: TREC files; ours reads the paths, pytrec_eval's provider gets
  ``ir_measures.read_trec_qrels`` / ``read_trec_run`` (it takes no paths), so its time includes
  ir_measures' parsing, as a user's would.

More rows show where the time goes: for DataFrames and files, ``ours: inputs`` converts the
qrels and run to our columns only (the rest of ours is the evaluation; a dict-of-dicts run is
read during the evaluation, see ``ignite_ranking.trec.run_dicts``); for dicts,
``ir_measures default`` is ``ir_measures.calc_aggregate`` (its default pipeline, which hands these measures to
pytrec_eval) and, for the default measures, ``pytrec_eval alone`` calls pytrec_eval's
``RelevanceEvaluator`` directly, without ir_measures around it. Every row gives the median
wall-clock time and the median CPU time of this process (all threads): on a shared machine the
CPU time moves less with the load than the wall time.
The load average (``/proc/loadavg``) is printed before and after each form.

Both providers are warmed up on a tiny input first. Checks that both give the same values (our
provider rounds scores to float32 as pytrec_eval does).

Usage: python benchmarks/bench_ir_measures.py [--queries 10000] [--docs 1000] [--repeats 3]
       [--forms dicts,dataframe,files] [--measures "nDCG@10 P@10 ..."] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_line

MEASURES = "nDCG@10 P@10 R@100 AP@100 AP RR Rprec NumRelRet"
# pytrec_eval's names of MEASURES, for the "pytrec_eval alone" row (all at relevance level 1)
PYTREC_EVAL_NAMES = {
    *("ndcg_cut_10", "P_10", "recall_100", "map_cut_100", "map", "recip_rank", "Rprec", "num_rel_ret")
}
FORMS = ("dicts", "dataframe", "files")


def generate(queries: int, docs: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(queries):
        ids = [f"D{i}" for i in rng.choice(5_000_000, docs, replace=False).tolist()]
        scores = np.round(rng.random(docs) * 100, 3).tolist()  # some ties
        run[f"q{q}"] = dict(zip(ids, scores, strict=True))
        judged = rng.choice(docs, min(50, docs), replace=False).tolist()
        rels = rng.choice([0, 0, 0, 1, 2], len(judged)).tolist()
        qrels[f"q{q}"] = {ids[i]: r for i, r in zip(judged, rels, strict=True)}
    return qrels, run


def forms(qrels: dict, run: dict, directory: str):
    """``form -> (ours_qrels, ours_run, theirs_qrels, theirs_run)``; each a callable making the input."""
    import ir_measures
    import pandas as pd

    qrels_path, run_path = os.path.join(directory, "qrels"), os.path.join(directory, "run")
    with open(qrels_path, "w") as f:
        f.writelines(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items())
    with open(run_path, "w") as f:
        f.writelines(f"{q} Q0 {d} 0 {s!r} run\n" for q, docs in run.items() for d, s in docs.items())
    qrels_df = pd.DataFrame(
        [(q, d, r) for q, docs in qrels.items() for d, r in docs.items()],
        columns=["query_id", "doc_id", "relevance"],
    )
    run_df = pd.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        columns=["query_id", "doc_id", "score"],
    )
    return {
        "dicts": (lambda: qrels, lambda: run, lambda: qrels, lambda: run),
        "dataframe": (lambda: qrels_df, lambda: run_df, lambda: qrels_df, lambda: run_df),
        "files": (
            lambda: qrels_path,
            lambda: run_path,
            lambda: ir_measures.read_trec_qrels(qrels_path),
            lambda: ir_measures.read_trec_run(run_path),
        ),
    }


def _load() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def _time(cases: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[tuple[float, float]]]:
    """``(wall s, CPU s)`` of each case's runs, the cases interleaved (round-robin)."""
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            runs[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--forms", default=",".join(FORMS), help="input forms to time, comma-separated")
    parser.add_argument("--measures", default=MEASURES, help="ir_measures names, space-separated")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat (a smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.queries, args.docs, args.repeats = 50, 100, 1

    import ir_measures
    import pytrec_eval

    from ignite_ranking import ir_measures as ours

    measures = [ir_measures.parse_measure(m) for m in args.measures.split()]
    tiny_qrels, tiny_run = generate(5, 60, seed=1)
    for provider in (ours.provider, ir_measures.pytrec_eval):  # warm up (imports, first torch calls)
        provider.calc_aggregate(measures, tiny_qrels, tiny_run)
    start = time.perf_counter()
    qrels, run = generate(args.queries, args.docs)
    print(f"generated {args.queries} x {args.docs} qrels and run in {time.perf_counter() - start:.1f}s")
    print(machine_line())
    summary = []
    with tempfile.TemporaryDirectory() as directory:
        inputs = forms(qrels, run, directory)
        for form in args.forms.split(","):
            make_ours_qrels, make_ours_run, make_qrels, make_run = inputs[form]
            values: dict = {}

            def case(name, provider, make_qrels, make_run, values=values):
                def call():
                    values[name] = provider.calc_aggregate(measures, make_qrels(), make_run())

                return call

            cases = {"ignite_ranking": case("ignite_ranking", ours.provider, make_ours_qrels, make_ours_run)}
            if form != "dicts":
                cases["  ours: inputs"] = lambda q=make_ours_qrels, r=make_ours_run: (
                    ours.as_qrels(q()),
                    ours.as_run(r()),
                )
            cases["pytrec_eval"] = case("pytrec_eval", ir_measures.pytrec_eval, make_qrels, make_run)
            if form == "dicts":
                cases["  ir_measures default"] = lambda: ir_measures.calc_aggregate(measures, qrels, run)
            if form == "dicts" and args.measures == MEASURES:
                cases["  pytrec_eval alone"] = lambda: pytrec_eval.RelevanceEvaluator(
                    qrels, PYTREC_EVAL_NAMES
                ).evaluate(run)
            load_before = _load()
            runs = _time(cases, args.repeats)
            print(f"\n{form}: calc_aggregate of {args.measures} (load average {load_before} -> {_load()})")
            print(f"{'case':22}{'median s':>10}{'cpu s':>8}{'x ours':>9}   runs: wall/cpu (s)")
            base = statistics.median(w for w, _ in runs["ignite_ranking"])
            for name, timing in runs.items():
                wall = statistics.median(w for w, _ in timing)
                cpu = statistics.median(c for _, c in timing)
                listed = " ".join(f"{w:.2f}/{c:.2f}" for w, c in timing)
                print(f"{name:22}{wall:10.2f}{cpu:8.2f}{wall / base:9.1f}   {listed}")
            medians = [
                (statistics.median(w for w, _ in runs[n]), statistics.median(c for _, c in runs[n]))
                for n in ("ignite_ranking", "pytrec_eval")
            ]
            summary.append((form, *medians))
            for m in measures:
                a, b = values["ignite_ranking"][m], values["pytrec_eval"][m]
                assert abs(a - b) <= 1e-9 * max(1.0, abs(b)), (form, str(m), a, b)
            print("values equal:", ", ".join(f"{m}={values['pytrec_eval'][m]:.6f}" for m in measures))
    header = f"{'ours s (cpu)':>16}{'pytrec_eval s (cpu)':>22}{'pytrec_eval / ours: wall (cpu)':>33}"
    print(f"\n{'form':12}{header}")
    for form, (mine, mine_cpu), (theirs, theirs_cpu) in summary:
        print(
            f"{form:12}{mine:9.2f} ({mine_cpu:4.2f}){theirs:15.2f} ({theirs_cpu:4.2f})"
            f"{theirs / mine:25.1f}x ({theirs_cpu / mine_cpu:.1f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
