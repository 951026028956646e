"""Every input form against a brute-force per-query reference, and against the dense path.

Each query is described as a list of items (score, tie index, label) plus the labels of all its
judged items; ``reference.list_values`` ranks that list by the tie policy (every order of every
tied block for ``"average"``) and applies the contract's formulas, with R and IDCG from the
judged items. The library is fed the same queries in the flat form (cut across updates at random
points), as :class:`~ignite_ranking.Retrieved` ids (padded or sparse judgements, with or without
scores) and as dense scores with sparse labels. Over all tests below, more than 10,000 queries.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from ignite.exceptions import NotComputableError
from reference import METRIC_NAMES, build_metric, list_values

from ignite_ranking import AUC, MRR, NDCG, Bpref, RankingMetrics, Retrieved
from ignite_ranking import functional as F

POLICIES = ("first", "last", "optimistic", "pessimistic", "average")
CUTOFFS = [1, 2, 5, 12]  # 12 is longer than every list: rows shorter than k
NAMES = [*METRIC_NAMES, "ndcg_linear"]
TOL = {"rel": 1e-12, "abs": 1e-12}


def _metric(name, **kwargs):
    if name == "ndcg_linear":
        return build_metric("ndcg", CUTOFFS, "linear_rank", **kwargs)
    return build_metric(name, CUTOFFS, **kwargs)


def _group(**kwargs):
    ignore_index = kwargs.pop("ignore_index", None)
    return RankingMetrics({n: _metric(n, **kwargs) for n in NAMES}, ignore_index=ignore_index)


def _reference(queries, name, threshold, ties):
    """Per-query reference values of ``name`` for ``queries``: [(scores, index, labels, judged)]."""
    metric, gain = ("ndcg", "linear_rank") if name == "ndcg_linear" else (name, "exp_rank")
    top_k = None if metric == "r_precision" else CUTOFFS
    return [list_values(*q, metric, top_k, threshold, ties, gain) for q in queries]


def _mean(values, queries, threshold, ignore_zero_hits):
    counted = [
        v
        for v, q in zip(values, queries, strict=True)
        if not ignore_zero_hits or any(j >= threshold for j in q[3])
    ]
    if not counted:
        return None
    mean = [math.fsum(col) / len(counted) for col in zip(*counted, strict=True)]
    return mean if len(mean) > 1 else mean[0]


def _computed(metric):
    try:
        return metric.compute()
    except NotComputableError:
        return None


def _check_means(feed, queries, threshold, ties, ignore_index=None):
    """Every metric (both ``ignore_zero_hits``) and the group, fed by ``feed(metric)``, against
    the reference means."""
    per_query = {name: _reference(queries, name, threshold, ties) for name in NAMES}
    for ignore_zero_hits in (True, False):
        common = {"ignore_zero_hits": ignore_zero_hits, "relevance_threshold": threshold, "ties": ties}
        if ignore_index is not None:
            common["ignore_index"] = ignore_index
        group = _group(**common)
        feed(group)
        grouped = _computed(group) if any(q[3] for q in queries) or not ignore_zero_hits else None
        for name in NAMES:
            expected = _mean(per_query[name], queries, threshold, ignore_zero_hits)
            metric = _metric(name, **common)
            feed(metric)
            got = _computed(metric)
            if expected is None:
                assert got is None, name
                continue
            assert got == pytest.approx(expected, **TOL), (name, ignore_zero_hits)
            if grouped is not None:
                if isinstance(expected, list):
                    got_group = [grouped[f"{name}@{k}"] for k in CUTOFFS]
                else:
                    got_group = grouped[name]
                assert got_group == pytest.approx(expected, **TOL), ("group", name)
    return per_query


def _check_per_query(output, per_query, threshold, ties, query_ids=None, ignore_index=None):
    for name in NAMES:
        metric, gain = ("ndcg", "linear_rank") if name == "ndcg_linear" else (name, "exp_rank")
        top_k = None if metric == "r_precision" else CUTOFFS
        got = F.per_query(
            output, metric, top_k, threshold, gain_function=gain, ties=ties, ignore_index=ignore_index
        )
        expected = torch.tensor(per_query[name], dtype=torch.float64).reshape(got.values.shape)
        torch.testing.assert_close(got.values, expected, rtol=1e-12, atol=1e-12, msg=name)
        if query_ids is not None:
            assert got.query_ids.tolist() == query_ids


# ------------------------------------------------------------------------------------ random data


def _scores(rng, size, levels):
    scores = rng.integers(0, levels, size=size).astype(np.float64) / 2.0
    special = rng.random(size=size)
    scores[special < 0.08] = np.inf
    scores[(special >= 0.08) & (special < 0.16)] = -np.inf
    return scores


def _labels(rng, size):
    labels = rng.integers(1, 5, size=size).astype(np.float64)
    labels[rng.random(size=size) < 0.6] = 0.0
    if rng.random() < 0.25:
        labels[:] = 0.0
    return labels


def _max_len(ties):
    return 5 if ties == "average" else 14  # every order of every block is enumerated for "average"


# -------------------------------------------------------------------------------------- flat form


def _flat_data(rng, ties, num_queries, ignore_index):
    lengths = rng.integers(1, _max_len(ties) + 1, size=num_queries)
    ids = rng.permutation(10 * num_queries)[:num_queries] - 3 * num_queries  # negative ids too
    preds, target, indexes, queries = [], [], [], []
    levels = int(rng.integers(1, 5))
    for qid, length in zip(ids, lengths, strict=True):
        scores, labels = _scores(rng, length, levels), _labels(rng, length)
        if ignore_index is not None:
            labels[rng.random(size=length) < 0.2] = ignore_index
        preds.append(scores)
        target.append(labels)
        indexes.append(np.full(length, qid))
        kept = [i for i in range(length) if labels[i] != ignore_index]
        if kept:  # a query whose rows are all ignored does not exist
            s, lab = [scores[i] for i in kept], [labels[i] for i in kept]
            queries.append((s, list(range(len(kept))), lab, lab))
    flat = tuple(torch.from_numpy(np.concatenate(a)) for a in (preds, target, indexes))
    return flat, queries, [int(q) for q, s in zip(ids, target, strict=True) if (s != ignore_index).any()]


def _chunks(rng, flat):
    """The flat rows cut at random points (queries cut across updates; some chunks empty)."""
    n = flat[0].shape[0]
    cuts = sorted(rng.integers(0, n + 1, size=int(rng.integers(1, 12))).tolist())
    bounds = [0, *cuts, n]
    return [tuple(t[a:b] for t in flat) for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("ties", POLICIES)
def test_flat_form_equals_the_reference(ties, seed):
    rng = np.random.default_rng([seed, POLICIES.index(ties), 1])
    ignore_index = -100 if seed == 1 else None
    flat, queries, ids = _flat_data(rng, ties, 250 if ties == "average" else 400, ignore_index)
    chunks = _chunks(rng, flat)
    label_dtype = (torch.float64, torch.int64, torch.float32)[seed]
    score_dtype = (torch.float64, torch.float32, torch.float64)[seed]
    chunks = [(p.to(score_dtype), t.to(label_dtype), i) for p, t, i in chunks]
    threshold = (1.0, 2.0, 1.0)[seed]

    def feed(metric):
        for chunk in chunks:
            metric.update(chunk)

    per_query = _check_means(feed, queries, threshold, ties, ignore_index)
    _check_per_query(flat, per_query, threshold, ties, ids, ignore_index)


# ------------------------------------------------------------------------------------ retrieved ids


def _retrieved_data(rng, ties, batch, layout, with_scores, num_items=25):
    k = _max_len(ties) if with_scores else 9
    ids = np.full((batch, k), -1, dtype=np.int64)
    scores = np.zeros((batch, k))
    judged_ids = np.full((batch, 7), -1, dtype=np.int64)
    grades = np.zeros((batch, 7))
    queries = []
    levels = int(rng.integers(1, 4))
    for row in range(batch):
        length = int(rng.integers(0, k + 1))
        ids[row, :length] = rng.permutation(num_items)[:length]
        scores[row] = _scores(rng, k, levels)
        # judged: some retrieved items, some never retrieved; grade 0 is judged non-relevant
        pool = np.concatenate([ids[row, :length], rng.permutation(num_items)])
        pool = list(dict.fromkeys(pool.tolist()))
        count = int(rng.integers(0, 8))
        chosen = [pool[i] for i in sorted(rng.permutation(len(pool))[:count])]
        judged_ids[row, : len(chosen)] = chosen
        grades[row, : len(chosen)] = rng.integers(0, 5, size=len(chosen))
        judged = dict(zip(chosen, grades[row, : len(chosen)].tolist(), strict=True))
        listed = ids[row, :length].tolist()
        queries.append(
            (
                scores[row, :length].tolist() if with_scores else None,
                listed,
                [judged.get(i, 0.0) for i in listed],
                list(judged.values()),
            )
        )
    ids_t = torch.from_numpy(ids)
    if layout == "padded":
        if ties in ("last", "average"):  # wide judgement rows take the sorted lookup
            judged_ids = np.pad(judged_ids, ((0, 0), (0, 64)), constant_values=-1)
            grades = np.pad(grades, ((0, 0), (0, 64)))
        relevant, grades_t = torch.from_numpy(judged_ids), torch.from_numpy(grades)
    else:
        rows, cols = np.nonzero(judged_ids >= 0)
        indices = torch.from_numpy(np.stack([rows, judged_ids[rows, cols]]))
        relevant = torch.sparse_coo_tensor(indices, torch.from_numpy(grades[rows, cols]), (batch, num_items))
        relevant = relevant.coalesce() if layout == "coo" else relevant.to_sparse_csr()
        grades_t = None
    output = Retrieved(ids_t, relevant, torch.from_numpy(scores) if with_scores else None, grades_t)
    return output, queries


def _split_retrieved(output, parts):
    """A Retrieved batch as several smaller ones (rows split)."""
    batch = output.ids.shape[0]
    bounds = np.linspace(0, batch, parts + 1).astype(int)
    out = []
    for a, b in itertools.pairwise(bounds):
        if output.relevant.layout != torch.strided:
            # Sliced from the stored entries, so that explicit zero grades (judged non-relevant) stay.
            coo = output.relevant.to_sparse_coo().coalesce()
            (rows, cols), values = coo.indices(), coo.values()
            keep = (rows >= a) & (rows < b)
            shape = (b - a, output.relevant.shape[1])
            relevant = torch.sparse_coo_tensor(torch.stack([rows[keep] - a, cols[keep]]), values[keep], shape)
            relevant = relevant.coalesce()
            if output.relevant.layout == torch.sparse_csr:
                relevant = relevant.to_sparse_csr()
        else:
            relevant = output.relevant[a:b]
        out.append(
            Retrieved(
                output.ids[a:b],
                relevant,
                None if output.scores is None else output.scores[a:b],
                None if output.grades is None else output.grades[a:b],
            )
        )
    return out


# Without scores the order is given, so one policy of each kind ("first", "average") is enough.
RETRIEVED_CASES = [
    (ties, with_scores, layout)
    for ties in POLICIES
    for with_scores in (True, False)
    for layout in ("padded", "coo", "csr")
    if with_scores or ties in ("first", "average")
]


@pytest.mark.parametrize(("ties", "with_scores", "layout"), RETRIEVED_CASES)
def test_retrieved_ids_equal_the_reference(ties, with_scores, layout):
    rng = np.random.default_rng([POLICIES.index(ties), with_scores, ["padded", "coo", "csr"].index(layout)])
    output, queries = _retrieved_data(rng, ties, 300, layout, with_scores)
    threshold = 2.0 if layout == "coo" else 1.0

    def feed(metric):
        for part in _split_retrieved(output, 3):
            metric.update(part)

    per_query = _check_means(feed, queries, threshold, ties)
    _check_per_query(output, per_query, threshold, ties, list(range(len(queries))))


# ------------------------------------------------------------------------- the same ranking, densely


def _sparse(y, layout, explicit_zeros):
    """``y`` as a sparse tensor; with ``explicit_zeros`` some zero labels are stored too."""
    stored = y != 0
    if explicit_zeros:
        stored |= torch.rand(y.shape, generator=torch.Generator().manual_seed(0)) < 0.2
    rows, cols = stored.nonzero(as_tuple=True)
    coo = torch.sparse_coo_tensor(torch.stack([rows, cols]), y[rows, cols], y.shape).coalesce()
    return coo.to_sparse_csr() if layout == "csr" else coo


def _every_metric(output, ties, threshold=1.0, top_k=CUTOFFS):
    out = {}
    for name in NAMES:
        metric, gain = ("ndcg", "linear_rank") if name == "ndcg_linear" else (name, "exp_rank")
        k = None if metric == "r_precision" else top_k
        out[name] = F.per_query(output, metric, k, threshold, gain_function=gain, ties=ties).values
    return out


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("ties", POLICIES)
def test_sparse_labels_equal_dense_labels(ties, layout):
    rng = np.random.default_rng([POLICIES.index(ties), layout == "csr", 3])
    y_pred = torch.from_numpy(_scores(rng, (400, 30), int(rng.integers(1, 5))))
    y = torch.from_numpy(np.stack([_labels(rng, 30) for _ in range(400)]))
    y_pred = y_pred.to(torch.float32)
    y_sparse = _sparse(y, layout, explicit_zeros=ties == "first")
    for threshold, top_k in ((1.0, CUTOFFS), (2.0, [3, 29, 40])):
        dense = _every_metric((y_pred, y), ties, threshold, top_k)
        sparse = _every_metric((y_pred, y_sparse), ties, threshold, top_k)
        for name in NAMES:
            torch.testing.assert_close(sparse[name], dense[name], rtol=1e-12, atol=1e-12, msg=name)
    # The named functions take sparse labels too.
    for fn in (F.reciprocal_rank, F.ndcg, F.average_precision):
        torch.testing.assert_close(
            fn(y_pred, y_sparse, CUTOFFS, ties=ties), fn(y_pred, y, CUTOFFS, ties=ties)
        )
    torch.testing.assert_close(
        F.r_precision(y_pred, y_sparse, ties=ties), F.r_precision(y_pred, y, ties=ties)
    )
    # Metrics and the group take the sparse form as well.
    for metric in (_group(ties=ties), _metric("ndcg", ties=ties)):
        for cut in (slice(0, 150), slice(150, 400)):
            metric.update((y_pred[cut], _sparse(y[cut], layout, False)))
        expected = _metric("ndcg", ties=ties) if not isinstance(metric, RankingMetrics) else _group(ties=ties)
        expected.update((y_pred, y))
        got, want = metric.compute(), expected.compute()
        assert got == pytest.approx(want, **TOL)


@pytest.mark.parametrize("ties", POLICIES)
def test_absent_judgements_are_unjudged_at_thresholds_up_to_zero(ties):
    """Under a threshold <= 0, an item absent from sparse labels or from a Retrieved batch's
    judgements is unjudged: never relevant, not in R, and in the ideal ranking a gain-0 item
    ahead of the relevant items of negative label; exactly the dense form with a judged mask."""
    rng = np.random.default_rng([POLICIES.index(ties), 4])
    y_pred = torch.from_numpy(_scores(rng, (200, 12), 2))
    y = torch.from_numpy(rng.integers(-2, 3, (200, 12)) * (rng.random((200, 12)) < 0.6)).double()
    judged = y != 0
    ids = torch.arange(12).expand(200, 12).contiguous()
    for threshold, layout in ((0.0, "coo"), (-1.0, "csr")):
        sparse = _sparse(y, layout, False)
        expected = _group(ties=ties, relevance_threshold=threshold)
        expected.update((y_pred, y, {"judged": judged}))
        for output in ((y_pred, sparse), Retrieved(ids, sparse, scores=y_pred)):
            group = _group(ties=ties, relevance_threshold=threshold)
            group.update(output)
            assert group.compute() == pytest.approx(expected.compute(), **TOL)


@pytest.mark.parametrize("ties", POLICIES)
def test_retrieved_items_that_are_not_judged_are_never_relevant(ties):
    """Threshold 0: an unjudged retrieved item has label 0 but is not relevant (R counts the
    judgements only, so recall stays <= 1)."""
    ids = torch.tensor([[7, 3, 9, 4]])
    found = Retrieved(
        ids,
        torch.tensor([[3, 4, 5]]),
        scores=torch.tensor([[4.0, 3.0, 3.0, 1.0]]),
        grades=torch.tensor([[1.0, 0.0, 2.0]]),
    )
    at = {"relevance_threshold": 0.0, "ties": ties}
    values = {n: F.per_query(found, n, [4], **at).values.item() for n in ("recall", "precision", "hit_rate")}
    assert values == {"recall": pytest.approx(2 / 3), "precision": pytest.approx(2 / 4), "hit_rate": 1.0}


@pytest.mark.parametrize("ties", POLICIES)
def test_retrieved_and_flat_equal_the_dense_path_on_the_same_ranking(ties):
    """Every item retrieved (with its score), and every item a flat row: the dense ranking."""
    rng = np.random.default_rng([POLICIES.index(ties), 4])
    batch, num_items = 300, 12
    y_pred = torch.from_numpy(_scores(rng, (batch, num_items), int(rng.integers(1, 5))))
    y = torch.from_numpy(np.stack([_labels(rng, num_items) for _ in range(batch)]))
    dense = _every_metric((y_pred, y), ties)
    # ids in a shuffled order: with scores, ties fall back on the item id as the dense index does
    ids = torch.from_numpy(np.stack([rng.permutation(num_items) for _ in range(batch)]))
    retrieved = Retrieved(ids, _sparse(y, "coo", True), y_pred.gather(1, ids))
    # ids ascending along each row take the path that skips the sort by id
    ascending = torch.arange(num_items).expand(batch, num_items).contiguous()
    in_order = Retrieved(ascending, _sparse(y, "csr", True), y_pred)
    flat = (y_pred.reshape(-1), y.reshape(-1), torch.arange(batch).repeat_interleave(num_items))
    for output in (retrieved, in_order, flat):
        got = _every_metric(output, ties)
        for name in NAMES:
            torch.testing.assert_close(got[name], dense[name], rtol=1e-12, atol=1e-12, msg=name)


def test_dense_ignore_index_equals_the_flat_form():
    rng = np.random.default_rng(5)
    y_pred = torch.from_numpy(_scores(rng, (200, 9), 3))
    y = torch.from_numpy(np.stack([_labels(rng, 9) for _ in range(200)]))
    y[torch.rand(y.shape, generator=torch.Generator().manual_seed(1)) < 0.2] = -1
    flat = (y_pred.reshape(-1), y.reshape(-1), torch.arange(200).repeat_interleave(9))
    for ties in POLICIES:
        for name in NAMES:
            metric, gain = ("ndcg", "linear_rank") if name == "ndcg_linear" else (name, "exp_rank")
            k = None if metric == "r_precision" else CUTOFFS
            kwargs = {"gain_function": gain, "ties": ties, "ignore_index": -1}
            dense = F.per_query((y_pred, y), metric, k, **kwargs)
            got = F.per_query(flat, metric, k, **kwargs)
            torch.testing.assert_close(got.values, dense.values, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------ streams and refusals


def _state(metric):
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in _flatten(metric.state_dict())}


def _flatten(tree, prefix=""):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _flatten(v, f"{prefix}/{k}")
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _flatten(v, f"{prefix}/{i}")
    else:
        yield prefix, tree


def _same_state(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], torch.Tensor):
            assert torch.equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


def _flat(scores, labels, ids):
    return (
        torch.tensor(scores, dtype=torch.float64),
        torch.tensor(labels, dtype=torch.float64),
        torch.tensor(ids, dtype=torch.int64),
    )


@pytest.mark.parametrize("make", [lambda: MRR([1, 3]), lambda: RankingMetrics(mrr=MRR([1, 3]), ndcg=NDCG(3))])
def test_flat_query_cut_across_updates_is_held_back_and_saved(make):
    stream = [
        _flat([0.1, 0.9], [1, 0], [4, 4]),
        _flat([0.5, 0.7, 0.2], [0, 1, 1], [4, 8, 8]),
        _flat([0.3], [1], [8]),
    ]
    whole = make()
    whole.update(tuple(torch.cat(t) for t in zip(*stream, strict=True)))
    metric = make()
    metric.update(stream[0])
    saved = metric.state_dict()  # query 4 is held back: two rows
    resumed = make()
    resumed.load_state_dict(saved)
    for part in stream[1:]:
        resumed.update(part)
    assert resumed.compute() == pytest.approx(whole.compute(), **TOL)
    # query 4 at ranks: 0.9 (label 0), 0.5 (label 0), 0.1 (label 1): RR 1/3; query 8: RR 1
    mrr = (
        resumed.compute()
        if isinstance(resumed, MRR)
        else [resumed.compute()["mrr@1"], resumed.compute()["mrr@3"]]
    )
    assert mrr == pytest.approx([0.5, (1 / 3 + 1) / 2])


@pytest.mark.parametrize("make", [lambda: MRR([1, 3]), lambda: RankingMetrics(mrr=MRR([1, 3]), ndcg=NDCG(3))])
def test_reappearing_query_ids_are_refused_and_state_is_kept(make):
    metric = make()
    metric.update(_flat([0.1, 0.9, 0.3], [1, 0, 1], [4, 4, 7]))  # 7 is held back
    before = _state(metric)
    with pytest.raises(ValueError, match="query 5 reappears"):
        metric.update(_flat([0.2, 0.3, 0.1], [1, 0, 0], [5, 4, 5]))
    _same_state(before, _state(metric))
    with pytest.raises(ValueError, match="query 7 reappears"):
        metric.update(_flat([0.2, 0.3], [1, 0], [5, 7]))
    _same_state(before, _state(metric))
    with pytest.raises(ValueError, match="query 7 is held back"):
        metric.update((torch.rand(2, 3), torch.ones(2, 3)))
    _same_state(before, _state(metric))
    metric.update(_flat([0.2], [0], [7]))  # continuing the held-back query is fine
    metric.compute()
    metric.update((torch.rand(2, 3), torch.ones(2, 3)))  # compute closed the stream


def _retrieved_error(**kwargs):
    base = {
        "ids": torch.tensor([[1, 2, -1], [0, -1, -1]]),
        "relevant": torch.tensor([[1, -1], [3, 2]]),
    }
    base.update(kwargs)
    return Retrieved(**base)


@pytest.mark.parametrize(
    ("output", "error", "pattern"),
    [
        (_retrieved_error(ids=torch.tensor([[1, 1, -1], [0, -1, -1]])), ValueError, "item 1 more than once"),
        (_retrieved_error(ids=torch.tensor([[1, -1, 2], [0, -1, -1]])), ValueError, "padding"),
        (_retrieved_error(ids=torch.tensor([[1, -2, -1], [0, -1, -1]])), ValueError, "-1 for padding"),
        (_retrieved_error(ids=torch.tensor([[1.0, 2.0]])), TypeError, "int64"),
        (_retrieved_error(ids=torch.tensor([[1, 2, -1]])), ValueError, "batch size"),
        (_retrieved_error(relevant=torch.tensor([[1, 1], [3, 2]])), ValueError, "relevant: row 0"),
        (_retrieved_error(grades=torch.ones(2, 3)), ValueError, "grades"),
        (_retrieved_error(scores=torch.tensor([[0.1, math.nan, 0.0], [0.1, 0.0, 0.0]])), ValueError, "NaN"),
        (_retrieved_error(scores=torch.ones(2, 2)), ValueError, "scores"),
        (_retrieved_error(relevant=torch.eye(2, 5).to_sparse()), ValueError, "< num_items=5"),
        (
            _retrieved_error(
                ids=torch.tensor([[1, 7, -1], [0, -1, -1]]), relevant=torch.eye(2, 5).to_sparse()
            ),
            ValueError,
            "< num_items=5",
        ),
        (_flat([0.1, math.nan], [1, 0], [1, 1]), ValueError, "preds must not contain NaN"),
        ((torch.rand(2), torch.ones(2), torch.ones(2)), TypeError, "indexes"),
        ((torch.rand(2), torch.rand(2), torch.zeros(3, dtype=torch.int64)), ValueError, "one length"),
        ((torch.rand(2, 4), torch.eye(2, 5).to_sparse()), ValueError, "same shape"),
        ((torch.rand(2, 5), torch.eye(2, 5).to_sparse_csr().to(torch.complex64)), TypeError, "real labels"),
    ],
)
def test_bad_forms_are_refused_and_state_is_kept(output, error, pattern):
    if "num_items=5" in pattern and output.ids.max() < 5:
        output = Retrieved(torch.tensor([[1, 2, -1], [0, 5, -1]]), output.relevant)
    metric = RankingMetrics(mrr=MRR([1, 3]), ndcg=NDCG(3))
    metric.update((torch.rand(2, 3), torch.ones(2, 3)))
    before = _state(metric)
    with pytest.raises(error, match=pattern):
        metric.update(output)
    _same_state(before, _state(metric))


def test_ignore_index_is_refused_with_sparse_labels():
    with pytest.raises(ValueError, match="ignore_index"):
        MRR(3, ignore_index=-1).update((torch.rand(2, 5), torch.eye(2, 5).to_sparse()))
    with pytest.raises(TypeError, match="ignore_index"):
        MRR(3, ignore_index=1.5)
    with pytest.raises(ValueError, match="ignore_index"):
        RankingMetrics(a=MRR(3, ignore_index=-1), ignore_index=-100)


def test_retrieved_without_any_judgement():
    """A relevant tensor with no column (no query has a judgement) is a batch of zeros."""
    ids = torch.tensor([[3, 1], [2, -1]])
    for relevant in (torch.zeros(2, 0, dtype=torch.int64), torch.full((2, 1), -1)):
        group = _group(ignore_zero_hits=False)
        group.update(Retrieved(ids, relevant, scores=torch.tensor([[1.0, 1.0], [0.5, 0.0]])))
        assert set(group.compute().values()) == {0.0}


def test_rows_of_padding_and_unretrieved_relevant_items_count():
    ids = torch.tensor([[-1, -1], [5, 2], [-1, -1]])
    relevant = torch.tensor([[4, -1], [9, 2], [-1, -1]])
    recall = F.per_query(Retrieved(ids, relevant), "recall", [1, 2])
    assert recall.values.tolist() == [[0.0, 0.0], [0.0, 0.5], [0.0, 0.0]]
    metric = MRR(2, ignore_zero_hits=True)
    metric.update(Retrieved(ids, relevant))
    assert metric.compute() == [0.25]  # query 3 has no relevant item; query 1 found nothing
    empty = Retrieved(torch.zeros(0, 4, dtype=torch.int64), torch.zeros(0, 2, dtype=torch.int64))
    assert F.per_query(empty, "ndcg", 3).values.shape == (0, 1)
    assert F.per_query(_flat([], [], []), "map", [1, 2]).values.shape == (0, 2)


def test_an_engine_feeds_every_form():
    from ignite.engine import Engine

    flat = [_flat([0.1, 0.9], [1, 0], [4, 4]), _flat([0.5, 0.7], [0, 1], [4, 8])]
    retrieved = [Retrieved(torch.tensor([[3, 1], [2, -1]]), torch.tensor([[1], [5]]))]
    for batches, expected in ((flat, (1 / 3 + 1) / 2), (retrieved, 0.5 / 2)):
        evaluator = Engine(lambda engine, batch: batch)
        RankingMetrics(mrr=MRR(3), ndcg=NDCG(3), ignore_index=-1).attach(evaluator, "ranking")
        MRR(3).attach(evaluator, "mrr")
        state = evaluator.run(batches)
        assert state.metrics["mrr@3"] == pytest.approx(expected)
        assert state.metrics["mrr"] == pytest.approx([expected])


def test_the_group_takes_its_members_ignore_index():
    flat = _flat([0.9, 0.5, 0.2], [-1, 0, 1], [3, 3, 3])
    group = RankingMetrics(mrr=MRR(2, ignore_index=-1))
    group.update(flat)
    assert group.compute() == {"mrr@2": 0.5}  # the row labelled -1 is dropped
    with pytest.raises(ValueError, match="share ignore_index"):
        RankingMetrics(a=MRR(2, ignore_index=-1), b=MRR(2))


@pytest.mark.parametrize("ties", POLICIES)
def test_scores_of_padding_are_ignored(ties):
    """FAISS fills the distances of missing results with a sentinel; any value there is ignored."""
    ids = torch.tensor([[4, 2, -1, -1], [1, 3, 0, -1]])
    relevant = torch.tensor([[2, 9], [0, -1]])
    base = torch.tensor([[0.5, 0.5, 0.0, 0.0], [-torch.inf, 0.2, -torch.inf, 0.0]])
    expected = _every_metric(Retrieved(ids, relevant, base), ties)
    for fill in (torch.nan, torch.inf, -torch.inf, 0.5):
        scores = torch.where(ids >= 0, base, torch.tensor(fill))
        got = _every_metric(Retrieved(ids, relevant, scores), ties)
        for name in NAMES:
            torch.testing.assert_close(got[name], expected[name], rtol=0, atol=0)


# ------------------------------------------------------------------------- int32 ids (ScaNN and others)


def _random_retrieved(seed, batch=7, k=6, num_items=40, judged=9):
    rng = np.random.default_rng(seed)
    ids = np.full((batch, k), -1, dtype=np.int64)
    relevant = np.full((batch, judged), -1, dtype=np.int64)
    for row in range(batch):
        found = rng.choice(num_items, rng.integers(0, k + 1), replace=False)
        ids[row, : len(found)] = found
        judgements = rng.choice(num_items, rng.integers(0, judged + 1), replace=False)
        relevant[row, : len(judgements)] = judgements
    scores = torch.from_numpy(rng.integers(0, 3, (batch, k)).astype(np.float32))  # ties
    grades = torch.from_numpy(rng.integers(0, 3, (batch, judged)).astype(np.float64))
    return torch.from_numpy(ids), torch.from_numpy(relevant), scores, grades


@pytest.mark.parametrize("seed", range(3))
def test_int32_retrieved_ids_equal_int64(seed):
    ids, relevant, scores, grades = _random_retrieved(seed)
    for extra in ({}, {"scores": scores}, {"scores": scores, "grades": grades}):
        results = []
        for ids_dtype, relevant_dtype in itertools.product((torch.int64, torch.int32), repeat=2):
            group = _group(ties="average" if "scores" in extra else "first")
            group.update(Retrieved(ids.to(ids_dtype), relevant.to(relevant_dtype), **extra))
            results.append(group.compute())
        assert all(r == results[0] for r in results[1:])
    # With sparse judgements too (their indices are int64 already).
    sparse = torch.zeros(ids.shape[0], 40)
    rows, cols = (relevant >= 0).nonzero(as_tuple=True)
    sparse[rows, relevant[rows, cols]] = 1.0
    one, two = MRR([1, 5]), MRR([1, 5])
    one.update(Retrieved(ids, sparse.to_sparse()))
    two.update(Retrieved(ids.to(torch.int32), sparse.to_sparse()))
    assert one.compute() == two.compute()


def test_int32_flat_indexes_equal_int64():
    rng = np.random.default_rng(4)
    preds = torch.from_numpy(rng.random(60))
    target = torch.from_numpy(rng.integers(0, 3, 60))
    indexes = torch.from_numpy(np.sort(rng.integers(0, 12, 60)))
    results = []
    for dtype in (torch.int64, torch.int32):
        group = _group()
        group.update((preds, target, indexes.to(dtype)))
        results.append(group.compute())
    assert results[0] == results[1]
    assert F.per_query((preds, target, indexes.to(torch.int32)), "mrr", [3]).values.equal(
        F.per_query((preds, target, indexes), "mrr", [3]).values
    )


def test_wrong_id_dtypes_are_still_refused():
    for dtype in (torch.int16, torch.uint8, torch.float32):
        with pytest.raises(TypeError, match="int64 or int32"):
            MRR([1]).update(Retrieved(torch.zeros(1, 2, dtype=dtype), torch.zeros(1, 1, dtype=torch.int64)))


# ------------------------------------------------------------------------- naming the bad query


def test_repeated_relevant_id_names_the_query_of_the_evaluation():
    from ignite_ranking.kernels.forms import Ranking, normalize

    ids = torch.tensor([[7, 3, 9], [4, -1, -1], [1, 2, 3]])
    relevant = torch.tensor([[3, 5], [8, -1], [2, 2]])
    ranking = Ranking(3)
    with pytest.raises(
        ValueError, match=r"Retrieved.relevant: row 2 of the batch lists item 2 more than once"
    ):
        normalize(Retrieved(ids, relevant), ranking)
    with pytest.raises(ValueError, match=r"row 2 of the batch \(query 1002 of the evaluation, from 0\)"):
        normalize(Retrieved(ids, relevant), ranking, first_query=1000)
    with pytest.raises(ValueError, match=r"row 2 of the batch \(query id 'c'\) lists item 2"):
        normalize(Retrieved(ids, relevant), ranking, first_query=1000, query_ids=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"Retrieved.ids: row 1 of the batch \(query id 11\) has padding"):
        normalize(
            Retrieved(torch.tensor([[1, 2], [-1, 3]]), relevant[:2]),
            ranking,
            query_ids=torch.tensor([10, 11]),
        )


def test_the_forms_modules_import_downwards_only():
    """forms -> sources -> candidates, and held -> forms: no module of the forms' split imports one
    that imports it back (any import, at module level or inside a function)."""
    import ast
    import pathlib

    import ignite_ranking.kernels as kernels

    root = pathlib.Path(kernels.__file__).parent
    graph = {}
    for path in root.glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                imported.add(node.module.split(".")[0])
        graph[path.stem] = imported

    def reaches(start, goal, seen=()):
        nexts = graph.get(start, ())
        return any(m == goal or (m not in seen and reaches(m, goal, (*seen, m))) for m in nexts)

    for module in ("forms", "candidates", "sources", "held"):
        assert not reaches(module, module), module
    assert {"sources", "candidates"} <= graph["forms"] and "candidates" in graph["sources"]
    assert "forms" in graph["held"]


@pytest.mark.parametrize(
    ("dtype", "ignore_index", "label"),
    [
        (torch.uint8, -1, 255),  # torch's y == -1 wraps -1 to 255
        (torch.uint8, 256, 0),  # and 256 to 0
        (torch.int8, 2**40, 0),
        (torch.float16, 2049, 2048),  # and rounds 2049 to 2048
        (torch.bfloat16, 257, 256),
        (torch.float32, 2**24 + 1, 2**24),
        (torch.float64, 2**53 + 1, 2**53),
    ],
)
def test_ignore_index_that_no_label_of_the_dtype_holds_leaves_nothing_out(dtype, ignore_index, label):
    """Regression: the labels were compared with ignore_index cast to their dtype (wrapped or
    rounded), so items of another label were dropped; the result must equal the same labels
    with no ignore_index, in every form."""
    scores = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.3, 0.2, 0.9, 0.5]])
    labels = torch.tensor([[label, 0, 1, 0], [0, 1, label, 0]], dtype=torch.float64).to(dtype)

    def group(form, **kwargs):
        members = {"mrr": MRR([1, 3], **kwargs), "ndcg": NDCG([3], **kwargs), "bpref": Bpref(**kwargs)}
        if form != "retrieved":  # AUC reads every item's score
            members["auc"] = AUC(**kwargs)
        return RankingMetrics(members)

    ids = torch.tensor([[0, 1, 2, 3], [2, 3, 0, 1]])
    forms = {
        "dense": (scores, labels),
        "flat": (scores.flatten(), labels.flatten(), torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])),
        "retrieved": Retrieved(ids, ids.clone(), scores.gather(1, ids), grades=labels.gather(1, ids)),
    }
    for form, output in forms.items():
        expected, metric = group(form), group(form, ignore_index=ignore_index)
        expected.update(output)
        metric.update(output)
        assert metric.compute() == expected.compute(), form
