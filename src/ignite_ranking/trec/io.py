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

This module holds the readers, each driven by one description of its file's layout; the record
types they return are in :mod:`~ignite_ranking.trec.records`, the blocks and tokens in
:mod:`~ignite_ranking.trec.tokens` and the number parser in :mod:`~ignite_ranking.trec.decimals`.

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

import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .decimals import numbers
from .records import DiversityQrels, DuplicateEntryError, Qrels, Run
from .tokens import (
    ID_ERRORS,
    LineError,
    as_bytes,
    blank_comments,
    blocks,
    gather,
    locate_entries,
    narrow,
    open_trec_file,
    refuse_lone_cr,
    refuse_long_docnos,
    token_keys,
    tokenize,
)

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


class _QidInterner:
    """Maps query-id tokens to dense int ids; runs of one qid (the usual layout) cost one lookup."""

    def __init__(self) -> None:
        self.ids: dict[bytes, int] = {}
        self.names: list[str] = []

    def __call__(self, keys: np.ndarray) -> np.ndarray:
        """Ids of the keys (a numpy bytes array, or an object array of ``bytes``, see :func:`token_keys`)."""
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
            self.names.append(key.decode("utf-8", ID_ERRORS))
        return found


@dataclass(frozen=True)
class _Layout:
    """What the lines of one kind of file hold, for :func:`_parse_block` and :func:`_read`.

    Attributes:
        columns: the number of columns of a line (the first ``columns`` kept).
        value: the column of the number (relevance or score).
        expected: the columns' names, for messages (``"qid iter docno rel"``).
        what: the number's name, for messages (``"relevance"``).
        integer: whether the number must be an integer (a grade).
        extra: whether a line may have more than ``columns`` columns (ignored).
        second: whether the second column is kept (diversity qrels' subtopic).
    """

    columns: int
    value: int
    expected: str
    what: str
    integer: bool
    extra: bool
    second: bool = False


_QRELS = _Layout(4, 3, "qid iter docno rel", "relevance", integer=True, extra=False)
_RUN = _Layout(6, 4, "qid Q0 docno rank score tag", "score", integer=False, extra=True)
_DIVERSITY = _Layout(4, 3, "qid subtopic docno rel", "relevance", integer=True, extra=False, second=True)


def _parse_block(padded: np.ndarray, size: int, first_line: int, name: str, layout: _Layout):
    """``(qid_keys, docno, values, tag, second_keys)`` of the block ``padded[:size]``, or None
    if it is blank.

    ``tag`` is the last row's last kept column (the run tag; unused for qrels); ``second_keys``
    the second column (diversity qrels' subtopic), gathered only when ``layout.second``; the keys
    are :func:`token_keys`'. Only the columns that are kept are gathered; the others are only
    counted. Of several malformed lines, the first is refused: each check stops at its first, and
    the lines before it are checked again.
    """
    try:
        return _parse_lines(padded, size, first_line, name, layout)
    except LineError as err:
        if err.index:
            cut = int(np.flatnonzero(padded[:size] == 10)[err.index - 1]) + 1
            _parse_block(padded, cut, first_line, name, layout)
        raise


def _parse_lines(padded: np.ndarray, size: int, first_line: int, name: str, layout: _Layout):
    """:func:`_parse_block`, refusing the first malformed line that each check finds."""
    refuse_lone_cr(padded[:size], name, first_line)
    padded = blank_comments(padded, size)
    buf = padded[:size]
    starts, ends, lines = tokenize(buf, layout.columns, name, first_line, layout.expected, layout.extra)
    if not len(lines):
        return None
    refuse_long_docnos(buf, starts[:, 2], ends[:, 2], lines, name, first_line)
    tag = buf[starts[-1, -1] : ends[-1, -1]].tobytes().decode("utf-8", ID_ERRORS)
    qid_keys = token_keys(*narrow(padded, size, starts[:, 0], ends[:, 0]))
    docno = as_bytes(gather(padded, size, starts[:, 2], ends[:, 2]))
    matrix, wide = narrow(padded, size, starts[:, layout.value], ends[:, layout.value])
    values = numbers(matrix, wide, name, first_line, lines, buf, layout.what, layout.integer)
    second_keys = token_keys(*narrow(padded, size, starts[:, 1], ends[:, 1])) if layout.second else None
    return qid_keys, docno, values, tag, second_keys


