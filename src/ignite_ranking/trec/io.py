"""Streaming readers for TREC qrels and run files, plain or gzip.

Both readers take the file in blocks of a few MiB and parse each block with vectorized numpy
(no Python object per line): the block is split into whitespace-separated tokens, every line
must have the expected number of columns, and the columns we need are gathered into arrays.

- Query ids are interned: ``qid`` is an ``int32`` array of indices into ``qids`` (the distinct
  query ids in order of first appearance). Ids are decoded from UTF-8 with ``surrogateescape``:
  bytes that are not UTF-8 stay distinct (``q\\xff`` and ``q\\xfe`` are two queries) and
  ``qid.encode("utf-8", "surrogateescape")`` gives the file's bytes back.
- Document ids are kept as one fixed-width numpy bytes array (``dtype 'S<n>'``), the compact
  form that the evaluator needs for exact joins and for trec_eval's docno tie order.
- Numbers are parsed with an exact vectorized decimal parser (``[+-]digits[.digits][e[+-]digits]``,
  correctly rounded like ``strtod``); anything else (``inf``, very long mantissas) falls back to
  Python's ``float`` for that token only. A relevance must be an integer of magnitude below
  2**53 (``1e20``, ``inf``, ``2.5`` and ``9007199254740993`` are refused: each would be cast
  or rounded to another grade).

As in trec_eval 10: blank lines and comment lines (whose first non-blank character is ``#``)
are skipped, and a run line may have more than six columns (what follows the tag is ignored);
a qrels line has exactly four. A malformed line is refused with a ``ValueError`` that names the
file, the line number (from 1) and what was expected (the first malformed line of the file);
so is a file without any line to read, a carriage return that is not followed by a line feed
(old Mac line ends) and a gzip file that is corrupt or truncated. Columns are separated by
runs of bytes 0x00-0x20 (space, tab and the other control characters; DEL, 0x7f, is part of a
token, as in trec_eval, whose ``isspace`` does not take it). Lines end with ``\\n`` or ``\\r\\n``.

Memory and time stay bounded by the file's size: a line longer than 1 MiB (1,048,576 bytes
before its newline) or a document id longer than 4 KiB (4,096 bytes) is refused with
``file:line``, and query ids, subtopics and numbers longer than 64 bytes are read one by one,
apart from the block's token matrix.

Example:
    >>> import tempfile, os
    >>> from ignite_ranking.trec.io import read_qrels, read_run
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "qrels"), "w") as f:
    ...     _ = f.write("q1 0 d1 1\\nq1 0 d2 0\\n")
    >>> qrels = read_qrels(os.path.join(d, "qrels"))
    >>> qrels.qids, qrels.docno.tolist(), qrels.rel.tolist()
    (['q1'], [b'd1', b'd2'], [1, 0])
"""

from __future__ import annotations

import gzip
import math
import os
import re
import zlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np

__all__ = [
    "DiversityQrels",
    "DuplicateEntryError",
    "Qrels",
    "Run",
    "locate_entries",
    "open_trec_file",
    "read_diversity_qrels",
    "read_qrels",
    "read_run",
]

_BLOCK = 2 << 20  # small enough for the per-block temporaries to stay in cache: ~25% less CPU than 8 MiB
_GZIP_MAGIC = b"\x1f\x8b"
_ID_ERRORS = "surrogateescape"  # ids that are not UTF-8 decode to str that encode back to their bytes
_MAX_GRADE = 2**53  # grades are integers of smaller magnitude: exact in float64 and in int64
_PAD = 64  # readable bytes after each block, see _gather
_MAX_LINE = 1 << 20  # a longer line is refused: a file without newlines is not read whole
_MAX_DOCNO = 4096  # a longer document id is refused: the docno column is rows x its longest id
_WIDE = 64  # query ids and numbers longer than this are taken apart from the token matrix
_POW10 = 10.0 ** np.arange(23)
# _BYTE_MASKS[i] keeps the first i bytes (in memory order) of a little-endian uint64.
_BYTE_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [2**64 - 1], dtype="<u8")


@dataclass
class Qrels:
    """Relevance judgements, one entry per ``qid iter docno rel`` line.

    Attributes:
        qids: the distinct query ids, in order of first appearance.
        qid: ``int32`` index into ``qids`` of each judgement.
        docno: the document id of each judgement (numpy bytes array).
        rel: ``int64`` relevance value of each judgement.
        path: the file it was read from (None when built in memory), for messages.
        ids: the document ids as the ``str`` objects a dict of dicts held, one per judgement,
            in a numpy object array (keyword only; None unless every id was a ``str``): a
            dict-of-dicts run is looked up with them as they are
            (:mod:`~ignite_ranking.trec.run_dicts`). The provider's ``as_qrels`` then gives a
            :class:`~ignite_ranking.trec.columns.DictQrels`, which builds ``docno`` from them
            only when it is read.
    """

    qids: list[str]
    qid: np.ndarray
    docno: np.ndarray
    rel: np.ndarray
    path: str | None = None
    ids: np.ndarray | None = field(default=None, kw_only=True, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.qid)


