"""The device path on CPU: the one switch, exact sums and compute in one transfer, the deferred
refusal of NaN input and the device-default warning (issue 35)."""

from __future__ import annotations

import functools
import math
import warnings

import metric_zoo
import numpy as np
import pytest
import torch
from dispatch_counts import counting
from reference import tied_batch as _tied_batch

import ignite_ranking as ir
from ignite_ranking.kernels import backend
from ignite_ranking.kernels.exact_sum import limb_sums
from ignite_ranking.kernels.ranking import top_indices
from ignite_ranking.metrics import devices


@pytest.fixture
def generic(monkeypatch):
    monkeypatch.setenv(backend.KERNELS_VARIABLE, "generic")


def tied_batch(batch, num_items, seed):
    return _tied_batch(np.random.default_rng(seed), batch, num_items)


def _family(ks):
    return {
        "mrr": ir.MRR(ks),
        "ndcg": ir.NDCG(ks),
        "recall": ir.Recall(ks),
        "precision": ir.Precision(ks),
        "hit_rate": ir.HitRate(ks),
        "map": ir.MAP(ks),
    }


def test_the_switch_reads_the_variable(monkeypatch):
    cpu = torch.zeros(1)
    monkeypatch.delenv(backend.KERNELS_VARIABLE, raising=False)
    assert backend.host_tuned(cpu) and backend.host_tuned(torch.device("cpu"))
    assert not backend.host_tuned(torch.device("meta"))
    monkeypatch.setenv(backend.KERNELS_VARIABLE, "generic")
    assert not backend.host_tuned(cpu)
    monkeypatch.setenv(backend.KERNELS_VARIABLE, "fast")
    with pytest.raises(ValueError, match="IGNITE_RANKING_KERNELS must be one of auto, generic, got 'fast'"):
        backend.host_tuned(cpu)


def test_the_stacked_limbs_are_those_of_the_blocked_ones(monkeypatch):
    g = torch.Generator().manual_seed(3)
    halves = torch.randint(-(2**40), 2**40, (64, 3), generator=g).double() * 2.0**-65  # ties at 2**-65
    cases = [torch.rand(300, 5, generator=g, dtype=torch.float64) * 10 - 5, halves, torch.zeros(0, 2)]
    for values in cases:
        monkeypatch.setenv(backend.KERNELS_VARIABLE, "auto")
        expected = limb_sums(values)
        monkeypatch.setenv(backend.KERNELS_VARIABLE, "generic")
        assert torch.equal(limb_sums(values), expected)
    flagged = torch.rand(4, 3, generator=g, dtype=torch.float64)
    flagged[1, 0], flagged[2, 2] = float("nan"), 2.0**31
    assert limb_sums(flagged)[:, -1].tolist() == [1, 0, 1]


