"""Every command line of the README and the documentation runs, in the output format it shows.

Each ``ignite-ranking ...`` or ``python -m ignite_ranking ...`` line (``$ `` prompt or not; ``\\``
continuations joined; ``[optional]`` groups of a synopsis dropped; ``# comments`` stripped) of a
``console``, ``bash``, ``shell`` or ``sh`` block of README.md and docs/**/*.md is collected
automatically: a new command in the docs is tested without anyone listing it. Each runs in this
process through :func:`ignite_ranking.cli.main` (no child process: the whole set takes seconds):

- where the page's Python examples above it (``>>>``) write its files into ``folder``, on those
  files, and its stdout must be the lines the page shows (word by word: tabs and spaces may
  differ);
- otherwise its file arguments (placeholders such as ``QRELS RUN`` or ``qrels.txt bm25.run``) are
  mapped to the fixtures of tests/fixtures: trec_eval's qrels, or ndeval's subtopic qrels for
  diversity measures, and one run per run argument.

Every run must exit with status 0 (or the one its comment documents, ``# exit status 2``), print
no traceback, and print output of the shape of its format: trec_eval's table (the measures asked
for on the ``all`` lines, per query lines exactly with ``-q``), its JSON, or compare's table,
Markdown, LaTeX, JSON or CSV with the systems and measures asked for. Where the page shows output
on other files than the command's, the measure names on its ``all`` lines must be ours.
"""

from __future__ import annotations