@dataclass
class DiversityQrels(Qrels):
    """Subtopic judgements, one entry per ``qid subtopic docno rel`` line (TREC Web track diversity
    qrels, as ``ndeval`` reads them).

    Attributes:
        subtopics: the distinct subtopic ids (the second column), in order of first appearance.
        subtopic: ``int32`` index into ``subtopics`` of each judgement.
        (and those of :class:`Qrels`)
    """

    subtopics: list[str] = field(default_factory=list)
    subtopic: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))


@dataclass
class Run:
    """A ranked run, one entry per ``qid Q0 docno rank score tag`` line.

    The rank column is read but not kept: like trec_eval, evaluation orders by score.

    Attributes:
        qids: the distinct query ids, in order of first appearance.
        qid: ``int32`` index into ``qids`` of each entry.
        docno: the document id of each entry (numpy bytes array).
        score: ``float64`` score of each entry.
        tag: the run tag (sixth column) of the last line, as trec_eval's ``runid`` takes it.
        path: the file it was read from (None when built in memory), for messages.
    """

    qids: list[str]
    qid: np.ndarray
    docno: np.ndarray
    score: np.ndarray
    tag: str = ""
    path: str | None = None

    def __len__(self) -> int:
        return len(self.qid)


class DuplicateEntryError(ValueError):
    """A document listed twice for one query of a run, or judged twice for one query of the qrels.

    The evaluation finds it on the parsed arrays, where line numbers are gone;
    :meth:`located` looks the two lines up in the file (only then: an error path).

    Attributes:
        kind: ``"run"`` or ``"qrels"``.
        qid, docno: the query id and the repeated document id.
    """

    def __init__(self, kind: str, qid: str, docno: bytes) -> None:
        self.kind, self.qid, self.docno = kind, qid, docno
        verb = "appears twice" if kind == "run" else "is judged twice"
        self.what = f"document {docno.decode(errors=_ID_ERRORS)!r} {verb} for query {qid!r}"
        super().__init__(f"{kind}: {self.what}")

    def located(self, path: str | os.PathLike | None) -> ValueError:
        """The error as ``path:line: ...`` with the 1-based line of the second occurrence (and
        the first), or itself when there is no file or the lines are not found."""
        if path is None or not os.path.isfile(path):  # a pipe cannot be read again
            return self
        try:
            lines = locate_entries(path, self.qid, self.docno)
        except (OSError, EOFError, zlib.error):
            return self
        if len(lines) < 2:
            return self
        return ValueError(f"{os.fspath(path)}:{lines[1]}: {self.what} (first at line {lines[0]})")


_SEPARATORS = re.compile(rb"[\x00-\x20]+")


def locate_entries(path: str | os.PathLike, qid: str, docno: bytes, limit: int = 2) -> list[int]:
    """1-based numbers of the first ``limit`` lines of a run or qrels file whose query id (first
    column) is ``qid`` and document id (third column) is ``docno``; comment lines are skipped.

    Searches the file's blocks for ``docno`` and splits only the lines where it occurs.
    """
    wanted_qid = qid.encode("utf-8", _ID_ERRORS)
    pattern = re.compile(re.escape(docno))
    found: list[int] = []
    line = 1
    rest = b""
    stream, raw = open_trec_file(path)
    with raw, stream:
        while len(found) < limit:
            chunk = stream.read(_BLOCK)
            data = rest + chunk
            if not data:
                break
            cut = data.rfind(b"\n") + 1 if chunk else len(data)
            block, rest = data[:cut], data[cut:]
            last_start = -1
            for match in pattern.finditer(block):
                start = block.rfind(b"\n", 0, match.start()) + 1
                if start == last_start:  # one line, several matches
                    continue
                last_start = start
                end = block.find(b"\n", match.end())
                tokens = [t for t in _SEPARATORS.split(block[start : end if end >= 0 else len(block)]) if t]
                if len(tokens) >= 3 and tokens[0] == wanted_qid and tokens[2] == docno:
                    found.append(line + block.count(b"\n", 0, start))
                    if len(found) == limit:
                        break
            line += block.count(b"\n")
    return found


def open_trec_file(path: str | os.PathLike):
    """Opens ``path`` for binary reading, decompressing gzip (by magic bytes or a ``.gz`` name).

    Returns:
        ``(stream, raw)``: the (possibly decompressing) stream and the raw file, whose
        ``tell()`` gives progress in bytes of the file on disk.
    """
    raw = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    magic = raw.peek(2)[:2]  # not read: pipes (/dev/stdin) cannot seek back
    if magic == _GZIP_MAGIC or os.fspath(path).endswith(".gz"):
        return gzip.GzipFile(fileobj=raw, mode="rb"), raw
    return raw, raw


