"""RBP, RBPResidual, ERR, NERR, Bpref, Judged and judged_only metrics on dense batches.

Checked against a brute-force reference written from the definitions (one row at a time,
Python floats, ranks from ``torch.argsort(stable=True)``), on tied scores with a random
``judged`` mask; a group with every measure ranks each batch once; state round trips; two real
gloo processes give what one process gives.
"""

from __future__ import annotations

import math
import socket

import numpy as np
import pytest
import torch
from reference import DEVICES, rank_order, tied_batch

import ignite_ranking as ir
import ignite_ranking.kernels.forms as forms
from ignite_ranking import RankingMetrics, trec

KS = [1, 3, 10]
P = 0.7


def _reference(scores, labels, judged, ties, threshold=1.0, max_grade=4.0):
    """Every value of one row, from the definitions; under the label policies an unjudged item
    ties as a label below every judged one (docs/contract.md)."""
    if ties in ("optimistic", "pessimistic"):
        sign = -1 if ties == "optimistic" else 1
        label = [g if j else -math.inf for g, j in zip(labels, judged, strict=True)]
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], sign * label[i], i))
    else:
        order = rank_order(scores, ties)
    n = len(order)
    grade = [labels[i] for i in order]
    is_judged = [judged[i] for i in order]
    rel = [g >= threshold and j for g, j in zip(grade, is_judged, strict=True)]
    r = sum(1 for g, j in zip(labels, judged, strict=True) if j and g >= threshold)
    big_n = sum(1 for g, j in zip(labels, judged, strict=True) if j and g < threshold)
    out = {}
    for k in KS:
        top = min(k, n)
        out[f"rbp@{k}"] = (1 - P) * sum(P**i for i in range(top) if rel[i])
        unjudged = [i for i in range(top) if not is_judged[i]]
        out[f"rbp_resid@{k}"] = P**top + (1 - P) * sum(P**i for i in unjudged) if unjudged else 0.0
        out[f"judged@{k}"] = sum(is_judged[:top]) / top if top else 0.0

        def err(gs, k=k):
            value, reach = 0.0, 1.0
            for i, (g, rl) in enumerate(gs[:k], 1):
                stop = (2 ** min(g, max_grade) - 1) / 2**max_grade if rl else 0.0
                value += reach * stop / i
                reach *= 1 - stop
            return value

        out[f"err@{k}"] = err(list(zip(grade, rel, strict=True)))
        ideal_grades = sorted(
            (g for g, j in zip(labels, judged, strict=True) if j and g >= threshold), reverse=True
        )
        best = err([(g, True) for g in ideal_grades])
        out[f"nerr@{k}"] = out[f"err@{k}"] / best if best > 0 else 0.0
        # judged-only: the condensed list
        c_rel = [x for x, j in zip(rel, is_judged, strict=True) if j]
        c_grade = [g for g, j in zip(grade, is_judged, strict=True) if j]
        hits = [i for i in range(min(k, len(c_rel))) if c_rel[i]]
        out[f"p_j@{k}"] = len(hits) / k
        out[f"rr_j@{k}"] = 1.0 / (hits[0] + 1) if hits else 0.0
        out[f"ap_j@{k}"] = sum((h + 1) / (i + 1) for h, i in enumerate(hits)) / r if r else 0.0
        dcg = sum((2 ** c_grade[i] - 1) / math.log2(i + 2) for i in hits)
        idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal_grades[:k]))
        out[f"ndcg_j@{k}"] = dcg / idcg if idcg > 0 else 0.0
    total, nonrel_above = 0.0, 0
    for i in range(n):
        if not is_judged[i]:
            continue
        if rel[i]:
            total += 1.0 - min(nonrel_above, r) / min(big_n, r) if nonrel_above else 1.0
        else:
            nonrel_above += 1
    out["bpref"] = total / r if r else 0.0
    return out


