"""TREC files: streaming qrels/run readers and trec_eval-compatible evaluation on the kernel."""

from .diversity import DiversityMeasure, evaluate_diversity, is_diversity_measure
from .evaluate import evaluate, tie_policies
from .io import DiversityQrels, Qrels, Run, open_trec_file, read_diversity_qrels, read_qrels, read_run
from .measures import MEASURE_HELP, Measure, parse_measure, parse_measures
from .result import SCORE_PRECISIONS, EvaluationResult

__all__ = [
    "MEASURE_HELP",
    "SCORE_PRECISIONS",
    "DiversityMeasure",
    "DiversityQrels",
    "EvaluationResult",
    "Measure",
    "Qrels",
    "Run",
    "evaluate",
    "evaluate_diversity",
    "is_diversity_measure",
    "open_trec_file",
    "parse_measure",
    "parse_measures",
    "read_diversity_qrels",
    "read_qrels",
    "read_run",
    "tie_policies",
]
