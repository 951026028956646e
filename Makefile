# Set-up and checks for ignite-ranking. `make test` and `make demo` work on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test lint format demo bench docs docs-check clean

# The stamp makes a second `make test` on a ready venv skip the installs; it is rebuilt when
# the project's dependencies or the torch pin change.
$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[test,dev,docs]"
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: lint
	$(BIN)/python -m pytest

demo: $(STAMP)
	$(BIN)/python examples/demo.py

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_mrr.py --plot docs/_static/benchmark.png
	$(BIN)/python benchmarks/bench_family.py
	$(BIN)/python benchmarks/bench_ties.py
	$(BIN)/python benchmarks/bench_worst.py
	$(BIN)/python benchmarks/bench_trec.py
	$(BIN)/python benchmarks/bench_ir_measures.py
	$(BIN)/python benchmarks/bench_compare.py
	$(BIN)/python benchmarks/bench_forms.py
	$(BIN)/python benchmarks/bench_catalog.py
	$(BIN)/python benchmarks/bench_sharded.py

# Warnings are errors; the pages' doctests run under `make test` (docs/conftest.py).
docs: $(STAMP)
	$(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html

# Builds the site, then checks that it works offline: no page or stylesheet fetches a remote
# script, stylesheet, font or image, and every local one exists. REQUIRE_DOCS_BUILD turns the
# skip that `make test` takes without a build into a failure.
docs-check: docs
	REQUIRE_DOCS_BUILD=1 $(BIN)/python -m pytest tests/test_docs_offline.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache
