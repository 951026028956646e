"""Numbers that would surprise without a word: fractional labels below the threshold warn once,
and an evaluation in which no query counts says how many were seen and why none counted."""

from __future__ import annotations

import warnings

import pytest
import torch
from ignite.engine import Engine
from ignite.exceptions import NotComputableError

from ignite_ranking import AUC, MRR, NDCG, FractionalLabelWarning, RankingMetrics


def _graded(batch: int = 50, num_items: int = 8, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    y_pred = torch.rand(batch, num_items, generator=generator)
    y = torch.randint(0, 3, (batch, num_items), generator=generator).to(torch.float32) / 2  # 0, 0.5, 1
    return y_pred, y


def test_fractional_labels_below_the_threshold_warn_once_per_metric():
    metric = MRR([10])
    with pytest.warns(FractionalLabelWarning, match=r"0\.5 lie between 0 and relevance_threshold=1"):
        metric.update(_graded())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metric.update(_graded(seed=1))
    group = RankingMetrics(mrr=MRR([10]), ndcg=NDCG([10]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluator = Engine(lambda engine, batch: batch)
        group.attach(evaluator, "ranking")
        evaluator.run([_graded(seed=s) for s in range(3)])
    assert [type(w.message) for w in caught].count(FractionalLabelWarning) == 1


@pytest.mark.parametrize(
    ("labels", "threshold"),
    [
        (torch.tensor([[0, 1, 2, 0]]), 1.0),  # integers
        (torch.tensor([[0.0, 1.0, 2.0, 0.0]]), 1.0),  # whole floats
        (torch.tensor([[0.0, 0.5, 1.5, 0.0]]), 0.5),  # fractions at or above the threshold
        (torch.tensor([[0.0, -0.5, 1.0, 0.0]]), 1.0),  # below 0
    ],
)
def test_no_warning_when_the_labels_mean_what_they_say(labels, threshold):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metric = MRR([3], relevance_threshold=threshold)
        metric.update((torch.tensor([[0.1, 0.9, 0.3, 0.2]]), labels))


def test_no_query_counted_says_how_many_were_seen_and_why():
    y_pred, y = _graded(batch=100)
    metric = MRR([10])
    with pytest.warns(FractionalLabelWarning):
        metric.update((y_pred, y.clamp(max=0.5)))
    with pytest.raises(NotComputableError) as error:
        metric.compute()
    message = str(error.value)
    assert "MRR saw 100 queries" in message and "relevance_threshold=1" in message
    assert "largest label seen was 0.5" in message and "ignore_zero_hits=False" in message


def test_the_message_of_a_flat_stream_and_of_auc():
    metric = MRR([3])
    preds, target = torch.tensor([0.3, 0.2, 0.9, 0.1]), torch.tensor([0, 0, 0, 0])
    metric.update((preds, target, torch.tensor([4, 4, 7, 7])))
    with pytest.raises(NotComputableError, match="MRR saw 2 queries, and none had a label >= relevance"):
        metric.compute()
    auc = AUC()
    auc.update((torch.tensor([[0.3, 0.2]]), torch.tensor([[1, 1]])))
    with pytest.raises(NotComputableError, match="none had both a judged item below and one at or above"):
        auc.compute()
    with pytest.raises(NotComputableError, match="at least one query"):
        MRR([1]).compute()


def test_a_bad_row_is_named_by_its_place_in_the_whole_evaluation():
    from ignite_ranking import Retrieved

    metric = MRR([3])
    metric.update(Retrieved(torch.tensor([[1, 2], [3, 4]]), torch.tensor([[1, -1], [2, -1]])))
    with pytest.raises(ValueError, match=r"row 1 of the batch \(query 3 of the evaluation"):
        metric.update(Retrieved(torch.tensor([[1, 2], [3, 4]]), torch.tensor([[1, -1], [2, 2]])))
    group = RankingMetrics(mrr=MRR([3]), ndcg=NDCG([3]))
    with pytest.raises(ValueError, match=r"row 0 of the batch \(query 0 of the evaluation"):
        group.update(Retrieved(torch.tensor([[1, 2]]), torch.tensor([[2, 2]])))