def _blocks(path, progress: bool) -> Iterator[tuple[np.ndarray, int, int]]:
    """Yields ``(padded, size, first_line_number)``: a block of whole lines, ``padded[:size]``.

    The block ends with ``\\n`` and is followed by at least ``_PAD`` readable bytes (of any value)
    for :func:`_gather`. The file is read straight into each block's own buffer: no other copy but
    that of the unfinished last line, at most ``_MAX_LINE`` bytes (a longer line is refused).
    """
    stream, raw = open_trec_file(path)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=os.path.getsize(path) if raw.seekable() else None,
            unit="B",
            unit_scale=True,
            desc=f"reading {os.path.basename(os.fspath(path))}",
            leave=False,
        )
    line = 1
    rest = b""  # the unfinished last line of the previous read
    try:
        while True:
            buffer = np.empty(len(rest) + _BLOCK + _PAD, dtype=np.uint8)
            buffer[: len(rest)] = np.frombuffer(rest, dtype=np.uint8)
            try:
                got = stream.readinto(memoryview(buffer)[len(rest) : len(rest) + _BLOCK])
            except (OSError, EOFError, zlib.error) as err:  # corrupt or truncated gzip too
                read = f" (read up to line {line - 1})" if line > 1 else ""
                raise ValueError(f"{os.fspath(path)}: cannot read the file{read}: {err}") from err
            if bar is not None:  # bytes of the file on disk; of the stream from a pipe
                bar.update(raw.tell() - bar.n if raw.seekable() else got)
            if not got:
                break
            filled = len(rest) + got
            _refuse_long_lines(buffer, filled, os.fspath(path), line)
            cut = _after_last_newline(buffer, filled)
            rest = buffer[cut:filled].tobytes()
            if cut:
                yield buffer, cut, line
                line += int(np.count_nonzero(buffer[:cut] == 10))
        if rest:
            yield np.frombuffer(rest + b"\n" + bytes(_PAD), dtype=np.uint8), len(rest) + 1, line
    finally:
        if bar is not None:
            bar.close()
        stream.close()
        raw.close()


def _refuse_long_lines(buffer: np.ndarray, end: int, name: str, first_line: int) -> None:
    """Raises ValueError if a line of ``buffer[:end]`` (which starts with a line) is longer than
    ``_MAX_LINE``, its newline excluded; the last line counts even if unfinished.

    Such a line holds a multiple of ``_MAX_LINE`` (every run of ``_MAX_LINE + 1`` offsets does):
    only the lines around those few offsets are measured.
    """
    for offset in range(_MAX_LINE, end, _MAX_LINE):
        start = _newline_near(buffer, offset, 0, backward=True) + 1
        stop = _newline_near(buffer, offset, end, backward=False)
        if (end if stop < 0 else stop) - start > _MAX_LINE:
            number = first_line + int(np.count_nonzero(buffer[:start] == 10))
            raise ValueError(
                f"{name}:{number}: a line longer than {_MAX_LINE} bytes is refused: "
                f"{buffer[start : start + 40].tobytes().decode('utf-8', 'replace')!r}..."
            )


def _newline_near(buffer: np.ndarray, offset: int, limit: int, backward: bool) -> int:
    """The offset of the last ``\\n`` before ``offset`` (not before ``limit``) or of the first at
    or after it (before ``limit``), -1 if none; searched 4 KiB at a time from ``offset``."""
    step = 4096
    while (offset > limit) if backward else (offset < limit):
        if backward:
            low = max(limit, offset - step)
            found = buffer[low:offset].tobytes().rfind(b"\n")
            if found >= 0:
                return low + found
            offset = low
        else:
            high = min(limit, offset + step)
            found = buffer[offset:high].tobytes().find(b"\n")
            if found >= 0:
                return offset + found
            offset = high
        step *= 2
    return -1


def _after_last_newline(buffer: np.ndarray, end: int) -> int:
    """The offset just after the last ``\\n`` of ``buffer[:end]``, 0 if there is none."""
    # Lines are short: the last newline is almost always in the last few KiB.
    start = max(0, end - 65536)
    found = buffer[start:end].tobytes().rfind(b"\n")
    if found < 0 and start:
        start, found = 0, buffer[:end].tobytes().rfind(b"\n")
    return start + found + 1 if found >= 0 else 0


def _line_text(buf: np.ndarray, index: int, limit: int = 200) -> str:
    """Line ``index`` of ``buf`` for a message (its first ``limit`` characters)."""
    text = buf.tobytes().split(b"\n")[index].decode("utf-8", _ID_ERRORS).rstrip("\r")
    return text if len(text) <= limit else text[:limit] + "..."


