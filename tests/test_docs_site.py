"""What the documentation site offers: copy buttons, tables that fit, a README that says it all."""

from __future__ import annotations

import ast
import contextlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BUILD = DOCS / "_build" / "html"


def _conf() -> dict:
    """The literal assignments of docs/conf.py (without running it)."""
    tree = ast.parse((DOCS / "conf.py").read_text(encoding="utf-8"))
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            with contextlib.suppress(ValueError):
                values[node.targets[0].id] = ast.literal_eval(node.value)
    return values


def test_code_blocks_have_a_copy_button():
    conf = _conf()
    assert "sphinx_copybutton" in conf["extensions"]
    # The button copies commands without their prompts or output.
    assert conf["copybutton_prompt_is_regexp"] and conf["copybutton_only_copy_prompt_lines"]
    prompt = re.compile(conf["copybutton_prompt_text"])
    for line in ("$ make test", ">>> import torch", "... x"):
        assert prompt.match(line)
    assert not prompt.match("30 queries, all pairs")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    docs_extra = pyproject[pyproject.index("docs = [") :].split("]", 1)[0]
    assert "sphinx-copybutton" in docs_extra  # `make docs` installs it


def test_wide_tables_scroll_sideways_in_their_own_box():
    assert "custom.css" in _conf()["html_css_files"]
    css = re.sub(r"/\*.*?\*/", "", (DOCS / "_static" / "custom.css").read_text(encoding="utf-8"), flags=re.S)
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", css))
    wrapper = next(body for selector, body in rules.items() if ".table-wrapper" in selector.split(",")[0])
    assert "overflow-x: auto" in wrapper and "max-width: 100%" in wrapper
    assert any(
        "table.docutils" in s and "overflow-x: auto" in b and "display: block" in b for s, b in rules.items()
    )


def test_built_pages_carry_the_copy_button_when_built():
    page = BUILD / "install.html"
    if not page.is_file():  # tests/test_docs_offline.py requires the build under `make docs-check`
        pytest.skip("no built site: run `make docs` first")
    html = page.read_text(encoding="utf-8")
    assert "copybutton" in html and (BUILD / "_static" / "clipboard.min.js").is_file()
    assert (BUILD / "_static" / "custom.css").is_file()


def test_readme_first_paragraph_names_every_measure_family():
    import ignite_ranking

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = readme.split("\n\n")[1]  # after the title
    classes = {name for name in ignite_ranking.__all__ if name[0].isupper()}
    not_measures = {
        "DeviceWarning",
        "FractionalLabelWarning",
        "PerQuery",
        "RankingMetric",
        "RankingMetrics",
        "Retrieved",
    }
    spelled = {
        "RPrecision": "R-Precision",
        "GiniIndex": "Gini",
        "RBPResidual": "RBP",
        "Bpref": "bpref",
        "NERR": "nERR",
        "ShannonEntropy": "Shannon entropy",
        "AlphaNDCG": "alpha-nDCG",
        "ERRIA": "ERR-IA",
        "PrecisionIA": "P-IA",
        "SubtopicRecall": "subtopic recall",
    }
    for name in sorted(classes - not_measures):
        assert spelled.get(name, name) in first, f"the README's first paragraph does not name {name}"
    for words in ("TREC", "ir_measures", "compar", "catalog", "interval"):
        assert words in first, words
