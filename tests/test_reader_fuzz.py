"""Differential fuzz tests of the TREC readers against a reference reader written from the rules
that docs/trec.md ("The files") states, line by line in plain Python:

- lines end with ``\\n`` or ``\\r\\n`` (a last line may lack it); a carriage return anywhere
  else refuses the file at its line;
- columns are separated by runs of bytes 0x00-0x20; blank lines and lines whose first token
  starts with ``#`` are skipped;
- a run line has at least 6 columns (what follows the sixth is ignored), a qrels line exactly 4;
- a score is ``float(token)`` (the token decoded as UTF-8, ``surrogateescape``), NaN and
  ``_`` refused; a grade is a number that is exactly an integer of magnitude below 2**53;
- ids are the tokens' bytes, query and subtopic ids numbered in order of first appearance; the
  run tag is the last line's sixth column;
- the first malformed line is refused with ``file:line``; a file without a line to read, and a
  corrupt or truncated gzip file, with its name.

The BEIR readers (``retrieval.read_beir_qrels``, ``retrieval.iter_beir_texts``) meet their own
reference at the end: malformed lines, bytes that are not UTF-8, JSON nested past the parser's
depth, all refused with ``file:line``.

Files come plain, gzip, as two gzip members, or truncated, and are read with blocks from 1 byte
to 2 MiB (the readers' ``_BLOCK``), so that lines, CRLF pairs and comments straddle blocks.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import re
import string
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ignite_ranking.retrieval import iter_beir_texts, read_beir_qrels
from ignite_ranking.trec import read_diversity_qrels, read_qrels, read_run
from ignite_ranking.trec import tokens as trec_tokens

SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
BLOCKS = st.sampled_from([1, 2, 3, 7, 16, 61, 256, 4096, 2 << 20])
_SEPARATOR_RUN = re.compile(rb"[\x00-\x20]+")
_MAX_GRADE = 2**53


# ---------------------------------------------------------------- the reference reader


class Refused(Exception):
    """The reference's refusal: ``line`` (None: the whole file) and a word the message holds."""

    def __init__(self, line: int | None, what: str) -> None:
        super().__init__(line, what)
        self.line, self.what = line, what


def _grade(text: str) -> int:
    try:
        exact = Fraction(text)
    except (ValueError, ZeroDivisionError, OverflowError):  # inf, or what Fraction does not read
        raise Refused(None, "an integer") from None
    if exact.denominator != 1 or abs(exact) >= _MAX_GRADE:
        raise Refused(None, "an integer")
    return int(exact)


def reference(data: bytes, kind: str) -> dict:
    """What the readers must give for ``data`` (``kind``: run, qrels or diversity), or Refused."""
    if data.startswith(b"\x1f\x8b"):
        raise Refused(None, "cannot read")
    if data and not data.endswith(b"\n"):
        data += b"\n"
    ncols, value_col = (6, 4) if kind == "run" else (4, 3)
    rows = []
    for number, line in enumerate(data.split(b"\n")[:-1], 1):
        if b"\r" in (line[:-1] if line.endswith(b"\r") else line):
            raise Refused(number, "carriage return")
        tokens = [t for t in _SEPARATOR_RUN.split(line) if t]
        if not tokens or tokens[0].startswith(b"#"):
            continue
        if len(tokens) < ncols or (kind != "run" and len(tokens) != ncols):
            raise Refused(number, "columns")
        text = tokens[value_col].decode("utf-8", "surrogateescape")
        try:
            value = float(text) if "_" not in text else math.nan
        except ValueError:
            value = math.nan
        if math.isnan(value):
            raise Refused(number, "must be a number")
        if kind != "run":
            try:
                value = _grade(text)
            except Refused as refused:
                raise Refused(number, refused.what) from None
        rows.append((tokens[0], tokens[1], tokens[2], value, tokens[5] if kind == "run" else None))
    if not rows:
        raise Refused(None, "the file is empty")
    qids = list(dict.fromkeys(r[0] for r in rows))
    seconds = list(dict.fromkeys(r[1] for r in rows))
    return {
        "qids": qids,
        "qid": [qids.index(r[0]) for r in rows],
        "seconds": seconds,
        "second": [seconds.index(r[1]) for r in rows],
        "docno": [r[2] for r in rows],
        "value": [r[3] for r in rows],
        "tag": rows[-1][4],
    }


