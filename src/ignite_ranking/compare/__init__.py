"""Paired comparison of systems on per-query values: significance tests, intervals, reports.

Needs scipy (and matplotlib for the plot): ``pip install 'ignite-ranking[compare]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _lazy

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

# Loaded on first use: the command line's parser reads TESTS and CORRECTIONS, nothing else.
# tests/test_imports.py checks that this table, __all__ and the imports below name the same things.
__getattr__, __dir__ = _lazy.attach(
    __name__,
    names={
        "CompareWarning": ".core",
        "compare": ".core",
        "plot_differences": ".plot",
        "Comparison": ".report",
        "Report": ".report",
        "ALTERNATIVES": ".stats",
        "CORRECTIONS": ".stats",
        "TESTS": ".stats",
    },
)

if TYPE_CHECKING:  # what a type checker and an IDE see; at run time __getattr__ does this
    from .core import CompareWarning, compare
    from .plot import plot_differences
    from .report import Comparison, Report
    from .stats import ALTERNATIVES, CORRECTIONS, TESTS
