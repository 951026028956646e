"""retrieval.evaluate_embeddings against the real tools: sentence-transformers'
InformationRetrievalEvaluator (a stand-in model returns fixed embeddings: no weights) to 1e-12,
and BEIR's way with pytrec_eval (EvaluateRetrieval.evaluate's measures, rounded to its 5
decimals), on embeddings with ties, judged documents missing from the corpus, queries without a
relevant document, and identical query and document ids; then the bad inputs."""

from __future__ import annotations

import csv
import math

import pytest
import pytrec_eval
import torch
from retrieval_data import embedding_data

from ignite_ranking import MAP, MRR, NDCG, RankingMetrics, Recall, Retrieved, retrieval, trec

st_util = pytest.importorskip("sentence_transformers.util")
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator  # noqa: E402

MTEB_KS = [1, 3, 5, 10, 20, 100, 1000]  # BEIR's: these but 20


class _Card:
    def set_evaluation_metrics(self, *args, **kwargs) -> None:
        pass


class StandInModel:
    """What InformationRetrievalEvaluator reads of a model: encode_query / encode_document
    (here a lookup of each text's fixed embedding), similarity and its name, a model card."""

    def __init__(self, table: dict, similarity: str):
        self.table = table
        self.similarity_fn_name = similarity
        self.similarity = {"cosine": st_util.cos_sim, "dot": st_util.dot_score}[similarity]
        self.model_card_data = _Card()

    def encode(self, sentences, **kwargs) -> torch.Tensor:
        return torch.stack([self.table[text] for text in sentences])

    encode_query = encode_document = encode


def _sentence_transformers(queries, corpus, query_ids, corpus_ids, qrels, similarity, chunk):
    table = {f"query {q}": queries[i] for i, q in enumerate(query_ids)}
    table |= {f"doc {c}": corpus[j] for j, c in enumerate(corpus_ids)}
    evaluator = InformationRetrievalEvaluator(
        {q: f"query {q}" for q in query_ids},
        {c: f"doc {c}" for c in corpus_ids},
        {q: set(docs) for q, docs in qrels.items()},
        corpus_chunk_size=chunk,
        show_progress_bar=False,
    )
    return evaluator(StandInModel(table, similarity))


@pytest.mark.parametrize("similarity", ["cosine", "dot"])
@pytest.mark.parametrize(("seed", "chunk"), [(0, 97), (1, 800), (2, 50)])
def test_equals_sentence_transformers(similarity, seed, chunk):
    queries, corpus, query_ids, corpus_ids, qrels = embedding_data(seed)
    theirs = _sentence_transformers(queries, corpus, query_ids, corpus_ids, qrels, similarity, chunk)
    ours = retrieval.evaluate_embeddings(
        queries, corpus, qrels, query_ids=query_ids, corpus_ids=corpus_ids, similarity=similarity,
        convention="sentence-transformers", chunk_size=chunk // 2 + 1, batch_size=25,
    )  # fmt: skip
    assert set(ours) == set(theirs)
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=1e-12, rel=0), key
    assert theirs[f"{similarity}_ndcg@10"] > 0.1  # the data find something


