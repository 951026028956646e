"""Shared test setup. Helpers that test modules import live in ``reference.py``."""

from __future__ import annotations

import os

# ranx compiles with numba on first use; keep its thread pool small on shared CI machines.
# This must be set before numba is imported, which conftest guarantees.
os.environ.setdefault("NUMBA_NUM_THREADS", "2")

from hypothesis import settings

# Small budgets and no per-example deadline: CI machines are slow and shared.
settings.register_profile("default", max_examples=50, deadline=None, print_blob=True)
settings.load_profile("default")
