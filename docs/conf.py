"""Sphinx configuration for the ignite-ranking documentation.

Builds offline: no intersphinx, no remote resources at build time. Pages are Markdown (MyST);
the API reference comes from the Google-style docstrings through autodoc and napoleon.
"""

from __future__ import annotations

from pathlib import Path

import ignite_ranking

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

project = "ignite-ranking"
author = "ignite-ranking developers"
copyright = "ignite-ranking developers"
release = ignite_ranking.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    # After sphinx.ext.mathjax, whose mathjax_path it sets.
    "sphinx-mathjax-offline",
    # A copy button on every code block; its script and icons are package data copied into
    # _static, so it works offline too.
    "sphinx_copybutton",
]

# Copy the commands, not the prompts or the output: `$ ` (console) and `>>> ` / `... ` (pycon)
# lines lose their prompt and the lines without one are left out; a block without prompts
# (plain Python) is copied whole.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True

# Formulas render from the built site alone, with no network: sphinx-mathjax-offline (the `docs`
# extra) ships MathJax 3.2.2, fonts included, as package data and copies it into
# _static/mathjax. That keeps `make docs` a plain pip install: no vendored copy of MathJax here,
# no Node or LaTeX on the machine, which the alternatives need (imgmath renders with LaTeX;
# sphinxcontrib-katex takes KaTeX's stylesheet from a CDN and prerenders with Node). MathJax 3 reads the
# options MyST writes for `dollarmath` (which classes to typeset) and has the AMS environments
# that `amsmath` and our `cases`/`aligned` formulas use. `make docs-check`
# (tests/test_docs_offline.py) fails if a page loads anything remote or a local asset is missing.
mathjax_path = "mathjax/tex-chtml.js"

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "conftest.py"]

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}

html_theme = "furo"
html_title = f"ignite-ranking {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]

# Files written by other parts of the project; the performance page shows them when present and
# says where they will appear when not, so the build never depends on a benchmark run.
BENCHMARK_RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BENCHMARK_CHART = DOCS / "_static" / "benchmark.png"
RESULTS_MARKER = "<!-- benchmark-results -->"
CHART_MARKER = "<!-- benchmark-chart -->"


def _fill_benchmarks(app, docname: str, source: list[str]) -> None:
    """Puts the benchmark results and chart into the performance page, or says they are missing."""
    if docname != "performance":
        return
    results_text = BENCHMARK_RESULTS.read_text(encoding="utf-8") if BENCHMARK_RESULTS.is_file() else ""
    if results_text:
        # relative-images: image paths in RESULTS.md are relative to benchmarks/, not docs/.
        results = "```{include} ../benchmarks/RESULTS.md\n:heading-offset: 1\n:relative-images:\n```\n"
    else:
        results = (
            "*No benchmark results yet: `make bench` writes `benchmarks/RESULTS.md`, "
            "and this page includes it on the next `make docs`.*\n"
        )
    if "benchmark.png" in results_text:
        chart = ""  # RESULTS.md shows the chart itself
    elif BENCHMARK_CHART.is_file():
        chart = "```{image} _static/benchmark.png\n:alt: Benchmark chart\n:width: 100%\n```\n"
    else:
        chart = "*The benchmark chart (`docs/_static/benchmark.png`) has not been generated yet.*\n"
    source[0] = source[0].replace(CHART_MARKER, chart).replace(RESULTS_MARKER, results)


def setup(app):
    app.connect("source-read", _fill_benchmarks)
    return {"parallel_read_safe": True}