def _mteb(queries, corpus, query_ids, corpus_ids, qrels, similarity, ignore_identical_ids):
    """MTEB's retrieval score dict (mteb/_evaluators/retrieval_metrics.py, less its nAUC keys),
    its way: pytrec_eval on the run of every document, identical ids popped, each mean rounded
    to 5 decimals, ``accuracy`` its rounded Recall@1; MRR@k its own (the run sorted by score
    then id, both descending, cut at k; relevant: grade > 0), not rounded. BEIR's
    EvaluateRetrieval.evaluate gives the ndcg, map, recall and precision keys but k = 20."""
    if similarity == "cosine":
        queries, corpus = (torch.nn.functional.normalize(t, dim=1) for t in (queries, corpus))
    scores = (queries @ corpus.T).tolist()
    run = {q: dict(zip(corpus_ids, row, strict=True)) for q, row in zip(query_ids, scores, strict=True)}
    if ignore_identical_ids:
        for q, docs in run.items():
            docs.pop(q, None)
    ks = ",".join(map(str, MTEB_KS))
    measures = {f"map_cut.{ks}", f"ndcg_cut.{ks}", f"recall.{ks}", f"P.{ks}", f"success.{ks}"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    mean = lambda key: round(sum(v[key] for v in per_query.values()) / len(per_query), 5)  # noqa: E731
    out = {}
    for name, key in (("ndcg", "ndcg_cut_"), ("map", "map_cut_"), ("recall", "recall_"), ("precision", "P_"),
                      ("hit_rate", "success_")):  # fmt: skip
        out |= {f"{name}_at_{k}": mean(f"{key}{k}") for k in MTEB_KS}
    out["accuracy"] = mean("recall_1")
    evaluated = [q for q in query_ids if qrels.get(q)]  # the queries pytrec_eval scores
    for k in MTEB_KS:
        rr = []
        for q in evaluated:
            ranked = sorted(run[q].items(), key=lambda e: (e[1], e[0]), reverse=True)[:k]
            ranks = [r for r, (doc, _) in enumerate(ranked, 1) if qrels[q].get(doc, 0) > 0]
            rr.append(1 / ranks[0] if ranks else 0.0)
        out[f"mrr_at_{k}"] = sum(rr) / len(rr)
    return out


@pytest.mark.parametrize("similarity", ["cosine", "dot"])
@pytest.mark.parametrize("ignore_identical_ids", [False, True])
def test_equals_beir_and_mteb_to_their_five_decimals(similarity, ignore_identical_ids):
    data = embedding_data(3 + ignore_identical_ids, identical=ignore_identical_ids)
    theirs = _mteb(*data, similarity, ignore_identical_ids)
    queries, corpus, query_ids, corpus_ids, qrels = data
    ours, per_query = retrieval.evaluate_embeddings(
        queries, corpus, qrels, query_ids=query_ids, corpus_ids=corpus_ids, similarity=similarity,
        convention="beir", ignore_identical_ids=ignore_identical_ids, chunk_size=64, per_query=True,
    )  # fmt: skip
    assert set(ours) == set(theirs)
    assert {key: round(value, 5) for key, value in ours.items()} == {
        key: round(value, 5) for key, value in theirs.items()
    }
    assert ours["accuracy"] == ours["recall_at_1"] < ours["hit_rate_at_1"]  # Recall@1, not Hit@1
    assert all(row["accuracy"] == row["recall_at_1"] for row in per_query.values())


def test_explicit_measures_override_the_convention():
    queries, corpus, query_ids, corpus_ids, qrels = embedding_data(8, num_docs=200)
    kwargs = {"query_ids": query_ids, "corpus_ids": corpus_ids, "convention": "beir"}
    default = retrieval.evaluate_embeddings(queries, corpus, qrels, **kwargs)
    asked, per_query = retrieval.evaluate_embeddings(
        queries, corpus, qrels, measures=["recall@1", "accuracy@5"], per_query=True, **kwargs
    )
    assert asked == {"recall_at_1": default["recall_at_1"], "hit_rate_at_5": default["hit_rate_at_5"]}
    assert {tuple(row) for row in per_query.values()} == {("recall_at_1", "hit_rate_at_5")}
    assert len(per_query) == len([q for q in query_ids if qrels.get(q)])  # judged only non-relevant: 0


def test_trec_convention_equals_the_metrics_on_the_full_ranking():
    queries, corpus, query_ids, corpus_ids, qrels = embedding_data(5)
    ours, per_query = retrieval.evaluate_embeddings(
        queries, corpus, qrels, query_ids=query_ids, corpus_ids=corpus_ids, measures=["ndcg@10", "map@100",
        "mrr@10", "recall@50"], similarity="dot", chunk_size=33, per_query=True,
    )  # fmt: skip
    scores = queries @ corpus.T  # small integers: exact, whatever the blocks
    judged = [q for q in query_ids if any(g >= 1 for g in qrels.get(q, {}).values())]
    rows = [query_ids.index(q) for q in judged]
    order = scores[rows].argsort(dim=1, descending=True, stable=True)  # ties: the lower row first
    run = {q: [corpus_ids[j] for j in row] for q, row in zip(judged, order.tolist(), strict=True)}
    group = RankingMetrics(ndcg=NDCG([10]), map=MAP([100]), mrr=MRR([10]), recall=Recall([50]))
    group.update(Retrieved.from_dicts(run, qrels, query_ids=judged))
    expected = group.compute()
    assert ours == {"ndcg@10": expected["ndcg@10"], "map@100": expected["map@100"],
                    "mrr@10": expected["mrr@10"], "recall@50": expected["recall@50"]}  # fmt: skip
    assert list(per_query) == judged
    assert math.fsum(v["ndcg@10"] for v in per_query.values()) / len(judged) == pytest.approx(ours["ndcg@10"])


def test_euclidean_ranks_by_distance():
    queries, corpus, query_ids, corpus_ids, qrels = embedding_data(6)
    ours = retrieval.evaluate_embeddings(
        queries, corpus, qrels, query_ids=query_ids, corpus_ids=corpus_ids, similarity="euclidean",
        measures=["ndcg@10", "map@1000"],
    )  # fmt: skip
    custom = retrieval.evaluate_embeddings(
        queries, corpus, qrels, query_ids=query_ids, corpus_ids=corpus_ids, measures=["ndcg@10", "map@1000"],
        similarity=lambda q, c: -torch.cdist(q.double(), c.double()).float(),
    )  # fmt: skip
    assert ours == custom


@pytest.mark.parametrize("similarity", ["dot", "euclidean"])
@pytest.mark.parametrize("convention", ["trec", "sentence-transformers"])
def test_float16_with_large_norms_does_not_overflow(similarity, convention):
    """Norms up to 512 in float16: ``|c|^2`` and ``q.c`` pass 65,504, so the embeddings are
    scaled by a power of two first; on these multiples of 128 every score stays exact, so the
    ranking is the float32 one of the same vectors, ties included."""
    queries, corpus, query_ids, corpus_ids, qrels = embedding_data(12)
    kwargs = {"query_ids": query_ids, "corpus_ids": corpus_ids, "similarity": similarity,
              "convention": convention, "per_query": True, "chunk_size": 100}  # fmt: skip
    wide = retrieval.evaluate_embeddings(queries, corpus, qrels, **kwargs)
    narrow = retrieval.evaluate_embeddings((queries * 128).half(), (corpus * 128).half(), qrels, **kwargs)
    assert narrow == wide
    assert float((corpus * 128).norm(dim=1).max()) > 256  # |c|^2 alone overflows float16


# ------------------------------------------------------------------------------------ dicts


def test_dicts_of_dicts_equal_pytrec_eval():
    queries, corpus, query_ids, corpus_ids, qrels = embedding_data(7, num_docs=200)
    scores = (queries @ corpus.T).tolist()  # small integers: ties everywhere
    run = {q: dict(zip(corpus_ids, row, strict=True)) for q, row in zip(query_ids, scores, strict=True)}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"map_cut.10,100", "ndcg_cut.10", "recip_rank"}).evaluate(
        run
    )
    mean = lambda key: sum(v[key] for v in theirs.values()) / len(theirs)  # noqa: E731
    ours = trec.evaluate(qrels, run, ["map_cut.10,100", "ndcg_cut.10", "recip_rank"]).means
    for key in ("map_cut_10", "map_cut_100", "ndcg_cut_10", "recip_rank"):
        assert ours[key] == pytest.approx(mean(key), abs=1e-12), key
    judged = [q for q in qrels if qrels[q]]
    group = RankingMetrics(map=MAP([10, 100]), ndcg=NDCG([10], gain_function="linear_rank"), mrr=MRR([200]),
                           ignore_zero_hits=False, ties="last")  # fmt: skip
    group.update(Retrieved.from_dicts(run, qrels, query_ids=judged))  # "last": trec_eval's docno order
    got = group.compute()
    assert got["map@10"] == pytest.approx(mean("map_cut_10"), abs=1e-12)
    assert got["ndcg@10"] == pytest.approx(mean("ndcg_cut_10"), abs=1e-12)
    assert got["mrr@200"] == pytest.approx(mean("recip_rank"), abs=1e-12)