READERS = {"run": read_run, "qrels": read_qrels, "diversity": read_diversity_qrels}


def check(path, data: bytes, kind: str, block: int, truncated: bool = False) -> None:
    """Reads ``path`` (holding ``data``, maybe compressed) with blocks of ``block`` bytes and
    compares it with the reference."""
    name = str(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trec_tokens, "_BLOCK", block)
        try:
            got = READERS[kind](path)
        except ValueError as err:
            got = err
    if truncated:  # the damage may be found first, or a malformed line before it
        event("truncated gzip")
        assert isinstance(got, ValueError) and str(got).startswith(name + ":"), got
        return
    try:
        want = reference(data, kind)
    except Refused as refused:
        event(f"refused: {refused.what}")  # --hypothesis-show-statistics
        assert isinstance(got, ValueError), f"accepted, the reference refuses: {refused.line}, {refused.what}"
        message = str(got)
        where = f"{name}:{refused.line}: " if refused.line else f"{name}: "
        assert message.startswith(where) and refused.what in message, (refused.line, refused.what, message)
        return
    event("accepted")
    assert not isinstance(got, ValueError), f"refused: {got}"
    assert [q.encode("utf-8", "surrogateescape") for q in got.qids] == want["qids"]
    assert got.qid.tolist() == want["qid"]
    assert got.docno.tolist() == want["docno"]
    if kind == "run":
        scores = np.array(want["value"], dtype=np.float64)
        assert got.score.view(np.uint64).tolist() == scores.view(np.uint64).tolist()  # bit for bit
        assert got.tag.encode("utf-8", "surrogateescape") == want["tag"]
    else:
        assert got.rel.dtype == np.int64 and got.rel.tolist() == want["value"]
    if kind == "diversity":
        assert [s.encode("utf-8", "surrogateescape") for s in got.subtopics] == want["seconds"]
        assert got.subtopic.tolist() == want["second"]


# ---------------------------------------------------------------- the files

_DIGITS = string.digits


def _digits(low: int, high: int):
    return st.text(_DIGITS, min_size=low, max_size=high)


_SIGN = st.sampled_from(["", "", "-", "+"])
_DECIMAL = st.one_of(
    st.builds(lambda s, i: s + i, _SIGN, _digits(1, 25)),  # integers, 17-25 digits among them
    st.builds(lambda s, i, f: f"{s}{i}.{f}", _SIGN, _digits(1, 20), _digits(0, 25)),
    st.builds(lambda s, f: f"{s}.{f}", _SIGN, _digits(1, 25)),
)
_EXPONENT = st.one_of(
    st.integers(0, 400).map(str),
    st.sampled_from(["22", "23", "0022", "307", "308", "309", "323", "324", "325", "0"]),
)
_WITH_EXPONENT = st.builds(
    lambda m, e, s, x: f"{m}{e}{s}{x}",
    _DECIMAL,
    st.sampled_from("eE"),
    st.sampled_from(["", "+", "-"]),
    _EXPONENT,
)
_NEAR_LIMITS = st.sampled_from(
    [
        "1.7976931348623157e308", "1.7976931348623159e308", "-1.7976931348623158e308", "4.9e-324",
        "2.4703282292062327e-324", "2.4703282292062328e-324", "1e-400", "0e999", "-0", "-0.0",
        "9007199254740991", "9007199254740992", "9007199254740993", "-9007199254740993",
        "9.007199254740991e15", "123456789012345678", "1e20", "1e22", "1e23", "inf", "-Infinity",
        "2.0", "2e0", "1.00000000000000000001",
    ]
)  # fmt: skip
_NOT_NUMBERS = st.sampled_from(
    [
        "nan",
        "NaN",
        "-nan",
        "1e",
        "e5",
        "--1",
        ".",
        "1.2.3",
        "0x10",
        "1_0",
        "+",
        "-",
        "1e+",
        "1\x7f",
        "x7",
        "1\xff",
    ]
)
VALID_NUMBERS = st.one_of(
    _DECIMAL, _WITH_EXPONENT, _NEAR_LIMITS, st.floats(allow_nan=False).map(repr), st.integers(-5, 5).map(str)
)
NUMBERS = st.one_of(VALID_NUMBERS, _NOT_NUMBERS)
VALID_GRADES = st.one_of(
    st.integers(-1, 4).map(str),
    st.integers(1 - _MAX_GRADE, _MAX_GRADE - 1).map(str),
    st.sampled_from(["2.0", "2e0", "-0", "+3", "1E2", "0.0e5", "90071992547409.91e2", "-9007199254740991"]),
)
GRADES = st.one_of(VALID_GRADES, NUMBERS)  # NUMBERS: fractions, 1e20, inf, 2**53 + 1...


