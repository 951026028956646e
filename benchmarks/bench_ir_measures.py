"""ir_measures providers side by side: ignite-ranking's vs ir_measures' pytrec_eval provider.

Generates (seeded) qrels and a run of QUERIES x DOCS documents and times ``calc_aggregate`` of
both providers on the same measures, interleaved (benchmarks/common.py), for each input form:

- ``dicts``: dicts of dicts, the form most ir_measures users pass;
- ``dataframe``: pandas DataFrames (query_id, doc_id, relevance / score columns);
- ``files``: TREC files; ours reads the paths, pytrec_eval's provider gets
  ``ir_measures.read_trec_qrels`` / ``read_trec_run`` (it takes no paths), so its time includes
  ir_measures' parsing, as a user's would.

Both providers are warmed up on a tiny input first. Checks that both give the same values (our
provider rounds scores to float32 as pytrec_eval does).

Usage: python benchmarks/bench_ir_measures.py [--queries 10000] [--docs 1000] [--repeats 3]
       [--forms dicts,dataframe,files] [--measures "nDCG@10 P@10 ..."] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_line, time_side_by_side

MEASURES = "nDCG@10 P@10 R@100 AP@100 AP RR Rprec NumRelRet"
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

    from ignite_ranking import ir_measures as ours

    measures = [ir_measures.parse_measure(m) for m in args.measures.split()]
    providers = {"ignite_ranking": ours.provider, "pytrec_eval": ir_measures.pytrec_eval}
    tiny_qrels, tiny_run = generate(5, 60, seed=1)
    for provider in providers.values():  # warm up (imports, first torch calls)
        provider.calc_aggregate(measures, tiny_qrels, tiny_run)
    start = time.perf_counter()
    qrels, run = generate(args.queries, args.docs)
    print(f"generated {args.queries} x {args.docs} qrels and run in {time.perf_counter() - start:.1f}s")
    print(machine_line())
    with tempfile.TemporaryDirectory() as directory:
        inputs = forms(qrels, run, directory)
        for form in args.forms.split(","):
            make_ours_qrels, make_ours_run, make_qrels, make_run = inputs[form]
            values: dict = {}

            def case(name, provider, make_qrels, make_run, values=values):
                def call():
                    values[name] = provider.calc_aggregate(measures, make_qrels(), make_run())

                return call

            timings = time_side_by_side(
                {
                    "ignite_ranking": case("ignite_ranking", ours.provider, make_ours_qrels, make_ours_run),
                    "pytrec_eval": case("pytrec_eval", ir_measures.pytrec_eval, make_qrels, make_run),
                },
                repeats=args.repeats,
                warmup=0,
            )
            base = timings["ignite_ranking"].median
            print(f"\n{form}: calc_aggregate of {args.measures}")
            print(f"{'provider':16}{'median s':>10}{'x ours':>9}   runs (s)")
            for name, timing in timings.items():
                runs = " ".join(f"{t / 1e3:.2f}" for t in timing.runs)
                print(f"{name:16}{timing.median / 1e3:10.2f}{timing.median / base:9.1f}   {runs}")
            for m in measures:
                a, b = values["ignite_ranking"][m], values["pytrec_eval"][m]
                assert abs(a - b) <= 1e-9 * max(1.0, abs(b)), (form, str(m), a, b)
            print("values equal:", ", ".join(f"{m}={values['pytrec_eval'][m]:.6f}" for m in measures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
