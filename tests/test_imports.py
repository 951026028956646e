"""What each entry point imports: the TREC path and the command line start without ignite and the
optional extras; the public names still all resolve; a missing extra is one line, not a traceback.

The import checks run in one fresh interpreter (tests/ has imported everything already), which
records ``sys.modules`` after each step and prints it as JSON.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ignite_ranking
from ignite_ranking.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "trec_eval"
QRELS, RUN = str(FIXTURES / "graded.qrels"), str(FIXTURES / "ties.run")
HEAVY = ("ignite", "scipy", "pandas", "matplotlib", "ir_measures")
LAZY_PACKAGES = (
    "ignite_ranking",
    "ignite_ranking.metrics",
    "ignite_ranking.sampled",
    "ignite_ranking.compare",
)

SRC = str(Path(ignite_ranking.__file__).resolve().parent.parent)


def python(code: str) -> str:
    """The stdout of ``python -c code`` in a fresh interpreter that imports this checkout's package."""
    path = os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


STEPS = """
import contextlib, io, json, sys

loaded = {}

def record(step):
    loaded[step] = sorted(m for m in HEAVY if m in sys.modules)

import ignite_ranking.trec
record("import ignite_ranking.trec")
from ignite_ranking.sampled import estimate
record("from ignite_ranking.sampled import estimate")
from ignite_ranking.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["evaluate", QRELS, RUN, "-m", "official", "ndcg_cut.10"]) == 0
record("evaluate")
if COMPARE:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["compare", QRELS, RUN, OTHER_RUN, "-m", "map", "--resamples", "50"]) == 0
    record("compare")
print(json.dumps(loaded))
"""


@pytest.fixture(scope="module")
def loaded(tmp_path_factory) -> dict[str, list[str]]:
    """The heavy modules in ``sys.modules`` after each step of :data:`STEPS`, in a fresh process."""
    other = tmp_path_factory.mktemp("runs") / "other.run"
    shutil.copyfile(RUN, other)
    compare = importlib.util.find_spec("scipy") is not None
    prelude = f"HEAVY, QRELS, RUN, OTHER_RUN, COMPARE = {(HEAVY, QRELS, RUN, str(other), compare)!r}\n"
    return json.loads(python(prelude + textwrap.dedent(STEPS)).splitlines()[-1])


def test_the_trec_package_imports_no_heavy_layer(loaded):
    assert loaded["import ignite_ranking.trec"] == []


def test_the_estimators_of_sampled_need_no_ignite(loaded):
    assert loaded["from ignite_ranking.sampled import estimate"] == []


def test_the_evaluate_command_imports_no_heavy_layer(loaded):
    assert loaded["evaluate"] == []


def test_compare_imports_scipy_and_no_plotting(loaded):
    if "compare" not in loaded:
        pytest.skip("scipy is not installed")
    assert loaded["compare"] == ["scipy"]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_resolves(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


def test_top_level_names_are_the_objects_of_their_modules():
    from ignite_ranking import MRR, Retrieved, sampled
    from ignite_ranking.kernels.forms import Retrieved as forms_retrieved
    from ignite_ranking.metrics.mrr import MRR as mrr

    assert MRR is mrr and Retrieved is forms_retrieved
    assert sampled is importlib.import_module("ignite_ranking.sampled")


def _type_checking_imports(path: str) -> set[str]:
    """The names imported under ``if TYPE_CHECKING:`` in a module's source."""
    tree = ast.parse(Path(path).read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                names.update(alias.asname or alias.name for alias in statement.names)
    return names


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_the_lazy_table_all_and_the_type_checking_imports_agree(package):
    module = importlib.import_module(package)
    # what __dir__ lists beyond the module's own globals: the table's names and submodules
    fresh = python(f"import {package} as m; print(sorted(set(dir(m)) - set(vars(m))))")
    table = set(ast.literal_eval(fresh.strip()))
    assert table == set(module.__all__)
    assert _type_checking_imports(module.__file__) == set(module.__all__)


# --------------------------------------------------------------------- a missing extra is one line


def _without(monkeypatch, name: str) -> None:
    """Makes ``import name`` (and its submodules) fail as when it is not installed."""
    for key in [k for k in sys.modules if k == name or k.startswith(f"{name}.")]:
        monkeypatch.delitem(sys.modules, key)
    monkeypatch.setitem(sys.modules, name, None)


@pytest.fixture
def two_runs(tmp_path):
    other = tmp_path / "other.run"
    shutil.copyfile(RUN, other)
    return [RUN, str(other)]


def test_compare_without_scipy_says_which_extra_in_one_line(monkeypatch, capsys, two_runs):
    _without(monkeypatch, "scipy")
    assert main(["compare", QRELS, *two_runs, "-m", "map"]) == 1
    captured = capsys.readouterr()
    assert captured.err == "ignite-ranking compare needs scipy: pip install 'ignite-ranking[compare]'\n"
    assert captured.out == ""  # refused before the evaluation


def test_plot_without_matplotlib_fails_before_the_work(monkeypatch, capsys, two_runs, tmp_path):
    pytest.importorskip("scipy")
    _without(monkeypatch, "matplotlib")
    plot = tmp_path / "diff.png"
    assert main(["compare", QRELS, *two_runs, "-m", "map", "--plot", str(plot)]) == 1
    captured = capsys.readouterr()
    assert captured.err == "ignite-ranking compare needs matplotlib: pip install 'ignite-ranking[compare]'\n"
    assert captured.out == "" and not plot.exists()


def test_progress_without_tqdm_names_it(monkeypatch, capsys):
    _without(monkeypatch, "tqdm")
    assert main(["evaluate", QRELS, RUN, "-m", "map", "--progress"]) == 1
    assert capsys.readouterr().err == "ignite-ranking evaluate needs tqdm: pip install tqdm\n"


def test_an_import_error_without_a_module_keeps_its_message(monkeypatch, capsys, two_runs):
    from ignite_ranking.compare import stats

    def broken():
        raise ImportError("scipy is too old")

    monkeypatch.setattr(stats, "_scipy_stats", broken)
    assert main(["compare", QRELS, *two_runs, "-m", "map", "--resamples", "50"]) == 1
    assert capsys.readouterr().err.endswith("ignite-ranking: error: scipy is too old\n")


def test_submodules_still_resolve_as_attributes():
    # the packages imported every submodule before; code that reads them as attributes still works
    code = (
        "import ignite_ranking.metrics as m, ignite_ranking.sampled as s, ignite_ranking.compare as c;"
        "print(m.base.RankingMetric.__name__, s.estimators.__name__, c.stats.__name__);"
        "print(hasattr(m, '__main__'), hasattr(m, 'no_such_module'))"
    )
    assert python(code).split() == [
        "RankingMetric",
        "ignite_ranking.sampled.estimators",
        "ignite_ranking.compare.stats",
        "False",
        "False",
    ]
