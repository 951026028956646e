"""The ``ignite-ranking`` command line: ``ignite-ranking evaluate QRELS RUN -m mrr@10 ndcg@10``."""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from collections.abc import Sequence

from . import __version__
from .trec import MEASURE_HELP, SCORE_PRECISIONS, evaluate, read_qrels, read_run, tie_policies
from .trec.diversity import DIVERSITY_HELP, is_diversity_measure
from .trec.io import Qrels, Run, read_diversity_qrels

__all__ = ["main"]


def _int_from(minimum: int):
    """An argparse type: an int >= ``minimum``, else argparse's error naming the flag."""

    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value}")
        return value

    parse.__name__ = "int"  # argparse's "invalid int value: 'x'"
    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ignite-ranking", description="Ranking metrics from the command line."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    ev = commands.add_parser(
        "evaluate",
        help="evaluate a TREC run against qrels (trec_eval semantics)",
        description="Evaluate a TREC run file (qid Q0 docno rank score tag [ignored...]) against a\n"
        "qrels file (qid iter docno rel), plain or gzip, as trec_eval 10 does. Blank lines and lines\n"
        "starting with '#' are skipped; a qrels grade below 0 marks a pooled but unjudged document\n"
        "(never relevant, no NDCG gain). Queries of the run missing from the qrels are skipped (a\n"
        "note on stderr says how many); the rank column is ignored and documents are ordered by\n"
        "score.",
        epilog=MEASURE_HELP + DIVERSITY_HELP,
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
        "trec_eval's default set",
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
        "-J",
        "--judged-only",
        action="store_true",
        help="compute every measure without the unjudged documents of the run (trec_eval -J)",
    )
    ev.add_argument(
        "-q",
        "--per-query",
        action="store_true",
        help="also print each query's values, queries in trec_eval's order (query ids sorted as "
        "strcmp sorts them)",
    )
    ev.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ev.add_argument(
        "--batch-size", type=_int_from(1), default=2048, help="queries per padded batch (default 2048)"
    )
    ev.add_argument(
        "--threads",
        type=_int_from(1),
        default=1,
        help="torch threads for ranking and scoring (default 1: the batches' ops are too small to "
        "gain from more, and lose much on a busy machine)",
    )
    _add_progress(ev)
    _add_compare_parser(commands)
    return parser


def _add_progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress bars on stderr (default: only when stderr is a terminal, so that logs "
        "and pipes get no bars)",
    )


def _progress(args: argparse.Namespace) -> bool:
    """``--progress``/``--no-progress``, else whether stderr is a terminal."""
    if args.progress is not None:
        return args.progress
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def _note(message: str) -> None:
    print(f"ignite-ranking: note: {message}", file=sys.stderr)


def _check_query_ids(qrels: Qrels, run: Run, name: str, missing_as_zero: bool) -> None:
    """Says on stderr how many queries of the run the qrels lack (they are skipped), and warns
    when none of them is in the qrels: ids written differently (``q1`` against ``1``)."""
    known = set(qrels.qids)
    skipped = [q for q in run.qids if q not in known]
    if not skipped:
        return
    if len(skipped) < len(run.qids):
        _note(
            f"{len(skipped)} of {len(run.qids)} queries of run {name} are not in the qrels and left "
            "out (as trec_eval skips them)"
        )
        return
    outcome = (
        "with -c every qrels query counts as missing from the run and scores 0"
        if missing_as_zero
        else "there is nothing to evaluate"
    )
    print(
        f"ignite-ranking: warning: none of the {len(run.qids)} query ids of run {name} is in the "
        f"qrels (run ids such as {_examples(run.qids)}, qrels ids such as {_examples(qrels.qids)}); "
        f"{outcome}. Do both files name the queries the same way?",
        file=sys.stderr,
    )


def _examples(ids: Sequence[str], count: int = 3) -> str:
    return ", ".join(repr(q) for q in ids[:count])


def _read_judgements(path: str, metrics: Sequence[str], progress: bool) -> Qrels:
    """The qrels; diversity measures read the second column as the subtopic (ndeval's qrels)."""
    diversity = any(map(is_diversity_measure, metrics))
    return (read_diversity_qrels if diversity else read_qrels)(path, progress=progress)


