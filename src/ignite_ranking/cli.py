"""The ``ignite-ranking`` command line: ``ignite-ranking evaluate QRELS RUN -m mrr@10 ndcg@10``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from .trec import MEASURE_HELP, SCORE_PRECISIONS, evaluate, read_qrels, read_run, tie_policies

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
        description="Evaluate a TREC run file (qid Q0 docno rank score tag [ignored...]) against a\n"
        "qrels file (qid iter docno rel), plain or gzip, as trec_eval 10 does. Blank lines and lines\n"
        "starting with '#' are skipped; a qrels grade below 0 marks a pooled but unjudged document\n"
        "(never relevant, no NDCG gain). Queries of the run missing from the qrels are skipped;\n"
        "the rank column is ignored and documents are ordered by score.",
        epilog=MEASURE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ev.add_argument("qrels", help="qrels file (.gz allowed)")
    ev.add_argument("run", help="run file (.gz allowed)")
    ev.add_argument(
        "-m",
        "--metrics",
        nargs="+",
        action="extend",
        metavar="MEASURE",
        help="measures, see below; -m may be repeated (-m P.5,10 -m map); default: official, "
        "trec_eval's default set (the measures of it that are supported)",
    )
    ev.add_argument(
        "--ties",
        choices=tie_policies(),
        default="trec",
        help="order of equal scores: 'trec' (trec_eval: docno descending; default), "
        "'first'/'last' (file order), or another kernel tie policy",
    )
    ev.add_argument(
        "--score-precision",
        choices=SCORE_PRECISIONS,
        default="float64",
        help="compare scores as float64, as trec_eval 10 (2023 on) does (default), or rounded to "
        "float32, as trec_eval 9.0.8 and earlier, pytrec_eval and ir_measures' pytrec_eval "
        "provider do",
    )
    ev.add_argument(
        "-l",
        "--relevance-level",
        type=int,
        default=1,
        help="a judged document is relevant iff rel >= this (trec_eval -l, default 1, >= 0); "
        "NDCG's gains are the grades whatever the level, as in trec_eval",
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
        args.metrics or ["official"],
        relevance_level=args.relevance_level,
        ties=args.ties,
        score_precision=args.score_precision,
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
    # trec_eval's layout: the name padded to 22 characters, counts as integers, the rest to 4 places
    width = 22
    counts = [m.is_count for m in result.measures]

    def cell(value: float, is_count: bool) -> str:
        return f"{value:.0f}" if is_count else f"{value:.4f}"

    if args.per_query:
        for qid, row in zip(result.queries, result.values, strict=True):
            for name, value, is_count in zip(result.metrics, row, counts, strict=True):
                if name != "num_q":  # trec_eval prints num_q for "all" only
                    print(f"{name:<{width}}\t{qid}\t{cell(value, is_count)}")
    for (name, value), is_count in zip(result.means.items(), counts, strict=True):
        print(f"{name:<{width}}\tall\t{cell(value, is_count)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status (2 for bad input, with a message on stderr)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return _evaluate(args)
    except (ValueError, OSError) as err:
        print(f"ignite-ranking: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
