"""The TREC readers on hostile files: time and peak memory, side by side with an ordinary run.

Issue 32 found files of about a megabyte (or a few KiB of gzip) that cost gigabytes or minutes:
one long token widened a block's token matrix to rows x its length, one huge grade made NDCG's
ideal-gain table queries x grade, and a file without newlines was re-copied at every block. Each
case below runs once in a fresh interpreter (the library imported and warmed up on a tiny file
first) and reports its wall time and the resident memory it added at its peak (``VmHWM -
VmRSS`` before the call, see ``common.py``), with both as ratios to the ordinary run:

- ``ordinary run``: RUN_LINES lines of ``qid Q0 docno rank score tag`` (about 1 MB), read;
- ``64 KiB docno``, ``4 KiB docno`` (the longest read: the docno column is then rows x 4 KiB),
  ``64 KiB score``, ``64 KiB qid``: the same run with one such token;
- ``3 MiB docno``: 3,000 lines, one holding a 3 MiB document id;
- ``ordinary ndcg`` / ``grade 1e9 ndcg``: NDCG of the ordinary run on a 2 KB qrels of 100
  queries, ordinary grades / one grade of 1,000,000,000;
- ``gzip bomb``: 64 MiB of ``x`` without a newline, gzip-compressed (about 64 KiB on disk);
- ``NUL bomb``: 1 GiB of NUL bytes, gzip-compressed (about 1 MiB on disk).

The outcome column says whether the file was read or refused (and where): since issue 32 a line
over 1 MiB or a document id over 4 KiB is refused with ``file:line`` (docs/trec.md).

Usage::

    python benchmarks/bench_readers.py           # every case in its own process (~1 min)
    python benchmarks/bench_readers.py --quick   # small files, in this process, no memory
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_line, markdown_table, peak_beyond_current

RUN_LINES = 25_000
QUICK_LINES = 500
BASELINE = "ordinary run"


def _run_lines(count: int) -> list[str]:
    return [f"q{i // 250} Q0 doc{i} {i % 250 + 1} {1.0 / (i + 1)!r} bench\n" for i in range(count)]


def _write(path: str, lines: list[str]) -> str:
    with open(path, "w") as f:
        f.writelines(lines)
    return path


def _gzip_blob(path: str, byte: bytes, size: int) -> str:
    chunk = byte * min(size, 1 << 20)
    with gzip.open(path, "wb", compresslevel=6) as f:
        for _ in range(size // len(chunk)):
            f.write(chunk)
    return path


def make_files(directory: str, quick: bool) -> dict[str, tuple[str, ...]]:
    """Each case's ``(kind, path[, qrels path])``; kinds: ``run`` (read_run) or ``ndcg``."""
    lines = _run_lines(QUICK_LINES if quick else RUN_LINES)
    wide = 65536
    join = os.path.join
    run = _write(join(directory, "run.txt"), lines)

    def variant(name: str, index: int, line: str) -> str:
        changed = list(lines)
        changed[index] = line
        return _write(join(directory, name), changed)

    three = _run_lines(3000)
    three[1500] = f"q6 Q0 {'D' * (3 << 20)} 1 0.5 bench\n"
    qrels = [f"q{q} 0 doc{250 * q + d} {d % 3}\n" for q in range(100) for d in range(0, 250, 25)]
    huge = list(qrels)
    huge[13] = huge[13].rsplit(" ", 1)[0] + " 1000000000\n"
    bomb = 2 << 20 if quick else 64 << 20
    nul = 4 << 20 if quick else 1 << 30
    return {
        BASELINE: ("run", run),
        "64 KiB docno": ("run", variant("docno.txt", 10, f"q0 Q0 {'D' * wide} 11 0.5 bench\n")),
        "4 KiB docno": ("run", variant("docno4k.txt", 10, f"q0 Q0 {'D' * 4096} 11 0.5 bench\n")),
        "64 KiB score": ("run", variant("score.txt", 10, f"q0 Q0 dx 11 {'1' * wide} bench\n")),
        "64 KiB qid": ("run", variant("qid.txt", 10, f"{'Q' * wide} Q0 dx 11 0.5 bench\n")),
        "3 MiB docno": ("run", _write(join(directory, "docno3m.txt"), three)),
        "ordinary ndcg": ("ndcg", run, _write(join(directory, "qrels.txt"), qrels)),
        "grade 1e9 ndcg": ("ndcg", run, _write(join(directory, "qrels_huge.txt"), huge)),
        "gzip bomb": ("run", _gzip_blob(join(directory, "bomb.gz"), b"x", bomb)),
        "NUL bomb": ("run", _gzip_blob(join(directory, "nul.gz"), b"\0", nul)),
    }


