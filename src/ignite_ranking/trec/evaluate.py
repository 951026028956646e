"""Evaluate a TREC run against qrels with the library's ranking kernel, the trec_eval way.

A run is retrieved ids with scores and the qrels are sparse judgements: batches of a few
thousand queries become :class:`~ignite_ranking.Retrieved` batches
(:mod:`ignite_ranking.trec.retrieved`) that the library's input forms rank like any other, and
:mod:`ignite_ranking.trec.scores` computes each measure on the ranked batch. The rules:

- Scores are compared as float64 (``score_precision="float64"``, as trec_eval 10 does since
  it stores them as C doubles) or rounded to float32 first (``"float32"``: trec_eval up to 9.0.8
  and pytrec_eval, which store them as C floats, so that more scores tie).
- ``ties="trec"`` is trec_eval's order: descending score, ties broken by docno in *descending*
  byte order (``strcmp(docno2, docno1)``). ``"first"``/``"last"`` keep the file order, and the
  kernel's other policies apply to file positions too.
- Labels follow trec_eval: the judged grade, or a negative marker for a document not in the
  qrels or judged with a negative grade; a document is relevant iff it is judged with
  ``grade >= level`` (levels are >= 0), so unjudged documents never are, also under ``-l 0``.
- Only documents that can reach the top of their query matter when every measure has a cutoff
  and ties are ordered (``"trec"``, ``"first"``, ``"last"``): the others are cut before the
  join with the qrels and the ranking. Duplicate documents are still looked for in the whole run.
- R (relevant documents) and the ideal DCG come from *all* judged documents of the query in the
  qrels, not only the retrieved ones.
- A run given as a dict of dicts with ``str`` ids is ranked under ``ties="trec"`` at its judged
  documents only (:mod:`~ignite_ranking.trec.run_dicts`), with the same values.

Query set (as trec_eval): queries of the run that are not in the qrels are skipped; queries of
the qrels with no relevant document that the run answers are evaluated (every measure 0) and
count in the mean; qrels queries missing from the run are left out (as trec_eval 9 does;
trec_eval 10.0-rc3 stops with an error there), or count with ``missing_as_zero=True``
(``trec_eval -c``), scored as trec_eval scores them: on a ranking of one document outside the
pool, then with ``num_ret``, ``unj`` and the parameter-free ``utility``, ``rbp_resid`` and
``relstring`` emptied. That is 0 for every measure but ``num_rel`` (and ``num_q``), except
``rbp_resid_p=...`` (1), ``utility_P1,P2,P3,P4`` (``P2 + P3*R - P4*(1 + R)``), ``relstring_N``
(``-``), and under ``judged_only`` (where the list is empty) ``iprec_at_recall`` at recall
points rounding to 0 relevant documents and ``11pt_avg`` (NaN). A document twice in one query of
the run, or one judgement twice in the qrels, is an error, as in trec_eval; for files read from
disk it names the file and the line of the second occurrence (``run.txt:1042: document 'd7'
appears twice for query '3' (first at line 17)``).

Example:
    >>> import numpy as np
    >>> from ignite_ranking.trec.io import Qrels, Run
    >>> qrels = Qrels(["q1"], np.array([0, 0], np.int32), np.array([b"a", b"b"]), np.array([1, 0]))
    >>> run = Run(["q1"], np.array([0, 0], np.int32), np.array([b"b", b"a"]), np.array([2.0, 1.0]))
    >>> evaluate(qrels, run, ["mrr@10", "P.1,2", "nDCG@10"]).means
    {'mrr@10': 0.5, 'P_1': 0.0, 'P_2': 0.5, 'nDCG@10': 0.6309297535714575}
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import torch

from ..kernels import TIE_POLICIES
from ..kernels.judged import condense
from .columns import dict_qrels, judged_queries
from .diversity import evaluate_diversity, is_diversity_measure
from .extra_measures import EXTRA_FAMILIES, relstrings
from .gains import GainRule, ideal_matrix
from .io import DiversityQrels, DuplicateEntryError, Qrels, Run, read_qrels
from .measures import Measure, parse_measures
from .result import (
    SCORE_PRECISIONS,
    EvaluationResult,
    check_batch_size,
    check_relevance_level,
    check_score_precision,
    run_columns,
    summaries,
)
from .retrieved import RunQueries
from .run_dicts import DictQueries, has_str_ids
from .scores import Batch, family_values, label_lists

__all__ = ["SCORE_PRECISIONS", "EvaluationResult", "evaluate", "tie_policies"]


def tie_policies() -> tuple[str, ...]:
    """The tie policies :func:`evaluate` accepts: trec_eval's ``"trec"`` and the kernel's."""
    return ("trec", *TIE_POLICIES)


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


@contextlib.contextmanager
def _located(qrels: Qrels, run: Run | Mapping):
    """Turns a duplicate found in the arrays into an error naming the file and its lines."""
    try:
        yield
    except DuplicateEntryError as err:
        raise err.located(getattr(run, "path", None) if err.kind == "run" else qrels.path) from None


def _gain_rule(measure: Measure) -> GainRule | None:
    if measure.family == "ndcg_burges":
        return GainRule("exp")
    if measure.family == "nerr":  # its ideal order: the judged grades, best first
        return GainRule()
    if measure.family in ("ndcg", "G", "ndcg_rel", "Rndcg"):
        return GainRule("custom", measure.gains) if measure.gains else GainRule()
    return None


def _check_options(relevance_level: object, ties: object, score_precision: object) -> None:
    check_relevance_level(relevance_level)
    if ties not in tie_policies():
        raise ValueError(f"ties must be one of {', '.join(map(repr, tie_policies()))}, got {ties!r}")
    check_score_precision(score_precision)


def evaluate(
    qrels: Qrels | Mapping | str | os.PathLike,
    run: Run | Mapping,
    metrics: Sequence[str | Measure],
    *,
    relevance_level: int = 1,
    ties: str = "trec",
    score_precision: str = "float64",
    missing_as_zero: bool = False,
    judged_only: bool = False,
    batch_size: int = 2048,
    progress: bool = False,
    num_threads: int | None = 1,
) -> EvaluationResult:
    """Evaluates ``run`` against ``qrels``; see the module docstring for the rules.

    Args:
        qrels: judgements, from :func:`~ignite_ranking.trec.io.read_qrels` (or
            :func:`~ignite_ranking.trec.io.read_diversity_qrels`), a path read by ``read_qrels``,
            or a dict of dicts ``{query id: {document id: grade}}`` (pytrec_eval's form; a query
            with an empty dict is not judged, as pytrec_eval leaves it out); other forms are
            refused with a TypeError (DataFrames go through :mod:`ignite_ranking.ir_measures`).
        run: the run, from :func:`~ignite_ranking.trec.io.read_run`, or a dict of dicts
            ``{query id: {document id: score}}`` (ir_measures' form; with ``str`` ids and
            ``ties="trec"`` it is ranked at its judged documents only, see
            :mod:`~ignite_ranking.trec.run_dicts`; otherwise read as
            :func:`~ignite_ranking.trec.columns.columns` reads it).
        metrics: measure names in trec_eval, ir_measures or ranx syntax (see
            :mod:`ignite_ranking.trec.measures`), e.g. ``["P.5,10", "nDCG@10", "mrr@10"]``.
        relevance_level: a judged document is relevant iff ``grade >= relevance_level``
            (trec_eval's ``-l``, default 1, at least 0) for the measures without their own
            ``rel=``. NDCG's gains do not depend on it (trec_eval's rule).
        ties: ``"trec"`` (trec_eval's order), or a kernel policy (``"first"``, ``"last"``: file
            order among equal scores; see ``ignite_ranking.kernels.TIE_POLICIES``).
        score_precision: ``"float64"`` compares scores as trec_eval 10 does; ``"float32"`` rounds
            them to float32 first, as trec_eval 9.0.8 and earlier and pytrec_eval do.
        missing_as_zero: count qrels queries that the run lacks as 0 (``trec_eval -c``).
        judged_only: compute every measure on the run without its unjudged documents (those
            absent from the qrels or graded -1): trec_eval's ``-J``, Sakai's condensed lists.
            A measure of its own can ask for it alone (``P(judged_only=True)@10``).
        batch_size: at most this many queries per padded batch (fewer when that gives each thread
            several batches).
        progress: show a tqdm progress bar on stderr.
        num_threads: torch intra-op threads (>= 1) while ranking and scoring (restored afterwards);
            None keeps torch's setting. One is the default because each batch's tensor ops are
            too small to repay OpenMP's synchronisation: on a busy 2-core machine, torch's
            default of two threads made evaluation twice as slow.

    Diversity measures (``alpha_nDCG@20``, ``ERR_IA@20``, ``NRBP``, ``P_IA@20``, ``StRecall@20``)
    on :class:`~ignite_ranking.trec.io.DiversityQrels` go to
    :func:`~ignite_ranking.trec.diversity.evaluate_diversity` (ndeval's rules).

    Raises:
        ValueError: an unknown measure, tie policy or precision, duplicates, a score that is not
            a number, or no query to evaluate.
        TypeError: qrels that are not a :class:`~ignite_ranking.trec.io.Qrels`.
    """
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if isinstance(qrels, (str, os.PathLike)):
        qrels = read_qrels(qrels)
    elif isinstance(qrels, Mapping):
        qrels = judged_queries(dict_qrels(qrels))
    if not isinstance(qrels, Qrels):
        raise TypeError(
            "qrels must be a Qrels from read_qrels (a DiversityQrels from read_diversity_qrels for "
            "diversity measures), a path or a dict of dicts {query: {document: grade}}; a DataFrame "
            "or ir_measures records go through the ir_measures provider "
            f"(ignite_ranking.ir_measures), got {type(qrels).__name__}"
        )
    if num_threads is not None and (
        isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)) or num_threads < 1
    ):
        raise ValueError(f"num_threads must be None or an int >= 1, got {num_threads!r}")
    check_batch_size(batch_size)
    if isinstance(qrels, DiversityQrels) or any(map(is_diversity_measure, names)):
        if ties != "trec" or judged_only is not False:
            raise ValueError("diversity measures take ties='trec' (ndeval's order) and no judged_only")
        return evaluate_diversity(
            qrels,
            run,
            names,
            relevance_level=relevance_level,
            score_precision=score_precision,
            missing_as_zero=missing_as_zero,
        )
    asked = parse_measures(metrics)
    _check_options(relevance_level, ties, score_precision)
    if not isinstance(judged_only, bool):
        raise TypeError(f"judged_only must be a bool, got {type(judged_only).__name__}")
    if judged_only:
        asked = [replace(m, judged_only=True) for m in asked]
    texts = [m for m in asked if m.is_text]
    measures = [m for m in asked if not m.is_text]
    condensing = any(m.judged_only for m in asked)
    if condensing and ties == "average":
        raise ValueError(
            "judged-only measures are not defined under ties='average'; use 'trec', 'first' or 'last'"
        )
    listed = [m.name for m in asked if m.family in EXTRA_FAMILIES or m.family == "relstring"]
    if listed and ties not in ("trec", "first", "last"):
        raise ValueError(
            f"measures {listed} need one order of the documents; use ties 'trec', 'first' or "
            f"'last', got {ties!r}"
        )
    for m in measures:
        if m.rel is not None and m.rel < 0:
            raise ValueError(f"measure {m.name!r}: its relevance level must be >= 0, got {m.rel}")
    queries, missing, run_to_qrels, run_tag = _grouped(qrels, run, ties, score_precision, missing_as_zero)
    num_q = len(qrels.qids)
    count = queries.count

    levels = sorted({relevance_level if m.rel is None else m.rel for m in asked})
    num_relevant = {
        level: np.bincount(qrels.qid, weights=qrels.rel >= level, minlength=num_q) for level in levels
    }
    num_nonrelevant = {
        level: np.bincount(qrels.qid, weights=(qrels.rel >= 0) & (qrels.rel < level), minlength=num_q)
        for level in levels
    }
    max_grade = np.zeros(num_q, dtype=np.float64)
    np.maximum.at(max_grade, qrels.qid, np.maximum(qrels.rel, 0).astype(np.float64))
    rules = {rule for rule in map(_gain_rule, measures) if rule is not None}
    ideals = {rule: rule.ideal(qrels) for rule in rules}

    # Evaluated queries, in order of first appearance in the run (its qids' order).
    evaluated = run_to_qrels[run_to_qrels >= 0]
    answered = count > 0
    answered[missing] = False  # ranked the placeholder alone: listed last, once
    evaluated = np.concatenate((evaluated[answered[evaluated]], missing))
    if evaluated.size == 0 and not missing_as_zero:
        raise ValueError("no query of the run is in the qrels; nothing to evaluate")

    max_len = int(count.max()) if count.size else 0
    max_rel = max((int(r.max()) for r in num_relevant.values() if r.size), default=0)
    max_ideal = max((int(i[2].max()) for i in ideals.values() if i[2].size), default=0)
    whole = max(max_len, max_rel, max_ideal, 1)  # covers every ranking and every ideal ranking

    def key_of(m: Measure) -> tuple:
        """(family, level, gain rule, judged only, p, params): the measures scored together."""
        level = relevance_level if m.rel is None else m.rel
        return (m.family, level, _gain_rule(m), m.judged_only, m.p, m.params)

    # key -> ascending cutoffs
    groups: dict[tuple, list[int]] = {}
    for m in measures:
        groups.setdefault(key_of(m), []).append(m.k if m.k is not None else whole)
    groups = {key: sorted(set(ks)) for key, ks in groups.items()}
    ranked_families = [key for key in groups if key[0] not in ("num_q", "num_ret", "num_rel")]
    # A judged-only list needs every retrieved document: its top k may come from any depth.
    # relstring reads its lists through label_lists, which wants every retrieved document
    whole_ranking = any(key[0] == "num_rel_ret" for key in groups) or condensing or bool(texts)
    depth = whole if whole_ranking else max((max(groups[key]) for key in ranked_families), default=1)
    needs_r = any(key[0] == "Rprec" for key in groups)

    def score_batch(qs: np.ndarray) -> tuple[np.ndarray, dict[str, list[str]]]:
        """``(len(qs), len(measures))`` values of the queries ``qs`` (qrels indices), and the
        strings of the string-valued measures."""
        r_max = max(int(num_relevant[level][qs].max()) for level in levels)
        batch_depth = max(depth, r_max) if needs_r else depth
        ranked = queries.ranked(qs, batch_depth, levels, ties, needs_r, num_nonrelevant)
        condensed = {level: condense(ranked[level]) for level in levels} if condensing else {}
        batch = Batch(
            ranked=ranked,
            retrieved=count[qs],
            ideal={rule: ideal_matrix(ideal, qs, whole) for rule, ideal in ideals.items()},
            condensed=condensed,
            max_grade=torch.from_numpy(max_grade[qs]),
        )
        results = {key: family_values(batch, *key[:5], ks, key[5]) for key, ks in groups.items()}
        block = np.empty((len(qs), len(measures)), dtype=np.float64)
        for column, m in enumerate(measures):
            key = key_of(m)
            block[:, column] = results[key][:, groups[key].index(m.k if m.k is not None else whole)]
        strings = {}
        for m in texts:
            if m.family == "relstring":
                strings[m.name] = relstrings(label_lists(batch, relevance_level, m.judged_only), m.params[0])
            else:  # runid
                strings[m.name] = [run_tag] * len(qs)
        return block, strings

    # Batches are ranked and scored on a thread pool, one thread per core (torch and numpy release
    # the GIL there); a few batches per thread keep the threads evenly loaded.
    workers = max(1, (os.cpu_count() or 1) // (num_threads or torch.get_num_threads()))
    size = max(1, min(batch_size, -(-len(evaluated) // (4 * workers))))
    batches = [evaluated[b0 : b0 + size] for b0 in range(0, len(evaluated), size)]
    with _located(qrels, run), _torch_threads(num_threads), ThreadPoolExecutor(max_workers=workers) as pool:
        scored = pool.map(score_batch, batches)
        if progress:
            from tqdm import tqdm

            scored = tqdm(scored, total=len(batches), desc="evaluating", unit="batch", leave=False)
        scored = list(scored)
        out = np.concatenate([np.zeros((0, len(measures))), *(block for block, _ in scored)])

    queries = [qrels.qids[q] for q in evaluated]
    strings = {m.name: [s for _, texts_of in scored for s in texts_of[m.name]] for m in texts}
    if missing.size:  # after scoring the placeholder, trec_eval zeroes num_ret and the measures
        # named exactly utility, relstring, rbp_resid, unj*: with parameters they keep its values
        placeholder = slice(len(evaluated) - len(missing), None)
        for column, m in enumerate(measures):
            if m.family in ("num_ret", "unj") or m.name in ("utility", "rbp_resid"):
                out[placeholder, column] = 0.0
        for m in texts:
            if m.name == "relstring":
                strings[m.name][placeholder] = [""] * len(missing)
    return EvaluationResult(
        means=summaries(measures, out, queries, qrels, missing_as_zero),
        queries=queries,
        values=out,
        metrics=[m.name for m in measures],
        measures=asked,
        texts=strings,
    )


def _grouped(qrels: Qrels, run, ties: str, precision: str, missing_as_zero: bool):
    """``(queries, missing, run_to_qrels, run tag)``: the run's documents grouped by qrels query
    (:class:`RunQueries`, or :class:`DictQueries` for a dict of dicts ranked the trec_eval way),
    the qrels queries that the run lacks when they count (``missing_as_zero``), and the qrels
    index of each run query (-1 where the qrels lack it)."""
    num_q = len(qrels.qids)
    if isinstance(run, Mapping) and not (ties == "trec" and has_str_ids(run)):
        run = run_columns(run)
    run_qids = [str(q) for q in run] if isinstance(run, Mapping) else run.qids
    # Map the run's query ids onto the qrels' and drop queries the qrels do not know.
    qrels_index = {q: i for i, q in enumerate(qrels.qids)}
    run_to_qrels = np.array([qrels_index.get(q, -1) for q in run_qids], dtype=np.int64)
    missing = np.zeros(0, dtype=np.int64)
    if isinstance(run, Mapping):
        if missing_as_zero:
            lengths = np.fromiter(map(len, run.values()), dtype=np.int64, count=len(run))
            answered = np.zeros(num_q, dtype=bool)
            answered[run_to_qrels[(run_to_qrels >= 0) & (lengths > 0)]] = True
            missing = np.flatnonzero(~answered)
        return DictQueries.join(qrels, run, run_to_qrels, missing, precision), missing, run_to_qrels, ""
    mapped = run_to_qrels[run.qid] if len(run) else np.zeros(0, dtype=np.int64)
    keep = mapped >= 0
    rows = slice(None) if keep.all() else np.flatnonzero(keep)
    qid, docno, score = mapped[rows], run.docno[rows], run.score[rows]
    if missing_as_zero:  # trec_eval -c ranks one document outside the pool for each (see evaluate)
        answered = np.zeros(num_q, dtype=bool)
        answered[qid] = True
        missing = np.flatnonzero(~answered)
    if missing.size:  # an empty docno: in no qrels (trec_eval's is "ceci_nest_pas_un_docno")
        qid = np.concatenate((qid, missing))
        docno = np.concatenate((docno, np.zeros(len(missing), dtype=docno.dtype)))
        score = np.concatenate((score, np.ones(len(missing))))
    with _located(qrels, run):
        return RunQueries.group(qrels, qid, docno, score, precision), missing, run_to_qrels, run.tag
