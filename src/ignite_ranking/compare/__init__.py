"""Paired comparison of systems on per-query values: significance tests, intervals, reports.

Needs scipy (and matplotlib for the plot): ``pip install 'ignite-ranking[compare]'``.
"""

from .core import CompareWarning, compare
from .plot import plot_differences
from .report import Comparison, Report
from .stats import ALTERNATIVES, CORRECTIONS, TESTS

__all__ = [
    "ALTERNATIVES",
    "CORRECTIONS",
    "TESTS",
    "CompareWarning",
    "Comparison",
    "Report",
    "compare",
    "plot_differences",
]