def _members(ties="first", **common):
    return {
        "rbp": ir.RBP(KS, p=P, ties=ties, **common),
        "rbp_resid": ir.RBPResidual(KS, p=P, ties=ties, **common),
        "judged": ir.Judged(KS, ties=ties, **common),
        "err": ir.ERR(KS, ties=ties, **common),
        "nerr": ir.NERR(KS, ties=ties, **common),
        "bpref": ir.Bpref(ties=ties, **common),
        "p_j": ir.Precision(KS, judged_only=True, ties=ties, **common),
        "rr_j": ir.MRR(KS, judged_only=True, ties=ties, **common),
        "ap_j": ir.MAP(KS, judged_only=True, ties=ties, **common),
        "ndcg_j": ir.NDCG(KS, judged_only=True, ties=ties, **common),
        "auc": ir.AUC(ties=ties, **common),
    }


def _data(seed, batch=40, num_items=13):
    rng = np.random.default_rng(seed)
    y_pred, y = tied_batch(rng, batch, num_items)
    judged = torch.from_numpy(rng.random((batch, num_items)) < 0.7)
    judged[::5] = True  # some rows fully judged
    return y_pred, y, judged


@pytest.mark.parametrize("ties", ["first", "last", "optimistic", "pessimistic"])
@pytest.mark.parametrize("masked", [True, False])
def test_every_measure_equals_the_reference(ties, masked):
    y_pred, y, judged = _data(1 if masked else 2)
    if not masked:
        judged = torch.ones_like(judged)
    group = RankingMetrics(_members(ties, ignore_zero_hits=False), per_query=True)
    extras = {"judged": judged} if masked else {}
    group.update((y_pred, y, extras) if masked else (y_pred, y))
    got = group.per_query_values().values
    for row in range(y.shape[0]):
        want = _reference(y_pred[row].tolist(), y[row].tolist(), judged[row].tolist(), ties)
        for name, value in want.items():
            assert got[name][row].item() == pytest.approx(value, abs=1e-12), (row, name)


