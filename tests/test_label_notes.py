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


def test_labels_that_look_like_scores_ask_whether_y_pred_and_y_were_swapped():
    generator = torch.Generator().manual_seed(0)
    scores = torch.rand(4, 8, generator=generator)
    probabilities = torch.rand(4, 8, generator=generator)  # passed as labels
    with pytest.warns(FractionalLabelWarning) as caught:
        MRR([3]).update((scores, probabilities))
    message = str(caught[0].message)
    assert "look like scores" in message and "Were y_pred and y swapped?" in message
    assert "pass relevance_threshold=0.99" not in message  # no threshold hint fitted to a score
    # grades in [0, 1] with whole 0s and 1s among them keep the graded-relevance hint
    with pytest.warns(FractionalLabelWarning) as caught:
        MRR([3]).update(_graded())
    assert "pass relevance_threshold=0.5" in str(caught[0].message)
    assert "swapped" not in str(caught[0].message)


def test_a_label_just_below_the_threshold_prints_with_enough_digits_to_differ():
    labels = torch.tensor([[0.7, 0.0, 0.2]])  # float32: 0.699999988..., below 0.7
    metric = MRR([3], relevance_threshold=0.7)
    with pytest.warns(FractionalLabelWarning) as caught:
        metric.update((torch.tensor([[0.9, 0.1, 0.5]]), labels))
    message = str(caught[0].message)
    shown = repr(float(labels[0, 0]))
    assert f"labels such as {shown} lie between 0 and relevance_threshold=0.7 " in message
    assert f"pass relevance_threshold={shown} " in message and shown != "0.7"
    # the threshold it suggests does make the label relevant
    fixed = MRR([3], relevance_threshold=float(shown))
    with pytest.warns(FractionalLabelWarning, match=r"labels such as 0\.2000"):  # only the 0.2 is below
        fixed.update((torch.tensor([[0.9, 0.1, 0.5]]), labels))
    assert fixed.compute() == [1.0]
    with pytest.raises(
        NotComputableError, match=rf"relevance_threshold=0\.7 \(the largest label seen was {shown}\)"
    ):
        metric.compute()
