"""BEIR folders (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) and qrels in any form.

The readers give ids and texts, never a model: encoding the texts is the user's model's business.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterator, Mapping

from ..trec.io import Qrels, read_qrels

__all__ = ["as_qrels_dict", "iter_beir_texts", "read_beir_ids", "read_beir_qrels"]

_HEADER = ("query-id", "corpus-id", "score")
_BOM = "\ufeff".encode()  # a byte order mark, which BEIR's csv reader skips with the header


def read_beir_qrels(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """``{query id: {document id: grade}}`` of a BEIR qrels tsv (``query-id corpus-id score``
    after a header line), ids as ``str``, grades as ``int``; blank lines (of white space alone,
    tabs too) are skipped, a later
    line of a pair wins and a field quoted as Python's ``csv`` writes it is unquoted (as in
    BEIR, which reads the file with ``csv.reader``); a ValueError names the first bad line
    (``file:line``).

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "test.tsv"
        >>> _ = path.write_text("query-id\\tcorpus-id\\tscore\\nq1\\td1\\t1\\nq1\\td2\\t0\\n")
        >>> read_beir_qrels(path)
        {'q1': {'d1': 1, 'd2': 0}}
    """
    qrels: dict[str, dict[str, int]] = {}
    for number, line in _lines(path):
        fields = next(csv.reader([line], delimiter="\t")) if '"' in line else line.split("\t")
        if (number == 1 and tuple(fields) == _HEADER) or line.strip() == "":
            continue
        try:
            query, doc, grade = fields
            if not query or not doc:
                raise ValueError
            qrels.setdefault(query, {})[doc] = int(grade)
        except ValueError:
            raise ValueError(
                f"{path}:{number}: a BEIR qrels line is 'query-id<TAB>corpus-id<TAB>integer score', "
                f"got {line!r}"
            ) from None
    return qrels


def iter_beir_texts(path: str | os.PathLike) -> Iterator[tuple[str, str, str]]:
    """``(id, title, text)`` of each line of a BEIR ``corpus.jsonl`` or ``queries.jsonl``
    (``title`` is ``""`` where absent, as in queries), in file order; a ValueError names the
    first line that is not a JSON object with a str or int ``_id`` and str texts."""
    for number, line in _lines(path):
        if not line.strip():
            continue
        fields = _record(line)
        if fields is None:
            raise ValueError(
                f"{path}:{number}: not a BEIR record (a JSON object with a str or int '_id' and str "
                "'title' and 'text')"
            )
        yield str(fields[0]), fields[1] or "", fields[2] or ""


def read_beir_ids(path: str | os.PathLike) -> list[str]:
    """The ids of a BEIR ``corpus.jsonl`` or ``queries.jsonl``, in file order."""
    return [record[0] for record in iter_beir_texts(path)]


def _lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """``(number, line)`` of a UTF-8 file split at line feeds (a carriage return before one
    dropped, and a byte order mark before the first line); a ValueError at a line that does not
    decode or holds another carriage return."""
    with open(path, "rb") as lines:
        for number, raw in enumerate(lines, 1):
            raw = raw.removesuffix(b"\n").removesuffix(b"\r")
            if number == 1:
                raw = raw.removeprefix(_BOM)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{path}:{number}: not UTF-8") from None
            if "\r" in line:
                raise ValueError(f"{path}:{number}: a carriage return inside the line")
            yield number, line


def _record(line: str) -> tuple | None:
    """``(_id, title, text)`` of a JSON line, or None where it is not a BEIR record."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    fields = record.get("_id"), record.get("title"), record.get("text")
    is_id = isinstance(fields[0], str) and fields[0] != ""
    is_id |= isinstance(fields[0], int) and not isinstance(fields[0], bool)
    return fields if is_id and all(t is None or isinstance(t, str) for t in fields[1:]) else None


def _is_beir_tsv(path: str | os.PathLike) -> bool:
    with open(path, "rb") as lines:  # bytes: a TREC file need not be UTF-8
        first = lines.readline().removeprefix(_BOM).rstrip(b"\r\n").split(b"\t")
    return tuple(first) == tuple(field.encode() for field in _HEADER)


def as_qrels_dict(qrels: object) -> dict[str, dict[str, float]]:
    """``{str query id: {str document id: float grade}}`` of a dict of dicts, a
    :class:`~ignite_ranking.trec.Qrels`, or a path to TREC qrels or a BEIR tsv (with its header)."""
    if isinstance(qrels, (str, os.PathLike)):
        qrels = read_beir_qrels(qrels) if _is_beir_tsv(qrels) else read_qrels(qrels)
    if isinstance(qrels, Qrels):
        table: dict[str, dict[str, float]] = {q: {} for q in qrels.qids}
        for code, doc, grade in zip(
            qrels.qid.tolist(), qrels.docno.tolist(), qrels.rel.tolist(), strict=True
        ):
            # a docno that is not UTF-8 keeps its bytes as surrogates: it matches no corpus id
            table[qrels.qids[code]][doc.decode("utf-8", "surrogateescape")] = float(grade)
        return table
    if not isinstance(qrels, Mapping):
        raise TypeError(
            "qrels must be a dict {query: {document: grade}}, a trec.Qrels or a path (TREC qrels or "
            f"a BEIR tsv), got {type(qrels).__name__}"
        )
    table = {}
    for query, docs in qrels.items():
        if not isinstance(docs, Mapping):
            raise TypeError(f"qrels[{query!r}] must be a dict {{document: grade}}, got {type(docs).__name__}")
        grades = {str(doc): _grade(query, doc, grade) for doc, grade in docs.items()}
        if str(query) in table or len(grades) != len(docs):
            raise ValueError(f"qrels hold {query!r} or one of its documents twice (ids are compared as str)")
        table[str(query)] = grades
    return table


def _grade(query: object, doc: object, grade: object) -> float:
    try:
        value = float(grade) if not isinstance(grade, (str, bytes)) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"qrels[{query!r}][{doc!r}] must be a finite number, got {grade!r}")
    return value