def test_from_dicts_takes_ranked_lists_and_refuses_mixed_forms():
    batch = Retrieved.from_dicts({"a": ["x", "y"], "b": ["z"]}, {"a": {"y": 1}, "b": {"w": 2}, "c": {}})
    assert batch.ids.tolist() == [[1, 2], [3, -1], [-1, -1]]  # w x y z numbered in sorted order
    assert batch.relevant.tolist() == [[2], [0], [-1]] and batch.scores is None
    with pytest.raises(TypeError, match="every query"):
        Retrieved.from_dicts({"a": ["x"], "b": {"y": 1.0}}, {"a": {"x": 1}})
    with pytest.raises(ValueError, match="twice"):
        Retrieved.from_dicts({"a": ["x", "x"]}, {"a": {"x": 1}})


# ------------------------------------------------------------------------------------ readers


def test_beir_readers(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td1\t2\n"
    )
    (tmp_path / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "T", "text": "one"}\n{"_id": "d2", "text": "two"}\n'
    )
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "first?"}\n')
    assert retrieval.read_beir_qrels(tmp_path / "qrels" / "test.tsv") == {
        "q1": {"d1": 1, "d2": 0},
        "q2": {"d1": 2},
    }
    assert retrieval.read_beir_ids(tmp_path / "corpus.jsonl") == ["d1", "d2"]
    assert list(retrieval.iter_beir_texts(tmp_path / "queries.jsonl")) == [("q1", "", "first?")]
    queries, corpus = torch.eye(2), torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    from_path = retrieval.evaluate_embeddings(queries, corpus, tmp_path / "qrels" / "test.tsv",
                                              query_ids=["q1", "q2"], corpus_ids=["d1", "d2"])  # fmt: skip
    assert from_path == {"mrr@10": 0.75, "ndcg@10": pytest.approx(0.8154648767857288), "map@100": 0.75,
                         "recall@100": 1.0, "precision@10": 0.1}  # fmt: skip
    (tmp_path / "bad.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\n")
    with pytest.raises(ValueError, match=r"bad\.tsv:2"):
        retrieval.read_beir_qrels(tmp_path / "bad.tsv")
    # a byte order mark before the header, which BEIR's csv reader skips with it
    (tmp_path / "bom.tsv").write_bytes(b"\xef\xbb\xbf" + (tmp_path / "qrels" / "test.tsv").read_bytes())
    assert retrieval.read_beir_qrels(tmp_path / "bom.tsv") == retrieval.read_beir_qrels(
        tmp_path / "qrels" / "test.tsv"
    )
    assert retrieval.evaluate_embeddings(queries, corpus, tmp_path / "bom.tsv", query_ids=["q1", "q2"],
                                         corpus_ids=["d1", "d2"]) == from_path  # fmt: skip
    # fields quoted as csv.writer quotes them are unquoted, as BEIR's csv.reader does
    quoted = tmp_path / "quoted.tsv"
    with open(quoted, "w", newline="", encoding="utf-8") as out:
        csv.writer(out, delimiter="\t").writerows(
            [["query-id", "corpus-id", "score"], ["q1", 'a"b', 1], ["q 2", "c\td", 0]]
        )
    with open(quoted, newline="", encoding="utf-8") as lines:
        beir = {row[0]: {row[1]: int(row[2])} for row in list(csv.reader(lines, delimiter="\t"))[1:]}
    assert retrieval.read_beir_qrels(quoted) == beir == {"q1": {'a"b': 1}, "q 2": {"c\td": 0}}
    # TREC qrels whose first line is not UTF-8: read as TREC, the docno matches no corpus id
    (tmp_path / "latin.qrels").write_bytes(b"q1 0 d\xe9 1\nq1 0 d1 1\nq2 0 d1 2\n")
    latin = retrieval.evaluate_embeddings(queries, corpus, tmp_path / "latin.qrels", query_ids=["q1", "q2"],
                                          corpus_ids=["d1", "d2"], measures=["recall@2"])  # fmt: skip
    assert latin == {"recall@2": 0.75}


