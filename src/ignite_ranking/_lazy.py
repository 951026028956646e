"""Public names of a package loaded on first use (:pep:`562`), so that importing the package
imports none of its layers: ``import ignite_ranking.trec`` and the command line start without
ignite, and ``ignite_ranking.sampled.estimate`` without the metrics."""

from __future__ import annotations

import importlib
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
    """
    submodules = frozenset(submodules)

    def __getattr__(name: str) -> Any:
        if name in submodules:
            return importlib.import_module(f".{name}", package)  # binds itself in the package
        source = names.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names, *submodules})

    return __getattr__, __dir__
