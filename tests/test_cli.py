"""The command line end to end on small files."""

from __future__ import annotations

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


def test_per_query_in_run_order(tmp_path, capsys):
    # The qrels list the queries in another order than the run, which interleaves them.
    (tmp_path / "qrels").write_text("q1 0 a 1\nq2 0 a 1\nq10 0 a 1\n")
    (tmp_path / "run").write_text("q10 Q0 a 1 1.0 t\nq2 Q0 a 1 1.0 t\nq10 Q0 b 2 0.5 t\nq1 Q0 a 1 1.0 t\n")
    assert (
        main(["evaluate", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "P@1", "-q", "--json"]) == 0
    )
    assert list(json.loads(capsys.readouterr().out)["per_query"]) == ["q10", "q2", "q1"]
    assert main(["evaluate", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "P@1", "-q"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [row.split("\t")[1] for row in rows if row.split("\t")[1] != "all"] == ["q10", "q2", "q1"]


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