# ------------------------------------------------------------------------------------ bad inputs


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"query_ids": ["q0"]}, ValueError, "1 ids for 2 query embeddings"),
        ({"corpus_ids": ["d0", "d0", "d1"]}, ValueError, "corpus_ids hold an id twice"),
        ({"query_ids": [1, "1"]}, ValueError, "query_ids hold an id twice"),
        ({"query_embeddings": torch.tensor([[1.0, math.nan], [0.0, 1.0]])}, ValueError, "NaN"),
        ({"convention": "mteb"}, ValueError, "convention must be one of"),
        ({"convention": ["trec"]}, ValueError, "convention must be one of"),
        ({"measures": ["ndcg@²"]}, ValueError, "unknown measure"),
        ({"similarity": "manhattan"}, ValueError, "similarity must be one of"),
        ({"measures": ["ndcg@0"]}, ValueError, "unknown measure"),
        ({"measures": ["f1@10"]}, ValueError, "unknown measure"),
        ({"query_ids": ["x", "y"]}, ValueError, "no query"),
        ({"qrels": [("q0", "d0", 1)]}, TypeError, "qrels must be"),
        ({"corpus_embeddings": torch.zeros(3, 3)}, ValueError, "one d and dtype"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"corpus_embeddings": torch.full((3, 2), math.inf)}, ValueError, "NaN or infinite"),
        ({"qrels": {"q0": {"d0": 0}}}, ValueError, "relevant document .grade >= 1; convention='trec'"),
        ({"qrels": {"q0": {"d0": 1}, "q1": {}}, "query_ids": ["q2", "q3"]}, ValueError, "ids match"),
        ({"qrels": {"q0": {"d0": 1}, "0": {"d1": 1}, 0: {"d1": 1}}}, ValueError, "twice"),
        ({"qrels": {"q0": {"d0": 1, "d1": 0}, "q1": {1: 1, "1": 0}}}, ValueError, "twice"),
        ({"qrels": {"q0": {"d0": math.nan}}}, ValueError, r"qrels\['q0'\]\['d0'\] must be a finite number"),
        ({"qrels": {"q0": {"d0": "1"}}}, ValueError, "finite number, got '1'"),
        ({"exclude": {"q0": "d0"}}, TypeError, r"exclude\['q0'\] must be a list"),
        ({"exclude": [("q0", "d0")]}, TypeError, "exclude must be a dict"),
        ({"query_embeddings": torch.eye(2).to_sparse()}, TypeError, "query_embeddings must be a dense"),
        ({"corpus_embeddings": torch.ones(3, 2).to_sparse()}, TypeError, "corpus_embeddings must be a dense"),
        (
            {"query_embeddings": torch.eye(2, device="meta")},
            ValueError,
            "query_embeddings is on the meta device",
        ),
    ],
)
def test_bad_inputs_are_refused(change, error, message):
    kwargs = {
        "query_embeddings": torch.eye(2),
        "corpus_embeddings": torch.ones(3, 2),
        "qrels": {"q0": {"d0": 1}},
        "query_ids": ["q0", "q1"],
        "corpus_ids": ["d0", "d1", "d2"],
    } | change
    with pytest.raises(error, match=message):
        retrieval.evaluate_embeddings(
            kwargs.pop("query_embeddings"), kwargs.pop("corpus_embeddings"), kwargs.pop("qrels"), **kwargs
        )


