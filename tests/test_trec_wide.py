"""The TREC readers' bounds (issue 32): long tokens are read apart from the token matrix, at the
values the matrix gives short ones, and a line over 1 MiB or a document id over 4 KiB is refused
with file:line (a file without newlines, plain, gzip or all NUL, is not read whole)."""

from __future__ import annotations

import gzip

import pytest

from ignite_ranking.trec import read_diversity_qrels, read_qrels, read_run
from ignite_ranking.trec import tokens as trec_tokens

LINES = [f"q{i // 10} Q0 d{i} {i % 10 + 1} {1.0 / (i + 1)!r} tag\n" for i in range(200)]


def _write(path, lines, compress=False):
    data = "".join(lines).encode()
    if compress:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("block", [None, 4096])  # the long id inside a block, or across blocks
def test_a_long_query_id_is_read_and_interned_like_a_short_one(tmp_path, monkeypatch, block):
    if block:
        monkeypatch.setattr(trec_tokens, "_BLOCK", block)
    long_qid = "Q" * 65536
    lines = list(LINES)
    for i in (3, 50, 51, 199):
        lines[i] = f"{long_qid} Q0 x{i} 1 0.5 tag\n"
    run = read_run(_write(tmp_path / "run", lines))
    names = [run.qids[q] for q in run.qid]
    assert names == [long_qid if i in (3, 50, 51, 199) else f"q{i // 10}" for i in range(200)]
    assert run.qids.index(long_qid) == 1  # first seen on line 4, after q0
    assert run.docno.dtype == "S4" and run.score[3] == 0.5


def test_a_long_number_is_read_by_float_and_a_long_bad_one_refused_with_its_line(tmp_path):
    long_score = "1." + "5" * 65536
    lines = list(LINES)
    lines[7] = f"q0 Q0 x 8 {long_score} tag\n"
    lines[8] = f"q0 Q0 y 9 {'0' * 100}2.25 tag\n"
    run = read_run(_write(tmp_path / "run", lines))
    assert run.score[7] == float(long_score) and run.score[8] == 2.25
    assert run.score[:7].tolist() == [1.0 / (i + 1) for i in range(7)]
    lines[120] = f"q0 Q0 z 9 {'9' * 100}x tag\n"
    with pytest.raises(ValueError, match=r"run:121: score must be a number, got '9{100}x'"):
        read_run(_write(tmp_path / "run", lines))


def test_long_grades_and_subtopics(tmp_path):
    path = tmp_path / "qrels"
    path.write_text(f"q1 0 d1 {'0' * 200}2\nq1 0 d2 0\n")
    assert read_qrels(path).rel.tolist() == [2, 0]
    path.write_text(f"q1 0 d1 1\nq1 0 d2 {'0' * 200}2.5\n")
    with pytest.raises(ValueError, match=r"qrels:2: relevance must be an integer, got '0{200}2\.5'"):
        read_qrels(path)
    subtopic = "s" * 5000
    path.write_text(f"q1 {subtopic} d1 1\nq1 2 d1 0\nq2 {subtopic} d3 1\n")
    qrels = read_diversity_qrels(path)
    assert qrels.subtopics == [subtopic, "2"] and qrels.subtopic.tolist() == [0, 1, 0]


def test_a_document_id_over_4_kib_is_refused_with_its_line(tmp_path):
    lines = list(LINES)
    lines[5] = f"q0 Q0 {'D' * 4096} 6 0.5 tag\n"  # the limit itself is read
    run = read_run(_write(tmp_path / "run", lines))
    assert run.docno[5] == b"D" * 4096 and run.docno[6] == b"d6"
    lines[150] = f"q15 Q0 {'D' * 65536} 1 0.5 tag\n"
    with pytest.raises(
        ValueError, match=r"run:151: a document id longer than 4096 bytes is refused, got 65536"
    ):
        read_run(_write(tmp_path / "run", lines))
    (tmp_path / "qrels").write_text(f"q1 0 d1 1\nq1 0 {'D' * 4097} 1\n")
    with pytest.raises(ValueError, match=r"qrels:2: a document id longer than 4096 bytes"):
        read_qrels(tmp_path / "qrels")


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("filler", [b"x", b"\0", b" "])
def test_two_mib_without_a_newline_are_refused_at_their_line(tmp_path, compress, filler):
    lines = [line.encode() for line in LINES[:3]] + [filler * (2 << 20)]
    path = tmp_path / "run"
    data = b"".join(lines)
    if compress:
        data = gzip.compress(data)
    path.write_bytes(data)
    with pytest.raises(ValueError, match=r"run:4: a line longer than 1048576 bytes is refused"):
        read_run(path)


def test_a_line_of_1_mib_is_read_and_one_byte_more_refused(tmp_path):
    head = "q0 Q0 d0 1 0.5 tag"
    exact = head + " " * ((1 << 20) - len(head)) + "\n"  # extra columns are ignored, blanks too
    run = read_run(_write(tmp_path / "run", [*LINES[:2], exact, *LINES[2:]]))
    assert len(run) == 201 and run.docno[2] == b"d0"
    with pytest.raises(ValueError, match=r"run:3: a line longer than 1048576 bytes"):
        read_run(_write(tmp_path / "run", [*LINES[:2], exact[:-1] + " \n", *LINES[2:]]))


@pytest.mark.parametrize("block", [7, 64, 1000])
def test_the_line_limit_holds_wherever_the_blocks_cut(tmp_path, monkeypatch, block):
    monkeypatch.setattr(trec_tokens, "_BLOCK", block)
    monkeypatch.setattr(trec_tokens, "_MAX_LINE", 40)
    short = [f"q{i % 3} Q0 d{i} 1 {i} t\n" for i in range(60)]  # 16-17 bytes
    for at in (0, 17, 59):
        lines = list(short)
        lines[at] = lines[at][:-1].ljust(40) + "\n"  # exactly the limit
        assert len(read_run(_write(tmp_path / "run", lines))) == 60
        lines[at] = lines[at][:-1] + " \n"
        with pytest.raises(ValueError, match=rf"run:{at + 1}: a line longer than 40 bytes"):
            read_run(_write(tmp_path / "run", lines))


def test_long_tokens_never_widen_the_token_matrix(tmp_path, monkeypatch):
    # The bound itself: every matrix the block parser gathers is at most 64 bytes wide here
    # (rows x 64), where a 64 KiB query id and score used to make it rows x 64 KiB.
    widths = []
    gather = trec_tokens.gather

    def spy(padded, size, starts, ends):
        matrix = gather(padded, size, starts, ends)
        widths.append(matrix.shape[1])
        return matrix

    monkeypatch.setattr(trec_tokens, "gather", spy)
    lines = list(LINES)
    lines[10] = f"{'Q' * 65536} Q0 d10 1 {'1' * 65536} tag\n"
    run = read_run(_write(tmp_path / "run", lines))
    assert run.qids[1] == "Q" * 65536 and run.score[10] == float("1" * 65536)
    assert widths and max(widths) <= trec_tokens._WIDE == 64