def _evaluate(args: argparse.Namespace) -> int:
    progress = _progress(args)
    metrics = args.metrics or ["official"]
    qrels = _read_judgements(args.qrels, metrics, progress)
    run = read_run(args.run, progress=progress)
    _check_query_ids(qrels, run, args.run, args.missing_as_zero)
    result = evaluate(
        qrels,
        run,
        metrics,
        relevance_level=args.relevance_level,
        ties=args.ties,
        score_precision=args.score_precision,
        missing_as_zero=args.missing_as_zero,
        judged_only=args.judged_only,
        batch_size=args.batch_size,
        progress=progress,
        num_threads=args.threads,
    )
    if args.json:
        payload: dict = {"num_queries": result.num_queries, "metrics": dict(result.means)}
        if "runid" in result.texts:
            payload["metrics"]["runid"] = run.tag
        if args.per_query:
            payload["per_query"] = result.per_query()
            for name, strings in result.texts.items():
                for qid, text in zip(result.queries, strings, strict=True):
                    payload["per_query"][qid][name] = text
        json.dump(payload, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print("\n".join(_trec_lines(result, run.tag, args.per_query)))
    return 0


# trec_eval prints these in the summary only (num_q, the geometric means, the run tag) or per
# query only (relstring)
_SUMMARY_ONLY = ("num_q", "gm_map", "gm_bpref", "runid")
_QUERY_ONLY = ("relstring",)


def _cell(value: float, measure) -> str:
    """A value as trec_eval prints it: counts as integers, the rest ``%6.4f`` (NaN as ``-nan``)."""
    if measure.is_count:
        return f"{value:.0f}"
    return f"{'-nan':>6}" if math.isnan(value) else f"{value:6.4f}"


def _trec_lines(result, tag: str, per_query: bool) -> list[str]:
    """trec_eval's layout: the name padded to 22 characters, the query (``all`` for the summary),
    the value; with -q each query's lines first, queries in trec_eval's (``strcmp``) order."""
    columns = {name: column for column, name in enumerate(result.metrics)}
    lines = []

    def line(name: str, qid: str, text: str) -> None:
        lines.append(f"{name:<22}\t{qid}\t{text}")

    if per_query:
        order = sorted(
            range(result.num_queries), key=lambda i: result.queries[i].encode("utf-8", "surrogateescape")
        )
        for i in order:
            for m in result.measures:
                if m.family in _SUMMARY_ONLY:
                    continue
                if m.is_text:
                    line(m.name, result.queries[i], f"'{result.texts[m.name][i]}'")
                else:
                    line(m.name, result.queries[i], _cell(result.values[i, columns[m.name]], m))
    for m in result.measures:
        if m.family in _QUERY_ONLY:
            continue
        line(m.name, "all", tag if m.is_text else _cell(result.means[m.name], m))
    return lines


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
        epilog=MEASURE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmp.add_argument("qrels", help="qrels file (.gz allowed)")
    cmp.add_argument("runs", nargs="+", metavar="run", help="two or more run files (.gz allowed)")
    cmp.add_argument(
        "-m",
        "--metrics",
        nargs="+",
        action="extend",
        required=True,
        metavar="MEASURE",
        help="measures, as for evaluate (see below); -m may be repeated",
    )
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
        "--seed",
        type=_int_from(0),
        default=0,
        help="seed of the randomization test and the bootstrap (default 0: the same inputs give the "
        "same report; the report prints it)",
    )
    cmp.add_argument(
        "--resamples", type=_int_from(1), default=10_000, help="Monte Carlo resamples (default 10000)"
    )
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
    cmp.add_argument(
        "--score-precision",
        choices=SCORE_PRECISIONS,
        default="float64",
        help="as for evaluate (default float64)",
    )
    cmp.add_argument("-l", "--relevance-level", type=int, default=1, help="as for evaluate (default 1)")
    cmp.add_argument(
        "-c", "--missing-as-zero", action="store_true", help="count qrels queries a run lacks as 0 for it"
    )
    _add_progress(cmp)


