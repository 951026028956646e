"""The examples in the package's docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import ignite_ranking

# ``__main__`` runs the command line on import, so it is the one module not imported here.
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(ignite_ranking.__path__, prefix=f"{ignite_ranking.__name__}.")
    if info.name.rpartition(".")[2] != "__main__"
)


@pytest.mark.parametrize("module_name", [ignite_ranking.__name__, *MODULES])
def test_docstring_examples(module_name):
    module = importlib.import_module(module_name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False, report=True
    )
    assert result.failed == 0, (
        f"{result.failed} of {result.attempted} doctest examples failed in {module_name}"
    )


@pytest.mark.parametrize(
    "name", [n for n in ignite_ranking.__all__ if n not in ("functional", "RankingMetric")]
)
def test_every_public_metric_has_a_runnable_example(name):
    obj = getattr(ignite_ranking, name)
    tests = doctest.DocTestFinder(recurse=False).find(obj, name)
    assert any(t.examples for t in tests), f"{name}'s docstring has no example"


def test_the_package_has_docstring_examples_at_all():
    finder = doctest.DocTestFinder()
    total = 0
    for module_name in [ignite_ranking.__name__, *MODULES]:
        module = importlib.import_module(module_name)
        total += sum(len(t.examples) for t in finder.find(module))
    assert total >= 20
