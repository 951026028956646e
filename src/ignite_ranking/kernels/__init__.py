"""Pure tensor functions: check inputs, rank a batch once, score every query. No ignite here."""

from . import auc, beyond, exposure, judged, persistence, scoring
from .batch import GAIN_FUNCTIONS, RankedBatch, check_gain_function
from .forms import Ranking, Retrieved, normalize
from .inputs import (
    ArgumentTypeError,
    check_confidence,
    check_flag,
    check_inputs,
    check_threshold,
    normalize_top_k,
)
from .ranking import TIE_POLICIES, check_ties, rank_batch, top_indices

__all__ = [
    "GAIN_FUNCTIONS",
    "TIE_POLICIES",
    "ArgumentTypeError",
    "RankedBatch",
    "Ranking",
    "Retrieved",
    "auc",
    "beyond",
    "check_confidence",
    "check_flag",
    "check_gain_function",
    "check_inputs",
    "check_threshold",
    "check_ties",
    "exposure",
    "judged",
    "normalize",
    "normalize_top_k",
    "persistence",
    "rank_batch",
    "scoring",
    "top_indices",
]
