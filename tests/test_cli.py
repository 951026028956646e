"""The command line end to end on small files."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from ignite_ranking.cli import main

QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 a 1\nq3 0 z 1\n"
RUN = "q1 Q0 b 1 3.0 t\nq1 Q0 c 2 2.0 t\nq1 Q0 a 3 2.0 t\nq2 Q0 x 1 1.0 t\nq2 Q0 a 2 0.5 t\nq9 Q0 a 1 1.0 t\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    return str(tmp_path / "qrels"), str(tmp_path / "run")


def test_json_output(files, capsys):
    assert main(["evaluate", *files, "-m", "mrr@10", "P_1", "recall@2", "--json", "--per-query"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["num_queries"] == 2  # q9 is not judged, q3 is not retrieved
    # q1: ranking b(0) c(2) a(1) (c before a: equal scores, docno descending)
    assert out["per_query"]["q1"] == {"mrr@10": 0.5, "P_1": 0.0, "recall@2": 0.5}
    assert out["per_query"]["q2"] == {"mrr@10": 0.5, "P_1": 0.0, "recall@2": 1.0}
    assert out["metrics"]["mrr@10"] == 0.5


def test_missing_as_zero_and_ties(files, capsys):
    assert main(["evaluate", *files, "-m", "mrr", "--json", "-c", "--ties", "first"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["num_queries"] == 3
    assert out["metrics"]["mrr"] == pytest.approx((0.5 + 0.5 + 0.0) / 3)


def test_table_output(files, capsys):
    assert main(["evaluate", *files, "-m", "ndcg_cut_10", "-m", "num_q", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split() == ["num_q", "all", "2"] for line in lines)
    assert any(line.split()[:2] == ["ndcg_cut_10", "q1"] for line in lines)


def test_bad_input_exits_2(files, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.write_text("q1 Q0 a 1\n")
    assert main(["evaluate", files[0], str(bad), "-m", "mrr"]) == 2
    assert "bad:1: expected at least 6" in capsys.readouterr().err
    assert main(["evaluate", *files, "-m", "nope@3"]) == 2


def test_python_dash_m(files):
    done = subprocess.run(
        [sys.executable, "-m", "ignite_ranking", "evaluate", *files, "-m", "P@2", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout)["metrics"]["P@2"] == pytest.approx(0.5)


def test_per_query_order(tmp_path, capsys):
    # The qrels list the queries in another order than the run, which interleaves them: JSON keeps
    # the run's order, the table trec_eval's (query ids in strcmp order, as it sorts the qrels).
    (tmp_path / "qrels").write_text("q1 0 a 1\nq2 0 a 1\nq10 0 a 1\n")
    (tmp_path / "run").write_text("q10 Q0 a 1 1.0 t\nq2 Q0 a 1 1.0 t\nq10 Q0 b 2 0.5 t\nq1 Q0 a 1 1.0 t\n")
    assert (
        main(["evaluate", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "P@1", "-q", "--json"]) == 0
    )
    assert list(json.loads(capsys.readouterr().out)["per_query"]) == ["q10", "q2", "q1"]
    assert main(["evaluate", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "P@1", "-q"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [row.split("\t")[1] for row in rows if row.split("\t")[1] != "all"] == ["q1", "q10", "q2"]


# ----------------------------------------------------------------------------- what stderr says


def test_skipped_run_queries_are_counted_on_stderr(files, capsys):
    # q9 of the run is not in the qrels: it is left out, and stderr says so, in compare's words.
    assert main(["evaluate", *files, "-m", "P@1"]) == 0
    err = capsys.readouterr().err
    assert f"ignite-ranking: note: 1 of 3 queries of run {files[1]} are not in the qrels and left out" in err


def test_no_note_when_every_run_query_is_judged(tmp_path, capsys):
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(
        "".join(line + "\n" for line in RUN.splitlines() if not line.startswith("q9"))
    )
    assert main(["evaluate", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "P@1"]) == 0
    assert capsys.readouterr().err == ""


def test_warns_when_no_run_query_id_is_in_the_qrels(tmp_path, capsys):
    # The qrels number queries 1, 2; the run calls them q1, q2: -c would print zeros silently.
    (tmp_path / "qrels").write_text("1 0 a 1\n2 0 b 1\n")
    (tmp_path / "run").write_text("q1 Q0 a 1 1.0 t\nq2 Q0 b 1 1.0 t\n")
    paths = [str(tmp_path / "qrels"), str(tmp_path / "run")]
    assert main(["evaluate", *paths, "-m", "P@1", "-c", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["metrics"]["P@1"] == 0.0
    assert "ignite-ranking: warning: none of the 2 query ids of run" in captured.err
    assert "'q1', 'q2'" in captured.err and "'1', '2'" in captured.err
    # Without -c there is nothing to evaluate: the same warning, then the error.
    assert main(["evaluate", *paths, "-m", "P@1"]) == 2
    err = capsys.readouterr().err
    assert "warning: none of the 2 query ids" in err and "error:" in err


# ----------------------------------------------------------------------------- progress bars


def _stderr(*args: str) -> str:
    """The stderr of the command line in a child process whose stderr is a pipe, not a terminal
    (read as bytes: text mode would turn tqdm's carriage returns into newlines)."""
    done = subprocess.run([sys.executable, "-m", "ignite_ranking", *args], capture_output=True, check=True)
    return done.stderr.decode()


def test_no_progress_bars_when_stderr_is_a_pipe(files):
    assert "\r" not in _stderr("evaluate", *files, "-m", "P@2")
    assert "\r" in _stderr("evaluate", *files, "-m", "P@2", "--progress")  # forced


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bars_on_a_terminal(files, monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["evaluate", *files, "-m", "P@2"]) == 0
    assert "\r" in terminal.getvalue()  # tqdm's bars, even for a small run
    terminal.seek(0), terminal.truncate()
    assert main(["evaluate", *files, "-m", "P@2", "--no-progress"]) == 0
    assert "\r" not in terminal.getvalue()


def test_version(capsys):
    from ignite_ranking import __version__

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"ignite-ranking {__version__}"
    done = subprocess.run(
        [sys.executable, "-m", "ignite_ranking", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == f"ignite-ranking {__version__}"


# ----------------------------------------------------------------------------- errors keep their place


def test_duplicate_run_document_names_file_and_line(tmp_path, capsys):
    (tmp_path / "qrels").write_text("1 0 doc12659 1\n")
    lines = ["1 Q0 doc1 1 3.0 t", "# a comment", "1 Q0 doc12659 2 2.0 t", "", "1 Q0 doc12659 3 1.0 t"]
    (tmp_path / "run").write_text("\n".join(lines) + "\n")
    for ties in ("trec", "first", "average"):
        for metric in ("P@1", "map"):  # with a cutoff the tail is cut after the duplicate check
            args = ["evaluate", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", metric, "--ties", ties]
            assert main(args) == 2
            err = capsys.readouterr().err
            assert (
                f"{tmp_path / 'run'}:5: document 'doc12659' appears twice for query '1' (first at line 3)"
                in err
            )


def test_duplicate_judgement_names_file_and_line(tmp_path, capsys):
    (tmp_path / "qrels").write_text("q1 0 a 1\nq1 0 b 0\nq2 0 a 1\nq1 0 a 2\n")
    (tmp_path / "run").write_text("q1 Q0 a 1 1.0 t\n")
    assert main(["evaluate", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "P@1"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'qrels'}:4: document 'a' is judged twice for query 'q1' (first at line 1)" in err
