"""Evaluate a TREC run against qrels with the library's ranking kernel, the trec_eval way.

How a run becomes kernel input:

- Queries are packed into padded ``(batch, width)`` matrices, a few thousand queries a batch;
  ``width`` is the longest run list in the batch, widened when needed so that the ranked depth
  covers the cutoffs for the qrels' relevant documents (IDCG, R-Precision). Padding cells get
  score ``-inf`` and label 0, and sit where the tie policy ranks them after every real document
  even when a real score is ``-inf``: at the end of the row for ``ties="first"``, at the start for
  ``"last"`` and ``"trec"``. For the tie-averaging policies of the kernel, real ``-inf`` scores are
  raised to the lowest finite float so that padding never ties with a real document.
- ``ties="trec"`` is trec_eval's order: scores as C ``float`` (float32, as trec_eval stores them),
  descending, ties broken by docno in *descending* byte order (``strcmp(docno2, docno1)``).
  Each query's documents are laid out by ascending docno and ranked with the kernel's
  ``ties="last"``. ``"first"``/``"last"`` keep the file order and float64 scores.
- Only documents that can reach the top of their query matter when every metric has a cutoff:
  for ``"trec"``/``"first"``/``"last"``, each query keeps its documents scoring at least its
  k-th largest score (k the deepest cutoff; ties at the cut kept whole) before the docno sort,
  the label lookup and the kernel. Duplicate documents are still looked for in the whole run.
- R (relevant documents) and the ideal DCG come from *all* judged documents of the query in the
  qrels, not only the retrieved ones: after ``rank_batch`` the batch's ``num_relevant`` and
  ``ideal_labels``/``ideal_relevant`` are replaced with values from the qrels.

Query set (as trec_eval): queries of the run that are not in the qrels are skipped; queries of
the qrels with no relevant document that the run answers are evaluated (every measure 0) and
count in the mean; qrels queries missing from the run are left out, or count as 0 with
``missing_as_zero=True`` (``trec_eval -c``). A document twice in one query of the run, or one
judgement twice in the qrels, is an error, as in trec_eval.

Example:
    >>> import numpy as np
    >>> from ignite_ranking.trec.io import Qrels, Run
    >>> qrels = Qrels(["q1"], np.array([0, 0], np.int32), np.array([b"a", b"b"]), np.array([1, 0]))
    >>> run = Run(["q1"], np.array([0, 0], np.int32), np.array([b"b", b"a"]), np.array([2.0, 1.0]))
    >>> evaluate(qrels, run, ["mrr@10", "P@1"]).means
    {'mrr@10': 0.5, 'P@1': 0.0}
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch

from ..kernels import TIE_POLICIES, rank_batch, scoring
from .io import Qrels, Run

__all__ = ["METRIC_HELP", "EvaluationResult", "MetricSpec", "evaluate", "parse_metric", "tie_policies"]

_FAMILIES = {
    "mrr": "reciprocal_rank",
    "rr": "reciprocal_rank",
    "recip_rank": "reciprocal_rank",
    "hit_rate": "hit_rate",
    "hits": "hit_rate",
    "success": "hit_rate",
    "precision": "precision",
    "p": "precision",
    "recall": "recall",
    "map": "average_precision",
    "map_cut": "average_precision",
    "ap": "average_precision",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "ndcg_burges": "ndcg_burges",
    "r-precision": "r_precision",
    "r_precision": "r_precision",
    "rprec": "r_precision",
}
METRIC_HELP = """\
metrics (ranx / trec_eval names, cutoff as @k or _k; no cutoff = the whole ranking):
  mrr, rr, recip_rank            reciprocal rank of the first relevant document
  hit_rate, hits, success        1 if a relevant document is in the top k
  precision, P                   relevant in the top k / k (a cutoff is required)
  recall                         relevant in the top k / R
  map, map_cut, ap               average precision (over R, trec_eval's map / map_cut)
  ndcg, ndcg_cut                 NDCG with linear gain (trec_eval's ndcg_cut, ranx's ndcg)
  ndcg_burges                    NDCG with exponential gain 2**rel - 1 (ranx's ndcg_burges)
  r-precision, Rprec             relevant in the top R / R (no cutoff)
examples: mrr@10 recip_rank P_10 P@10 ndcg_cut_10 ndcg@10 map@100 map_cut_100 success_1 Rprec"""

_NAME = re.compile(r"^(?P<name>[a-z_-]+?)(?:[@_](?P<k>\d+))?$")


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name: ``family`` (a scorer), cutoff ``k`` (None = whole ranking)."""

    name: str
    family: str
    k: int | None


def parse_metric(name: str) -> MetricSpec:
    """Parses ``mrr@10``, ``P_10``, ``ndcg_cut_10``, ``Rprec``... into a :class:`MetricSpec`.

    Raises:
        ValueError: an unknown name, a zero cutoff, a cutoff on R-Precision or none on precision.
    """
    match = _NAME.match(name.strip().lower())
    family = _FAMILIES.get(match["name"]) if match else None
    if match is None or family is None:
        raise ValueError(
            f"unknown metric {name!r}; expected one of: {', '.join(sorted(_FAMILIES))} (with @k or _k)"
        )
    k = int(match["k"]) if match["k"] is not None else None
    if k is not None and k < 1:
        raise ValueError(f"metric {name!r}: the cutoff must be a positive int, got {k}")
    if family == "r_precision" and k is not None:
        raise ValueError(f"metric {name!r}: R-Precision takes no cutoff")
    if family == "precision" and k is None:
        raise ValueError(f"metric {name!r}: precision needs a cutoff, e.g. P@10")
    return MetricSpec(name=name, family=family, k=k)


def tie_policies() -> tuple[str, ...]:
    """The tie policies :func:`evaluate` accepts: trec_eval's ``"trec"`` and the kernel's."""
    return ("trec", *TIE_POLICIES)


@dataclass
class EvaluationResult:
    """Means and per-query values.

    Attributes:
        means: metric name -> mean over the evaluated queries.
        queries: the evaluated query ids, in the order of ``values``' rows: order of first
            appearance in the run, then (``missing_as_zero``) the qrels queries it lacks.
        values: ``(len(queries), len(metrics))`` float64 per-query values.
        metrics: the metric names, in the order of ``values``' columns.
    """

    means: dict[str, float]
    queries: list[str]
    values: np.ndarray
    metrics: list[str]

    @property
    def num_queries(self) -> int:
        return len(self.queries)

    def per_query(self) -> dict[str, dict[str, float]]:
        """qid -> metric name -> value."""
        return {
            q: dict(zip(self.metrics, row.tolist(), strict=True))
            for q, row in zip(self.queries, self.values, strict=True)
        }


def _segments(qid: np.ndarray, num_queries: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row order grouping equal ``qid`` values, and each query's start and count in that order."""
    if qid.size == 0:
        zeros = np.zeros(num_queries, dtype=np.int64)
        return np.zeros(0, dtype=np.int64), zeros, zeros
    change = np.flatnonzero(qid[1:] != qid[:-1]) + 1
    heads = np.concatenate(([0], change))
    counts = np.bincount(qid, minlength=num_queries).astype(np.int64)
    if len(heads) == np.count_nonzero(counts):  # already grouped: every query in one block
        order = None
        start = np.zeros(num_queries, dtype=np.int64)
        start[qid[heads]] = heads
    else:
        order = np.argsort(qid, kind="stable")
        start = np.cumsum(counts) - counts
    return order, start, counts


def _words(docno: np.ndarray) -> np.ndarray:
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
class _Judgements:
    """The qrels under a collision-free 64-bit key of ``(qid, docno)``, sorted, for :func:`_labels`."""

    qrels: Qrels
    seed: int
    qid_bits: int
    order: np.ndarray  # qrels rows in key order
    sorted_keys: np.ndarray
    mask: np.uint64
    maybe_judged: np.ndarray  # bitmap over the keys' low bits


def _index_judgements(qrels: Qrels) -> _Judgements:
    """Hashes and sorts the qrels' pairs (a new seed on a collision); refuses duplicate judgements."""
    qrels_words = _words(qrels.docno)
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
            raise ValueError(
                f"qrels: document {qrels.docno[a].decode(errors='replace')!r} is judged twice for "
                f"query {qrels.qids[qrels.qid[a]]!r}"
            )
    else:  # pragma: no cover - four 64-bit collisions in a row
        raise RuntimeError("could not hash the qrels without collisions")
    # Most run rows are not judged: a bitmap over the keys' low (hash) bits, 8+ slots per judgement
    # and small enough to stay in cache, rules most of them out before the binary search.
    mask = np.uint64((1 << max(16, (8 * len(sorted_keys)).bit_length())) - 1)
    maybe_judged = np.zeros(int(mask) + 1, dtype=bool)
    maybe_judged[sorted_keys & mask] = True
    return _Judgements(qrels, seed, qid_bits, order, sorted_keys, mask, maybe_judged)


def _labels(
    judgements: _Judgements, run_qid: np.ndarray, run_docno: np.ndarray, run_words: np.ndarray
) -> np.ndarray:
    """Relevance value of each run row from the qrels (0 when not judged); exact.

    ``run_qid`` holds qrels query indices and ``run_words`` is ``_words(run_docno)``. Joins on the
    64-bit key and then compares the docno bytes, so a hash collision can never give a wrong label.
    """
    j = judgements
    labels = np.zeros(len(run_qid), dtype=np.int64)
    if j.sorted_keys.size == 0:
        return labels
    rkeys = _keys(run_qid, run_words, j.seed, j.qid_bits)
    candidates = np.flatnonzero(j.maybe_judged[rkeys & j.mask])
    ckeys = rkeys[candidates]
    pos = np.minimum(np.searchsorted(j.sorted_keys, ckeys), len(j.sorted_keys) - 1)
    hit = j.sorted_keys[pos] == ckeys
    rows, idx = candidates[hit], j.order[pos[hit]]
    same = (j.qrels.qid[idx] == run_qid[rows]) & (j.qrels.docno[idx] == run_docno[rows])
    labels[rows[same]] = j.qrels.rel[idx[same]]
    return labels


def _refuse_duplicates(docno: np.ndarray, cells: np.ndarray, lens: np.ndarray, names: list[str]) -> None:
    """Raises ValueError when a query of a batch lists a document twice, as trec_eval does.

    ``docno`` holds the batch's documents query by query, ``cells`` the real cells of the batch's
    ``(queries, width)`` grid, ``lens`` their count per query and ``names`` the query ids. Each
    query's docnos are sorted (values only for one-word docnos, faster than an argsort) and
    neighbours compared; padding sorts last and is masked off.
    """
    words = _words(docno)
    grid = np.full((words.shape[1], *cells.shape), np.iinfo(np.uint64).max, dtype=np.uint64)
    grid[:, cells] = words.T
    if grid.shape[0] == 1:
        grid = np.sort(grid, axis=-1)
    else:
        by_docno = np.lexsort(grid[::-1], axis=-1)
        grid = np.take_along_axis(grid, by_docno[None].repeat(grid.shape[0], 0), axis=2)
    same = np.all(grid[:, :, 1:] == grid[:, :, :-1], axis=0)
    same &= np.arange(1, cells.shape[1])[None, :] < lens[:, None]
    if same.any():
        i, j = map(int, np.argwhere(same)[0])
        duplicate = grid[:, i, j].astype(">u8").tobytes().rstrip(b"\0")  # _words zero-pads
        raise ValueError(
            f"run: document {duplicate.decode(errors='replace')!r} appears twice for query {names[i]!r}"
        )


def _top_cells(values: np.ndarray, cells: np.ndarray, k: int) -> np.ndarray:
    """The cells of the ``(queries, width)`` grid (real cells ``cells``, filled in row-major order
    with ``values``) whose value is at least their row's k-th largest: every document that can rank
    in the top k under any order of ties, with the ties at the cut kept whole."""
    grid = np.full(cells.shape, -np.inf, dtype=values.dtype)
    grid[cells] = values
    kth = np.partition(grid, cells.shape[1] - k, axis=1)[:, cells.shape[1] - k]
    return (grid >= kth[:, None]) & cells


@contextlib.contextmanager
def _torch_threads(num_threads: int | None):
    """Sets torch's intra-op thread count for the block (None: leave it), then restores it."""
    previous = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def evaluate(
    qrels: Qrels,
    run: Run,
    metrics: Sequence[str],
    *,
    relevance_level: int = 1,
    ties: str = "trec",
    missing_as_zero: bool = False,
    batch_size: int = 2048,
    progress: bool = False,
    num_threads: int | None = 1,
) -> EvaluationResult:
    """Evaluates ``run`` against ``qrels``; see the module docstring for the rules.

    Args:
        qrels: judgements, from :func:`~ignite_ranking.trec.io.read_qrels`.
        run: the run, from :func:`~ignite_ranking.trec.io.read_run`.
        metrics: metric names, see :data:`METRIC_HELP` (e.g. ``["mrr@10", "ndcg_cut_10"]``).
        relevance_level: a judged document is relevant iff ``rel >= relevance_level``
            (trec_eval's ``-l``, default 1). NDCG gains are the ``rel`` values of relevant
            documents.
        ties: ``"trec"`` (trec_eval's order), or a kernel policy (``"first"``, ``"last"``: file
            order among equal scores; see ``ignite_ranking.kernels.TIE_POLICIES``).
        missing_as_zero: count qrels queries that the run lacks as 0 (``trec_eval -c``).
        batch_size: at most this many queries per padded batch (fewer when that gives each thread
            several batches).
        progress: show a tqdm progress bar on stderr.
        num_threads: torch intra-op threads while ranking and scoring (restored afterwards);
            None keeps torch's setting. One is the default because each batch's tensor ops are
            too small to repay OpenMP's synchronisation: on a busy 2-core machine, torch's
            default of two threads made evaluation twice as slow.

    Raises:
        ValueError: an unknown metric or tie policy, duplicates, or no query to evaluate.
    """
    specs = [parse_metric(m) for m in metrics]
    if not specs:
        raise ValueError("metrics must name at least one metric")
    if ties not in tie_policies():
        raise ValueError(f"ties must be one of {', '.join(map(repr, tie_policies()))}, got {ties!r}")
    kernel_ties = "last" if ties == "trec" else ties
    pad_left = kernel_ties == "last"

    # Map the run's query ids onto the qrels' and drop queries the qrels do not know.
    qrels_index = {q: i for i, q in enumerate(qrels.qids)}
    run_to_qrels = np.array([qrels_index.get(q, -1) for q in run.qids], dtype=np.int64)
    mapped = run_to_qrels[run.qid] if len(run) else np.zeros(0, dtype=np.int64)
    keep = mapped >= 0
    if not keep.all():
        rows = np.flatnonzero(keep)
        mapped, docno, score = mapped[rows], run.docno[rows], run.score[rows]
    else:
        docno, score = run.docno, run.score
    num_q = len(qrels.qids)
    judgements = _index_judgements(qrels)

    # Per query of the qrels: R, and the judged values in descending order (for the ideal DCG).
    relevant = qrels.rel >= relevance_level
    num_relevant = np.bincount(qrels.qid, weights=relevant, minlength=num_q)
    judged_order = np.lexsort((-qrels.rel, qrels.qid))
    judged_rel = qrels.rel[judged_order]
    judged_start = np.cumsum(np.bincount(qrels.qid, minlength=num_q)) - np.bincount(
        qrels.qid, minlength=num_q
    )

    order, start, count = _segments(mapped.astype(np.int32), num_q)
    if order is not None:
        mapped, docno, score = mapped[order], docno[order], score[order]
    # Evaluated queries, in order of first appearance in the run (run.qids' order).
    evaluated = run_to_qrels[run_to_qrels >= 0]
    evaluated = evaluated[count[evaluated] > 0]
    if evaluated.size == 0 and not missing_as_zero:
        raise ValueError("no query of the run is in the qrels; nothing to evaluate")

    max_len = int(count.max()) if count.size else 0
    max_rel = int(num_relevant.max()) if num_relevant.size else 0
    whole = max(max_len, max_rel, 1)  # a cutoff that covers every ranking and every ideal ranking
    cutoffs: dict[str, list[int]] = {}
    for spec in specs:
        cutoffs.setdefault(spec.family, []).append(spec.k if spec.k is not None else whole)
    cutoffs = {f: sorted(set(ks)) for f, ks in cutoffs.items()}
    depth = max((max(ks) for f, ks in cutoffs.items() if f != "r_precision"), default=1)
    needs_r = "r_precision" in cutoffs
    score_dtype = np.float32 if ties == "trec" else np.float64

    def score_batch(qs: np.ndarray) -> np.ndarray:
        """``(len(qs), len(specs))`` values of the queries ``qs`` (qrels indices)."""
        lens, starts = count[qs], start[qs]
        r = num_relevant[qs]
        batch_depth = max(depth, int(r.max())) if needs_r else depth
        positives = int(r.max())
        width = max(int(lens.max()), min(batch_depth, positives))
        n = int(lens.sum())
        # Real cells of the (batch, width) grid, left-aligned; boolean-mask indexing visits them
        # in row-major order, i.e. query by query in run order, like ``src`` (faster than
        # indexing with (row, column) arrays).
        cells = np.arange(width) < lens[:, None]
        src = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(n)
        if ties == "trec":
            _refuse_duplicates(docno[src], cells, lens, [qrels.qids[q] for q in qs])
        values = score[src].astype(score_dtype)
        if kernel_ties in ("first", "last") and batch_depth < width and not np.isnan(values).any():
            # Only documents that can reach the top batch_depth matter to the metrics (R and the
            # ideal DCG come from the qrels): rank those alone.
            keep = _top_cells(values, cells, batch_depth)
            src, values, lens = src[keep[cells]], values[keep[cells]], keep.sum(axis=1)
            width = max(int(lens.max()), min(batch_depth, positives))
            n = int(lens.sum())
            cells = np.arange(width) < lens[:, None]
        batch_docno = docno[src]
        words = _words(batch_docno)
        labels = _labels(judgements, np.repeat(qs, lens), batch_docno, words)
        if ties == "trec":
            grid = np.full((words.shape[1], len(qs), width), np.iinfo(np.uint64).max, dtype=np.uint64)
            grid[:, cells] = words.T
            if grid.shape[0] == 1 and not (words == np.iinfo(np.uint64).max).any():
                # Docnos of one word, none equal to the padding: a row's real words are
                # distinct (duplicates are refused above), so the faster unstable sort gives
                # the same order, with padding last.
                by_docno = np.argsort(grid[0], axis=-1)
            else:
                by_docno = np.lexsort(grid[::-1], axis=-1)
            # Reorder the batch's rows (values and labels) by their position in the sorted grid.
            pos_grid = np.zeros((len(qs), width), dtype=np.int64)
            pos_grid[cells] = np.arange(n)
            pos = np.take_along_axis(pos_grid, by_docno, axis=1)[cells]
            values, labels = values[pos], labels[pos]
        # Padding goes left for "last" (each row's real cells, right-aligned, in the same order).
        placed = cells[:, ::-1] if pad_left else cells
        if kernel_ties not in ("first", "last"):
            values = np.maximum(values, np.finfo(score_dtype).min)
        s = np.full((len(qs), width), -np.inf, dtype=score_dtype)
        s[placed] = values
        y = np.zeros((len(qs), width), dtype=np.int64)
        y[placed] = labels
        ranked = rank_batch(
            torch.from_numpy(s),
            torch.from_numpy(y),
            batch_depth,
            relevance_threshold=relevance_level,
            ties=kernel_ties,
            count=False,  # num_relevant is replaced below by R from the qrels
        )
        k = ranked.depth
        ideal = np.zeros((len(qs), k), dtype=np.float64)
        take = np.minimum(np.bincount(qrels.qid, minlength=num_q)[qs], k)
        irow = np.repeat(np.arange(len(qs)), take)
        icol = np.arange(int(take.sum())) - np.repeat(np.cumsum(take) - take, take)
        ideal[irow, icol] = judged_rel[judged_start[qs][irow] + icol]
        ideal_t = torch.from_numpy(ideal)
        ranked = dataclasses.replace(
            ranked,
            num_relevant=torch.from_numpy(r.astype(np.float64)),
            ideal_labels=ideal_t,
            ideal_relevant=(ideal_t >= relevance_level).to(torch.float64),
            _gain_cache={},
        )
        results = {}
        for family, ks in cutoffs.items():
            if family == "r_precision":
                values = scoring.r_precision(ranked)
            elif family == "ndcg":
                values = scoring.ndcg(ranked, ks, "linear_rank")
            elif family == "ndcg_burges":
                values = scoring.ndcg(ranked, ks, "exp_rank")
            else:
                values = getattr(scoring, family)(ranked, ks)
            results[family] = values.numpy()
        block = np.empty((len(qs), len(specs)), dtype=np.float64)
        for m, spec in enumerate(specs):
            ks = cutoffs[spec.family]
            column = ks.index(spec.k if spec.k is not None else whole) if spec.family != "r_precision" else 0
            block[:, m] = results[spec.family][:, column]
        return block

    # Batches are ranked and scored on a thread pool, one thread per core (torch and numpy release
    # the GIL there); a few batches per thread keep the threads evenly loaded.
    workers = max(1, (os.cpu_count() or 1) // (num_threads or torch.get_num_threads()))
    size = max(1, min(batch_size, -(-len(evaluated) // (4 * workers))))
    batches = [evaluated[b0 : b0 + size] for b0 in range(0, len(evaluated), size)]
    with _torch_threads(num_threads), ThreadPoolExecutor(max_workers=workers) as pool:
        blocks = pool.map(score_batch, batches)
        if progress:
            from tqdm import tqdm

            blocks = tqdm(blocks, total=len(batches), desc="evaluating", unit="batch", leave=False)
        out = np.concatenate([np.zeros((0, len(specs))), *blocks])

    queries = [qrels.qids[q] for q in evaluated]
    if missing_as_zero:
        missing = np.flatnonzero(count == 0)
        queries += [qrels.qids[q] for q in missing]
        out = np.concatenate((out, np.zeros((len(missing), len(specs)))))
    total = max(len(queries), 1)
    means = {
        spec.name: float(out[:, m].sum() / total) if queries else math.nan for m, spec in enumerate(specs)
    }
    return EvaluationResult(means=means, queries=queries, values=out, metrics=[s.name for s in specs])
