"""Public names of a package loaded on first use (:pep:`562`), so that importing the package
imports none of its layers: ``import ignite_ranking.trec`` and the command line start without
ignite, and ``ignite_ranking.sampled.estimate`` without the metrics."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def attach(
    package: str, names: Mapping[str, str], submodules: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: the package's ``__name__``.
        names: each public name and the module, relative to ``package``, that defines it.
        submodules: public submodules, imported when first read as attributes.

    Returns:
        ``(__getattr__, __dir__)``: the first imports the module behind a name the first time it
        is read and keeps the value in the package, so that later reads do not come back here.
        Any other submodule is imported when read as an attribute too, as when the package
        imported them all (``ignite_ranking.metrics.base``); ``__dir__`` lists only the public
        ones.
    """
    submodules = frozenset(submodules)

    def __getattr__(name: str) -> Any:
        source = names.get(name)
        if source is not None:
            value = getattr(importlib.import_module(source, package), name)
            setattr(sys.modules[package], name, value)
            return value
        if name in submodules or (
            not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None
        ):
            return importlib.import_module(f".{name}", package)  # binds itself in the package
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names, *submodules})

    return __getattr__, __dir__