def _run_names(paths: Sequence[str], tags: Sequence[str]) -> list[str]:
    """Tags when they are distinct and non-empty, else the paths."""
    if all(tags) and len(set(tags)) == len(tags):
        return list(tags)
    return list(paths)


def _compare(args: argparse.Namespace) -> int:
    # Every comparison needs scipy, a --plot matplotlib: fail now, not after the evaluation.
    import scipy.stats  # noqa: F401

    from .compare import CompareWarning, compare

    if args.plot:
        import matplotlib  # noqa: F401

    if len(args.runs) < 2:
        raise ValueError(f"compare needs at least two runs, got {len(args.runs)}")
    if len(set(args.runs)) != len(args.runs):
        raise ValueError(f"each run may be given once, got {args.runs}")
    progress = _progress(args)
    qrels = _read_judgements(args.qrels, args.metrics, progress)
    results, tags = [], []
    for path in args.runs:
        run = read_run(path, progress=progress)
        _check_query_ids(qrels, run, path, args.missing_as_zero)
        tags.append(run.tag)
        results.append(
            evaluate(
                qrels,
                run,
                args.metrics,
                relevance_level=args.relevance_level,
                ties=args.ties,
                score_precision=args.score_precision,
                missing_as_zero=args.missing_as_zero,
                progress=progress,
            )
        )
    names = _run_names(args.runs, tags)
    baseline = args.baseline
    if baseline is not None:
        if baseline in args.runs:
            baseline = names[args.runs.index(baseline)]
        elif tags.count(baseline) > 1:
            tagged = [path for path, tag in zip(args.runs, tags, strict=True) if tag == baseline]
            raise ValueError(f"--baseline {baseline!r} is the tag of runs {tagged}: name one by its path")
        elif baseline in tags:
            baseline = names[tags.index(baseline)]
        else:
            raise ValueError(f"--baseline must name one of the runs by path or tag, got {baseline!r}")
    common = set.intersection(*(set(r.queries) for r in results))
    for name, result in zip(names, results, strict=True):
        dropped = result.num_queries - len(common)
        if dropped:
            _note(
                f"{dropped} of {result.num_queries} evaluated queries of run {name} "
                "are missing from another run and left out (-c counts missing queries as 0)"
            )
    status = f"ignite-ranking: comparing {len(names)} runs on {len(common)} queries..."
    if progress:  # the tests and the bootstrap of big runs take a while: say what is going on
        print(status, file=sys.stderr, end="\r", flush=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CompareWarning)
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
    if progress:
        print(" " * len(status), file=sys.stderr, end="\r", flush=True)
    for warning in caught:
        if issubclass(warning.category, CompareWarning):
            print(f"ignite-ranking: warning: {warning.message}", file=sys.stderr)
        else:  # not ours: as Python would have shown it
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    print(report.format(args.format))
    if args.plot:
        report.plot(args.plot)
    return 0


# The extra of pyproject.toml that installs each optional module a command imports when it needs it.
_EXTRAS = {"scipy": "compare", "matplotlib": "compare"}


def _missing_module(err: ImportError, command: str) -> str:
    """One line naming the module missing behind ``err`` (or an error it wraps) and its install."""
    cause: BaseException | None = err
    while cause is not None and not isinstance(cause, ModuleNotFoundError):
        cause = cause.__cause__
    if cause is None or not cause.name:
        return f"ignite-ranking: error: {err}"
    module = cause.name.partition(".")[0]
    extra = _EXTRAS.get(module)
    install = f"'ignite-ranking[{extra}]'" if extra else module
    return f"ignite-ranking {command} needs {module}: pip install {install}"


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status: 2 for bad input, 1 for a missing optional
    module (scipy, matplotlib), each with one line on stderr."""
    parser = _parser()
    args = parser.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):  # ids that are not UTF-8 print as the file's bytes
        sys.stdout.reconfigure(errors="surrogateescape")
    try:
        return _compare(args) if args.command == "compare" else _evaluate(args)
    except (ValueError, OSError) as err:
        print(f"ignite-ranking: error: {err}", file=sys.stderr)
        return 2
    except ImportError as err:  # an optional extra is missing: one line says which to install
        print(_missing_module(err, args.command), file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
