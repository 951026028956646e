"""trec_eval's set, interpolated-precision, inferred and gain-walk measures on ranked label lists.

Each function takes a batch of ranked lists as trec_eval's ``form_res_rels.c`` builds them
(:class:`Lists`: each query's labels in rank order, the judged grade or the negative markers
:data:`~.judgements.NOT_IN_POOL` / :data:`~.judgements.UNJUDGED`, padded past its retrieved
documents) and returns one value per query, computed as the ``m_*.c`` file of trec_eval 10
named in its docstring does, including its conventions for empty lists (0, or NaN where trec_eval
divides 0 by 0). They are vectorised over the batch with numpy; none of them is computed unless
asked for.

References: Yilmaz and Aslam, "Estimating average precision with incomplete and imperfect
judgments", CIKM 2006 (infAP); Jarvelin and Kekalainen, ACM TOIS 20(4), 2002 (the DCG that
``ndcg_rel`` and ``Rndcg`` average); trec_eval 10's measure descriptions (``trec_eval -h -m NAME``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .gains import GainRule
from .judgements import NOT_IN_POOL, UNJUDGED

__all__ = ["EXTRA_FAMILIES", "MIN_GEO_MEAN", "Lists", "extra_values", "relstrings"]

#: trec_eval's floor under the values of gm_map and gm_bpref before their logarithm.
MIN_GEO_MEAN = 1e-5
_INFAP_EPSILON = 1e-5
#: The families computed here (the others are in :mod:`~ignite_ranking.trec.scores`).
EXTRA_FAMILIES = (
    *("iprec_at_recall", "11pt_avg", "Rprec_mult", "relative_P", "infAP", "utility", "binG"),
    *("G", "ndcg_rel", "Rndcg", "set_P", "set_recall", "set_relative_P", "set_map", "set_F"),
    *("num_nonrel_judged_ret", "unj"),
)


@dataclass
class Lists:
    """A batch of ranked lists the trec_eval way.

    Attributes:
        labels: ``(n, width)`` int64 labels in rank order; cells past a row's ``retrieved``
            documents hold a value below every marker.
        retrieved: ``(n,)`` documents in each list.
        num_relevant: ``(n,)`` R, the judged documents of grade >= ``level``.
        level: the relevance level.
    """

    labels: np.ndarray
    retrieved: np.ndarray
    num_relevant: np.ndarray
    level: int

    # The arrays below are computed once per batch and shared by the measures that read them.
    @cached_property
    def relevant(self) -> np.ndarray:
        return self.labels >= self.level

    @cached_property
    def found(self) -> np.ndarray:
        """``(n, width)`` relevant documents in the top 1, 2, ... width."""
        return np.cumsum(self.relevant, axis=1)

    @cached_property
    def num_rel_ret(self) -> np.ndarray:
        return self.relevant.sum(axis=1).astype(np.float64)

    @cached_property
    def best_precision_after(self) -> np.ndarray:
        """``(n, width)`` max precision at the ranks from each rank to the end of the list."""
        ranks = np.arange(1, self.labels.shape[1] + 1)
        valid = ranks[None, :] <= self.retrieved[:, None]
        precision = np.where(valid, self.found / ranks, -np.inf)
        return np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]


def _divide(a, b) -> np.ndarray:
    """``a / b`` elementwise with C's IEEE results (x/0 = inf, 0/0 = NaN), no warnings."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


def _c_nan(values: np.ndarray) -> np.ndarray:
    """NaNs with the sign bit set, as x86's 0/0 gives them in C (printed ``-nan``)."""
    return np.where(np.isnan(values), -np.nan, values) if np.isnan(values).any() else values


def _lround(x: np.ndarray) -> np.ndarray:
    """C's ``lround``: halves away from zero."""
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int64)


def _top(mask: np.ndarray, k: int) -> np.ndarray:
    """Count of true cells in each row's first k columns."""
    return mask[:, :k].sum(axis=1).astype(np.float64)


def _interpolated(lists: Lists, recall: float) -> np.ndarray:
    """m_iprec_at_recall.c: max precision at the ranks from the one of the ``lround(recall*R)``-th
    relevant document on (the first one's for 0); 0 when fewer are retrieved."""
    n, width = lists.labels.shape
    num_rel_ret = lists.num_rel_ret
    cut = _lround(recall * lists.num_relevant)
    target = np.minimum(np.maximum(cut, 1), num_rel_ret)  # the 0-th: from the first one on
    if width:
        # the target-th relevant document's position: the target-th True of each row
        position = (lists.found < target[:, None]).sum(axis=1).clip(max=width - 1)
        at = lists.best_precision_after[np.arange(n), position]
    else:
        at = np.zeros(n)
    at = np.where(num_rel_ret > 0, at, _divide(num_rel_ret, lists.retrieved))
    return _c_nan(np.where(cut > num_rel_ret, 0.0, at))


