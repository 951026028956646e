"""The ``python`` blocks of docs/retrieval.md run (its ``pycon`` blocks are doctests): with a
stand-in model, a small BEIR folder, and the numbers they give checked against each other."""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch

from ignite_ranking import retrieval

PAGE = Path(__file__).resolve().parents[1] / "docs" / "retrieval.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


class _Model:
    """encode_query / encode_document of fixed texts: each text's embedding by lookup."""

    def __init__(self, table):
        self.table = table

    def encode_document(self, texts, convert_to_tensor=True):
        return torch.stack([self.table[t] for t in texts])

    encode_query = encode_document


def test_the_python_blocks_run(tmp_path, monkeypatch):
    blocks = _blocks()
    assert len(blocks) == 2
    gen = torch.Generator().manual_seed(0)
    corpus_ids, query_ids = [f"d{j}" for j in range(30)], ["q1", "q2", "d3"]
    table = {f"text {i}": torch.randn(8, generator=gen) for i in [*corpus_ids, *query_ids]}
    namespace = {
        "retrieval": retrieval,
        "model": _Model(table),
        "corpus_texts": [f"text {c}" for c in corpus_ids],
        "query_texts": [f"text {q}" for q in query_ids],
        "corpus_ids": corpus_ids,
        "query_ids": query_ids,
        "relevant_docs": {"q1": {"d1", "d2"}, "q2": {"d5"}, "d3": {"d4"}},
    }
    block = blocks[0].replace("retrieval.evaluate_embeddings(", "result = retrieval.evaluate_embeddings(", 1)
    exec(block, namespace)
    assert set(namespace["result"]) >= {"cosine_ndcg@10", "cosine_map@100"}

    folder = tmp_path / "scifact"
    (folder / "qrels").mkdir(parents=True)
    lines = "".join(json.dumps({"_id": c, "text": c}) + "\n" for c in corpus_ids)
    (folder / "corpus.jsonl").write_text(lines)
    qrels = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td5\t2\nd3\td3\t1\n"
    (folder / "qrels" / "test.tsv").write_text(qrels)
    monkeypatch.chdir(tmp_path)
    block = blocks[1].replace("retrieval.evaluate_embeddings(", "result = retrieval.evaluate_embeddings(", 1)
    exec(block, namespace)
    assert "ndcg_at_10" in namespace["result"] and "mrr_at_1000" in namespace["result"]