import contextlib
import csv
import doctest
import io
import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from ignite_ranking.cli import _QUERY_ONLY, _parser, main
from ignite_ranking.trec import parse_measures
from ignite_ranking.trec.diversity import is_diversity_measure, parse_diversity_measures

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BLOCK = re.compile(r"^```(console|bash|shell|sh)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
COMMAND = re.compile(r"^(?:\$ )?(?:ignite-ranking|python -m ignite_ranking)(?:\s|$)")
FENCE = re.compile(r"^\s*(```|~~~|:::)")
STATUS = re.compile(r"#.*\bexit (?:status )?(\d+)")


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # of the command, 1-based
    text_before: str  # the page above the block, for its >>> examples
    command: str
    output: tuple[str, ...]  # the lines the page shows after it (console blocks only)

    @property
    def argv(self) -> list[str]:
        """The arguments after the program's name, without a synopsis' ``[optional]`` groups."""
        tokens = shlex.split(self.command, comments=True)
        tokens = tokens[3:] if tokens[0] == "python" else tokens[1:]
        kept, depth = [], 0
        for token in tokens:
            depth += token.count("[") if token.startswith("[") or depth else 0
            if not depth:
                kept.append(token)
            depth -= token.count("]") if depth else 0
        return kept

    @property
    def status(self) -> int:
        found = STATUS.search(self.command)
        return int(found.group(1)) if found else 0


def _examples() -> list[Example]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in BLOCK.finditer(text):
            first = text[: block.start(2)].count("\n") + 1
            lines = block.group(2).splitlines()
            i = 0
            while i < len(lines):
                if not COMMAND.match(lines[i]):
                    i += 1
                    continue
                line, command = first + i, lines[i].removeprefix("$ ")
                i += 1
                while command.rstrip().endswith("\\") and i < len(lines):
                    command = command.rstrip()[:-1] + " " + lines[i].strip()
                    i += 1
                output = []
                while block.group(1) == "console" and i < len(lines) and not lines[i].startswith("$ "):
                    output.append(lines[i])
                    i += 1
                found.append(Example(page, line, text[: block.start()], command, tuple(output)))
    return found


EXAMPLES = _examples()


def test_the_pages_commands_are_collected():
    pages = {e.page.name for e in EXAMPLES}
    assert {"compare.md", "trec.md", "diversity.md"} <= pages
    # a prompt line outside the blocks read above (a ```text block...) would escape the test
    collected = {(e.page, e.line) for e in EXAMPLES}
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(r"^\s*\$ (ignite-ranking|python -m ignite_ranking)\b", line):
                assert (page, number) in collected, f"{page.name}:{number} is not in a console/bash block"


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    """trec_eval's and ndeval's fixture qrels, and four runs of each with distinct tags."""
    folder = tmp_path_factory.mktemp("doc_fixtures")
    shutil.copy(FIXTURES / "trec_eval" / "graded.qrels", folder / "trec.qrels")
    shutil.copy(FIXTURES / "ndeval" / "diversity.qrels", folder / "diversity.qrels")
    for kind, source in (
        ("trec", FIXTURES / "trec_eval" / "ties.run"),
        ("diversity", FIXTURES / "ndeval" / "ties.run"),
    ):
        rows = [row for row in map(str.split, source.read_text().splitlines()) if row and row[0][0] != "#"]
        for k in range(4):  # other scores by run, from the rank column: other rankings
            shift = [(int(r) * (k + 2)) % 7 if k else 0 for _, _, _, r, *_ in rows]
            lines = [
                f"{q} Q0 {d} {r} {float(s) + t} sys{k}"
                for (q, _, d, r, s, *_), t in zip(rows, shift, strict=True)
            ]
            (folder / f"{kind}{k}.run").write_text("\n".join(lines) + "\n")
    return folder


def _setup(text_before: str) -> dict:
    """Runs the page's ``>>>`` examples above the command; returns their names."""
    blanked = "\n".join("" if FENCE.match(line) else line for line in text_before.splitlines())
    names: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for example in doctest.DocTestParser().get_examples(blanked):
            exec(compile(example.source, "<docs>", "single"), names)
    return names


def _run(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` in this process: its exit status, stdout and stderr. An exception other
    than argparse's exit propagates, and fails the test with its traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    return status, out.getvalue(), err.getvalue()


def _metrics(args) -> list:
    """The parsed measures of the command, as evaluate parses them."""
    metrics = args.metrics or ["official"]
    parse = parse_diversity_measures if any(map(is_diversity_measure, metrics)) else parse_measures
    return parse(metrics)


def _with_fixtures(args, argv: list[str], fixtures: Path) -> list[str]:
    """``argv`` with its file placeholders replaced by fixture paths."""
    kind = "diversity" if any(map(is_diversity_measure, args.metrics or [])) else "trec"
    runs = [args.run] if args.command == "evaluate" else args.runs
    mapping = {args.qrels: fixtures / f"{kind}.qrels"}
    mapping.update({run: fixtures / f"{kind}{k}.run" for k, run in enumerate(runs)})
    return [str(mapping.get(token, token)) for token in argv]


def _check_evaluate(args, out: str) -> None:
    measures = _metrics(args)
    if args.json:
        payload = json.loads(out)
        names = [m.name for m in measures if not m.is_text]
        names += ["runid"] * any(m.family == "runid" for m in measures)
        assert list(payload["metrics"]) == names
        assert ("per_query" in payload) == args.per_query
        return
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows and all(len(row) == 3 for row in rows), out
    summary = [row[0].strip() for row in rows if row[1] == "all"]
    assert summary == [m.name for m in measures if m.family not in _QUERY_ONLY]
    assert any(row[1] != "all" for row in rows) == args.per_query


def _check_compare(args, out: str) -> None:
    names = [m.name for m in _metrics(args) if not m.is_text]
    kind = args.format
    if kind == "json":
        payload = json.loads(out)
        assert payload["metrics"] == names and len(payload["systems"]) == len(args.runs)
    elif kind == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        pairs = len(args.runs) - 1 if args.baseline else len(args.runs) * (len(args.runs) - 1) // 2
        assert [r["metric"] for r in rows] == [n for n in names for _ in range(pairs)]
    elif kind == "latex":
        assert out.startswith("\\begin{table}") and out.rstrip().endswith("\\end{table}")
        assert sum(line.startswith("(") for line in out.splitlines()) == len(args.runs)
    else:
        sections = out.rstrip("\n").split("\n\n")
        assert len(sections) == 4, out
        header = sections[1].splitlines()[0]
        cells = [c.strip() for c in header.strip("|").split("|")] if kind == "markdown" else header.split()
        assert len(cells) == 1 + len(names) and cells[0] == "system"
        assert len(sections[1].splitlines()) == 2 + len(args.runs)


@pytest.mark.parametrize(
    "example", EXAMPLES, ids=[f"{e.page.name}:{e.line}:{e.command[:60]}" for e in EXAMPLES]
)
def test_command_line_example(example, fixtures, monkeypatch):
    argv = example.argv
    args = _parser().parse_args(argv)
    names = _setup(example.text_before)
    files = [args.qrels, *([args.run] if args.command == "evaluate" else args.runs)]
    folder = names.get("folder")
    own_files = folder is not None and all((Path(folder) / f).is_file() for f in files)
    if own_files:
        monkeypatch.chdir(folder)
    else:
        monkeypatch.chdir(fixtures)
        argv = _with_fixtures(args, argv, fixtures)
    status, out, err = _run(argv)
    assert "Traceback" not in err, err
    assert status == example.status, err
    if status:
        return
    (_check_evaluate if args.command == "evaluate" else _check_compare)(args, out)
    if example.output and own_files:
        assert _words(out.splitlines()) == _words(list(example.output)), out
    elif example.output and args.command == "evaluate" and not args.json:
        shown = [row[0] for row in _words(list(example.output)) if row[1:2] == ["all"]]
        assert shown == [row[0] for row in _words(out.splitlines()) if row[1:2] == ["all"]]


def _words(lines: list[str]) -> list[list[str]]:
    rows = [line.split() for line in lines]
    while rows and not rows[-1]:
        rows.pop()
    return rows