@pytest.mark.parametrize("ties", ["first", "last", "average", "optimistic", "pessimistic"])
def test_values_are_bitwise_equal_on_both_paths(monkeypatch, ties):
    """Every value of the family, alone and in a group, on tied batches of every shape the
    oracle tests use (integer labels: the documented exceptions are float exp2 gains and
    average ties over few blocks, docs/performance.md)."""
    results = {}
    for choice in ("auto", "generic"):
        monkeypatch.setenv(backend.KERNELS_VARIABLE, choice)
        out = []
        for seed, (batch, items) in enumerate([(6, 9), (17, 40), (5, 3000)]):
            y_pred, y = tied_batch(batch, items, seed=seed)
            ks = [1, 2, 5, 10, 50]
            group = ir.RankingMetrics(_family(ks), ties=ties)
            group.update((y_pred, y))
            out.append(group.compute())
        results[choice] = out
    assert results["auto"] == results["generic"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("ties", ["first", "last"])
def test_the_dense_refill_ranks_as_a_stable_sort(monkeypatch, dtype, ties):
    """The generic top-k refill of the tied block (no listing) against a stable sort of whole
    rows, and the metrics on it against the host-tuned path, bitwise: heavy ties at the cutoff,
    +-inf and -0.0, rows all tied, k close to and past the row, integer and bool labels."""
    g = torch.Generator().manual_seed(7)
    for num_items, levels in [(37, 3), (300, 8), (300, 10_000), (1000, 2)]:
        scores = torch.randint(0, levels, (9, num_items), generator=g).to(torch.float64) / 8 - 0.5
        special = torch.rand(9, num_items, generator=g)
        scores[special < 0.05] = math.inf
        scores[(special > 0.05) & (special < 0.1)] = -math.inf
        scores[(special > 0.1) & (special < 0.15)] = -0.0
        scores[0] = 1.0  # one row all tied
        scores = scores.to(dtype)
        labels = (torch.rand(9, num_items, generator=g) < 0.2).to(torch.int64)
        labels[1] = 0  # a row without relevant items
        key = scores.to(torch.float64) if ties == "first" else scores.to(torch.float64).flip(1)
        order = torch.argsort(key, dim=1, descending=True, stable=True)
        expected = order if ties == "first" else num_items - 1 - order
        for k in (1, 2, 5, num_items // 5, num_items - 1, num_items + 3):
            results = {}
            for choice in ("auto", "generic"):
                monkeypatch.setenv(backend.KERNELS_VARIABLE, choice)
                top = top_indices(scores, k, ties)
                assert torch.equal(top, expected[:, :k]), (choice, num_items, k)
                group = ir.RankingMetrics(_family(sorted({1, k, 2 * k})), ties=ties)
                group.update((scores, labels))
                group.update((scores, labels.bool()))
                results[choice] = group.compute()
            assert results["auto"] == results["generic"], (num_items, k)


@pytest.mark.parametrize("labels_dtype", [torch.int64, torch.bool, torch.float32, torch.int8])
@pytest.mark.parametrize("ties", ["optimistic", "pessimistic"])
def test_the_label_policies_rank_as_a_stable_sort(monkeypatch, labels_dtype, ties):
    """Both paths' top-k under a label policy against stable sorts of whole rows (by column, then
    label, then score): heavy ties at the cutoff, +-inf scores, rows all tied, labels at the
    dtype's extremes (the generic selection's sentinels) among the tied items, k up to the row."""
    g = torch.Generator().manual_seed(11)
    for num_items, levels in [(37, 3), (300, 8), (300, 10_000), (1000, 2)]:
        scores = torch.randint(0, levels, (9, num_items), generator=g).to(torch.float32) / 8
        special = torch.rand(9, num_items, generator=g)
        scores[special < 0.05] = math.inf
        scores[(special > 0.05) & (special < 0.1)] = -math.inf
        scores[0] = 1.0  # one row all tied
        if labels_dtype == torch.bool:
            labels = torch.rand(9, num_items, generator=g) < 0.3
        else:
            labels = torch.randint(0, 4, (9, num_items), generator=g).to(labels_dtype)
            low, high = (
                (-math.inf, math.inf)
                if labels_dtype.is_floating_point
                else (torch.iinfo(labels_dtype).min, torch.iinfo(labels_dtype).max)
            )
            labels[special < 0.2] = low
            labels[special > 0.8] = high
        by_label = labels.to(torch.float64).argsort(dim=1, descending=ties == "optimistic", stable=True)
        expected = by_label.gather(1, scores.gather(1, by_label).argsort(dim=1, descending=True, stable=True))
        for k in (1, 2, 5, num_items // 5, num_items - 1, num_items + 3):
            for choice in ("auto", "generic"):
                monkeypatch.setenv(backend.KERNELS_VARIABLE, choice)
                top = top_indices(scores, k, ties, labels)
                assert torch.equal(top, expected[:, :k]), (choice, num_items, k)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float16, torch.float64])
def test_ndcg_of_edge_labels_is_bitwise_equal_on_both_paths(monkeypatch, dtype):
    """The device path's stacked gains and sums (ranked and ideal labels in one pass) against the
    host-tuned path: grades past 960 (scaled gains), +-inf labels (a -inf ranked first beside
    such grades too), the largest finite label beside +inf, -0.0, rows without a relevant item
    (whole grades: the exp2 of fractional ones is a documented exception)."""
    g = torch.Generator().manual_seed(9)
    scores = torch.randint(0, 6, (8, 300), generator=g).double() / 8
    labels = torch.randint(0, 5, (8, 300), generator=g) * (torch.rand(8, 300, generator=g) < 0.1)
    labels[1] = 0
    labels[2, :3] = torch.tensor([2000, 1999, 1000])
    labels = labels.to(dtype)
    if dtype.is_floating_point:
        labels[3, :2], labels[4, 5], labels[5, :3], labels[2, 5] = math.inf, -math.inf, -0.0, -math.inf
        scores[2, 5] = scores[4, 5] = 1.0  # ranked first
        labels[6, :2] = torch.tensor([math.inf, torch.finfo(dtype).max])
    for threshold, gain, ties in [
        (1.0, "exp_rank", "first"),
        (0.0, "exp_rank", "last"),
        (2.0, "linear_rank", "first"),
        (0.0, "linear_rank", "optimistic"),
    ]:
        values = {}
        for choice in ("auto", "generic"):
            monkeypatch.setenv(backend.KERNELS_VARIABLE, choice)
            values[choice] = ir.functional.ndcg(scores, labels, [1, 5, 40], threshold, gain, ties=ties)
        assert torch.equal(values["auto"].view(torch.int64), values["generic"].view(torch.int64))


def test_a_loaded_state_is_taken_back_too(generic):
    """A refused update restores the state it found, also after a load replaced the state."""
    batches = [tied_batch(4, 20, seed=s) for s in range(3)]
    for make in (lambda: ir.NDCG([1, 5]), lambda: ir.RankingMetrics(_family([1, 5]))):
        metric, clean = make(), make()
        metric.update(batches[0])
        clean.update(batches[0])
        saved = metric.state_dict()
        metric.update(batches[1])
        metric.load_state_dict(saved)
        for batch in (batches[1], _nan_batch(1), batches[2], _nan_batch(3)):
            metric.update(batch)
        for batch in batches[1:]:
            clean.update(batch)
        members = metric.metrics.values() if isinstance(metric, ir.RankingMetrics) else [metric]
        expected = clean.metrics.values() if isinstance(clean, ir.RankingMetrics) else [clean]
        for got, want in zip(members, expected, strict=True):
            assert torch.equal(got._sum_per_k, want._sum_per_k)
            assert int(got._num_examples) == int(want._num_examples)


def test_compute_reads_the_state_in_one_transfer(generic):
    y_pred, y = tied_batch(8, 50, seed=1)
    mrr, group = ir.MRR([1, 10]), ir.RankingMetrics(_family([1, 10]))
    for metric in (mrr, group):
        metric.update((y_pred, y))
        with counting() as counts:
            metric.compute()
        assert counts.transfers == 1, counts.summary()


def _nan_batch(row: int):
    y_pred, y = tied_batch(4, 20, seed=2)
    y_pred = y_pred.clone()
    y_pred[row, 3] = float("nan")
    return y_pred, y


@pytest.mark.parametrize("make", [lambda: ir.MRR([1, 5]), lambda: ir.RankingMetrics(_family([1, 5]))])
def test_a_nan_batch_is_refused_at_compute_on_the_generic_path(generic, make):
    metric, clean = make(), make()
    good = tied_batch(4, 20, seed=5)
    metric.update(good)
    clean.update(good)
    metric.update(_nan_batch(2))  # no error here: the check ran on the device
    metric.update(good)
    clean.update(good)
    members = metric.metrics.values() if isinstance(metric, ir.RankingMetrics) else [metric]
    expected = clean.metrics.values() if isinstance(clean, ir.RankingMetrics) else [clean]
    for got, want in zip(members, expected, strict=True):
        assert torch.equal(got._sum_per_k, want._sum_per_k)  # the NaN batch added nothing
        assert int(got._num_examples) == int(want._num_examples)
    message = (
        r"y_pred must not contain NaN; mask items with -inf instead\. Found in update 2 since reset, row 2"
    )
    with pytest.raises(ValueError, match=message):
        metric.check()
    with pytest.raises(ValueError, match=message):
        metric.compute()
    metric.reset()
    metric.update(good)
    metric.check()
    once = make()
    once.update(good)
    assert metric.compute() == once.compute()


def test_a_nan_label_is_named_as_a_label(generic):
    y_pred, y = tied_batch(3, 10, seed=4)
    labels = y.to(torch.float32)
    labels[1, 0] = float("nan")
    metric = ir.NDCG([3])
    metric.update((y_pred, labels))
    with pytest.raises(
        ValueError, match=r"y must not contain NaN labels\. Found in update 1 since reset, row 1"
    ):
        metric.compute()


def test_the_record_names_the_first_refused_update_and_its_worst_row(generic):
    """A NaN score outranks a NaN label in the same batch (the host-tuned path's message), the
    first such row is named, and a later refused update does not replace the first."""
    y_pred, y = tied_batch(40, 10, seed=6)
    labels = y.to(torch.float32)
    labels[3, 0] = float("nan")
    scores = y_pred.clone()
    scores[37, 1] = scores[12, 4] = float("nan")
    metric = ir.NDCG([3])
    metric.update((y_pred, y))
    metric.update((y_pred, labels))  # update 2: a NaN label in row 3
    metric.update((scores, labels))  # update 3: NaN scores in rows 12 and 37, a NaN label in row 3
    labels_message = r"^y must not contain NaN labels\. Found in update 2 since reset, row 3 "
    with pytest.raises(ValueError, match=labels_message):
        metric.check()
    metric.reset()
    metric.update((scores, labels))
    metric.update((y_pred, labels))
    scores_message = r"^y_pred must not contain NaN; .* Found in update 1 since reset, row 12 "
    with pytest.raises(ValueError, match=scores_message):
        metric.compute()


def test_the_cpu_path_refuses_at_once(monkeypatch):
    monkeypatch.setenv(backend.KERNELS_VARIABLE, "auto")
    metric = ir.MRR([1, 5])
    with pytest.raises(ValueError, match=r"^y_pred must not contain NaN; mask items with -inf instead\.$"):
        metric.update(_nan_batch(1))
    metric.check()  # nothing deferred


def test_per_query_values_refuse_at_once_on_the_generic_path(generic):
    metric = ir.MRR([1, 5], per_query=True)
    with pytest.raises(ValueError, match=r"^y_pred must not contain NaN; mask items with -inf instead\.$"):
        metric.update(_nan_batch(0))


def test_inputs_on_an_accelerator_with_the_state_on_the_cpu_warn_once(monkeypatch):
    """No accelerator here: the predicate that tells one is made to say yes for CPU tensors."""
    monkeypatch.setattr(devices, "accelerated", lambda tensor: True)
    batch = tied_batch(3, 10, seed=0)
    for metric in (ir.MRR([1]), ir.RankingMetrics(_family([1]))):
        with pytest.warns(ir.DeviceWarning, match=r"device=idist\.device\(\)") as caught:
            metric.update(batch)
            metric.update(batch)
        assert len([w for w in caught if issubclass(w.category, ir.DeviceWarning)]) == 1
    assert issubclass(ir.DeviceWarning, UserWarning)
    monkeypatch.setattr(devices, "accelerated", lambda tensor: tensor.device.type not in ("cpu", "meta"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ir.DeviceWarning)
        ir.MRR([1]).update(batch)


BUDGETS = {"mrr": 60, "ndcg": 60, "group": 150}  # launching ops per update (issue 35)
# Under the label policies too; under "average" the counts are fixed, past the budgets
# (docs/performance.md).
# (rows, items): the batch sizes and row lengths at which every count must be the same.
SHAPES = [(64, 10_000), (64, 100_000), (256, 10_000)]


@functools.cache
def _counted_update(
    name: str, ties: str, num_items: int, eighths: bool, rows: int = 64, float_labels: bool = False
):
    """What the second update of a metric asks of the device (the generic kernels: each test
    that calls this takes the ``generic`` fixture), counted once per case for all the tests."""
    g = torch.Generator().manual_seed(0)
    y_pred = torch.rand(rows, num_items, generator=g)
    if eighths:
        y_pred = (y_pred * 8).floor() / 8
    y = (torch.rand(rows, num_items, generator=g) < 5 / num_items).to(torch.int64)
    if float_labels:  # with +-inf labels, which NDCG's gains must take
        y = y.to(torch.float32)
        y[0, :2], y[1, 3] = math.inf, -math.inf
    makers = {
        "mrr": lambda: ir.MRR([1, 10, 100], ties=ties),
        "ndcg": lambda: ir.NDCG([10, 100], ties=ties),
        "group": lambda: ir.RankingMetrics(_family([1, 10, 100]), ties=ties),
    }
    metric = makers[name]()
    metric.update((y_pred, y))  # a warm-up: what the first update builds once is not counted
    with counting() as counts:
        metric.update((y_pred, y))
    return counts


@pytest.mark.parametrize("name", sorted(BUDGETS))
@pytest.mark.parametrize("eighths", [False, True], ids=["continuous", "eighths"])
@pytest.mark.parametrize("ties", ["first", "last"])
def test_an_update_never_waits_for_the_host(generic, name, eighths, ties):
    narrow, wide = (_counted_update(name, ties, n, eighths) for n in (10_000, 100_000))
    for counts in (narrow, wide):
        assert counts.syncs == 0, counts.summary()
    assert (narrow.ops, narrow.launches) == (wide.ops, wide.launches)


@pytest.mark.parametrize("name", sorted(BUDGETS))
@pytest.mark.parametrize("eighths", [False, True], ids=["continuous", "eighths"])
@pytest.mark.parametrize("ties", ["first", "last"])
def test_an_update_keeps_to_the_launch_budget(generic, name, eighths, ties):
    counts = _counted_update(name, ties, 10_000, eighths)
    assert counts.launches <= BUDGETS[name], counts.summary()


@pytest.mark.parametrize("name", sorted(BUDGETS))
@pytest.mark.parametrize("ties", ["first", "last"])
def test_floating_labels_keep_to_the_launch_budget(generic, name, ties):
    """Floating labels (+-inf among them) add their NaN check, and NDCG's gains two passes for
    the infinite labels; still within the budgets, and never a synchronization."""
    counts = _counted_update(name, ties, 10_000, True, float_labels=True)
    assert counts.syncs == 0, counts.summary()
    assert counts.launches <= BUDGETS[name], counts.summary()


@pytest.mark.parametrize("name", sorted(BUDGETS))
@pytest.mark.parametrize("ties", ["average", "optimistic", "pessimistic"])
def test_the_other_policies_launch_the_same_at_any_size_and_never_wait(generic, name, ties):
    """Under ``ties="average"`` (the block at the cutoff counted in a fixed number of parts of
    the batch) and the label policies (the tied items at the cutoff chosen in static shapes): no
    synchronization, and the same operators and launches whatever the batch size, the row's
    length and the density of the ties; under the label policies, within the budgets."""
    counts = {
        (rows, num_items, eighths): _counted_update(name, ties, num_items, eighths, rows)
        for rows, num_items in SHAPES
        for eighths in (False, True)
    }
    for counted in counts.values():
        assert counted.syncs == 0, counted.summary()
    assert len({(c.ops, c.launches) for c in counts.values()}) == 1, {
        case: c.summary() for case, c in counts.items()
    }
    if ties != "average":
        assert counts[64, 10_000, True].launches <= BUDGETS[name], counts[64, 10_000, True].summary()


def test_the_harness_tells_syncs_from_launches():
    x = torch.arange(12.0).reshape(3, 4)
    with counting() as quiet:
        torch.where(x > 2, x, 0.0).sum(dim=1).view(-1)
    # gt, the scalar 0.0 made a tensor, where, sum; the view launches nothing
    assert (quiet.syncs, quiet.launches, quiet.ops) == (0, 4, 5), quiet.summary()
    with counting() as loud:
        x[x > 2]
        (x > 2).nonzero()
        x.sum().item()
        x.tolist()
        torch.tensor([1, 2])
        torch.bincount(torch.tensor([0, 1]))
    assert loud.syncs == 7, loud.summary()  # index, nonzero, item, tolist, two uploads, bincount


def _subtopic_batch():
    g = torch.Generator().manual_seed(8)
    return torch.rand(6, 40, generator=g), (torch.rand(6, 40, 3, generator=g) < 0.2).to(torch.int64)


@pytest.mark.parametrize(
    "make, batch",
    [
        (lambda: ir.MRR([1, 5, 50], ties="average"), None),
        (lambda: ir.NDCG([1, 5, 50], ties="average"), None),
        (lambda: ir.MAP([1, 5, 50], ties="average"), None),
        (lambda: ir.Precision([1, 5, 500, 600]), None),  # cutoffs past the row: the divided tail
        (lambda: ir.AlphaNDCG([1, 5, 50]), _subtopic_batch),
        (lambda: ir.PrecisionIA([1, 5, 50]), _subtopic_batch),
    ],
)
def test_an_update_uploads_nothing(generic, make, batch):
    """The cutoffs, thresholds and small constants an update needs are cached on the device
    after the first update: no ``torch.tensor`` of Python values per update."""
    data = batch() if batch is not None else tied_batch(16, 300, seed=3)
    metric = make()
    metric.update(data)
    with counting() as counts:
        metric.update(data)
    assert not counts.uploads, counts.summary()


# ------------------------------------------------------------- sparse labels and Retrieved (issue 35)

SPARSE_FORMS = ("coo", "csr")
RETRIEVED_FORMS = ("ids", "ids_wide", "ids_sparse", "ids_scores")
# Syncs per update on the device path: none for sparse labels; for a Retrieved batch one, the
# read of its value checks (ids in range, padding only at a row's end, no id listed twice, no NaN
# score or grade), which the contract refuses at once, naming the row and the item.
FORM_SYNCS = dict.fromkeys(SPARSE_FORMS, 0) | dict.fromkeys(RETRIEVED_FORMS, 1)


def _form_batch(form: str, width: int, rows: int = 64):
    """``rows`` queries of ``width`` items: dense scores with about 5 stored labels a row (graded,
    some judged non-relevant) as COO or CSR, or ``width`` retrieved ids a row (not ascending) from
    a catalog of ``2 * width`` and their judged items: 5 padded ids a row, 12 (past the lookup by
    comparison) or a sparse tensor, with or without scores."""
    g = torch.Generator().manual_seed(0)
    if form in SPARSE_FORMS:
        y_pred = torch.rand(rows, width, generator=g)
        stored = torch.rand(rows, width, generator=g) < 5 / width
        y = torch.where(stored, torch.randint(0, 4, (rows, width), generator=g), 0)
        coo = torch.sparse_coo_tensor(stored.nonzero().T, y[stored], (rows, width)).coalesce()
        return y_pred, coo if form == "coo" else coo.to_sparse_csr()
    catalog = 2 * width
    # A permutation of the catalog per row (7919 is a prime): the first ``width`` are retrieved.
    permutation = (torch.arange(catalog)[None, :] * 7919 + torch.arange(rows)[:, None] * 13) % catalog
    ids = permutation[:, :width]
    m = 12 if form == "ids_wide" else 5
    relevant = permutation[:, [1, 40, width - 1, *range(width + 3, width + 3 + 5 * (m - 3), 5)]]
    grades = torch.randint(0, 3, (rows, m), generator=g)
    if form == "ids_sparse":
        dense = torch.zeros(rows, catalog, dtype=torch.float64).scatter_(1, relevant, grades.double())
        return ir.Retrieved(ids, dense.to_sparse())
    scores = torch.rand(rows, width, generator=g) if form == "ids_scores" else None
    return ir.Retrieved(ids, relevant, scores=scores, grades=grades)


def _counted_form_update(name: str, ties: str, form: str, width: int):
    makers = {
        "mrr": lambda: ir.MRR([1, 10, 100], ties=ties),
        "ndcg": lambda: ir.NDCG([10, 100], ties=ties),
        "group": lambda: ir.RankingMetrics(_family([1, 10, 100]), ties=ties),
    }
    metric, batch = makers[name](), _form_batch(form, width, rows=16)  # 16 rows: quick
    metric.update(batch)  # a warm-up
    with counting() as counts:
        metric.update(batch)
    return counts


@pytest.mark.parametrize("form", [*SPARSE_FORMS, *RETRIEVED_FORMS])
@pytest.mark.parametrize("name", sorted(BUDGETS))
@pytest.mark.parametrize("ties", ["first", "last"])
def test_sparse_labels_and_retrieved_batches_wait_a_fixed_number_of_times(generic, form, name, ties):
    narrow, wide = (_counted_form_update(name, ties, form, n) for n in (10_000, 100_000))
    for counts in (narrow, wide):
        assert counts.syncs == FORM_SYNCS[form], counts.summary()
        assert not counts.uploads, counts.summary()
    assert (narrow.ops, narrow.launches) == (wide.ops, wide.launches)


@pytest.mark.parametrize("name", ["mrr", "ndcg"])
def test_retrieved_lists_shorter_than_the_cutoff_read_once(generic, name):
    """Fewer ids than the cutoff: the positions held are those the rows' relevant items need,
    their most read with the checks (one synchronization all told)."""
    batch = _form_batch("ids", 100)
    short = ir.Retrieved(batch.ids[:, :10], batch.relevant, grades=batch.grades)
    metric = ir.MRR([1, 10, 100]) if name == "mrr" else ir.NDCG([10, 100])
    metric.update(short)
    with counting() as counts:
        metric.update(short)
    assert counts.syncs == 1, counts.summary()


def _form_batches(seed: int) -> list[object]:
    """Sparse labels and Retrieved batches of tied scores, graded labels and short lists."""
    y_pred, y = tied_batch(12, 40, seed=seed)
    g = torch.Generator().manual_seed(seed)
    judged = torch.rand(12, 40, generator=g) < 0.5
    judged[0] = False  # a row without judgements
    coo = torch.sparse_coo_tensor(judged.nonzero().T, y[judged], y.shape).coalesce()
    permutation = torch.argsort(torch.rand(12, 40, generator=g), dim=1)
    ids = permutation[:, :7].clone()
    ids[3, 4:] = -1
    ids[5] = -1  # a row that retrieved nothing
    ascending = torch.where(ids >= 0, ids, 99).sort(dim=1).values.masked_fill(ids < 0, -1)
    relevant = permutation[:, [0, 1, *range(20, 29)]].clone()  # two retrieved, the others not
    relevant[2, 6:] = -1
    grades = torch.randint(0, 4, relevant.shape, generator=g)
    scores = (torch.rand(12, 7, generator=g) * 4).floor() / 4  # heavy ties
    return [
        (y_pred, coo),
        (y_pred.float(), coo.to_sparse_csr()),
        ir.Retrieved(ids, relevant, grades=grades),
        ir.Retrieved(ids, relevant[:, :5], scores=scores, grades=grades[:, :5]),
        ir.Retrieved(ascending.masked_fill(ascending < 0, -1), relevant, scores=scores, grades=grades),
        ir.Retrieved(ids, coo, scores=scores),
    ]


@pytest.mark.parametrize("ties", ["first", "last", "average", "optimistic", "pessimistic"])
@pytest.mark.parametrize("ignore_index", [None, 2])
def test_sparse_and_retrieved_values_are_bitwise_equal_on_both_paths(monkeypatch, ties, ignore_index):
    """The family alone and in a group, and R-Precision, on each form, cutoffs past the lists."""
    results = {}
    for choice in ("auto", "generic"):
        monkeypatch.setenv(backend.KERNELS_VARIABLE, choice)
        out = []
        for seed in (0, 1):
            for position, batch in enumerate(_form_batches(seed)):
                sparse_labels = isinstance(batch, tuple)
                if sparse_labels and ignore_index is not None:
                    continue  # refused with sparse labels
                metrics = _family([1, 2, 5, 10, 50]) | {"r_precision": ir.RPrecision()}
                group = ir.RankingMetrics(metrics, ties=ties, ignore_index=ignore_index)
                if sparse_labels:  # an empty batch first: nothing to refuse, nothing added
                    group.update((batch[0][:0], torch.zeros(0, 40).to_sparse()))
                group.update(batch)
                group.update(batch)
                out.append((seed, position, group.compute()))
        results[choice] = out
    assert results["auto"] == results["generic"]


_ITEM_LISTS = {metric_zoo.SPARSE, metric_zoo.RETRIEVED}
_LIST_VARIANTS = [(n, v) for n, v in metric_zoo.variants() if _ITEM_LISTS & set(v.forms)]


@pytest.mark.parametrize(("label", "variant"), _LIST_VARIANTS, ids=[n for n, _ in _LIST_VARIANTS])
def test_every_metric_on_sparse_and_retrieved_batches_is_bitwise_equal_on_both_paths(
    monkeypatch, label, variant
):
    results = {}
    for choice in ("auto", "generic"):
        monkeypatch.setenv(backend.KERNELS_VARIABLE, choice)
        out = []
        for form in sorted(_ITEM_LISTS & set(variant.forms)):
            for seed in (0, 1):
                for batch in metric_zoo.batches_of(form, seed):
                    metric = variant.make(metric_zoo.KS)
                    metric.update(batch)
                    out.append(repr(metric_zoo.outcome(metric)))  # repr: NaN equals NaN
        results[choice] = out
    assert results["auto"] == results["generic"]


def _nan_sparse_batch(where: str):
    y_pred, y = tied_batch(4, 30, seed=9)
    y_pred, labels = y_pred.clone(), y.clone()
    if where == "score":
        y_pred[2, 5] = math.nan
    else:
        labels[1, 3] = math.nan
    return y_pred, labels.to_sparse()


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("score", r"^y_pred must not contain NaN; mask items with -inf instead\."),
        ("label", r"^y must not contain NaN labels\."),
    ],
)
def test_nan_in_sparse_labels_is_refused_at_compute_on_the_generic_path(monkeypatch, where, message):
    """As a dense batch's (docs/contract.md): the host refuses at once; the device path adds
    nothing and names the update and row at ``compute()``, or refuses at once per query."""
    good = (tied_batch(4, 30, seed=1)[0], tied_batch(4, 30, seed=1)[1].to_sparse())
    monkeypatch.setenv(backend.KERNELS_VARIABLE, "auto")
    with pytest.raises(ValueError, match=message + "$"):
        ir.MRR([1, 5]).update(_nan_sparse_batch(where))
    monkeypatch.setenv(backend.KERNELS_VARIABLE, "generic")
    metric, clean = ir.RankingMetrics(_family([1, 5])), ir.RankingMetrics(_family([1, 5]))
    metric.update(good)
    clean.update(good)
    metric.update(_nan_sparse_batch(where))  # no error here
    for got, want in zip(metric.metrics.values(), clean.metrics.values(), strict=True):
        assert torch.equal(got._sum_per_k, want._sum_per_k)  # the NaN batch added nothing
    row = 2 if where == "score" else 1
    with pytest.raises(ValueError, match=message + f" Found in update 2 since reset, row {row} "):
        metric.compute()
    with pytest.raises(ValueError, match=message + "$"):
        ir.MRR([1, 5], per_query=True).update(_nan_sparse_batch(where))


@pytest.mark.parametrize("choice", ["auto", "generic"])
def test_a_retrieved_batch_with_two_faults_names_the_first_on_both_paths(monkeypatch, choice):
    """The checks read together still refuse with the host's first error: a value check (a
    repeated id) before a shape check (the scores') that fails too."""
    monkeypatch.setenv(backend.KERNELS_VARIABLE, choice)
    bad = ir.Retrieved(torch.tensor([[1, 1, -1], [0, -1, -1]]), torch.tensor([[1], [0]]), torch.ones(2, 2))
    with pytest.raises(ValueError, match=r"row 0 of the batch .* lists item 1 more than once"):
        ir.MRR([1, 3]).update(bad)
