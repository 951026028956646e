"""AUC per query equals sklearn's roc_auc_score; GAUC equals RecBole's definition (reimplemented)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from reference import tied_batch

import ignite_ranking as ir

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def _data(seed, batch=60, num_items=15):
    rng = np.random.default_rng(seed)
    y_pred, y = tied_batch(rng, batch, num_items)
    judged = torch.from_numpy(rng.random((batch, num_items)) < 0.75)
    return y_pred, y, judged


def _sklearn_auc(scores, labels, judged):
    keep = judged
    pos = labels[keep] >= 1
    if pos.all() or not pos.any():
        return None
    # roc_auc_score cannot take +-inf: replace them by values beyond the finite ones, same order
    s = scores[keep].copy()
    finite = s[np.isfinite(s)]
    hi, lo = (finite.max() + 1, finite.min() - 1) if finite.size else (1.0, -1.0)
    s[s == np.inf], s[s == -np.inf] = hi, lo
    return sklearn_metrics.roc_auc_score(pos, s)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("ties", ["first", "last", "optimistic"])
def test_auc_equals_roc_auc_score_per_query(masked, ties):
    y_pred, y, judged = _data(7 if masked else 8)
    if not masked:
        judged = torch.ones_like(judged)
    metric = ir.AUC(ties=ties, per_query=True)
    metric.update((y_pred, y, {"judged": judged}))
    got = metric.per_query_values()
    want = {}
    for row in range(y.shape[0]):
        value = _sklearn_auc(y_pred[row].numpy(), y[row].numpy(), judged[row].numpy())
        if value is not None:
            want[row] = value
    assert got.keys.tolist() == sorted(want)
    assert got.values["auc"].tolist() == pytest.approx([want[r] for r in sorted(want)], abs=1e-12)
    assert metric.compute() == pytest.approx(np.mean(list(want.values())), abs=1e-12)


def _recbole_gauc(scores, labels):
    """RecBole's GAUC: per-user AUC from average ranks, weighted by the user's item count,
    over the users with both positive and negative items."""
    from scipy.stats import rankdata

    total, weight = 0.0, 0
    for s, lab in zip(scores, labels, strict=True):
        pos = lab >= 1
        n_pos, n_items = int(pos.sum()), len(lab)
        n_neg = n_items - n_pos
        if n_pos == 0 or n_neg == 0:
            continue
        ranks = rankdata(s)  # ascending, ties averaged
        auc = (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
        total += auc * n_items
        weight += n_items
    return total / weight


def test_gauc_equals_recbole_definition():
    y_pred, y, _ = _data(9)
    y_pred = y_pred.clamp(-10, 10)  # rankdata takes infinities too; keep it simple
    metric = ir.GAUC()
    metric.update((y_pred[:25], y[:25]))
    metric.update((y_pred[25:], y[25:]))
    assert metric.compute() == pytest.approx(_recbole_gauc(y_pred.numpy(), y.numpy()), abs=1e-12)
    restored = ir.GAUC()
    restored.load_state_dict(metric.state_dict())
    assert restored.compute() == metric.compute()


def test_auc_refuses_average_ties():
    with pytest.raises(ValueError, match="average"):
        ir.AUC(ties="average")
    with pytest.raises(ValueError, match="average"):
        ir.GAUC(ties="average")


def test_auc_with_ignore_index_leaves_those_items_out():
    y_pred, y, _ = _data(10, batch=20, num_items=9)
    y = y.to(torch.int64)
    ignored = torch.from_numpy(np.random.default_rng(3).random(y.shape) < 0.2)
    metric = ir.AUC(per_query=True, ignore_index=-100)
    metric.update((y_pred, torch.where(ignored, -100, y)))
    masked = ir.AUC(per_query=True)
    masked.update((y_pred, y, {"judged": ~ignored}))
    assert metric.per_query_values().values["auc"].tolist() == pytest.approx(
        masked.per_query_values().values["auc"].tolist(), abs=1e-12
    )
