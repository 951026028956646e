"""No import circle among the package's modules (issue 33).

Every import of an ``ignite_ranking`` module counts, at module level or inside a function, with
relative imports resolved; ``from . import x`` where ``x`` is a submodule imports ``x``; a name
imported from a package counts as an import of the module the package takes it from (its
``__init__`` re-export or lazy table), else of the package's ``__init__`` itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ignite_ranking

ROOT = Path(ignite_ranking.__file__).parent
PACKAGE = "ignite_ranking"

# issue 33: being split. Edges of circles through files other engineers are splitting right now
# (kernels/forms.py, trec/io.py, metrics/base.py, metrics/beyond.py, sampled/estimators.py); each
# goes when its split lands.
ALLOWED: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not _is_package(module):
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _lazy_tables() -> dict[str, dict[str, str]]:
    """package -> public name -> defining module, from each ``_lazy.attach(__name__, names={...})``
    (entries written as literals) and each ``from .x import name`` of the package's ``__init__``."""
    tables: dict[str, dict[str, str]] = {}
    for module, path in MODULES.items():
        if not _is_package(module):
            continue
        table = tables.setdefault(module, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level:
                source = _resolve(module, node)
                for alias in node.names:
                    if source != module and f"{source}.{alias.name}" not in MODULES:
                        table.setdefault(alias.asname or alias.name, source)
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "attach":
                for keyword in node.keywords:
                    if keyword.arg == "names" and isinstance(keyword.value, ast.Dict):
                        for key, value in zip(keyword.value.keys, keyword.value.values, strict=True):
                            if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                                table[key.value] = _resolve_relative(module, value.value)
    return tables


def _resolve_relative(package: str, name: str) -> str:
    dots = len(name) - len(name.lstrip("."))
    base = package.split(".")[: len(package.split(".")) - max(dots - 1, 0)]
    return ".".join([*base, name.lstrip(".")]) if name.lstrip(".") else ".".join(base)


def _defining(package: str, name: str, tables: dict[str, dict[str, str]], seen=()) -> str:
    """The module that defines ``name`` read from ``package``, following re-exports."""
    source = tables.get(package, {}).get(name)
    if source is None or source in seen or source not in MODULES:
        return package
    if _is_package(source):
        return _defining(source, name, tables, (*seen, package))
    return source


def import_graph() -> dict[str, set[str]]:
    tables = _lazy_tables()
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(module, node)
                for alias in node.names:
                    if f"{source}.{alias.name}" in MODULES:
                        targets.append(f"{source}.{alias.name}")
                    elif source in MODULES and _is_package(source):
                        # a package's own __init__ keeps the edge to the module it re-exports from
                        targets.append(_defining(source, alias.name, tables))
                    else:
                        targets.append(source)
            for target in targets:
                while target and target not in MODULES:  # ignite_ranking.x.y where y is a name
                    target = target.rpartition(".")[0]
                if target.startswith(PACKAGE) and target != module:
                    graph[module].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports, as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if (node, nxt) in ALLOWED:
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_allowed_edges_are_still_imports():
    graph = import_graph()
    stale = {edge for edge in ALLOWED if edge[1] not in graph[edge[0]]}
    assert not stale, f"allowed edges no longer imported, drop them from ALLOWED: {stale}"


def test_the_graph_sees_function_level_and_relative_imports():
    graph = import_graph()
    assert "ignite_ranking.trec.result" in graph["ignite_ranking.trec.diversity"]
    assert "ignite_ranking.trec.evaluate" not in graph["ignite_ranking.trec.diversity"]
    assert "ignite_ranking.trec.diversity" in graph["ignite_ranking.trec.evaluate"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_retrieval_is_imported_by_no_layer_below_it():
    """retrieval/ sits with catalog/ and trec/: it imports them, nothing of theirs imports it."""
    graph = import_graph()
    below = {
        module: sorted(t for t in targets if t.startswith(f"{PACKAGE}.retrieval"))
        for module, targets in graph.items()
        if not module.startswith(f"{PACKAGE}.retrieval") and module != PACKAGE
    }
    assert not {m: t for m, t in below.items() if t}
    assert f"{PACKAGE}.catalog" in graph[f"{PACKAGE}.retrieval.embeddings"]