def _infap(lists: Lists) -> np.ndarray:
    """m_infap.c: AP where documents outside the pool are skipped and pooled-but-unjudged ones
    count as relevant in the proportion of the judged ones above them (Yilmaz and Aslam 2006)."""
    labels, rel = lists.labels, lists.relevant
    nonrel = (labels >= 0) & ~rel
    unjudged = labels == UNJUDGED

    def before(mask):
        return np.cumsum(mask, axis=1) - mask

    rel_b, nonrel_b, unj_b = before(rel), before(nonrel), before(unjudged)
    j = np.arange(labels.shape[1], dtype=np.float64)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel_b + nonrel_b + unj_b) / j) * (
            (rel_b + _INFAP_EPSILON) / (rel_b + nonrel_b + 2 * _INFAP_EPSILON)
        )
    term = np.where(j == 0, 1.0, term)
    total = np.where(rel, term, 0.0).sum(axis=1)
    return np.where(lists.num_relevant > 0, _divide(total, lists.num_relevant), total)


def _bin_g(lists: Lists) -> np.ndarray:
    """m_binG.c: 1/R * sum over relevant retrieved d of 1 / log2(2 + documents above d not relevant)."""
    rel = lists.relevant
    above = np.arange(rel.shape[1])[None, :] - (np.cumsum(rel, axis=1) - rel)
    with np.errstate(divide="ignore"):
        total = np.where(rel, 1.0 / np.log2(2.0 + above), 0.0).sum(axis=1)
    return np.where(rel.any(axis=1), _divide(total, lists.num_relevant), 0.0)


def _padded(ideal: np.ndarray, width: int) -> np.ndarray:
    if ideal.shape[1] >= width:
        return ideal
    return np.pad(ideal, ((0, 0), (0, width - ideal.shape[1])))


def _gains(lists: Lists, rule: GainRule) -> np.ndarray:
    """Each listed document's gain (``gain_init.c``'s get_gain); none past the list."""
    valid = np.arange(lists.labels.shape[1])[None, :] < lists.retrieved[:, None]
    return np.where(valid, rule.of(np.where(valid, lists.labels, 0)), 0.0)