def test_finite_embeddings_whose_sum_overflows_are_accepted():
    """The finiteness check sums first: an overflowing sum of finite values is checked entry by
    entry, not refused; one inf among them is."""
    big = torch.full((3, 2), 3e38)
    got = retrieval.evaluate_embeddings(
        torch.eye(2), big, {"q0": {"d0": 1}}, query_ids=["q0", "q1"], corpus_ids=["d0", "d1", "d2"],
        measures=["mrr@10"], similarity="dot",
    )  # fmt: skip
    assert got == {"mrr@10": 1.0}
    big[1, 1] = -math.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        retrieval.evaluate_embeddings(
            torch.eye(2), big, {"q0": {"d0": 1}}, query_ids=["q0", "q1"], corpus_ids=["d0", "d1", "d2"]
        )


def test_half_precision_and_int_ids_give_the_float32_str_numbers():
    queries, corpus, query_ids, corpus_ids, qrels = embedding_data(9, num_docs=300)
    kwargs = {"query_ids": query_ids, "corpus_ids": corpus_ids, "similarity": "dot", "chunk_size": 40}
    for convention in ("trec", "beir", "sentence-transformers"):
        expected = retrieval.evaluate_embeddings(queries, corpus, qrels, convention=convention, **kwargs)
        for dtype in (torch.float16, torch.bfloat16):  # small-integer dot products: exact in both
            got = retrieval.evaluate_embeddings(
                queries.to(dtype), corpus.to(dtype), qrels, convention=convention, **kwargs
            )
            assert got == expected, (convention, dtype)
    # int ids: "1" and 1 are one id; the order of equal scores is the str order under "beir",
    # the int order under "sentence-transformers" (here the same: ids of one width)
    number = {doc: 10_000 + int(doc[1:]) for doc in corpus_ids} | {q: int(q[1:]) for q in query_ids}
    int_qrels = {number[q]: {number.get(d, d): g for d, g in docs.items()} for q, docs in qrels.items()}
    for convention in ("trec", "beir", "sentence-transformers"):
        as_str = retrieval.evaluate_embeddings(
            queries, corpus, {str(number[q]): {str(number.get(d, d)): g for d, g in docs.items()}
                              for q, docs in qrels.items()},
            query_ids=[str(number[q]) for q in query_ids], corpus_ids=[str(number[d]) for d in corpus_ids],
            convention=convention, similarity="dot",
        )  # fmt: skip
        as_int = retrieval.evaluate_embeddings(
            queries, corpus, int_qrels, query_ids=[number[q] for q in query_ids],
            corpus_ids=[number[d] for d in corpus_ids], convention=convention, similarity="dot",
        )  # fmt: skip
        assert as_int == as_str, convention


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_a_zero_row_has_cosine_zero_in_every_dtype(dtype):
    """Regression: in float16, normalize's eps of 1e-12 is 0, so a zero query or document row
    was 0/0 and the ranking refused its NaN scores."""
    rows = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=dtype)
    qrels = {"q0": {"d2": 1}, "q1": {"d0": 1}, "q2": {"d1": 1}}
    kwargs = {"query_ids": ["q0", "q1", "q2"], "corpus_ids": ["d0", "d1", "d2"], "measures": ["mrr@10"]}
    # q0 = 0 ties every document (d2 third); d0 = 0 ties the other zero scores, before them
    expected_mrr = (1 / 3 + 1 / 2 + 1 / 3) / 3
    assert retrieval.evaluate_embeddings(rows, rows, qrels, **kwargs) == {
        "mrr@10": pytest.approx(expected_mrr)
    }
    expected = torch.nn.functional.normalize(rows[1:].float(), dim=1).to(dtype)
    from ignite_ranking.retrieval.embeddings import _unit

    for in_place in (False, True):
        unit = _unit(rows.clone(), in_place=in_place)
        assert torch.equal(unit[0], torch.zeros(2, dtype=dtype)) and torch.equal(unit[1:], expected)


