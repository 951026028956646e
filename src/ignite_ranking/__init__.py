"""Exact, fast, distributed ranking metrics for PyTorch-Ignite.

The public names load on first use (:pep:`562`): ``import ignite_ranking.trec`` and the command
line start without ignite, which only the metrics need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _lazy

__version__ = "0.1.0"

__all__ = [
    "AUC",
    "ERR",
    "ERRIA",
    "GAUC",
    "MAP",
    "MRR",
    "NDCG",
    "NERR",
    "NRBP",
    "RBP",
    "AlphaNDCG",
    "AveragePopularity",
    "Bpref",
    "Coverage",
    "ExpectedExposure",
    "FractionalLabelWarning",
    "GiniIndex",
    "HitRate",
    "IntraListDiversity",
    "Judged",
    "LongTailShare",
    "Novelty",
    "PerQuery",
    "Precision",
    "PrecisionIA",
    "RBPResidual",
    "RPrecision",
    "RankingMetric",
    "RankingMetrics",
    "Recall",
    "Retrieved",
    "Serendipity",
    "ShannonEntropy",
    "SubtopicRecall",
    "catalog",
    "distributed",
    "functional",
    "sampled",
]

# Where each public name lives. tests/test_imports.py checks that this table, __all__ and the
# imports for type checkers below name the same things.
__getattr__, __dir__ = _lazy.attach(
    __name__,
    names={
        "Retrieved": ".kernels.forms",
        **{name: ".metrics" for name in __all__ if name[0].isupper() and name != "Retrieved"},
    },
    submodules=("catalog", "distributed", "functional", "sampled"),
)

if TYPE_CHECKING:  # what a type checker and an IDE see; at run time __getattr__ does this
    from . import catalog, distributed, functional, sampled
    from .kernels.forms import Retrieved
    from .metrics import (
        AUC,
        ERR,
        ERRIA,
        GAUC,
        MAP,
        MRR,
        NDCG,
        NERR,
        NRBP,
        RBP,
        AlphaNDCG,
        AveragePopularity,
        Bpref,
        Coverage,
        ExpectedExposure,
        FractionalLabelWarning,
        GiniIndex,
        HitRate,
        IntraListDiversity,
        Judged,
        LongTailShare,
        Novelty,
        PerQuery,
        Precision,
        PrecisionIA,
        RankingMetric,
        RankingMetrics,
        RBPResidual,
        Recall,
        RPrecision,
        Serendipity,
        ShannonEntropy,
        SubtopicRecall,
    )