def _g(lists: Lists, rule: GainRule, ideal: np.ndarray) -> np.ndarray:
    """m_G.c: sum over ranks of gain / log2(2 + cost so far - gain so far), where each rank costs
    max(ideal gain at that rank, 1); divided by the total ideal gain."""
    width = max(lists.labels.shape[1], ideal.shape[1])
    gains = _padded(_gains(lists, rule), width)
    ideal = _padded(ideal, width)
    cost = np.cumsum(np.maximum(ideal, 1.0), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(gains != 0, gains / np.log2(2.0 + cost - np.cumsum(gains, axis=1)), 0.0)
    total_ideal = ideal.sum(axis=1)
    return np.where(total_ideal > 0, _divide(terms.sum(axis=1), total_ideal), 0.0)


def _dcg(values: np.ndarray) -> np.ndarray:
    """Inclusive cumulative DCG at each rank."""
    return np.cumsum(values / np.log2(np.arange(2, values.shape[1] + 2))[None, :], axis=1)


def _ndcg_rel(lists: Lists, rule: GainRule, ideal: np.ndarray) -> np.ndarray:
    """m_ndcg_rel.c: NDCG at each retrieved document of positive gain, and DCG at the end /
    ideal DCG for each of the ideal ranking's positive-gain documents not matched, averaged over
    the latter."""
    width = max(lists.labels.shape[1], ideal.shape[1], 1)
    gains = _padded(_gains(lists, rule), width)
    ideal = _padded(ideal, width)
    dcg, idcg = _dcg(gains), _dcg(ideal)
    positive = gains > 0
    total = np.where(positive, _divide(dcg, idcg), 0.0).sum(axis=1)
    num_ideal = (ideal > 0).sum(axis=1)
    with np.errstate(invalid="ignore"):  # 0 * 0 / 0 when there is no ideal gain: trec_eval's NaN
        total = total + _divide((num_ideal - positive.sum(axis=1)) * dcg[:, -1], idcg[:, -1])
    return np.where(total > 0, _divide(total, num_ideal), 0.0)


def _rndcg(lists: Lists, rule: GainRule, ideal: np.ndarray) -> np.ndarray:
    """m_Rndcg.c: NDCG averaged at the ranks where the ideal gain changes (the R levels), and at
    the end of a list longer than the ideal ranking's positive part plus one."""
    width = max(lists.labels.shape[1], ideal.shape[1], 1) + 1
    gains = _padded(_gains(lists, rule), width)
    ideal = _padded(ideal, width)
    dcg, idcg = _dcg(gains), _dcg(ideal)
    num_ideal = (ideal > 0).sum(axis=1)
    # NDCG@b at the boundaries b (1-based): rank b + 1 has another ideal gain than rank b
    change = (ideal[:, 1:] != ideal[:, :-1]) & (ideal[:, :-1] > 0)
    ndcg = _divide(dcg, idcg)[:, :-1]
    total = np.where(change, ndcg, 0.0).sum(axis=1)
    count = change.sum(axis=1).astype(np.float64)
    rows = np.arange(len(gains))
    tail = (lists.retrieved > num_ideal + 1) & (num_ideal > 0)
    last = np.clip(lists.retrieved.astype(np.int64) - 1, 0, width - 1)
    total = total + np.where(tail, _divide(dcg[rows, last], idcg[rows, last]), 0.0)
    count = count + tail
    return _c_nan(np.where(lists.num_relevant > 0, _divide(total, count), 0.0))


def _set_values(lists: Lists, family: str, params: Sequence[float]) -> np.ndarray:
    """m_set_*.c and m_utility.c: measures of the retrieved set, ranks ignored."""
    ret, num_rel, rel_ret = lists.retrieved.astype(np.float64), lists.num_relevant, lists.num_rel_ret
    if family == "set_P":
        return np.where(ret > 0, _divide(rel_ret, ret), 0.0)
    if family == "set_recall":
        return np.where(num_rel > 0, _divide(rel_ret, num_rel), 0.0)
    both = (ret > 0) & (num_rel > 0)
    if family == "set_relative_P":
        return np.where(both, _divide(rel_ret, np.minimum(ret, num_rel)), 0.0)
    if family == "set_map":
        return np.where(both, _divide(rel_ret * rel_ret, ret * num_rel), 0.0)
    if family == "set_F":
        beta = params[0]
        p, r = _divide(rel_ret, ret), _divide(rel_ret, num_rel)
        return np.where(rel_ret > 0, _divide((beta + 1.0) * p * r, beta * p + r), 0.0)
    if family == "utility":  # the collection size (trec_eval -N) is 0, as trec_eval's default
        a, b, c, d = params
        return a * rel_ret + b * (ret - rel_ret) + c * (num_rel - rel_ret) + d * (rel_ret - ret - num_rel)
    # num_nonrel_judged_ret
    return ((lists.labels >= 0) & ~lists.relevant).sum(axis=1).astype(np.float64)


def extra_values(
    lists: Lists,
    family: str,
    cutoffs: Sequence[int],
    params: Sequence[float],
    rule: GainRule | None,
    ideal: np.ndarray | None,
) -> np.ndarray:
    """``(n, len(cutoffs))`` values of one family of :data:`EXTRA_FAMILIES` (one column for the
    families without a cutoff); ``rule`` and ``ideal`` (the ideal gains, best first, of the
    positive part) serve G, ndcg_rel and Rndcg."""
    if family == "relative_P":
        rel, num_rel = lists.relevant, lists.num_relevant
        columns = [np.where(num_rel > 0, _divide(_top(rel, k), np.minimum(k, num_rel)), 0.0) for k in cutoffs]
        return np.stack(columns, axis=1)
    if family == "unj":
        unjudged = (lists.labels == NOT_IN_POOL) | (lists.labels == UNJUDGED)
        return np.stack([_top(unjudged, k) / k for k in cutoffs], axis=1)
    if family == "iprec_at_recall":
        values = _interpolated(lists, params[0])
    elif family == "11pt_avg":
        # added from the last point to the first, as m_11pt_avg.c does (the sum's last bits)
        values = _c_nan(sum(_interpolated(lists, point) for point in reversed(params)) / len(params))
    elif family == "Rprec_mult":
        cut = np.floor(params[0] * lists.num_relevant + 0.9)
        found = np.pad(lists.found, ((0, 0), (1, 0)))
        at = found[np.arange(len(cut)), np.minimum(cut, found.shape[1] - 1).astype(np.int64)]
        values = np.where(cut > 0, _divide(at, cut), 0.0)
    elif family == "infAP":
        values = _infap(lists)
    elif family == "binG":
        values = _bin_g(lists)
    elif family in ("G", "ndcg_rel", "Rndcg"):
        assert rule is not None and ideal is not None
        values = {"G": _g, "ndcg_rel": _ndcg_rel, "Rndcg": _rndcg}[family](lists, rule, ideal)
    else:
        values = _set_values(lists, family, params)
    return values[:, None]


def relstrings(lists: Lists, length: float) -> list[str]:
    """m_relstring.c: each list's first ``length`` grades as characters: the digit, ``>`` above 9,
    ``-`` outside the pool, ``.`` pooled but unjudged, ``<`` any other negative grade."""
    size = max(int(length), 0)
    out = []
    for row, count in zip(lists.labels, lists.retrieved, strict=True):
        chars = []
        for label in row[: min(size, int(count))].tolist():
            if label > 9:
                chars.append(">")
            elif label >= 0:
                chars.append(str(label))
            else:
                chars.append({NOT_IN_POOL: "-", UNJUDGED: "."}.get(label, "<"))
        out.append("".join(chars))
    return out
