"""The shared options, declared once (metrics/options.py): what each class offers and how a call
is read.

A class offers the options its signature listed before they were declared once: one it does not
offer is refused in Python's words, a positional call means what it meant, and ``_explicit`` (the
options a caller set, which a group's settings do not override) is what the call names.
"""

from __future__ import annotations

import inspect

import pytest
import torch
from metric_zoo import NUM_ITEMS, ZOO, statistics

import ignite_ranking as ir
from ignite_ranking.metrics.options import OPTION_DEFAULTS

SHARED = set(OPTION_DEFAULTS)
CLASSES = sorted(name for name in ZOO if name != "RankingMetrics")

COUNTS_LISTS = {"judged_only", "ignore_zero_hits", "relevance_threshold", "confidence", "aggregation"} | {
    "per_query",
    "empty_target_action",
}
# The shared options each class does not offer.
NOT_OFFERED = {
    "MRR": set(),
    "MAP": set(),
    "NDCG": set(),
    "Precision": set(),
    "Recall": set(),
    "Judged": set(),
    "HitRate": {"judged_only"},
    "RBP": {"judged_only"},
    "RBPResidual": {"judged_only"},
    "ERR": {"judged_only"},
    "NERR": {"judged_only"},
    "RPrecision": {"judged_only"},
    "Bpref": {"judged_only"},
    "AUC": {"judged_only"},
    "GAUC": {
        "judged_only",
        "ignore_zero_hits",
        "confidence",
        "aggregation",
        "per_query",
        "empty_target_action",
    },
    "Novelty": {
        "judged_only",
        "ignore_zero_hits",
        "relevance_threshold",
        "aggregation",
        "empty_target_action",
    },
    "AveragePopularity": {
        "judged_only",
        "ignore_zero_hits",
        "relevance_threshold",
        "aggregation",
        "empty_target_action",
    },
    "LongTailShare": {
        "judged_only",
        "ignore_zero_hits",
        "relevance_threshold",
        "aggregation",
        "empty_target_action",
    },
    "IntraListDiversity": {
        "judged_only",
        "ignore_zero_hits",
        "relevance_threshold",
        "aggregation",
        "empty_target_action",
    },
    "Serendipity": {"judged_only", "aggregation", "empty_target_action"},
    "ExpectedExposure": {"judged_only", "aggregation", "empty_target_action"},
    **{name: COUNTS_LISTS for name in ("Coverage", "GiniIndex", "ShannonEntropy")},
    **{
        name: {"judged_only", "ignore_index"}
        for name in ("AlphaNDCG", "ERRIA", "NRBP", "PrecisionIA", "SubtopicRecall")
    },
}

# Each class's positional parameters, in the order of their signatures before the options were
# declared once (ignite's order where ignite has the metric).
CUTOFF_METRIC = (
    "top_k",
    "ignore_zero_hits",
    "relevance_threshold",
    "output_transform",
    "device",
    "skip_unrolling",
)
SINGLE_VALUE = ("ignore_zero_hits", "relevance_threshold", "output_transform", "device", "skip_unrolling")
TAIL = ("output_transform", "device", "skip_unrolling")
POSITIONAL = {
    **dict.fromkeys(("MRR", "MAP", "Recall", "Judged", "HitRate", "Precision"), CUTOFF_METRIC),
    "NDCG": ("top_k", "ignore_zero_hits", "relevance_threshold", "gain_function", *TAIL),
    "RBP": ("top_k", "p", *CUTOFF_METRIC[1:]),
    "RBPResidual": ("top_k", "p", *CUTOFF_METRIC[1:]),
    "ERR": ("top_k", "max_grade", *CUTOFF_METRIC[1:]),
    "NERR": ("top_k", "max_grade", *CUTOFF_METRIC[1:]),
    **dict.fromkeys(("RPrecision", "Bpref", "AUC"), SINGLE_VALUE),
    "GAUC": ("relevance_threshold", *TAIL),
    "Novelty": ("top_k", "item_popularity", *TAIL),
    "AveragePopularity": ("top_k", "item_popularity", *TAIL),
    "LongTailShare": ("top_k", "tail_items", *TAIL),
    "IntraListDiversity": ("top_k", "item_embeddings", *TAIL),
    "Serendipity": ("top_k", "item_popularity", *CUTOFF_METRIC[1:]),
    "ExpectedExposure": ("top_k", "groups", "patience", *CUTOFF_METRIC[1:]),
    **dict.fromkeys(("Coverage", "GiniIndex", "ShannonEntropy"), ("top_k", "num_items", *TAIL)),
    "AlphaNDCG": ("top_k", "alpha"),
    "ERRIA": ("top_k", "alpha"),
    "NRBP": ("alpha", "beta"),
    "PrecisionIA": ("top_k",),
    "SubtopicRecall": ("top_k",),
}


def _identity(x):
    return x


# A value other than the default for each positional parameter (device: the same device, spelled
# another way), and the attribute that holds it.
OTHER = {
    "top_k": ([2, 3], "top_k"),
    "groups": (statistics().groups, None),  # settings() holds its digest
    "ignore_zero_hits": (False, "ignore_zero_hits"),
    "relevance_threshold": (2.0, "relevance_threshold"),
    "gain_function": ("linear_rank", "gain_function"),
    "output_transform": (_identity, "_output_transform"),
    "device": (torch.device("cpu"), "_device"),
    "skip_unrolling": (True, "_skip_unrolling"),
    "p": (0.7, "p"),
    "max_grade": (3.0, "max_grade"),
    "patience": (0.7, "patience"),
    "alpha": (0.3, "alpha"),
    "beta": (0.6, "beta"),
}