def test_k_past_the_corpus_and_qrels_queries_not_in_query_ids():
    queries, corpus, query_ids, corpus_ids, qrels = embedding_data(10, num_docs=50)
    kwargs = {"query_ids": query_ids, "corpus_ids": corpus_ids, "similarity": "dot", "convention": "beir"}
    extra = qrels | {"not-a-query": {corpus_ids[0]: 1}}  # judged but never asked: not evaluated
    measures = ["recall@1000", "precision@1000", "map@1000", "ndcg@1000", "recall@50"]
    deep = retrieval.evaluate_embeddings(queries, corpus, extra, measures=measures, **kwargs)
    assert deep == retrieval.evaluate_embeddings(queries, corpus, qrels, measures=measures, **kwargs)
    assert deep["recall_at_1000"] == deep["recall_at_50"] < 1  # every row ranked; missing ones never
    scores = (queries @ corpus.T).tolist()
    run = {q: dict(zip(corpus_ids, row, strict=True)) for q, row in zip(query_ids, scores, strict=True)}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"P.1000", "map_cut.1000"}).evaluate(run)
    for ours, key in (("precision_at_1000", "P_1000"), ("map_at_1000", "map_cut_1000")):
        assert deep[ours] == pytest.approx(sum(v[key] for v in theirs.values()) / len(theirs), abs=1e-12)