@st.composite
def _mostly(draw, valid, other, one_in: int):
    """A token of ``valid``, or one time in ``one_in`` of ``other``."""
    return draw(other if draw(st.integers(0, one_in - 1)) == 0 else valid)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


_IDS = st.one_of(
    st.sampled_from([b"q1", b"q2", b"10", b"q\xff", b"q\xfe", "é".encode(), b"#x", b"d\x7f"]),
    st.text(string.ascii_letters + string.digits + "-_.:/#", min_size=1, max_size=10).map(str.encode),
    st.binary(min_size=1, max_size=6).map(lambda b: bytes(c for c in b if c > 32) or b"x"),  # non-UTF-8
    st.integers(60, 2000).map(lambda n: b"L" * n),  # long tokens
)
_SEPARATORS = st.sampled_from([b" ", b" ", b"\t", b"  ", b" \t", b"\x0b", b"\x0c", b"\x00", b"\x01", b"\x1f"])


@st.composite
def files(draw, kind: str) -> bytes:
    """A file of a few lines of ``kind``: most well formed, some (in some files) not."""
    clean = draw(st.booleans())
    ends = draw(st.sampled_from(["lf", "crlf", "mixed", "cr"] if not clean else ["lf", "crlf", "mixed"]))
    numbers = VALID_NUMBERS if clean else _mostly(VALID_NUMBERS, NUMBERS, 8)
    grades = VALID_GRADES if clean else _mostly(VALID_GRADES, GRADES, 8)
    out = []
    for _ in range(draw(st.integers(0, 30))):
        shape = draw(st.integers(0, 99))
        if shape < 6:  # blank
            line = b"".join(draw(st.lists(_SEPARATORS, max_size=2)))
        elif shape < 12:  # comment, maybe indented
            line = b"".join(draw(st.lists(_SEPARATORS, max_size=2))) + b"#" + draw(st.binary(max_size=12))
            line = line.replace(b"\n", b" ").replace(b"\r", b" ")
        else:
            value = draw(numbers if kind == "run" else grades)
            if kind == "run":
                tokens = [
                    draw(_IDS),
                    b"Q0",
                    draw(_IDS),
                    draw(_digits(1, 3)).encode(),
                    _encode(value),
                    draw(_IDS),
                ]
                tokens += draw(st.lists(_IDS, max_size=3)) if shape < 30 else []
            else:
                tokens = [
                    draw(_IDS),
                    draw(st.sampled_from([b"0", b"1", b"2", b"\xff"])),
                    draw(_IDS),
                    _encode(value),
                ]
            if not clean and shape >= 94:  # a column too few or too many
                tokens = tokens[:-1] if shape % 2 else [*tokens, b"x"]
            line = draw(st.sampled_from([b"", b" ", b"\t"]))
            for i, token in enumerate(tokens):
                line += (draw(_SEPARATORS) if i else b"") + token
            line += draw(st.sampled_from([b"", b"", b" ", b"\t\x00"]))
        if ends == "mixed":
            end = draw(st.sampled_from([b"\n", b"\r\n"]))
        else:
            end = {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}[ends]
        out.append(line + end)
    data = b"".join(out)
    if draw(st.booleans()) and data.endswith(b"\n"):  # no final newline
        data = data[:-2] if data.endswith(b"\r\n") else data[:-1]
    return data


