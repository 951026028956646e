"""TREC files: streaming qrels/run readers and trec_eval-compatible evaluation on the kernel."""

from .evaluate import SCORE_PRECISIONS, EvaluationResult, evaluate, tie_policies
from .io import Qrels, Run, open_trec_file, read_qrels, read_run
from .measures import MEASURE_HELP, Measure, parse_measure, parse_measures

__all__ = [
    "MEASURE_HELP",
    "SCORE_PRECISIONS",
    "EvaluationResult",
    "Measure",
    "Qrels",
    "Run",
    "evaluate",
    "open_trec_file",
    "parse_measure",
    "parse_measures",
    "read_qrels",
    "read_run",
    "tie_policies",
]
