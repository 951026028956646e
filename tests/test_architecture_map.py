"""docs/architecture.md is true: every module it names exists, and every arrow it lists is an
import in the code (at module level or inside a function)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "ignite_ranking"
MAP = (ROOT / "docs" / "architecture.md").read_text()


def _imports(path: Path) -> set[Path]:
    """The package's modules that ``path`` imports (relative imports resolved, ``from . import x``
    of a submodule included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        target = base.joinpath(*node.module.split(".")) if node.module else base
        for candidate in [target, *(target / alias.name for alias in node.names)]:
            for module in (candidate.with_suffix(".py"), candidate / "__init__.py"):
                if module.is_file():
                    found.add(module)
    return found


def test_every_module_named_exists():
    named = set(re.findall(r"`((?:kernels|metrics|trec|compare|catalog|sampled)/\w+\.py)`", MAP))
    named |= {module for arrow in re.findall(r"^(\S+\.py) -> (\S+\.py)$", MAP, re.M) for module in arrow}
    assert named, "the map names no module"
    missing = sorted(name for name in named if not (PACKAGE / name).is_file())
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_arrow_is_an_import():
    arrows = re.findall(r"^(\S+\.py) -> (\S+\.py)$", MAP, re.M)
    assert len(arrows) >= 10
    wrong = [f"{a} -> {b}" for a, b in arrows if PACKAGE / b not in _imports(PACKAGE / a)]
    assert not wrong, f"arrows of docs/architecture.md that are no import: {wrong}"
