"""Public names of a package loaded on first use (:pep:`562`), so that importing the package
imports none of its layers: ``import ignite_ranking.trec`` and the command line start without
ignite, and ``ignite_ranking.sampled.estimate`` without the metrics.

A lazy package writes each public name once, in its ``if TYPE_CHECKING:`` block, as the
re-export ``from .module import Name as Name`` (``from . import sub as sub`` for a submodule):
type checkers and IDEs read those imports (the ``as`` form marks a re-export of a typed
package), and :func:`attach_listed` reads the same block at import time to build the table that
loads each name and ``__all__``.
"""

from __future__ import annotations

import ast
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


def _all_order(name: str) -> tuple[int, str]:
    """The order ruff keeps ``__all__`` in (RUF022): CONSTANTS, then Classes, then the rest."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def listed(path: str) -> tuple[dict[str, str], list[str]]:
    """The names a package's ``if TYPE_CHECKING:`` block imports, read from its source ``path``.

    Returns:
        ``(names, submodules)``: each name imported ``from .module`` and that module, and the
        submodules imported ``from . import``.
    """
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read(), path)
    names: dict[str, str] = {}
    submodules: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                if not isinstance(statement, ast.ImportFrom) or not statement.level:
                    raise TypeError(f"{path}: the TYPE_CHECKING block holds only relative imports")
                module = "." * statement.level + (statement.module or "")
                for alias in statement.names:
                    if statement.module is None:
                        submodules.append(alias.name)
                    else:
                        names[alias.name] = module
    return names, submodules


def attach_listed(package: str, path: str) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """:func:`attach` for the names of ``package``'s ``if TYPE_CHECKING:`` block (see
    :func:`listed`; ``path``: the package's ``__file__``), and its ``__all__``."""
    names, submodules = listed(path)
    getattr_, dir_ = attach(package, names, submodules)
    return getattr_, dir_, sorted([*names, *submodules], key=_all_order)