def _required(name: str) -> dict[str, object]:
    """The arguments without a default of class ``name``, by keyword."""
    stats = statistics()
    values = {
        "top_k": [2, 3],
        "item_popularity": stats.popularity,
        "tail_items": stats.tail,
        "item_embeddings": stats.embeddings,
        "num_items": NUM_ITEMS,
    }
    signature = inspect.signature(getattr(ir, name))
    return {p: values[p] for p, param in signature.parameters.items() if param.default is param.empty}


def test_the_tables_name_every_exported_metric():
    assert set(NOT_OFFERED) == set(POSITIONAL) == set(CLASSES)


@pytest.mark.parametrize("name", CLASSES)
def test_each_class_offers_what_it_offered(name):
    cls = getattr(ir, name)
    assert SHARED - cls.options_offered == NOT_OFFERED[name]
    assert set(cls.positional_options) <= cls.options_offered


@pytest.mark.parametrize("name", CLASSES)
def test_an_option_a_class_does_not_offer_is_refused_in_pythons_words(name):
    cls, required = getattr(ir, name), _required(name)
    for option in [*sorted(NOT_OFFERED[name]), "no_such_option"]:
        message = f"{cls.__qualname__}.__init__() got an unexpected keyword argument '{option}'"
        with pytest.raises(TypeError) as refused:
            cls(**required, **{option: OPTION_DEFAULTS.get(option)})
        assert str(refused.value) == message


@pytest.mark.parametrize("name", CLASSES)
def test_an_offered_option_is_taken_and_recorded_as_set(name):
    cls, required = getattr(ir, name), _required(name)
    assert cls(**required)._explicit == frozenset()
    for option in sorted(cls.options_offered & SHARED):
        metric = cls(**required, **{option: OPTION_DEFAULTS[option]})
        assert metric._explicit == {option}


@pytest.mark.parametrize("name", CLASSES)
def test_the_signature_keeps_the_positional_order_and_the_defaults(name):
    cls = getattr(ir, name)
    parameters = inspect.signature(cls).parameters.values()
    positional = tuple(p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD)
    assert positional == POSITIONAL[name]
    keyword = {p.name for p in parameters if p.kind is p.KEYWORD_ONLY}
    assert (SHARED - NOT_OFFERED[name]) - set(positional) <= keyword
    for p in parameters:
        if p.name in SHARED and p.name != "output_transform":
            assert p.default == OPTION_DEFAULTS[p.name], p.name


@pytest.mark.parametrize("name", CLASSES)
def test_a_positional_call_means_the_keyword_call(name):
    cls, required = getattr(ir, name), _required(name)
    order = POSITIONAL[name]
    for count in range(len(required) + 1, len(order) + 1):
        names = order[:count]
        values = [required[n] if n in required else OTHER[n][0] for n in names]
        by_position = cls(*values)
        by_name = cls(**dict(zip(names, values, strict=True)))
        assert by_position.settings() == by_name.settings()
        assert by_position._explicit == by_name._explicit == set(names) & SHARED
        for option in set(names) - set(required):
            value, attribute = OTHER[option]
            if attribute is not None:
                assert getattr(by_position, attribute) == getattr(by_name, attribute) == value


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: ir.MRR(3, False, ignore_zero_hits=True),
            "MRR.__init__() got multiple values for argument 'ignore_zero_hits'",
        ),
        (
            lambda: ir.NDCG([5], True, 1.0, "linear_rank", gain_function="exp_rank"),
            "NDCG.__init__() got multiple values for argument 'gain_function'",
        ),
        (
            lambda: ir.MRR(3, True, 1.0, _identity, "cpu", False, 7),
            "MRR.__init__() takes from 2 to 7 positional arguments but 8 were given",
        ),
        (
            lambda: ir.Coverage([2], 5, _identity, "cpu", False, 7),
            "Coverage.__init__() takes from 3 to 6 positional arguments but 7 were given",
        ),
        (lambda: ir.GAUC(top_k=3), "GAUC.__init__() got an unexpected keyword argument 'top_k'"),
        (lambda: ir.RPrecision(top_k=3), "RPrecision.__init__() got an unexpected keyword argument 'top_k'"),
        (lambda: ir.NRBP(top_k=3), "NRBP.__init__() got an unexpected keyword argument 'top_k'"),
        (lambda: ir.GAUC(max_fpr=0.1), "GAUC.__init__() got an unexpected keyword argument 'max_fpr'"),
    ],
)
def test_a_call_python_would_refuse_is_refused_in_its_words(build, message):
    with pytest.raises(TypeError) as refused:
        build()
    assert str(refused.value) == message


def test_a_group_setting_applies_to_the_members_that_did_not_set_it():
    own, positional, left = ir.MRR([3], relevance_threshold=2.0), ir.MRR([3], True, 2.0), ir.MRR([3])
    group = ir.RankingMetrics(own=own, positional=positional, left=left, relevance_threshold=2.0, ties="last")
    assert [m.relevance_threshold for m in (own, positional, left)] == [2.0, 2.0, 2.0]
    assert own._explicit == {"relevance_threshold"} and left._explicit == frozenset()
    assert group._ranking == left.ranking
    with pytest.raises(ValueError, match=r"metric 'own' sets relevance_threshold=2\.0"):
        ir.RankingMetrics(own=ir.MRR([3], relevance_threshold=2.0), relevance_threshold=3.0)
    with pytest.raises(ValueError, match=r"metric 'positional' sets relevance_threshold=2\.0"):
        ir.RankingMetrics(positional=ir.MRR([3], True, 2.0), relevance_threshold=3.0)
