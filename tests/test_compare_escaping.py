"""The compare report cannot be broken by the names it prints (issue 32, item 13): Markdown cells
escape pipes, backslashes, markup, HTML and line breaks; the plain table shows control characters
as escapes; LaTeX escapes its specials and line breaks, and marks more than 26 systems apart."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ignite_ranking.cli import main
from ignite_ranking.compare import compare

pytest.importorskip("scipy.stats")

HOSTILE = [
    "a|b",
    "<script>alert(1)</script>",
    "back\\slash|",
    "two\n\nlines",
    "cr\r\nlf",
    "tab\tbell\x07",
    "*bold* _it_ `code` [link](x) ~~s~~ &amp;",
]
_ENTITIES = {"&amp;": "&", "&lt;": "<", "&gt;": ">"}


def _systems(names, n=12, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    return {
        name: {"m|<i>": np.clip(base + 0.05 * i + rng.normal(0, 0.01, n), 0, 1)}
        for i, name in enumerate(names)
    }


def _cells(line: str) -> list[str]:
    """A pipe-table row's cells, unescaped as CommonMark reads them (backslash escapes, the three
    entities, ``<br>`` as a line break)."""
    assert line.startswith("| ") and line.endswith(" |"), line
    cells, cell, chars = [], "", iter(line[2:-2])
    for ch in chars:
        if ch == "\\":
            cell += next(chars)
        elif ch == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += ch
    cells.append(cell)
    out = []
    for cell in cells:
        cell = cell.strip().replace("<br>", "\n")
        out.append(re.sub("&(amp|lt|gt);", lambda m: _ENTITIES[m.group(0)], cell))
    return out


def _normalized(name: str) -> str:
    return name.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "\\t").replace("\x07", "\\x07")


def test_markdown_cells_keep_their_columns_and_read_back_as_the_names():
    report = compare(_systems(HOSTILE), baseline=HOSTILE[1], seed=0, resamples=50)
    text = report.to_markdown()
    assert re.findall(r"<[^\s]+", text.replace("<br>", "")) == []  # no tag but our line breaks
    settings, means, pairs, _ = text.split("\n\n")
    assert "\n" not in settings and "against baseline &lt;script&gt;" in settings
    header, _, *rows = means.splitlines()
    assert _cells(header) == ["system", "m|<i>"]
    assert [_cells(row)[0] for row in rows] == [_normalized(n) for n in HOSTILE]
    header, _, *rows = pairs.splitlines()
    assert len(rows) == len(HOSTILE) - 1
    for row, other in zip(rows, [n for n in HOSTILE if n != HOSTILE[1]], strict=True):
        cells = _cells(row)
        assert len(cells) == len(_cells(header))
        assert cells[:3] == ["m|<i>", HOSTILE[1], _normalized(other)]


def test_plain_table_rows_stay_on_one_line():
    report = compare(_systems(HOSTILE), seed=0, resamples=50)
    settings, means, pairs, _ = report.to_table().split("\n\n")
    assert "\n" not in settings
    lines = means.splitlines()
    assert len(lines) == 2 + len(HOSTILE) and not any("\t" in line for line in lines)
    assert len(pairs.splitlines()) == 2 + len(HOSTILE) * (len(HOSTILE) - 1) // 2
    assert r"two\n\nlines" in means and r"tab\tbell\x07" in means and "\x07" not in report.to_table()


def test_latex_escapes_line_breaks_and_marks_more_than_26_systems_apart():
    names = [f"run{i}" for i in range(29)] + ["blank\n\nline <|>"]
    report = compare(_systems(names, n=30), baseline="run0", seed=0, resamples=50, correction="none")
    latex = report.to_latex()
    assert "\n\n" not in latex and "blank  line \\textless{}\\textbar{}\\textgreater{}" in latex
    rows = [line for line in latex.splitlines() if line.startswith("(")]
    markers = [row[1 : row.index(")")] for row in rows]
    assert markers[:3] == ["a", "b", "c"] and markers[26:] == ["aa", "ab", "ac", "ad"]
    assert len(set(markers)) == len(names)
    # every later run beats run0 (a); past 26 systems the marks are comma-separated
    marks = re.findall(r"\$\^\{([^}]*)\}\$", latex)
    assert marks and all(m == "a" or "," in m or m in markers for m in marks)
    few = compare(_systems(["x", "y", "z"], n=30), seed=0, resamples=50, correction="none").to_latex()
    assert "$^{ab}$" in few  # up to 26 systems: single letters side by side, as before


def test_command_line_with_hostile_tags_and_paths(tmp_path, capsys):
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"q{q} 0 d{d} {int(d < 2)}\n" for q in range(6) for d in range(4)))

    def runs(names, tags):
        paths = [tmp_path / name for name in names]
        for shift, (path, tag) in enumerate(zip(paths, tags, strict=True)):
            lines = [f"q{q} Q0 d{d} {d} {(d + shift + q) % 4} {tag}\n" for q in range(6) for d in range(4)]
            path.write_text("".join(lines))
        return ["compare", str(qrels), *map(str, paths), "-m", "P_2"]

    tags = ["a|b", "<script>x</script>"]  # distinct tags name the runs
    assert main([*runs(["r1", "r2"], tags), "--baseline", tags[1], "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "<script>" not in out and "against baseline &lt;script&gt;" in out
    assert [_cells(row)[0] for row in out.split("\n\n")[1].splitlines()[2:]] == tags
    paths = runs(["new\n\nline", "p|<b>"], ["t", "t"])  # equal tags: named by their paths
    for kind in ("markdown", "latex", "table"):
        assert main([*paths, "--format", kind]) == 0
        out = capsys.readouterr().out
        if kind == "latex":
            assert "\n\n" not in out.strip()
        else:  # the settings, the two tables and the note, each table row on one line
            sections = out.strip().split("\n\n")
            assert len(sections) == 4 and len(sections[1].splitlines()) == 4, out
            assert kind == "table" or "<b>" not in out
    assert r"new\n\nline" in out
