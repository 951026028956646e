"""The TREC readers: plain and gzip files, numbers parsed exactly, malformed lines refused."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from ignite_ranking.trec import read_qrels, read_run
from ignite_ranking.trec import tokens as trec_tokens

RUN = "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 -1e-3 tag\n\nq2\tQ0\td1\t1\t7 tag\r\nq1 Q0 d3 3 0.1 tag"


def test_read_run_plain(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(RUN)
    run = read_run(path)
    assert run.qids == ["q1", "q2"]
    assert run.qid.tolist() == [0, 0, 1, 0]
    assert run.docno.tolist() == [b"d1", b"d2", b"d1", b"d3"]
    assert run.score.tolist() == [2.5, -1e-3, 7.0, 0.1]
    assert run.tag == "tag"


@pytest.mark.parametrize("name", ["run.gz", "run.txt"])  # detected by magic bytes, not only the name
def test_read_run_gzip(tmp_path, name):
    path = tmp_path / name
    with gzip.open(path, "wt") as f:
        f.write(RUN)
    assert read_run(path).score.tolist() == [2.5, -1e-3, 7.0, 0.1]


def test_read_qrels(tmp_path):
    path = tmp_path / "qrels"
    path.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d9 3\n")
    qrels = read_qrels(path)
    assert qrels.qids == ["q1", "q2"]
    assert qrels.rel.tolist() == [1, 0, 3]
    assert qrels.docno.tolist() == [b"d1", b"d2", b"d9"]


def test_blocks_split_lines_exactly(tmp_path, monkeypatch):
    monkeypatch.setattr(trec_tokens, "_BLOCK", 7)  # lines straddle many blocks
    rng = np.random.default_rng(1)
    scores = rng.normal(size=300) * 10.0 ** rng.integers(-8, 8, 300)
    path = tmp_path / "run"
    path.write_text("".join(f"q{i % 5} Q0 doc{i} {i} {float(s)!r} t\n" for i, s in enumerate(scores)))
    assert sum(1 for _ in trec_tokens.blocks(path, progress=False)) >= 150  # a line or two each
    run = read_run(path)
    assert run.score.tolist() == scores.tolist()  # bit-exact, like float()
    assert run.docno.tolist() == [f"doc{i}".encode() for i in range(300)]
    assert [run.qids[q] for q in run.qid] == [f"q{i % 5}" for i in range(300)]


@pytest.mark.parametrize(
    "token",
    ["1", "-0.5", "1e-3", "+2.5E+10", "123456789012345678901", "0.1", "1.7976931348623157e308", "3.", ".5"],
)
def test_numbers_match_float(tmp_path, token):
    path = tmp_path / "run"
    path.write_text(f"q Q0 d 1 {token} t\n")
    assert read_run(path).score.tolist() == [float(token)]


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 tag\n", 2, "expected at least 6"),
        ("q1 Q0 d1 1 2.5 tag\n\nq1 Q0 d2 2 x7 tag\n", 3, "score must be a number"),
        ("q1 Q0 d1 1 nan tag\n", 1, "score must be a number"),
    ],
)
def test_malformed_run_lines(tmp_path, text, line, what):
    path = tmp_path / "bad_run"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"bad_run:{line}: {what}"):
        read_run(path)


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", 2, "expected 4"),
        ("q1 0 d1 1\nq1 0 d2 1.5\n", 2, "relevance must be an integer"),
        ("q1 0 d1 1 extra\n", 1, "expected 4"),
        ("# comment\nq1 0 d1 1\nq1 0 d2 x\n", 3, "relevance must be a number"),
    ],
)
def test_malformed_qrels_lines(tmp_path, text, line, what):
    path = tmp_path / "bad_qrels"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"bad_qrels:{line}: {what}"):
        read_qrels(path)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n  # and another\n"])
@pytest.mark.parametrize("reader", [read_run, read_qrels])
def test_empty_file_is_named(tmp_path, text, reader):
    path = tmp_path / "empty_file"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"empty_file: the file is empty"):
        reader(path)


def test_run_lines_with_more_than_six_columns(tmp_path):
    # trec_eval ignores what follows the tag (results.trunc-style files); so do we, also when
    # only some lines have extra columns.
    path = tmp_path / "run"
    path.write_text("q1 Q0 d1 1 2.5 tag extra words\nq1 Q0 d2 2 1.5 tag\nq2 Q0 d3 1 0.5 tag x\n")
    run = read_run(path)
    assert run.docno.tolist() == [b"d1", b"d2", b"d3"]
    assert run.score.tolist() == [2.5, 1.5, 0.5]
    assert run.tag == "tag"


@pytest.mark.parametrize("reader", ["run", "qrels"])
def test_comment_lines_are_skipped(tmp_path, reader, monkeypatch):
    # A 4-word comment used to be misread as a judgement; '#' inside a docno is no comment.
    monkeypatch.setattr(trec_tokens, "_BLOCK", 23)  # comments straddle blocks too
    path = tmp_path / "f"
    if reader == "run":
        path.write_text("# a comment\nq1 Q0 d#1 1 2.5 t\n   # indented comment\n#\nq1 Q0 d2 2 1.5 t\n#end")
        run = read_run(path)
        assert run.docno.tolist() == [b"d#1", b"d2"]
        assert run.score.tolist() == [2.5, 1.5]
    else:
        path.write_text("# qid iter docno rel\nq1 0 d1 1\n\t# x y z\nq1 0 d#2 0\n")
        qrels = read_qrels(path)
        assert qrels.docno.tolist() == [b"d1", b"d#2"]
        assert qrels.rel.tolist() == [1, 0]


def test_line_numbers_count_comment_lines(tmp_path):
    path = tmp_path / "bad_run"
    path.write_text("# header\nq1 Q0 d1 1 2.5 t\n# note\nq1 Q0 d2 2 nan t\n")
    with pytest.raises(ValueError, match="bad_run:4: score must be a number"):
        read_run(path)


def test_negative_grades_are_read(tmp_path):
    path = tmp_path / "qrels"
    path.write_text("q1 0 d1 -1\nq1 0 d2 2\n")
    assert read_qrels(path).rel.tolist() == [-1, 2]


def test_qids_in_order_of_first_appearance(tmp_path):
    # qids change on almost every line (the interner's unique-and-sort path), and sort differently
    # as strings ("q10" < "q2") than in the file.
    names = ["q1", "q2", "q10", "q2", "q1", "q10", "q3"]
    path = tmp_path / "run"
    path.write_text("".join(f"{q} Q0 d{i} {i} 1.0 t\n" for i, q in enumerate(names)))
    run = read_run(path)
    assert run.qids == ["q1", "q2", "q10", "q3"]
    assert [run.qids[q] for q in run.qid] == names


def test_plain_and_exponent_scores_in_one_block(tmp_path):
    # Plain decimals take the fast parser; the others, in the same block, the general one or float().
    rng = np.random.default_rng(2)
    plain = [
        round(float(s), int(k))
        for s, k in zip(rng.normal(size=200) * 100, rng.integers(0, 12, 200), strict=True)
    ]
    tokens = [repr(s) for s in plain] + ["1e-3", "-2.5E+10", "123456789012345678901", "inf", "+.5", "7."]
    path = tmp_path / "run"
    path.write_text("".join(f"q Q0 d{i} {i} {token} t\n" for i, token in enumerate(tokens)))
    assert read_run(path).score.tolist() == [float(token) for token in tokens]


@pytest.mark.parametrize("block", [5, 16, 1 << 20])
def test_locate_entries_finds_lines_across_blocks(tmp_path, monkeypatch, block):
    monkeypatch.setattr(trec_tokens, "_BLOCK", block)
    lines = ["# d7 q3", "3 Q0 d7x 1 1 t", "q3 Q0 d7 1 1 t", "", "3  Q0\td7 2 0.5 t", "3 Q0 d7 3 0.1 t"]
    path = tmp_path / "run"
    path.write_text("\n".join(lines))  # no final newline
    assert trec_tokens.locate_entries(path, "3", b"d7") == [5, 6]
    assert trec_tokens.locate_entries(path, "3", b"d7", limit=5) == [5, 6]
    assert trec_tokens.locate_entries(path, "q3", b"d7") == [3]
    assert trec_tokens.locate_entries(path, "3", b"nope") == []


# Issue 32: grades outside int64 or past float64's integers, non-UTF-8 ids, lone CRs, corrupt
# gzip, pipes, the order of errors in a block, DEL, and the run tag.


@pytest.mark.parametrize(
    ("grade", "what"),
    [
        ("1e20", "an integer of magnitude below 2\\*\\*53"),
        ("inf", "an integer of magnitude below 2\\*\\*53"),
        ("-inf", "an integer of magnitude below 2\\*\\*53"),
        ("12345678901234567890", "an integer of magnitude below 2\\*\\*53"),  # 20 digits: past int64
        ("9007199254740992", "an integer of magnitude below 2\\*\\*53"),  # 2**53
        ("9007199254740993", "an integer of magnitude below 2\\*\\*53"),  # float64 rounds it to 2**53
        ("-9.007199254740993e15", "an integer of magnitude below 2\\*\\*53"),
        ("1.00000000000000000001", "an integer, got"),  # float() gives 1.0
        ("2.5e-1", "an integer, got"),
    ],
)
def test_grades_that_are_not_exact_integers_are_refused(tmp_path, grade, what):
    path = tmp_path / "qrels"
    path.write_text(f"q 0 d1 1\nq 0 d2 {grade}\n")
    with pytest.raises(ValueError, match=f"qrels:2: relevance must be {what}"):
        read_qrels(path)


def test_grades_up_to_two_to_the_53_are_exact(tmp_path):
    path = tmp_path / "qrels"
    grades = ["9007199254740991", "-9007199254740991", "2.0", "2e0", "90071992547409.91e2", "-0", "+3"]
    path.write_text("".join(f"q 0 d{i} {g}\n" for i, g in enumerate(grades)))
    rel = read_qrels(path).rel
    assert rel.dtype == np.int64
    assert rel.tolist() == [2**53 - 1, 1 - 2**53, 2, 2, 2**53 - 1, 0, 3]


def test_non_utf8_ids_stay_distinct(tmp_path):
    path = tmp_path / "run"
    path.write_bytes(b"q\xff Q0 d\xff 1 1 t\xff\nq\xfe Q0 d\xfe 1 1 t\xfe\nq\xfe Q0 d\xff 2 0.5 t\xfe\n")
    run = read_run(path)
    assert [q.encode("utf-8", "surrogateescape") for q in run.qids] == [b"q\xff", b"q\xfe"]
    assert run.qid.tolist() == [0, 1, 1]
    assert run.docno.tolist() == [b"d\xff", b"d\xfe", b"d\xff"]
    assert run.tag.encode("utf-8", "surrogateescape") == b"t\xfe"


def test_non_utf8_query_ids_through_the_cli(tmp_path, monkeypatch):
    # The reproducer: two queries that 'replace' decoding merged into one (P_1 1.0,
    # num_ret 2 for that one query). stdout is strict UTF-8, as in a UTF-8 terminal.
    import io
    import sys

    from ignite_ranking.cli import main

    (tmp_path / "qrels").write_bytes(b"q\xff 0 d1 0\nq\xfe 0 d2 1\n")
    (tmp_path / "run").write_bytes(b"q\xff Q0 d1 1 1.0 t\nq\xfe Q0 d2 1 1.0 t\n")
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", stdout)
    files = [str(tmp_path / "qrels"), str(tmp_path / "run")]
    assert main(["evaluate", *files, "-m", "P_1", "num_ret", "-q"]) == 0
    stdout.flush()
    rows = [line.split(b"\t") for line in stdout.buffer.getvalue().splitlines()]
    assert [(name.strip(), qid, value) for name, qid, value in rows] == [
        (b"P_1", b"q\xfe", b"1.0000"),  # strcmp order of the bytes
        (b"num_ret", b"q\xfe", b"1"),
        (b"P_1", b"q\xff", b"0.0000"),
        (b"num_ret", b"q\xff", b"1"),
        (b"P_1", b"all", b"0.5000"),
        (b"num_ret", b"all", b"2"),
    ]


def test_duplicates_of_non_utf8_documents_are_told_apart(tmp_path):
    from ignite_ranking.trec import evaluate

    (tmp_path / "qrels").write_bytes(b"q\xfe 0 d\xff 1\n")
    run = b"q\xfe Q0 d\xfe 1 1 t\nq\xfe Q0 d\xff 2 0.5 t\nq\xff Q0 d\xff 1 1 t\nq\xfe Q0 d\xff 3 0.2 t\n"
    (tmp_path / "run").write_bytes(run)
    with pytest.raises(
        ValueError, match=r"run:4: document 'd\\udcff' appears twice for query 'q\\udcfe' .*line 2\)"
    ):
        evaluate(read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run"), ["P_1"])


@pytest.mark.parametrize("reader", [read_run, read_qrels])
def test_cr_only_line_ends_are_refused(tmp_path, reader):
    line = "q Q0 d{} 1 1 t" if reader is read_run else "q 0 d{} 1"
    path = tmp_path / "cr"
    path.write_bytes("".join(line.format(i) + "\r" for i in range(5)).encode())
    with pytest.raises(ValueError, match=r"cr:1: a carriage return \(\\r\) not followed by a line feed"):
        reader(path)
    path.write_bytes((line.format(1) + "\r\n" + line.format(2) + "\r\n" + line.format(3) + "\rx\n").encode())
    with pytest.raises(ValueError, match="cr:3: a carriage return"):
        reader(path)


def test_crlf_and_a_final_cr_are_line_ends(tmp_path):
    path = tmp_path / "run"
    path.write_bytes(b"q Q0 d1 1 1 t\r\nq Q0 d2 2 0.5 t\r")
    assert read_run(path).docno.tolist() == [b"d1", b"d2"]


@pytest.mark.parametrize(
    ("reader", "text", "line", "what"),
    [  # each block holds two malformed lines: the earlier one is reported, whatever its kind
        (read_run, "q Q0 d1 1 x t\nq Q0 d2 1\n", 1, "score must be a number"),
        (read_run, "q Q0 d0 1 1 t\nq Q0 d1 1 nan t\nq Q0 d2 1 1 t\rq\n", 2, "score must be a number"),
        (read_qrels, "q 0 d1 1\nq 0 d2 1.5\nq 0 d3 x\n", 2, "relevance must be an integer"),
        (read_qrels, "q 0 d1 1e30\nq 0 d2 x\n", 1, "relevance must be an integer of magnitude"),
        (read_qrels, "q 0 d1 1\nq 0 d2 x\nq 0 d3 1 extra\n", 2, "relevance must be a number"),
    ],
)
def test_the_first_malformed_line_is_reported(tmp_path, reader, text, line, what):
    path = tmp_path / "bad"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"bad:{line}: {what}"):
        reader(path)


def test_del_is_part_of_a_token_as_in_trec_eval(tmp_path):
    path = tmp_path / "run"
    path.write_bytes(b"q Q0 d\x7f 1 1 t\nq Q0 \x7fd 2 0.5 t\n")
    assert read_run(path).docno.tolist() == [b"d\x7f", b"\x7fd"]
    path.write_bytes(b"q Q0 d 1 1\x7f t\n")
    with pytest.raises(ValueError, match="run:1: score must be a number"):
        read_run(path)


@pytest.mark.parametrize("block", [9, 1 << 20])
def test_the_run_tag_is_the_last_lines(tmp_path, monkeypatch, block):
    # trec_eval's runid keeps the tag of the last line.
    monkeypatch.setattr(trec_tokens, "_BLOCK", block)
    path = tmp_path / "run"
    path.write_text("q Q0 d1 1 1 first\nq Q0 d2 2 0.5 middle\nq Q0 d3 3 0.2 last extra\n\n# end\n")
    assert read_run(path).tag == "last"


def test_corrupt_or_truncated_gzip_is_refused_with_its_name(tmp_path):
    rng = np.random.default_rng(3)
    data = gzip.compress("".join(f"q{i % 7} Q0 d{i} 1 {i / 3} t\n" for i in range(3000)).encode())
    path = tmp_path / "run.gz"
    corrupt = [data[: len(data) // 2], data[:-3]]
    for position in rng.integers(10, len(data) - 8, 40):
        flipped = bytearray(data)
        flipped[position] ^= 1 << int(rng.integers(8))
        corrupt.append(bytes(flipped))
    for blob in corrupt:
        path.write_bytes(blob)
        with pytest.raises(ValueError, match=r"run.gz: cannot read the file"):
            read_run(path)


def test_concatenated_gzip_members_read_as_one(tmp_path):
    path = tmp_path / "run.gz"
    path.write_bytes(gzip.compress(b"q Q0 d1 1 1 t\nq Q0 d2") + gzip.compress(b" 2 0.5 t\n"))
    assert read_run(path).docno.tolist() == [b"d1", b"d2"]


@pytest.mark.parametrize("compress", [False, True])
def test_runs_are_read_from_pipes(tmp_path, compress):
    import os
    import threading

    from ignite_ranking.trec import evaluate

    data = b"q Q0 d1 1 1 t\nq Q0 d2 2 0.5 t\nq Q0 d1 3 0.2 t\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(gzip.compress(data) if compress else data)

    writer = threading.Thread(target=write)
    writer.start()
    run = read_run(fifo)
    writer.join()
    assert run.docno.tolist() == [b"d1", b"d2", b"d1"]
    (tmp_path / "qrels").write_text("q 0 d1 1\n")
    # The duplicate is reported without its lines: a pipe cannot be read again (nor waited on).
    with pytest.raises(ValueError, match="document 'd1' appears twice for query 'q'"):
        evaluate(read_qrels(tmp_path / "qrels"), run, ["P_1"])