def case_function(kind: str, *paths: str) -> Callable[[], str]:
    """The case as a function returning its outcome ("N lines", "ndcg 0.xxxx" or "refused ...")."""
    from ignite_ranking.trec import evaluate, read_qrels, read_run

    def run() -> str:
        try:
            if kind == "run":
                return f"read, {len(read_run(paths[0])):,} lines"
            value = evaluate(read_qrels(paths[1]), read_run(paths[0]), ["ndcg"]).means["ndcg"]
            return f"ndcg {value:.4f}"
        except ValueError as err:
            where = str(err).split(": ", 1)[0].rsplit(":", 1)[-1]
            return f"refused at line {where}"

    return run


def run_case(kind: str, *paths: str) -> dict:
    """In this process: warm up on a tiny file, then time and measure the case once."""
    with tempfile.TemporaryDirectory() as tiny:
        path = _write(os.path.join(tiny, "run"), _run_lines(20))
        qrels = _write(os.path.join(tiny, "qrels"), ["q0 0 doc1 1\n"])
        case_function("ndcg", path, qrels)()
    fn = case_function(kind, *paths)
    box = {}

    def timed() -> None:
        start = time.perf_counter()
        box["outcome"] = fn()
        box["s"] = time.perf_counter() - start

    box["mib"], box["method"] = peak_beyond_current(timed)
    return box


def in_subprocess(kind: str, paths: tuple[str, ...], timeout: float) -> dict:
    script = str(Path(__file__).resolve())
    try:
        done = subprocess.run(
            [sys.executable, script, "--case", kind, *paths],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"outcome": f"stopped after {timeout:.0f} s", "s": timeout, "mib": float("nan")}
    if done.returncode:  # such as a MemoryError: the case failed, the table goes on
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"outcome": f"failed: {last[:60]}", "s": float("nan"), "mib": float("nan")}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small files, in this process, no memory")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a case may run")
    parser.add_argument("--case", nargs="+", help=argparse.SUPPRESS)  # the subprocess side
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(run_case(*args.case)))
        return 0
    print(machine_line())
    with tempfile.TemporaryDirectory() as directory:
        files = make_files(directory, args.quick)
        results = {}
        if args.quick:  # imports and first calls out of the timings
            case_function(*files[BASELINE])()
        for name, (kind, *paths) in files.items():
            if args.quick:
                start = time.perf_counter()
                outcome = case_function(kind, *paths)()
                results[name] = {"outcome": outcome, "s": time.perf_counter() - start, "mib": float("nan")}
            else:
                results[name] = in_subprocess(kind, tuple(paths), args.timeout)
        sizes = {name: os.path.getsize(paths[-1]) for name, (_, *paths) in files.items()}
    base = results[BASELINE]
    rows = []
    for name, result in results.items():
        memory = "-" if result["mib"] != result["mib"] else f"{result['mib']:.1f}"
        memory_ratio = "-" if memory == "-" or not base["mib"] else f"{result['mib'] / base['mib']:.1f}"
        rows.append(
            [
                name,
                f"{sizes[name] / 1e6:.2f}",
                result["outcome"],
                f"{result['s']:.3f}",
                f"{result['s'] / base['s']:.1f}",
                memory,
                memory_ratio,
            ]
        )
    header = ["case", "file MB", "outcome", "s", "x ordinary", "peak MiB", "x ordinary"]
    print(markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
