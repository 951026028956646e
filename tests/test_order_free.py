"""One number at any scale: results equal to the bit (``==``) whatever the batches, their order
and the number of processes.

The same queries are cut into random batches in random orders, on one process and on 2, 3 and 4
real gloo processes (each taking a random share, possibly none), in the dense, flat and
``Retrieved`` forms; every metric's ``compute()`` equals the one-batch, one-process value with
``==``, and so do per-query values (in id order) and the group's confidence intervals. The
kernel of the exact sums is checked against ``math.fsum`` and exact rational arithmetic.
"""

from __future__ import annotations

import math
import socket
from fractions import Fraction

import numpy as np
import pytest
import torch

from ignite_ranking import AUC, MAP, MRR, NDCG, RBP, Bpref, Coverage, RankingMetrics, Recall, Retrieved
from ignite_ranking.kernels.exact_sum import LIMBS, carry, from_floats, limb_means, limb_sums, limb_totals

NUM_QUERIES, NUM_ITEMS, DEPTH = 90, 24, 12
KS = [1, 5, 10, 30]
FORMS = ("dense", "flat", "retrieved")
# the metrics the issue names, each with the forms it takes; "average" ties where they apply
METRICS = {
    "mrr": FORMS,
    "ndcg": FORMS,
    "ndcg_average": ("dense", "flat"),
    "map": FORMS,
    "rbp": FORMS,
    "bpref": FORMS,
    "auc": ("dense",),
    "coverage": ("dense", "retrieved"),
    "group": FORMS,
}


def _make(name: str, per_query: bool = False):
    pq = {"per_query": per_query}
    if name == "group":
        members = {"mrr": MRR(KS), "ndcg": NDCG(KS), "map": MAP(KS), "recall": Recall(KS), "rbp": RBP(KS)}
        return RankingMetrics(members, per_query=per_query, confidence=0.95)
    return {
        "mrr": lambda: MRR(KS, **pq),
        "ndcg": lambda: NDCG(KS, **pq),
        "ndcg_average": lambda: NDCG(KS, ties="average", **pq),
        "map": lambda: MAP(KS, **pq),
        "rbp": lambda: RBP(KS, p=0.8, **pq),
        "bpref": lambda: Bpref(**pq),
        "auc": lambda: AUC(**pq),
        "coverage": lambda: Coverage(KS, num_items=NUM_ITEMS),
    }[name]()


def _data():
    """Scores with many ties, graded labels (some rows without a relevant item), a length per query
    (the flat form's ragged rows) and each query's retrieved ids."""
    rng = np.random.default_rng(19)
    scores = torch.from_numpy(rng.integers(0, 6, size=(NUM_QUERIES, NUM_ITEMS)) / 4.0)
    grades = rng.integers(0, 4, size=(NUM_QUERIES, NUM_ITEMS)) * (rng.random((NUM_QUERIES, NUM_ITEMS)) < 0.3)
    labels = torch.from_numpy(grades)
    lengths = torch.from_numpy(rng.integers(1, NUM_ITEMS + 1, size=NUM_QUERIES))
    order = torch.argsort(scores + torch.from_numpy(rng.random(scores.shape)) / 8, dim=1, descending=True)
    return scores, labels, lengths, order[:, :DEPTH]


DATA = _data()


def _output(form: str, queries: torch.Tensor, keyed: bool):
    """The queries ``queries`` (ids = dataset positions) as one update in ``form``."""
    scores, labels, lengths, retrieved = (t[queries] for t in DATA)
    if form == "dense":
        return (scores, labels, {"query_ids": queries}) if keyed else (scores, labels)
    if form == "flat":
        keep = torch.arange(NUM_ITEMS)[None, :] < lengths[:, None]
        ids = queries[:, None].expand(-1, NUM_ITEMS)
        return scores[keep], labels[keep], ids[keep]
    relevant = torch.where(labels > 0, torch.arange(NUM_ITEMS), -1)
    judged_ids, grades = relevant.sort(dim=1, descending=True).values, labels.sort(dim=1, descending=True)
    return Retrieved(
        retrieved, judged_ids, scores.gather(1, retrieved), grades=grades.values.to(torch.float64)
    )


def _evaluate(name: str, form: str, batches: list[torch.Tensor], per_query: bool):
    # Retrieved batches carry no query ids: their per-query keys are arrival positions, which
    # differ by design with the batch order, so only dense and flat per-query values are compared
    keyed = per_query and name != "coverage" and form != "retrieved"
    metric = _make(name, keyed)
    for queries in batches:
        metric.update(_output(form, queries, keyed))
    result = {"value": metric.compute()}
    if name == "group":  # the intervals are order-free too: exact sums of values and squares
        result["interval"] = metric.interval()
    if keyed:
        found = metric.per_query_values()
        result["keys"] = found.keys.tolist()
        result["per_query"] = {k: v.tolist() for k, v in found.values.items()}
    return result


def _random_batches(rng: np.random.Generator, queries: np.ndarray) -> list[torch.Tensor]:
    """``queries`` in a random order cut at random points (empty batches included)."""
    shuffled = rng.permutation(queries)
    cuts = np.sort(rng.integers(0, len(shuffled) + 1, size=rng.integers(0, 6)))
    return [torch.from_numpy(part.astype(np.int64)) for part in np.split(shuffled, cuts)]


def _cases():
    return [(name, form) for name, forms in METRICS.items() for form in forms]


def _reference(per_query: bool = True):
    everything = [torch.arange(NUM_QUERIES)]
    return {case: _evaluate(*case, everything, per_query) for case in _cases()}


@pytest.fixture(scope="module")
def reference():
    return _reference()


# ------------------------------------------------------------------------------- one process


