# Set-up and checks for ignite-ranking. `make test` and `make demo` work on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test test-generic check lint format demo bench docs docs-check clean

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

# Every test: what CI runs (about 10-12 minutes on a quiet 2-core machine, up to 14 on a busy one).
test: lint
	$(BIN)/python -m pytest

# The oracle, order-free and distributed tests a second time on the kernels an accelerator runs
# (IGNITE_RANKING_KERNELS=generic, docs/performance.md's "GPU"), on the CPU: CI runs it after `test`.
GENERIC_TESTS := oracles order_free distributed
test-generic: $(STAMP)
	IGNITE_RANKING_KERNELS=generic $(BIN)/python -m pytest -q $(GENERIC_TESTS:%=tests/test_%.py)

# A quicker loop while working (under a minute on a quiet 2-core machine; 1 min 20 s measured on
# a busy one, load 5-6):
# lint, then the tests not marked slow without those that start processes (distributed, the
# command line, examples, benchmarks), compare with other libraries (ranx, pytrec_eval,
# torchmetrics, ir_measures, trec_eval's files, faiss) or sweep random batches against the
# reference (forms, gains, properties), stopping at the first failure, last failures first.
# It replaces nothing: run `make test` before you push.
CHECK_SKIP := distributed distributed_forms distributed_sampler per_query_distributed order_free \
	examples demo benchmarks_smoke cli compare docs_cli oracles properties torchmetrics \
	trec_conformance ir_measures_provider catalog forms ndcg_gains reference imports
check: lint
	$(BIN)/python -m pytest -x -q --ff -m "not slow" $(CHECK_SKIP:%=--ignore=tests/test_%.py)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_mrr.py --plot docs/_static/benchmark.png
	$(BIN)/python benchmarks/bench_family.py
	$(BIN)/python benchmarks/bench_ties.py
	$(BIN)/python benchmarks/bench_worst.py
	$(BIN)/python benchmarks/bench_trec.py
	$(BIN)/python benchmarks/bench_readers.py
	$(BIN)/python benchmarks/bench_ir_measures.py
	$(BIN)/python benchmarks/bench_compare.py
	$(BIN)/python benchmarks/bench_forms.py
	$(BIN)/python benchmarks/bench_catalog.py
	$(BIN)/python benchmarks/bench_sharded.py
	$(BIN)/python benchmarks/bench_startup.py

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
