"""TREC files: streaming qrels/run readers and trec_eval-compatible evaluation on the kernel."""

from .evaluate import METRIC_HELP, EvaluationResult, MetricSpec, evaluate, parse_metric, tie_policies
from .io import Qrels, Run, open_trec_file, read_qrels, read_run

__all__ = [
    "METRIC_HELP",
    "EvaluationResult",
    "MetricSpec",
    "Qrels",
    "Run",
    "evaluate",
    "open_trec_file",
    "parse_metric",
    "read_qrels",
    "read_run",
    "tie_policies",
]
