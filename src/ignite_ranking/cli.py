"""The ``ignite-ranking`` command line: ``ignite-ranking evaluate QRELS RUN -m mrr@10 ndcg@10``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from .trec import METRIC_HELP, evaluate, read_qrels, read_run, tie_policies

__all__ = ["main"]

_PROGRESS_BYTES = 32 << 20  # show progress bars for inputs larger than this


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ignite-ranking", description="Ranking metrics from the command line."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    ev = commands.add_parser(
        "evaluate",
        help="evaluate a TREC run against qrels (trec_eval semantics)",
        description="Evaluate a TREC run file (qid Q0 docno rank score tag) against a qrels file "
        "(qid iter docno rel), plain or gzip. Queries of the run missing from the qrels are "
        "skipped; like trec_eval, the rank column is ignored and documents are ordered by score.",
        epilog=METRIC_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ev.add_argument("qrels", help="qrels file (.gz allowed)")
    ev.add_argument("run", help="run file (.gz allowed)")
    ev.add_argument("-m", "--metrics", nargs="+", required=True, metavar="METRIC", help="metrics, see below")
    ev.add_argument(
        "--ties",
        choices=tie_policies(),
        default="trec",
        help="order of equal scores: 'trec' (trec_eval: float32 scores, docno descending; default), "
        "'first'/'last' (file order), or another kernel tie policy",
    )
    ev.add_argument(
        "-l",
        "--relevance-level",
        type=int,
        default=1,
        help="a judged document is relevant iff rel >= this (trec_eval -l, default 1)",
    )
    ev.add_argument(
        "-c",
        "--missing-as-zero",
        action="store_true",
        help="average over every qrels query, counting those missing from the run as 0 (trec_eval -c)",
    )
    ev.add_argument(
        "-q",
        "--per-query",
        action="store_true",
        help="also print each query's values, in order of first appearance in the run",
    )
    ev.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ev.add_argument("--batch-size", type=int, default=2048, help="queries per padded batch (default 2048)")
    ev.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads for ranking and scoring (default 1: the batches' ops are too small to "
        "gain from more, and lose much on a busy machine)",
    )
    bar = ev.add_mutually_exclusive_group()
    bar.add_argument(
        "--progress", dest="progress", action="store_true", default=None, help="always show progress"
    )
    bar.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")
    _add_compare_parser(commands)
    return parser


def _evaluate(args: argparse.Namespace) -> int:
    progress = args.progress
    if progress is None:
        progress = os.path.getsize(args.run) + os.path.getsize(args.qrels) > _PROGRESS_BYTES
    qrels = read_qrels(args.qrels, progress=progress)
    run = read_run(args.run, progress=progress)
    result = evaluate(
        qrels,
        run,
        args.metrics,
        relevance_level=args.relevance_level,
        ties=args.ties,
        missing_as_zero=args.missing_as_zero,
        batch_size=args.batch_size,
        progress=progress,
        num_threads=args.threads,
    )
    if args.json:
        payload: dict = {"num_queries": result.num_queries, "metrics": result.means}
        if args.per_query:
            payload["per_query"] = result.per_query()
        json.dump(payload, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    width = max(len(m) for m in [*result.metrics, "num_q"])
    if args.per_query:
        for qid, row in zip(result.queries, result.values, strict=True):
            for name, value in zip(result.metrics, row, strict=True):
                print(f"{name:<{width}}\t{qid}\t{value:.4f}")
    print(f"{'num_q':<{width}}\tall\t{result.num_queries}")
    for name, value in result.means.items():
        print(f"{name:<{width}}\tall\t{value:.4f}")
    return 0


def _add_compare_parser(commands) -> None:
    from .compare import CORRECTIONS, TESTS

    cmp = commands.add_parser(
        "compare",
        help="compare TREC runs on the same queries: paired tests, intervals, a report",
        description="Evaluate each run against the qrels as `evaluate` does (same metric names, "
        "tie policy and relevance level), then compare the runs query by query: paired tests, "
        "multiple-testing correction per metric, bootstrap confidence intervals, effect sizes. "
        "Queries: those judged in the qrels and answered by every run; a query missing from a "
        "run leaves the comparison (a note on stderr says how many), unless -c counts it as 0 "
        "for that run, as trec_eval -c does. A run is named by its tag when the tags differ, "
        "else by its path; --baseline takes either.",
        epilog=METRIC_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmp.add_argument("qrels", help="qrels file (.gz allowed)")
    cmp.add_argument("runs", nargs="+", metavar="run", help="two or more run files (.gz allowed)")
    cmp.add_argument("-m", "--metrics", nargs="+", required=True, metavar="METRIC", help="metrics, see below")
    cmp.add_argument("--baseline", metavar="RUN", help="compare every run with this one (default: all pairs)")
    cmp.add_argument(
        "--test",
        nargs="+",
        choices=TESTS,
        default=["t-test"],
        help="paired tests; the first one decides the significance marks (default: t-test)",
    )
    cmp.add_argument("--correction", choices=CORRECTIONS, default="holm", help="per metric (default: holm)")
    cmp.add_argument("--alpha", type=float, default=0.05, help="significance level; CIs are 1 - alpha")
    cmp.add_argument(
        "--seed", type=int, default=None, help="seed of the randomization test and the bootstrap"
    )
    cmp.add_argument("--resamples", type=int, default=10_000, help="Monte Carlo resamples (default 10000)")
    cmp.add_argument(
        "--alternative", choices=("two-sided", "greater", "less"), default="two-sided", help="of every test"
    )
    cmp.add_argument(
        "--format", choices=("table", "markdown", "latex", "json", "csv"), default="table", help="output"
    )
    cmp.add_argument(
        "--plot",
        metavar="FILE",
        help="write the per-query difference chart (first metric, first pair) as PNG",
    )
    cmp.add_argument("--ties", choices=tie_policies(), default="trec", help="as for evaluate (default trec)")
    cmp.add_argument("-l", "--relevance-level", type=int, default=1, help="as for evaluate (default 1)")
    cmp.add_argument(
        "-c", "--missing-as-zero", action="store_true", help="count qrels queries a run lacks as 0 for it"
    )


def _run_names(paths: Sequence[str], tags: Sequence[str]) -> list[str]:
    """Tags when they are distinct and non-empty, else the paths."""
    if all(tags) and len(set(tags)) == len(tags):
        return list(tags)
    return list(paths)


def _compare(args: argparse.Namespace) -> int:
    from .compare import compare

    if len(args.runs) < 2:
        raise ValueError(f"compare needs at least two runs, got {len(args.runs)}")
    if len(set(args.runs)) != len(args.runs):
        raise ValueError(f"each run may be given once, got {args.runs}")
    qrels = read_qrels(args.qrels)
    results, tags = [], []
    for path in args.runs:
        run = read_run(path)
        tags.append(run.tag)
        results.append(
            evaluate(
                qrels,
                run,
                args.metrics,
                relevance_level=args.relevance_level,
                ties=args.ties,
                missing_as_zero=args.missing_as_zero,
            )
        )
    names = _run_names(args.runs, tags)
    baseline = args.baseline
    if baseline is not None:
        if baseline in args.runs:
            baseline = names[args.runs.index(baseline)]
        elif baseline in tags:
            baseline = names[tags.index(baseline)]
        else:
            raise ValueError(f"--baseline must name one of the runs by path or tag, got {baseline!r}")
    common = set.intersection(*(set(r.queries) for r in results))
    for name, result in zip(names, results, strict=True):
        dropped = result.num_queries - len(common)
        if dropped:
            print(
                f"ignite-ranking: note: {dropped} of {result.num_queries} evaluated queries of run {name} "
                "are missing from another run and left out (-c counts missing queries as 0)",
                file=sys.stderr,
            )
    report = compare(
        dict(zip(names, results, strict=True)),
        baseline=baseline,
        tests=args.test,
        correction=args.correction,
        alpha=args.alpha,
        alternative=args.alternative,
        resamples=args.resamples,
        seed=args.seed,
        missing="intersect",
    )
    print(report.format(args.format))
    if args.plot:
        report.plot(args.plot)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status (2 for bad input, with a message on stderr)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return _compare(args) if args.command == "compare" else _evaluate(args)
    except (ValueError, OSError) as err:
        print(f"ignite-ranking: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