def test_a_group_of_every_measure_ranks_each_batch_once(monkeypatch):
    calls = []
    original = forms.rank_batch

    def counting(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(forms, "rank_batch", counting)
    members = _members()
    members.update(
        mrr=ir.MRR(KS),
        ndcg=ir.NDCG(KS),
        precision=ir.Precision(KS),
        recall=ir.Recall(KS),
        map=ir.MAP(KS),
        hit_rate=ir.HitRate(KS),
        r_precision=ir.RPrecision(),
        gauc=ir.GAUC(),
        coverage=ir.Coverage(KS, num_items=9),
        gini=ir.GiniIndex(KS, num_items=9),
    )
    group = RankingMetrics(members)
    batches = [_data(seed, batch=7, num_items=9) for seed in range(3)]
    for y_pred, y, judged in batches:
        group.update((y_pred, y, {"judged": judged}))
    assert len(calls) == len(batches)
    together = group.compute()
    calls.clear()
    for name, metric in _members().items():  # each alone gives the same values
        for y_pred, y, judged in batches:
            metric.update((y_pred, y, {"judged": judged}))
        value = metric.compute()
        values = value if isinstance(value, list) else [value]
        keys = [f"{name}@{k}" for k in KS] if metric.top_k else [name]
        assert [together[key] for key in keys] == pytest.approx(values, abs=1e-12)


def test_state_round_trip_and_settings():
    y_pred, y, judged = _data(3)
    for name, metric in _members().items():
        metric.update((y_pred[:20], y[:20], {"judged": judged[:20]}))
        saved = metric.state_dict()
        restored = _members()[name]
        restored.load_state_dict(saved)
        for m in (metric, restored):
            m.update((y_pred[20:], y[20:], {"judged": judged[20:]}))
        assert restored.compute() == metric.compute(), name
    assert ir.RBP(KS, p=0.8).settings()["p"] == 0.8
    assert ir.NDCG(KS, judged_only=True).settings()["judged_only"] is True
    with pytest.raises(ValueError, match="other settings"):
        ir.RBP(KS, p=0.5).load_state_dict(ir.RBP(KS, p=0.8).state_dict())
    with pytest.raises(ValueError, match="other settings"):
        ir.NDCG(KS).load_state_dict(ir.NDCG(KS, judged_only=True).state_dict())


def test_bad_masks_and_arguments_are_refused_and_leave_the_state():
    y_pred, y, judged = _data(4, batch=3, num_items=5)
    metric = ir.Bpref()
    metric.update((y_pred, y, {"judged": judged}))
    before = metric.compute()
    with pytest.raises(TypeError, match="judged must be a bool tensor"):
        metric.update((y_pred, y, {"judged": judged.to(torch.int64)}))
    with pytest.raises(ValueError, match="judged must have the shape of y"):
        metric.update((y_pred, y, {"judged": judged[:, :2]}))
    with pytest.raises(ValueError, match="'query_ids' and/or 'judged'"):
        metric.update((y_pred, y, {"mask": judged}))
    sparse_y = y.to_sparse()
    with pytest.raises(ValueError, match="judged masks go with the dense"):
        metric.update((y_pred, sparse_y, {"judged": judged}))
    assert metric.compute() == before
    for bad in (0.0, 1.0, 1.5, "0.5"):
        with pytest.raises(ValueError, match="p"):
            ir.RBP(KS, p=bad)
    with pytest.raises(ValueError, match="max_grade"):
        ir.ERR(KS, max_grade=0)
    with pytest.raises(ValueError, match="average"):
        ir.ERR(KS, ties="average")
    with pytest.raises(ValueError, match="average"):
        ir.MRR(KS, ties="average", judged_only=True)


def test_judged_measures_refuse_average_ties_everywhere(tmp_path):
    """Regression: Judged@k and rbp_resid under ties="average" read the judged items of one
    order of a tied block (its optimistic bound) as if that were the expectation; they refuse
    the policy now, in the metrics, a group, the kernels and the TREC layer."""
    for make in (lambda: ir.Judged(KS, ties="average"), lambda: ir.RBPResidual(KS, ties="average")):
        with pytest.raises(ValueError, match="reads which items of one order are judged"):
            make()
    with pytest.raises(ValueError, match="average"):
        ir.RankingMetrics({"judged": ir.Judged(KS), "mrr": ir.MRR(KS)}, ties="average")
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q 0 a 1\nq 0 b 0\n")
    run.write_text("q Q0 a 1 1.0 t\nq Q0 b 2 1.0 t\nq Q0 c 3 1.0 t\n")  # c unjudged, all tied
    for measure in ("rbp_resid", "Judged@2"):
        with pytest.raises(ValueError, match="not defined under ties='average'"):
            trec.evaluate(trec.read_qrels(qrels), trec.read_run(run), [measure], ties="average")
        assert trec.evaluate(trec.read_qrels(qrels), trec.read_run(run), [measure]).means


def test_without_a_mask_nothing_is_unjudged():
    y_pred, y, _ = _data(5)
    judged, resid = ir.Judged(KS), ir.RBPResidual(KS)
    for m in (judged, resid):
        m.update((y_pred, y))
    assert judged.compute() == [1.0, 1.0, 1.0]
    assert resid.compute() == [0.0, 0.0, 0.0]
    plain, condensed = ir.MAP(KS), ir.MAP(KS, judged_only=True)
    for m in (plain, condensed):
        m.update((y_pred, y))
    assert condensed.compute() == pytest.approx(plain.compute(), abs=1e-15)


# --------------------------------------------------------------------------- two processes


def _group(ignore_zero_hits=True):
    catalog = {"coverage": ir.Coverage(KS, num_items=9), "gini": ir.GiniIndex(KS, num_items=9)}
    return RankingMetrics({**_members(ignore_zero_hits=ignore_zero_hits), "gauc": ir.GAUC(), **catalog})


def _run(batches_of_rank):
    results = {}
    for ignore in (True, False):
        group = _group(ignore)
        for y_pred, y, judged in batches_of_rank:
            group.update((y_pred, y, {"judged": judged}))
        results[ignore] = group.compute()
    return results


def _plan(rank):
    sizes = {0: [(5, 9), (1, 9)], 1: [(3, 9), (6, 9), (2, 9)]}[rank]
    return [_data(10 * rank + i, batch=b, num_items=n) for i, (b, n) in enumerate(sizes)]


def _worker(local_rank: int, out_dir: str) -> None:
    import ignite.distributed as idist

    rank = idist.get_rank()
    results = _run(_plan(rank))
    saved = _group()
    for y_pred, y, judged in _plan(rank):
        saved.update((y_pred, y, {"judged": judged}))
    restored = _group()
    restored.load_state_dict(saved.state_dict())
    results["state"] = restored.compute()
    torch.save(results, f"{out_dir}/rank{rank}.pt")


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    import ignite.distributed as idist

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with idist.Parallel(
        backend="gloo", nproc_per_node=2, master_addr="127.0.0.1", master_port=port
    ) as parallel:
        parallel.run(_worker, str(tmp_path))
    single = _run([b for r in range(2) for b in _plan(r)])
    for rank in range(2):
        got = torch.load(tmp_path / f"rank{rank}.pt", weights_only=False)
        for key in (True, False):
            assert got[key] == pytest.approx(single[key], rel=1e-12, abs=1e-15)
        assert got["state"] == pytest.approx(single[True], rel=1e-12, abs=1e-15)


# --------------------------------------------------------------------------- other input forms


def _without_scores(members):
    return {name: m for name, m in members.items() if name != "auc"}


@pytest.mark.parametrize("form", ["sparse", "retrieved", "retrieved_sparse"])
def test_items_absent_from_the_judgements_are_unjudged_in_every_form(form):
    """Sparse labels and Retrieved judgements give what the dense form gives with the mask
    of the judged entries (stored entries, also of grade 0, are judged)."""
    y_pred, y, judged = _data(6, batch=12, num_items=11)
    dense = RankingMetrics(_without_scores(_members(ignore_zero_hits=False)), per_query=True)
    dense.update((y_pred, y, {"judged": judged}))
    rows, cols = judged.nonzero(as_tuple=True)
    sparse_y = torch.sparse_coo_tensor(torch.stack([rows, cols]), y[rows, cols], y.shape)
    other = RankingMetrics(_without_scores(_members(ignore_zero_hits=False)), per_query=True)
    if form == "sparse":
        other.update((y_pred, sparse_y))
    else:
        ids = torch.arange(y.shape[1]).expand(y.shape[0], -1).contiguous()
        if form == "retrieved":
            width = int(judged.sum(dim=1).max())
            relevant = torch.full((y.shape[0], width), -1, dtype=torch.int64)
            grades = torch.zeros((y.shape[0], width), dtype=torch.float64)
            for r in range(y.shape[0]):
                items = judged[r].nonzero().squeeze(1)
                relevant[r, : len(items)], grades[r, : len(items)] = items, y[r, items]
            other.update(ir.Retrieved(ids, relevant, scores=y_pred, grades=grades))
        else:
            other.update(ir.Retrieved(ids, sparse_y, scores=y_pred))
    want, got = dense.per_query_values().values, other.per_query_values().values
    assert got.keys() == want.keys()
    for name in want:
        assert got[name].tolist() == pytest.approx(want[name].tolist(), abs=1e-12), name


@pytest.mark.parametrize("device", DEVICES)
def test_tensors_on_a_device_give_the_cpu_values(device):
    y_pred, y, judged = _data(13, batch=16, num_items=9)
    on_cpu, on_device = _group(), _group()
    on_cpu.update((y_pred, y, {"judged": judged}))
    on_device.update((y_pred.to(device), y.to(device), {"judged": judged.to(device)}))
    assert on_device.compute() == pytest.approx(on_cpu.compute(), abs=1e-12)


@pytest.mark.parametrize(
    "make", [lambda **kw: ir.Judged(KS, **kw), lambda **kw: ir.RBPResidual(KS, p=P, **kw)]
)
def test_measures_that_score_queries_without_hits_still_leave_them_out(make):
    y_pred, y, judged = _data(14)
    counted, every = make(), make(ignore_zero_hits=False, per_query=True)
    for m in (counted, every):
        m.update((y_pred, y, {"judged": judged}))
    hits = ((y >= 1) & judged).any(dim=1)
    values = torch.stack(list(every.per_query_values().values.values()), dim=1)
    assert not torch.all(values[~hits] == 0)  # such queries do score here
    assert counted.compute() == pytest.approx(values[hits].mean(dim=0).tolist(), abs=1e-12)