@pytest.mark.parametrize(("name", "form"), _cases())
def test_any_batches_in_any_order_give_the_same_bits(reference, name, form):
    rng = np.random.default_rng([sorted(METRICS).index(name), FORMS.index(form)])
    for _ in range(4):
        batches = _random_batches(rng, np.arange(NUM_QUERIES))
        assert _evaluate(name, form, batches, per_query=True) == reference[name, form]


# -------------------------------------------------------------------------------- processes


def _shares(world_size: int, seed: int) -> list[np.ndarray]:
    """A random partition of the queries over the ranks (a rank may get none)."""
    rng = np.random.default_rng([world_size, seed])
    owner = rng.integers(0, world_size, size=NUM_QUERIES)
    if world_size > 2:
        owner[owner == world_size - 1] = 0  # the last rank gets no query at all
    return [np.flatnonzero(owner == rank) for rank in range(world_size)]


def _worker(local_rank: int, world_size: int, out_dir: str) -> None:
    import ignite.distributed as idist

    rank = idist.get_rank()
    assert idist.get_world_size() == world_size
    results = {}
    for seed in range(2):
        share = _shares(world_size, seed)[rank]
        rng = np.random.default_rng([world_size, seed, rank])
        for case in _cases():
            results[seed, case] = _evaluate(*case, _random_batches(rng, share), per_query=True)
    torch.save(results, f"{out_dir}/rank{rank}.pt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("world_size", [2, 3])  # with one process: 1, 2 and 3 (4 took 32 s in CI)
def test_any_number_of_processes_gives_the_same_bits(reference, tmp_path, world_size):
    import ignite.distributed as idist

    with idist.Parallel(
        backend="gloo", nproc_per_node=world_size, master_addr="127.0.0.1", master_port=_free_port()
    ) as parallel:
        parallel.run(_worker, world_size, str(tmp_path))
    for rank in range(world_size):
        results = torch.load(tmp_path / f"rank{rank}.pt", weights_only=False)
        for (seed, case), got in results.items():
            assert got == reference[case], (rank, seed, case)


# ------------------------------------------------------------------------------ exact sums


def _values(rng: np.random.Generator, rows: int, columns: int) -> torch.Tensor:
    """Values of every kind a metric gives: in [0, 1], rational, tiny, negative, larger than 1."""
    v = rng.random((rows, columns))
    reciprocal = rng.random(v.shape) < 0.2
    v[reciprocal] = 1.0 / rng.integers(1, 1000, size=int(reciprocal.sum()))
    v[rng.random(v.shape) < 0.05] *= 1e-30
    v[rng.random(v.shape) < 0.1] *= -1
    v[rng.random(v.shape) < 0.05] *= 1e6
    return torch.from_numpy(v)


def test_limb_sums_are_the_exact_sums_of_the_values_rounded_to_2_to_the_minus_64():
    rng = np.random.default_rng(0)
    values = _values(rng, 300, 7)
    got = limb_totals(limb_sums(values))
    for column, total in enumerate(got):
        exact = sum(round(Fraction(v) * 2**64) for v in values[:, column].tolist())
        assert total == exact


@pytest.mark.parametrize("seed", range(5))
def test_limb_sums_do_not_depend_on_grouping_or_order(seed):
    rng = np.random.default_rng(seed)
    values = _values(rng, 500, 5)
    whole = limb_sums(values)
    for _ in range(3):
        permuted = values[torch.from_numpy(rng.permutation(500))]
        total = torch.zeros(5, LIMBS, dtype=torch.int64)
        for part in torch.tensor_split(permuted, np.sort(rng.integers(0, 500, size=7)).tolist()):
            total = carry(total + limb_sums(part))
        assert torch.equal(total, whole)


def test_means_are_within_2_to_the_minus_50_of_the_exact_mean():
    rng = np.random.default_rng(1)
    values = torch.from_numpy(rng.random((2000, 6)))  # values in [0, 1], as most metrics give
    values[:, 0] = 1.0 / torch.arange(1, 2001, dtype=torch.float64)  # reciprocal ranks
    means = limb_means(limb_sums(values), 2000)
    for column, mean in enumerate(means):
        column_values = values[:, column].tolist()
        assert abs(mean - math.fsum(column_values) / 2000) <= 2.0**-50
        exact = sum(Fraction(v) for v in column_values) / 2000
        assert abs(Fraction(mean) - exact) <= Fraction(1, 2**52)


def test_blocks_of_many_columns_and_rows_sum_like_one():
    rng = np.random.default_rng(2)
    values = torch.from_numpy(rng.random((70, 3000)))  # several blocks of columns
    expected = [sum(round(Fraction(v) * 2**64) for v in values[:, c].tolist()) for c in (0, 1234, 2999)]
    got = limb_totals(limb_sums(values))
    assert [got[c] for c in (0, 1234, 2999)] == expected
    assert limb_sums(torch.zeros(0, 3)).tolist() == [[0] * LIMBS] * 3


def test_values_that_are_not_finite_or_too_large_make_the_mean_nan():
    values = torch.tensor([[0.5, 1.0, 3.0, 0.25], [math.nan, math.inf, 2.0**31, -(2.0**30)]])
    means = limb_means(limb_sums(values), 2)
    assert math.isnan(means[0]) and math.isnan(means[1]) and math.isnan(means[2])
    assert means[3] == (0.25 - 2.0**30) / 2


def test_float_totals_of_older_states_convert_exactly():
    totals = torch.tensor([0.0, 0.5, 12345.678, -3.25, 2.0**40 + 0.5, 1e-25], dtype=torch.float64)
    got = limb_totals(from_floats(totals))
    assert got == [round(Fraction(t) * 2**64) for t in totals.tolist()]
    assert limb_totals(from_floats(torch.tensor([math.inf]))) == [None]
