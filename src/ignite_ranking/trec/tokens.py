"""A TREC file's bytes as blocks of whole lines and their tokens, without a Python object per line.

:func:`open_trec_file` opens a file plain or gzip; :func:`blocks` reads it in blocks of whole
lines (refusing a line longer than ``_MAX_LINE``); :func:`tokenize` finds each line's columns
(runs of bytes 0x00-0x20 separate them; comment lines are blanked first, :func:`blank_comments`);
:func:`gather`, :func:`narrow` and :func:`token_keys` take the tokens out as matrices and numpy
bytes arrays. A malformed line is a :class:`LineError` naming ``file:line``.
:func:`locate_entries` finds the lines of one entry again, for an error message.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Iterator

import numpy as np

_BLOCK = 2 << 20  # small enough for the per-block temporaries to stay in cache: ~25% less CPU than 8 MiB
_GZIP_MAGIC = b"\x1f\x8b"
ID_ERRORS = "surrogateescape"  # ids that are not UTF-8 decode to str that encode back to their bytes
PAD = 64  # readable bytes after each block, see gather
_MAX_LINE = 1 << 20  # a longer line is refused: a file without newlines is not read whole
_MAX_DOCNO = 4096  # a longer document id is refused: the docno column is rows x its longest id
_WIDE = 64  # query ids and numbers longer than this are taken apart from the token matrix
# _BYTE_MASKS[i] keeps the first i bytes (in memory order) of a little-endian uint64.
_BYTE_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [2**64 - 1], dtype="<u8")


_SEPARATORS = re.compile(rb"[\x00-\x20]+")


def locate_entries(path: str | os.PathLike, qid: str, docno: bytes, limit: int = 2) -> list[int]:
    """1-based numbers of the first ``limit`` lines of a run or qrels file whose query id (first
    column) is ``qid`` and document id (third column) is ``docno``; comment lines are skipped.

    Searches the file's blocks for ``docno`` and splits only the lines where it occurs.
    """
    wanted_qid = qid.encode("utf-8", ID_ERRORS)
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


def blocks(path, progress: bool) -> Iterator[tuple[np.ndarray, int, int]]:
    """Yields ``(padded, size, first_line_number)``: a block of whole lines, ``padded[:size]``.

    The block ends with ``\\n`` and is followed by at least ``PAD`` readable bytes (of any value)
    for :func:`gather`. The file is read straight into each block's own buffer: no other copy but
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
            buffer = np.empty(len(rest) + _BLOCK + PAD, dtype=np.uint8)
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
            yield np.frombuffer(rest + b"\n" + bytes(PAD), dtype=np.uint8), len(rest) + 1, line
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


def line_text(buf: np.ndarray, index: int, limit: int = 200) -> str:
    """Line ``index`` of ``buf`` for a message (its first ``limit`` characters)."""
    text = buf.tobytes().split(b"\n")[index].decode("utf-8", ID_ERRORS).rstrip("\r")
    return text if len(text) <= limit else text[:limit] + "..."


class LineError(ValueError):
    """A malformed line of a block, ``index`` its 0-based line there (the readers of
    :mod:`~ignite_ranking.trec.io` parse a file block by block)."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


def refuse_lone_cr(buf: np.ndarray, name: str, first_line: int) -> None:
    """Refuses a carriage return that is not followed by a line feed (old Mac line ends, which
    would otherwise read as one long line)."""
    cr = np.flatnonzero(buf == 13)  # the block ends with \n: cr + 1 is in it
    lone = cr[buf[cr + 1] != 10]
    if lone.size:
        index = int(np.count_nonzero(buf[: lone[0]] == 10))
        raise LineError(
            index,
            f"{name}:{first_line + index}: a carriage return (\\r) not followed by a line feed; "
            f"lines must end with \\n or \\r\\n (convert old Mac line ends: tr '\\r' '\\n'): "
            f"{line_text(buf, index)!r}",
        )


def tokenize(buf: np.ndarray, ncols: int, name: str, first_line: int, expected: str, extra: bool):
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
    """:func:`tokenize` for any layout (blank lines, runs of separators, ``\\r\\n``, extra columns...)."""
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
        raise LineError(
            index,
            f"{name}:{first_line + index}: expected {'at least ' if extra else ''}{ncols} "
            f"whitespace-separated columns ({expected}), got {int(counts[index])}: "
            f"{line_text(buf, index)!r}",
        )
    # Every line has ncols tokens or more: keep each line's first ncols.
    first_token = np.cumsum(counts) - counts
    kept = np.arange(len(starts)) - first_token[token_line] < ncols
    return starts[kept].reshape(-1, ncols), ends[kept].reshape(-1, ncols), token_line[kept][::ncols]


def blank_comments(padded: np.ndarray, size: int) -> np.ndarray:
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


def gather(padded: np.ndarray, size: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``(n, width)`` uint8 matrix of tokens of the block ``padded[:size]``, zero-padded on the right.

    Loads each token as little-endian 8-byte words from an unaligned, 1-byte-strided uint64 view
    of the buffer, masking off the bytes past its end: one gather per 8 bytes of width instead of
    one per byte, about 3x faster. The words of a token near the block's end reach into the bytes
    after it, hence ``PAD`` (or, for wider tokens, a zero-padded copy).
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


def narrow(padded: np.ndarray, size: int, starts: np.ndarray, ends: np.ndarray):
    """``(matrix, wide)``: :func:`gather`'s matrix of the tokens of at most ``_WIDE`` bytes
    (the rows of longer ones left empty), and the longer ones as ``{row: token}``: a few long
    tokens do not make the matrix rows x their width."""
    long_rows = np.flatnonzero(ends - starts > _WIDE)
    if not long_rows.size:
        return gather(padded, size, starts, ends), {}
    wide = {int(i): padded[starts[i] : ends[i]].tobytes() for i in long_rows}
    ends = ends.copy()
    ends[long_rows] = starts[long_rows]
    return gather(padded, size, starts, ends), wide


def token_keys(matrix: np.ndarray, wide: dict[int, bytes]) -> np.ndarray:
    """The tokens of :func:`narrow` as a numpy bytes array, or an object array of ``bytes`` when
    some are wide."""
    keys = as_bytes(matrix)
    if wide:
        keys = keys.astype(object)
        keys[list(wide)] = list(wide.values())
    return keys


def token_text(matrix: np.ndarray, wide: dict[int, bytes], i: int) -> str:
    """Row ``i``'s token of :func:`narrow` as ``str`` (bytes that are not UTF-8 escaped, as ids)."""
    token = wide[i] if i in wide else bytes(matrix[i][matrix[i] != 0])
    return token.decode("utf-8", ID_ERRORS)


def as_bytes(matrix: np.ndarray) -> np.ndarray:
    """The rows of a uint8 matrix as a numpy bytes array (trailing zeros are dropped by numpy)."""
    return np.ascontiguousarray(matrix).view(f"S{matrix.shape[1]}").ravel()


def refuse_long_docnos(buf, starts, ends, lines, name: str, first_line: int) -> None:
    """Raises ValueError at the first document id longer than ``_MAX_DOCNO`` bytes."""
    long_rows = np.flatnonzero(ends - starts > _MAX_DOCNO)
    if long_rows.size:
        i = int(long_rows[0])
        raise LineError(
            int(lines[i]),
            f"{name}:{first_line + int(lines[i])}: a document id longer than {_MAX_DOCNO} bytes is "
            f"refused, got {int(ends[i] - starts[i])} bytes: "
            f"{buf[starts[i] : starts[i] + 40].tobytes().decode('utf-8', ID_ERRORS)!r}...",
        )