@st.composite
def containers(draw, data: bytes) -> tuple[bytes, bool, bool]:
    """``(bytes on disk, gzip, truncated)`` for ``data``."""
    how = draw(st.sampled_from(["plain", "plain", "gzip", "members", "truncated"]))
    if how == "plain":
        return data, False, False
    if how == "gzip":
        return gzip.compress(data), True, False
    if how == "members":  # two gzip members, split anywhere: read as one stream
        cut = draw(st.integers(0, len(data)))
        return gzip.compress(data[:cut]) + gzip.compress(data[cut:]), True, False
    blob = gzip.compress(data)
    return blob[: draw(st.integers(2, len(blob) - 1))], True, True


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.parametrize("kind", ["run", "qrels", "diversity"])
@SETTINGS
@given(data=st.data(), block=BLOCKS)
def test_readers_agree_with_the_reference(folder, kind, data, block):
    content = data.draw(files(kind))
    blob, compressed, truncated = data.draw(containers(content))
    if not compressed and blob.startswith(b"\x1f\x8b"):
        blob = content = b"\n" + content
    path = folder / f"{kind}.gz" if compressed else folder / kind
    path.write_bytes(blob)
    check(path, content, kind, block, truncated)


@SETTINGS
@given(tokens=st.lists(_mostly(VALID_NUMBERS, NUMBERS, 150), min_size=1, max_size=300), block=BLOCKS)
def test_scores_equal_float_bit_for_bit(folder, tokens, block):
    # Many number tokens a file: the vectorized parser's paths and the float() fallback side by side.
    content = b"".join(b"q Q0 d%d 1 %s t\n" % (i, _encode(token)) for i, token in enumerate(tokens))
    path = folder / "scores"
    path.write_bytes(content)
    check(path, content, "run", block)


@SETTINGS
@given(tokens=st.lists(_mostly(VALID_GRADES, GRADES, 150), min_size=1, max_size=300), block=BLOCKS)
def test_grades_are_exact_integers(folder, tokens, block):
    content = b"".join(b"q 0 d%d %s\n" % (i, _encode(token)) for i, token in enumerate(tokens))
    path = folder / "grades"
    path.write_bytes(content)
    check(path, content, "qrels", block)


# ---------------------------------------------------------------- BEIR folders

# The rules of retrieval.read_beir_qrels and retrieval.iter_beir_texts, line by line: UTF-8 lines
# split at "\n" (one "\r" before it dropped; another refused); blank lines skipped; a qrels line
# is "query-id<TAB>corpus-id<TAB>grade" as Python's csv reads a line (quoted fields unquoted, as
# BEIR reads them; ids not empty, the grade read by int(), as BEIR does; the header skipped on
# line 1, after a byte order mark if any; a later pair wins); a jsonl line
# is a JSON object whose "_id" is a non-empty str or an int and whose "title" and "text", where
# present, are str or null.

_BEIR_HEADER = b"query-id\tcorpus-id\tscore"


def _beir_lines(data: bytes):
    if data and not data.endswith(b"\n"):
        data += b"\n"
    for number, line in enumerate(data.split(b"\n")[:-1], 1):
        line = line.removesuffix(b"\r")
        if number == 1:
            line = line.removeprefix(b"\xef\xbb\xbf")
        if b"\r" in line:
            raise Refused(number, "carriage return")
        try:
            yield number, line.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(number, "UTF-8") from None


def beir_qrels_reference(data: bytes) -> dict:
    qrels: dict = {}
    for number, line in _beir_lines(data):
        if (number == 1 and line.encode() == _BEIR_HEADER) or not line.strip():
            continue
        fields = next(csv.reader([line], delimiter="\t"))  # BEIR's reader: quoted fields unquoted
        try:
            assert len(fields) == 3 and fields[0] and fields[1]
            qrels.setdefault(fields[0], {})[fields[1]] = int(fields[2])
        except (AssertionError, ValueError):
            raise Refused(number, "BEIR qrels line") from None
    return qrels