def test_a_cutoff_far_past_the_corpus_ranks_only_the_corpus():
    # the ranking was once padded to (batch, k): 10**9 asked for gigabytes per query
    queries, corpus, query_ids, corpus_ids, qrels = embedding_data(11, num_docs=40)
    kwargs = {"query_ids": query_ids, "corpus_ids": corpus_ids, "similarity": "dot", "batch_size": 7}
    families = ["recall", "precision", "map", "ndcg", "mrr", "accuracy"]
    near = retrieval.evaluate_embeddings(
        queries, corpus, qrels, measures=[f"{f}@45" for f in families], **kwargs
    )
    far = retrieval.evaluate_embeddings(
        queries, corpus, qrels, measures=[f"{f}@{10**9}" for f in families], **kwargs
    )
    for family in families:
        scale = 45 / 10**9 if family == "precision" else 1.0  # precision still divides by k
        assert far[f"{family}@{10**9}"] == pytest.approx(near[f"{family}@45"] * scale, rel=1e-12), family


def test_numpy_integer_ids_are_ints():
    # eleven tied documents, the relevant one id 10: sentence-transformers orders ties by int id
    # ascending (10 last), where their str order would put "10" before "9"
    import numpy as np

    corpus, queries = torch.ones(11, 2), torch.ones(1, 2)
    arrays = (np.arange(11), torch.arange(11))  # read as their lists (refused as arrays once)
    for ids in (list(range(11)), list(np.arange(11)), list(np.arange(11, dtype=np.int32)), *arrays):
        got = retrieval.evaluate_embeddings(
            queries, corpus, {"q": {10: 1}}, query_ids=["q"], corpus_ids=ids,
            convention="sentence-transformers", measures=["mrr@10", "accuracy@3"],
        )  # fmt: skip
        assert got == {"cosine_mrr@10": 0.0, "cosine_accuracy@3": 0.0}, type(ids[0])
    with pytest.raises(TypeError, match="corpus_ids must hold str or int ids, got an array of float64"):
        retrieval.evaluate_embeddings(
            queries, corpus, {"q": {10: 1}}, query_ids=["q"], corpus_ids=np.ones(11)
        )
