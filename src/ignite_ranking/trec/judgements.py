"""Joining a run with its qrels: the judgement of each run row, exactly and fast.

The qrels' ``(qid, docno)`` pairs are hashed to 64-bit keys (qid in the top bits, so that a
query's keys are contiguous) and sorted; run rows probe them with ``searchsorted`` after a
cache-sized bitmap has ruled out most unjudged rows, and every hit is confirmed on the docno
bytes, so a hash collision can never give a wrong label.

Labels follow trec_eval's ``form_res_rels.c``: a judged document has its grade (>= 0), a document
judged with a negative grade (pooled but not judged) has :data:`UNJUDGED` and a document absent
from the qrels :data:`NOT_IN_POOL`. Both are below every relevance level (levels are >= 0).
(:func:`~ignite_ranking.trec.retrieved.trec_ranked` gives a ranked batch these labels.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .io import DuplicateEntryError, Qrels

__all__ = ["NOT_IN_POOL", "PADDING", "UNJUDGED", "Judgements", "index_judgements", "judged_rows", "words"]

NOT_IN_POOL = -1  # trec_eval's RELVALUE_NONPOOL
UNJUDGED = -2  # trec_eval's RELVALUE_UNJUDGED: in the qrels with a negative grade
PADDING = -(2**62)  # the label of a padding cell: no document, no gain even with custom gains


def words(docno: np.ndarray) -> np.ndarray:
    """``(n, w)`` uint64 big-endian words of zero-padded docnos: their lexsort is ``strcmp`` order."""
    width = docno.dtype.itemsize
    padded = -(-width // 8) * 8
    raw = np.zeros((len(docno), padded), dtype=np.uint8)
    raw[:, :width] = np.ascontiguousarray(docno).view(np.uint8).reshape(len(docno), width)
    return raw.view(">u8").astype(np.uint64)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer (uint64 in, uint64 out, wrapping arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _keys(qid: np.ndarray, words: np.ndarray, seed: int, qid_bits: int) -> np.ndarray:
    """64-bit key of ``(qid, docno)`` pairs; equal pairs give equal keys.

    The top ``qid_bits`` bits are the qid and the rest a hash of the docno, so keys sort by query
    first: the run's rows (grouped by query) then probe the sorted qrels keys in a small, cached
    range each, which makes ``searchsorted`` several times faster than with fully hashed keys.
    """
    with np.errstate(over="ignore"):
        h = _mix(np.array([seed], dtype=np.uint64))  # broadcasts against the first word
        for j in range(words.shape[1]):
            h = _mix(h ^ words[:, j])
    return (qid.astype(np.uint64) << np.uint64(64 - qid_bits)) | (h >> np.uint64(qid_bits))


@dataclass(frozen=True)
class Judgements:
    """The qrels under a collision-free 64-bit key of ``(qid, docno)``, sorted, for :func:`judged_rows`."""

    qrels: Qrels
    seed: int
    qid_bits: int
    order: np.ndarray  # qrels rows in key order
    sorted_keys: np.ndarray
    mask: np.uint64
    maybe_judged: np.ndarray  # bitmap over the keys' low bits


def index_judgements(qrels: Qrels) -> Judgements:
    """Hashes and sorts the qrels' pairs (a new seed on a collision); refuses duplicate judgements."""
    qrels_words = words(qrels.docno)
    qid_bits = max(len(qrels.qids), 1).bit_length()
    for seed in range(4):
        qkeys = _keys(qrels.qid, qrels_words, seed, qid_bits)
        order = np.argsort(qkeys)
        sorted_keys = qkeys[order]
        if not np.any(sorted_keys[1:] == sorted_keys[:-1]):
            break
        duplicate = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])[0]
        a, b = order[duplicate], order[duplicate + 1]
        if qrels.qid[a] == qrels.qid[b] and qrels.docno[a] == qrels.docno[b]:
            raise DuplicateEntryError("qrels", qrels.qids[qrels.qid[a]], bytes(qrels.docno[a]))
    else:  # pragma: no cover - four 64-bit collisions in a row
        raise RuntimeError("could not hash the qrels without collisions")
    # Most run rows are not judged: a bitmap over the keys' low (hash) bits, 8+ slots per judgement
    # and small enough to stay in cache, rules most of them out before the binary search.
    mask = np.uint64((1 << max(16, (8 * len(sorted_keys)).bit_length())) - 1)
    maybe_judged = np.zeros(int(mask) + 1, dtype=bool)
    maybe_judged[sorted_keys & mask] = True
    return Judgements(qrels, seed, qid_bits, order, sorted_keys, mask, maybe_judged)


def judged_rows(
    judgements: Judgements, run_qid: np.ndarray, run_docno: np.ndarray, run_words: np.ndarray
) -> np.ndarray:
    """The qrels row judging each run row (``-1`` if none); exact.

    ``run_qid`` holds qrels query indices and ``run_words`` is ``words(run_docno)``. Joins on the
    64-bit key and then compares the docno bytes, so a hash collision can never give a wrong row.
    """
    j = judgements
    matched = np.full(len(run_qid), -1, dtype=np.int64)
    if j.sorted_keys.size == 0:
        return matched
    # Hash as many words as the qrels' docnos have: the run's fixed width may differ from theirs
    # (zero words pad a shorter one; a longer one is cut, and the byte comparison below rejects
    # the docnos that only agree on that prefix).
    width = -(-j.qrels.docno.dtype.itemsize // 8)
    if run_words.shape[1] < width:
        run_words = np.pad(run_words, ((0, 0), (0, width - run_words.shape[1])))
    rkeys = _keys(run_qid, run_words[:, :width], j.seed, j.qid_bits)
    candidates = np.flatnonzero(j.maybe_judged[rkeys & j.mask])
    ckeys = rkeys[candidates]
    pos = np.minimum(np.searchsorted(j.sorted_keys, ckeys), len(j.sorted_keys) - 1)
    hit = j.sorted_keys[pos] == ckeys
    rows, idx = candidates[hit], j.order[pos[hit]]
    same = (j.qrels.qid[idx] == run_qid[rows]) & (j.qrels.docno[idx] == run_docno[rows])
    matched[rows[same]] = idx[same]
    return matched
