"""Paired comparison of systems on per-query values: significance tests, intervals, reports.

Needs scipy (and matplotlib for the plot): ``pip install 'ignite-ranking[compare]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _lazy

__getattr__, __dir__, __all__ = _lazy.attach_listed(__name__, __file__)

# The public names, written once: what a type checker and an IDE see, and what _lazy.attach_listed
# reads to load each on first use and to build __all__. ``A as A`` marks a re-export of a typed
# package; isort would split such imports one name a line.
# isort: off
if TYPE_CHECKING:
    from .core import CompareWarning as CompareWarning, compare as compare
    from .plot import plot_differences as plot_differences
    from .report import Comparison as Comparison, Report as Report
    from .stats import ALTERNATIVES as ALTERNATIVES, CORRECTIONS as CORRECTIONS, TESTS as TESTS
# isort: on