def beir_texts_reference(data: bytes) -> list:
    records = []
    for number, line in _beir_lines(data):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise Refused(number, "BEIR record") from None
        ok = isinstance(record, dict)
        key = record.get("_id") if ok else None
        ok = ok and ((type(key) is str and key != "") or type(key) is int)
        ok = ok and all(isinstance(record.get(f), (str, type(None))) for f in ("title", "text"))
        if not ok:
            raise Refused(number, "BEIR record")
        records.append((str(key), record.get("title") or "", record.get("text") or ""))
    return records


_ID_TEXT = st.text(st.sampled_from('q1d é#"\x00\x1c\u2028 '), max_size=4)
_ID = _mostly(st.text(st.sampled_from("qd0123"), min_size=1, max_size=3), _ID_TEXT, 10)
_ODD_GRADES = ["-2", " 3", "+1", "1.0", "x", "", "1_0", "\u0661", "9" * 30]
_GRADE = _mostly(st.sampled_from(["0", "1", "2"]), st.sampled_from(_ODD_GRADES), 10)
_RARE = 40  # one line in about this many is malformed


@st.composite
def beir_qrels_files(draw) -> bytes:
    lines = [_BEIR_HEADER] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["line"] * _RARE + ["blank", "bytes", "columns"]))
        if kind == "line":
            fields = [draw(_ID), draw(_ID), draw(_GRADE)]
            lines.append("\t".join(fields).encode())
        elif kind == "blank":
            lines.append(draw(st.sampled_from([b"", b"  ", b"\t"])))
        elif kind == "bytes":
            lines.append(draw(st.binary(max_size=10)).replace(b"\n", b""))
        else:
            lines.append("\t".join(draw(st.lists(_ID_TEXT, max_size=5))).encode())
    ends = draw(st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=len(lines), max_size=len(lines)))
    data = b"".join(line + end for line, end in zip(lines, ends, strict=True))
    data = b"\xef\xbb\xbf" + data if draw(st.integers(0, 7)) == 0 else data  # a byte order mark
    return data.removesuffix(b"\n") if draw(st.booleans()) else data


_JSON_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**20), st.floats(), _ID_TEXT,
                        st.lists(st.integers(), max_size=2))  # fmt: skip


@st.composite
def beir_jsonl_files(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["record"] * _RARE + ["blank", "bytes", "deep", "json", "odd"]))
        if kind in ("record", "odd"):
            keys = ["_id", *draw(st.lists(st.sampled_from(["title", "text", "other"]), unique=True))]
            record = {key: draw(_ID if kind == "record" else _JSON_VALUE) for key in keys}
            lines.append(json.dumps(record, ensure_ascii=draw(st.booleans())).encode())
        elif kind == "blank":
            lines.append(b" ")
        elif kind == "bytes":
            lines.append(draw(st.binary(max_size=10)).replace(b"\n", b""))
        elif kind == "deep":
            lines.append(b"[" * 100_000)
        else:
            lines.append(json.dumps(draw(_JSON_VALUE)).encode())
    return b"".join(line + draw(st.sampled_from([b"\n", b"\r\n"])) for line in lines)


def _beir_check(path, data: bytes, read, reference) -> None:
    path.write_bytes(data)
    try:
        got = read(path)
    except ValueError as err:
        got = err
    try:
        want = reference(data)
    except Refused as refused:
        event(f"refused: {refused.what}")
        assert isinstance(got, ValueError), f"accepted; the reference refuses {refused.line}: {refused.what}"
        assert str(got).startswith(f"{path}:{refused.line}: "), (refused.line, str(got))
        return
    event("accepted")
    assert got == want


@SETTINGS
@given(data=beir_qrels_files())
def test_beir_qrels_reader_agrees_with_the_reference(folder, data):
    _beir_check(folder / "qrels.tsv", data, read_beir_qrels, beir_qrels_reference)


@SETTINGS
@given(data=beir_jsonl_files())
def test_beir_jsonl_reader_agrees_with_the_reference(folder, data):
    _beir_check(folder / "corpus.jsonl", data, lambda path: list(iter_beir_texts(path)), beir_texts_reference)