class _LineError(ValueError):
    """A malformed line of a block, ``index`` its 0-based line there (see :func:`_parse_block`)."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


def _refuse_lone_cr(buf: np.ndarray, name: str, first_line: int) -> None:
    """Refuses a carriage return that is not followed by a line feed (old Mac line ends, which
    would otherwise read as one long line)."""
    cr = np.flatnonzero(buf == 13)  # the block ends with \n: cr + 1 is in it
    lone = cr[buf[cr + 1] != 10]
    if lone.size:
        index = int(np.count_nonzero(buf[: lone[0]] == 10))
        raise _LineError(
            index,
            f"{name}:{first_line + index}: a carriage return (\\r) not followed by a line feed; "
            f"lines must end with \\n or \\r\\n (convert old Mac line ends: tr '\\r' '\\n'): "
            f"{_line_text(buf, index)!r}",
        )


def _tokenize(buf: np.ndarray, ncols: int, name: str, first_line: int, expected: str, extra: bool):
    """Token boundaries of a block whose lines must all have ``ncols`` tokens (or none; or more,
    when ``extra``, of which the first ``ncols`` are kept).

    Returns:
        ``(starts, ends, lines)``: ``(n, ncols)`` start and end offsets of each token, and the
        0-based line index (in the block) of each of the n rows.
    """
    ends = np.flatnonzero(buf <= 32)  # token ends, if each token is followed by one separator
    if len(ends) and len(ends) % ncols == 0:
        # In that layout, a token starts one byte after the previous token's end (the first at 0).
        starts = np.empty_like(ends)
        starts[0] = 0
        np.add(ends[:-1], 1, out=starts[1:])
        if _usual_layout(buf, starts, ends, ncols):
            return starts.reshape(-1, ncols), ends.reshape(-1, ncols), np.arange(len(ends) // ncols)
    return _tokenize_general(buf, ncols, name, first_line, expected, extra)


def _usual_layout(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, ncols: int) -> bool:
    """Whether the tokens ``buf[starts[i]:ends[i]]`` are the block's: all non-empty (the block
    starts with a token and no two separators follow each other), with a newline after every
    ``ncols``-th token and nowhere else. Then rows are lines, one after another."""
    if not bool(np.all(ends > starts)):
        return False
    # The newlines are all at row ends iff every row ends with one and there are no others.
    line_ends = ends[ncols - 1 :: ncols]
    return bool(np.all(buf[line_ends] == 10)) and np.count_nonzero(buf == 10) == len(line_ends)


def _tokenize_general(buf: np.ndarray, ncols: int, name: str, first_line: int, expected: str, extra: bool):
    """:func:`_tokenize` for any layout (blank lines, runs of separators, ``\\r\\n``, extra columns...)."""
    solid = buf > 32
    # edges: the offsets where a token starts or ends (solid[i] != solid[i - 1], with solid[-1]
    # taken as False), found in one pass without shifting or prepending to the large index array.
    change = np.empty(len(buf), dtype=bool)
    change[0] = solid[0]
    np.not_equal(solid[1:], solid[:-1], out=change[1:])
    edges = np.flatnonzero(change)
    starts, ends = edges[0::2], edges[1::2]
    newline_at = np.flatnonzero(buf == 10)
    if len(starts) % ncols == 0:
        # The line of offset p is the number of line breaks before it. A row is well formed when
        # its first and last token sit on one line and the next row starts on a later line.
        rows_starts, rows_ends = starts.reshape(-1, ncols), ends.reshape(-1, ncols)
        lines = np.searchsorted(newline_at, rows_starts[:, 0])
        last = np.searchsorted(newline_at, rows_ends[:, -1] - 1)
        if np.array_equal(lines, last) and bool(np.all(lines[1:] > lines[:-1])):
            return rows_starts, rows_ends, lines
    token_line = np.searchsorted(newline_at, starts)
    counts = np.bincount(token_line, minlength=len(newline_at))
    bad = np.flatnonzero((counts != 0) & ((counts < ncols) if extra else (counts != ncols)))
    if bad.size:
        index = int(bad[0])
        raise _LineError(
            index,
            f"{name}:{first_line + index}: expected {'at least ' if extra else ''}{ncols} "
            f"whitespace-separated columns ({expected}), got {int(counts[index])}: "
            f"{_line_text(buf, index)!r}",
        )
    # Every line has ncols tokens or more: keep each line's first ncols.
    first_token = np.cumsum(counts) - counts
    kept = np.arange(len(starts)) - first_token[token_line] < ncols
    return starts[kept].reshape(-1, ncols), ends[kept].reshape(-1, ncols), token_line[kept][::ncols]


def _blank_comments(padded: np.ndarray, size: int) -> np.ndarray:
    """``padded`` with its comment lines (first non-blank character ``#``) blanked with spaces,
    so that they read as blank lines and line numbers stay right (a copy when there are any)."""
    buf = padded[:size]
    hashes = np.flatnonzero(buf == 35)
    if not hashes.size:
        return padded
    newline_at = np.flatnonzero(buf == 10)
    line = np.searchsorted(newline_at, hashes)  # the line of each '#'
    line_start = np.where(line > 0, newline_at[np.maximum(line, 1) - 1] + 1, 0)
    solid_before = np.concatenate(([0], np.cumsum(buf > 32)))
    leading = solid_before[hashes] == solid_before[line_start]  # only blanks before the '#'
    if not leading.any():
        return padded
    padded = padded.copy()
    marks = np.zeros(size + 1, dtype=np.int64)
    np.add.at(marks, hashes[leading], 1)
    np.add.at(marks, newline_at[line[leading]], -1)
    padded[:size][np.cumsum(marks[:size]) > 0] = 32
    return padded


def _gather(padded: np.ndarray, size: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``(n, width)`` uint8 matrix of tokens of the block ``padded[:size]``, zero-padded on the right.

    Loads each token as little-endian 8-byte words from an unaligned, 1-byte-strided uint64 view
    of the buffer, masking off the bytes past its end: one gather per 8 bytes of width instead of
    one per byte, about 3x faster. The words of a token near the block's end reach into the bytes
    after it, hence ``_PAD`` (or, for wider tokens, a zero-padded copy).
    """
    lengths = ends - starts
    width = max(int(lengths.max()), 1) if lengths.size else 1
    num_words = -(-width // 8)
    if len(padded) - size < 8 * num_words:
        padded = np.concatenate((padded[:size], np.zeros(8 * num_words, dtype=np.uint8)))
    words = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    out = np.empty((len(starts), num_words), dtype="<u8")
    for j in range(num_words):
        out[:, j] = words[starts + 8 * j] & _BYTE_MASKS[np.clip(lengths - 8 * j, 0, 8)]
    return out.view(np.uint8)[:, :width]


def _narrow(padded: np.ndarray, size: int, starts: np.ndarray, ends: np.ndarray):
    """``(matrix, wide)``: :func:`_gather`'s matrix of the tokens of at most ``_WIDE`` bytes
    (the rows of longer ones left empty), and the longer ones as ``{row: token}``: a few long
    tokens do not make the matrix rows x their width."""
    long_rows = np.flatnonzero(ends - starts > _WIDE)
    if not long_rows.size:
        return _gather(padded, size, starts, ends), {}
    wide = {int(i): padded[starts[i] : ends[i]].tobytes() for i in long_rows}
    ends = ends.copy()
    ends[long_rows] = starts[long_rows]
    return _gather(padded, size, starts, ends), wide


def _keys(matrix: np.ndarray, wide: dict[int, bytes]) -> np.ndarray:
    """The tokens of :func:`_narrow` as a numpy bytes array, or an object array of ``bytes`` when
    some are wide."""
    keys = _as_bytes(matrix)
    if wide:
        keys = keys.astype(object)
        keys[list(wide)] = list(wide.values())
    return keys


def _token(matrix: np.ndarray, wide: dict[int, bytes], i: int) -> str:
    """Row ``i``'s token of :func:`_narrow` as ``str`` (bytes that are not UTF-8 escaped, as ids)."""
    token = wide[i] if i in wide else bytes(matrix[i][matrix[i] != 0])
    return token.decode("utf-8", _ID_ERRORS)


def _as_bytes(matrix: np.ndarray) -> np.ndarray:
    """The rows of a uint8 matrix as a numpy bytes array (trailing zeros are dropped by numpy)."""
    return np.ascontiguousarray(matrix).view(f"S{matrix.shape[1]}").ravel()


def _parse_numbers(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parses decimal numbers exactly; returns ``(values, done)``, ``done`` False where it could not.

    Most tokens are plain decimals, ``[+-]digits[.digits]``: those are read here with a few
    operations per column; the others (exponents, lone signs...) go through
    :func:`_parse_general`. ``matrix`` is ``(n, width)`` uint8, zero-padded on the right (a token
    holds no zero byte, so zeros are padding only).
    """
    n, width = matrix.shape
    columns = np.ascontiguousarray(matrix.T)
    mantissa = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int32)
    fraction = np.zeros(n, dtype=np.int32)
    seen_dot = np.zeros(n, dtype=bool)
    plain = (columns[0] == 45) | (columns[0] == 43)  # bytes that are not digits, dots or padding
    plain |= columns[0] - np.uint8(48) < 10
    plain |= columns[0] == 46
    for j in range(width):
        ch = columns[j]
        value = ch - np.uint8(48)
        is_digit = value < 10
        is_dot = ch == 46
        if j:
            plain &= is_digit | (ch == 0) | (is_dot & ~seen_dot)
        mantissa = np.where(is_digit, mantissa * 10 + value, mantissa)
        digits += is_digit
        fraction += is_digit & seen_dot
        seen_dot |= is_dot
    # Clinger's fast path: with at most 18 digits (no int64 overflow), a mantissa below 2**53 and
    # at most 22 fraction digits, mantissa and 10**fraction are exact doubles and one division
    # rounds correctly, as strtod does.
    done = plain & (digits >= 1) & (digits <= 18) & (mantissa < 2**53) & (fraction <= 22)
    values = mantissa / _POW10[np.minimum(fraction, 22)]
    values = np.where(columns[0] == 45, -values, values)
    other = np.flatnonzero(~done)
    if other.size:
        values[other], done[other] = _parse_general(matrix[other])
    return values, done


def _parse_general(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_parse_numbers` for any layout, exponents included (slower: more work per column).

    It takes ``[+-]digits[.digits][(e|E)[+-]digits]`` with at most 18 digits of
    mantissa and a decimal exponent within what ``float64`` holds exactly: the integer mantissa and
    a power of ten are then both exact and one multiplication or division rounds correctly, as
    ``strtod`` does (Clinger's fast path). ``matrix`` is ``(n, width)`` uint8, zero-padded.
    """
    n, width = matrix.shape
    columns = np.ascontiguousarray(matrix.T)
    mantissa = np.zeros(n, dtype=np.int64)
    exponent = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int32)
    fraction = np.zeros(n, dtype=np.int32)
    exp_digits = np.zeros(n, dtype=np.int32)
    seen_dot = np.zeros(n, dtype=bool)
    in_exp = np.zeros(n, dtype=bool)
    after_e = np.zeros(n, dtype=bool)
    exp_negative = np.zeros(n, dtype=bool)
    ok = np.ones(n, dtype=bool)
    for j in range(width):
        ch = columns[j]
        value = ch - np.uint8(48)
        is_digit = value < 10
        is_dot = ch == 46
        is_e = (ch | 32) == 101
        is_sign = (ch == 43) | (ch == 45)
        in_mantissa = is_digit & ~in_exp
        mantissa = np.where(in_mantissa, mantissa * 10 + value, mantissa)
        digits += in_mantissa
        fraction += in_mantissa & seen_dot
        in_exponent = is_digit & in_exp
        exponent = np.where(in_exponent, exponent * 10 + value, exponent)
        exp_digits += in_exponent
        sign_ok = after_e if j else np.ones(n, dtype=bool)
        ok &= (
            is_digit
            | (ch == 0)
            | (is_dot & ~seen_dot & ~in_exp)
            | (is_e & ~in_exp & (digits > 0))
            | (is_sign & sign_ok)
        )
        exp_negative |= after_e & (ch == 45)
        seen_dot |= is_dot
        after_e = is_e & ~in_exp
        in_exp |= is_e
    ok &= (digits >= 1) & (digits <= 18) & (~in_exp | ((exp_digits >= 1) & (exp_digits <= 4)))
    exponent = np.where(exp_negative, -exponent, exponent) - fraction
    ok &= (mantissa < 2**53) & (np.abs(exponent) <= 22)
    power = _POW10[np.minimum(np.abs(exponent), 22)]
    magnitude = mantissa.astype(np.float64)
    values = np.where(exponent >= 0, magnitude * power, magnitude / power)
    values = np.where(columns[0] == 45, -values, values)
    return values, ok


def _numbers(matrix, wide, name, first_line, lines, buf, what: str, integer: bool) -> np.ndarray:
    """The numbers of :func:`_narrow`'s ``(matrix, wide)`` (a wide token is read by ``float``: a
    token of more than 26 bytes is never one that the vectorized parsers take); the first that is
    not one (NaN included) is refused with its line, and so, when ``integer``, is the first that is
    not an integer of magnitude below ``_MAX_GRADE``."""
    values, done = _parse_numbers(matrix)
    done[list(wide)] = False
    refused = np.zeros(len(values), dtype=bool)
    for i in np.flatnonzero(~done):
        token = _token(matrix, wide, int(i))
        try:
            values[i] = float(token) if "_" not in token else math.nan
        except ValueError:
            values[i] = math.nan
        refused[i] = integer and not _exact_integer(token, values[i])
    if integer:  # the parser's values are exact: below 2**53, an integer value is an integer token
        refused |= (values != np.round(values)) | ~(np.abs(values) < _MAX_GRADE)
    refused |= np.isnan(values)
    wrong = np.flatnonzero(refused)
    if wrong.size:
        i = int(wrong[0])
        if math.isnan(values[i]):
            kind = "a number"
        elif abs(values[i]) >= _MAX_GRADE:
            kind = f"an integer of magnitude below 2**53 ({_MAX_GRADE})"
        else:
            kind = "an integer"
        raise _LineError(
            int(lines[i]),
            f"{name}:{first_line + int(lines[i])}: {what} must be {kind}, got "
            f"{_token(matrix, wide, i)!r}: {_line_text(buf, int(lines[i]))!r}",
        )
    return values


def _exact_integer(token: str, value: float) -> bool:
    """Whether ``token``, which ``float`` reads as ``value``, is exactly an integer of magnitude
    below ``_MAX_GRADE`` (``1.00000000000000000001`` reads as 1.0 but is not)."""
    if not abs(value) < _MAX_GRADE:
        return False
    try:
        exact = Decimal(token)
    except (ArithmeticError, ValueError):
        return False
    return exact == exact.to_integral_value()


class _QidInterner:
    """Maps query-id tokens to dense int ids; runs of one qid (the usual layout) cost one lookup."""

    def __init__(self) -> None:
        self.ids: dict[bytes, int] = {}
        self.names: list[str] = []

    def __call__(self, keys: np.ndarray) -> np.ndarray:
        """Ids of the keys (a numpy bytes array, or an object array of ``bytes``, see :func:`_keys`)."""
        n = len(keys)
        if n == 0:
            return np.zeros(0, dtype=np.int32)
        change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        if change.size < n // 8:
            heads = np.concatenate(([0], change))
            segment_ids = np.array([self._id(k) for k in keys[heads].tolist()], dtype=np.int32)
            return np.repeat(segment_ids, np.diff(np.concatenate((heads, [n]))))
        # np.unique sorts the keys; number them in order of first appearance instead.
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        by_appearance = np.argsort(first)
        unique_ids = np.empty(len(unique), dtype=np.int32)
        unique_ids[by_appearance] = [self._id(k) for k in unique[by_appearance].tolist()]
        return unique_ids[inverse.ravel()]

    def _id(self, key: bytes) -> int:
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.names)
            self.names.append(key.decode("utf-8", _ID_ERRORS))
        return found


def _parse_block(
    padded: np.ndarray,
    size: int,
    first_line: int,
    ncols: int,
    value_col: int,
    name: str,
    expected: str,
    what: str,
    integer: bool,
    extra: bool,
    second: bool = False,
):
    """``(qid_keys, docno, values, tag, second_keys)`` of the block ``padded[:size]``, or None
    if it is blank.

    ``tag`` is the last row's last kept column (the run tag; unused for qrels); ``second_keys``
    the second column (diversity qrels' subtopic), gathered only when ``second``; the keys are
    :func:`_keys`'. Only the columns that are kept are gathered; the others are only counted. Of
    several malformed lines, the first is refused: each check stops at its first, and the lines
    before it are checked again.
    """
    args = (first_line, ncols, value_col, name, expected, what, integer, extra, second)
    try:
        return _parse_lines(padded, size, *args)
    except _LineError as err:
        if err.index:
            _parse_block(padded, int(np.flatnonzero(padded[:size] == 10)[err.index - 1]) + 1, *args)
        raise


def _parse_lines(padded, size, first_line, ncols, value_col, name, expected, what, integer, extra, second):
    """:func:`_parse_block`, refusing the first malformed line that each check finds."""
    _refuse_lone_cr(padded[:size], name, first_line)
    padded = _blank_comments(padded, size)
    buf = padded[:size]
    starts, ends, lines = _tokenize(buf, ncols, name, first_line, expected, extra)
    if not len(lines):
        return None
    _refuse_long_docnos(buf, starts[:, 2], ends[:, 2], lines, name, first_line)
    tag = buf[starts[-1, -1] : ends[-1, -1]].tobytes().decode("utf-8", _ID_ERRORS)
    qid_keys = _keys(*_narrow(padded, size, starts[:, 0], ends[:, 0]))
    docno = _as_bytes(_gather(padded, size, starts[:, 2], ends[:, 2]))
    matrix, wide = _narrow(padded, size, starts[:, value_col], ends[:, value_col])
    values = _numbers(matrix, wide, name, first_line, lines, buf, what, integer)
    second_keys = _keys(*_narrow(padded, size, starts[:, 1], ends[:, 1])) if second else None
    return qid_keys, docno, values, tag, second_keys


def _refuse_long_docnos(buf, starts, ends, lines, name: str, first_line: int) -> None:
    """Raises ValueError at the first document id longer than ``_MAX_DOCNO`` bytes."""
    long_rows = np.flatnonzero(ends - starts > _MAX_DOCNO)
    if long_rows.size:
        i = int(long_rows[0])
        raise _LineError(
            int(lines[i]),
            f"{name}:{first_line + int(lines[i])}: a document id longer than {_MAX_DOCNO} bytes is "
            f"refused, got {int(ends[i] - starts[i])} bytes: "
            f"{buf[starts[i] : starts[i] + 40].tobytes().decode('utf-8', _ID_ERRORS)!r}...",
        )


def _read(
    path,
    ncols: int,
    value_col: int,
    expected: str,
    what: str,
    integer: bool,
    extra: bool,
    progress: bool,
    second: bool = False,
):
    name = os.fspath(path)
    interner, second_interner = _QidInterner(), _QidInterner()
    qids, docnos, values, seconds = [], [], [], []
    tag = ""

    def collect(parsed) -> None:
        nonlocal tag
        if parsed is None:
            return
        qid_keys, docno, value, block_tag, second_keys = parsed
        if ncols == 6:
            tag = block_tag
        qids.append(interner(qid_keys))  # in file order: ids follow first appearance
        docnos.append(docno)
        values.append(value)
        if second:
            seconds.append(second_interner(second_keys))

    # Blocks are parsed on a thread pool (numpy releases the GIL in the heavy steps) while the
    # next ones are read; results are collected in file order (qids are interned in order of first
    # appearance, and the first malformed line is the one reported). A few blocks in flight per
    # worker bound the memory.
    workers = os.cpu_count() or 1
    pending: deque[Future] = deque()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            for padded, size, first_line in _blocks(path, progress):
                pending.append(
                    pool.submit(
                        _parse_block,
                        padded,
                        size,
                        first_line,
                        ncols,
                        value_col,
                        name,
                        expected,
                        what,
                        integer,
                        extra,
                        second,
                    )
                )
                if len(pending) > 2 * workers:
                    collect(pending.popleft().result())
            while pending:
                collect(pending.popleft().result())
        finally:
            for future in pending:
                future.cancel()
    if not qids:
        raise ValueError(
            f"{name}: the file is empty (no '{expected}' line; blank and # comment lines are skipped)"
        )
    qid = np.concatenate(qids) if qids else np.zeros(0, dtype=np.int32)
    docno = np.concatenate(docnos) if docnos else np.zeros(0, dtype="S1")
    value = np.concatenate(values) if values else np.zeros(0, dtype=np.float64)
    if second:
        return interner.names, qid, docno, value, (second_interner.names, np.concatenate(seconds))
    return interner.names, qid, docno, value, tag


def read_qrels(path: str | os.PathLike, *, progress: bool = False) -> Qrels:
    """Reads a qrels file: ``qid iter docno rel`` per line, ``rel`` an integer.

    A negative ``rel`` (trec_eval's -1) marks a document that was pooled but not judged: it is
    never relevant and NDCG gives it no gain (see :mod:`ignite_ranking.trec.judgements`).

    Raises:
        ValueError: a line without exactly 4 columns or whose relevance is not an integer of
            magnitude below 2**53, or a file without any judgement; the message names the file
            (and the line number).
    """
    names, qid, docno, rel, _ = _read(
        path, 4, 3, "qid iter docno rel", "relevance", integer=True, extra=False, progress=progress
    )
    return Qrels(qids=names, qid=qid, docno=docno, rel=rel.astype(np.int64), path=os.fspath(path))


def read_run(path: str | os.PathLike, *, progress: bool = False) -> Run:
    """Reads a run file: ``qid Q0 docno rank score tag`` per line (columns after the tag ignored).

    Raises:
        ValueError: a line with fewer than 6 columns or whose score is not a number (NaN is
            refused), or a file without any run line; the message names the file (and the line
            number).
    """
    names, qid, docno, score, tag = _read(
        path, 6, 4, "qid Q0 docno rank score tag", "score", integer=False, extra=True, progress=progress
    )
    return Run(qids=names, qid=qid, docno=docno, score=score, tag=tag, path=os.fspath(path))


def read_diversity_qrels(path: str | os.PathLike, *, progress: bool = False) -> DiversityQrels:
    """Reads diversity qrels: ``qid subtopic docno rel`` per line, ``rel`` an integer.

    The file has the layout of :func:`read_qrels`, with the second column naming the subtopic
    (intent) that the judgement is about: a document relevant to several subtopics has one line
    for each. Subtopic ids are strings (ndeval's are numbers; any token is taken here).

    Raises:
        ValueError: as :func:`read_qrels`.
    """
    names, qid, docno, rel, (subtopics, subtopic) = _read(
        path,
        4,
        3,
        "qid subtopic docno rel",
        "relevance",
        integer=True,
        extra=False,
        progress=progress,
        second=True,
    )
    return DiversityQrels(
        qids=names,
        qid=qid,
        docno=docno,
        rel=rel.astype(np.int64),
        path=os.fspath(path),
        subtopics=subtopics,
        subtopic=subtopic,
    )