@dataclass
class _Columns:
    """What :func:`_read` took from a file: the interned query ids, the document ids and numbers
    of every line, the run tag (runs) and the interned subtopics (diversity qrels)."""

    qids: list[str]
    qid: np.ndarray
    docno: np.ndarray
    value: np.ndarray
    tag: str = ""
    subtopics: list[str] | None = None
    subtopic: np.ndarray | None = None


def _read(path, layout: _Layout, progress: bool) -> _Columns:
    """The columns of the file at ``path``, read block by block as ``layout`` describes."""
    name = os.fspath(path)
    interner, second_interner = _QidInterner(), _QidInterner()
    qids, docnos, values, seconds = [], [], [], []
    tag = ""

    def collect(parsed) -> None:
        nonlocal tag
        if parsed is None:
            return
        qid_keys, docno, value, block_tag, second_keys = parsed
        if layout.columns == 6:
            tag = block_tag
        qids.append(interner(qid_keys))  # in file order: ids follow first appearance
        docnos.append(docno)
        values.append(value)
        if layout.second:
            seconds.append(second_interner(second_keys))

    # Blocks are parsed on a thread pool (numpy releases the GIL in the heavy steps) while the
    # next ones are read; results are collected in file order (qids are interned in order of first
    # appearance, and the first malformed line is the one reported). A few blocks in flight per
    # worker bound the memory.
    workers = os.cpu_count() or 1
    pending: deque[Future] = deque()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            for padded, size, first_line in blocks(path, progress):
                pending.append(pool.submit(_parse_block, padded, size, first_line, name, layout))
                if len(pending) > 2 * workers:
                    collect(pending.popleft().result())
            while pending:
                collect(pending.popleft().result())
        finally:
            for future in pending:
                future.cancel()
    if not qids:
        raise ValueError(
            f"{name}: the file is empty (no '{layout.expected}' line; blank and # comment lines are skipped)"
        )
    qid = np.concatenate(qids) if qids else np.zeros(0, dtype=np.int32)
    docno = np.concatenate(docnos) if docnos else np.zeros(0, dtype="S1")
    value = np.concatenate(values) if values else np.zeros(0, dtype=np.float64)
    if layout.second:
        return _Columns(
            interner.names,
            qid,
            docno,
            value,
            subtopics=second_interner.names,
            subtopic=np.concatenate(seconds),
        )
    return _Columns(interner.names, qid, docno, value, tag=tag)


def read_qrels(path: str | os.PathLike, *, progress: bool = False) -> Qrels:
    """Reads a qrels file: ``qid iter docno rel`` per line, ``rel`` an integer.

    A negative ``rel`` (trec_eval's -1) marks a document that was pooled but not judged: it is
    never relevant and NDCG gives it no gain (see :mod:`ignite_ranking.trec.judgements`).

    Raises:
        ValueError: a line without exactly 4 columns or whose relevance is not an integer of
            magnitude below 2**53, or a file without any judgement; the message names the file
            (and the line number).
    """
    read = _read(path, _QRELS, progress)
    return Qrels(
        qids=read.qids, qid=read.qid, docno=read.docno, rel=read.value.astype(np.int64), path=os.fspath(path)
    )


def read_run(path: str | os.PathLike, *, progress: bool = False) -> Run:
    """Reads a run file: ``qid Q0 docno rank score tag`` per line (columns after the tag ignored).

    Raises:
        ValueError: a line with fewer than 6 columns or whose score is not a number (NaN is
            refused), or a file without any run line; the message names the file (and the line
            number).
    """
    read = _read(path, _RUN, progress)
    return Run(
        qids=read.qids, qid=read.qid, docno=read.docno, score=read.value, tag=read.tag, path=os.fspath(path)
    )


def read_diversity_qrels(path: str | os.PathLike, *, progress: bool = False) -> DiversityQrels:
    """Reads diversity qrels: ``qid subtopic docno rel`` per line, ``rel`` an integer.

    The file has the layout of :func:`read_qrels`, with the second column naming the subtopic
    (intent) that the judgement is about: a document relevant to several subtopics has one line
    for each. Subtopic ids are strings (ndeval's are numbers; any token is taken here).

    Raises:
        ValueError: as :func:`read_qrels`.
    """
    read = _read(path, _DIVERSITY, progress)
    return DiversityQrels(
        qids=read.qids,
        qid=read.qid,
        docno=read.docno,
        rel=read.value.astype(np.int64),
        path=os.fspath(path),
        subtopics=read.subtopics,
        subtopic=read.subtopic,
    )
