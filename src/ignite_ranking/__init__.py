"""Exact, fast, distributed ranking metrics for PyTorch-Ignite.

The public names load on first use (:pep:`562`): ``import ignite_ranking.trec`` and the command
line start without ignite, which only the metrics need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _lazy

__version__ = "0.1.0"


__getattr__, __dir__, __all__ = _lazy.attach_listed(__name__, __file__)

# The public names, written once: what a type checker and an IDE see, and what _lazy.attach_listed
# reads to load each on first use and to build __all__. ``A as A`` marks a re-export of a typed
# package; isort would split such imports one name a line.
# isort: off
if TYPE_CHECKING:
    from . import (
        catalog as catalog,
        distributed as distributed,
        functional as functional,
        retrieval as retrieval,
        sampled as sampled,
    )
    from .kernels.forms import Retrieved as Retrieved
    from .metrics import (
        AUC as AUC,
        ERR as ERR,
        ERRIA as ERRIA,
        GAUC as GAUC,
        MAP as MAP,
        MRR as MRR,
        NDCG as NDCG,
        NERR as NERR,
        NRBP as NRBP,
        RBP as RBP,
        AlphaNDCG as AlphaNDCG,
        AveragePopularity as AveragePopularity,
        Bpref as Bpref,
        Coverage as Coverage,
        ExpectedExposure as ExpectedExposure,
        DeviceWarning as DeviceWarning,
        FractionalLabelWarning as FractionalLabelWarning,
        GiniIndex as GiniIndex,
        HitRate as HitRate,
        IntraListDiversity as IntraListDiversity,
        Judged as Judged,
        LongTailShare as LongTailShare,
        Novelty as Novelty,
        PerQuery as PerQuery,
        Precision as Precision,
        PrecisionIA as PrecisionIA,
        RankingMetric as RankingMetric,
        RankingMetrics as RankingMetrics,
        RBPResidual as RBPResidual,
        Recall as Recall,
        RPrecision as RPrecision,
        Serendipity as Serendipity,
        ShannonEntropy as ShannonEntropy,
        SubtopicRecall as SubtopicRecall,
    )
# isort: on
