"""Our metrics match ranx to 1e-9 on a real BM25 run over the shipped Cranfield collection.

Ours are computed the way an eval run computes them (:mod:`ranked_runs`: ``mark_hits``, ``per_case_value``)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from ragsweep.datasets import load_dataset
from ranked_runs import means, per_query

pytestmark = pytest.mark.filterwarnings("ignore:unsafe cast")  # ranx/numba hashing doc ids

ranx = pytest.importorskip("ranx")
tantivy = pytest.importorskip("tantivy")

CRANFIELD = Path(__file__).resolve().parents[1] / "datasets" / "cranfield"
KS = (1, 5, 10, 100)
METRICS = [f"{m}@{k}" for m in ("hit_rate", "precision", "recall", "mrr", "ndcg", "map") for k in KS]
METRICS += ["mrr", "map", "ndcg", "r-precision"]


@pytest.fixture(scope="module")
def cranfield_bm25():
    """BM25 (tantivy, English stemming) top-100 for the 225 Cranfield queries."""
    ds = load_dataset(CRANFIELD)
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    sb.add_text_field("doc_id", stored=True, tokenizer_name="raw")
    index = tantivy.Index(sb.build())
    writer = index.writer(heap_size=15_000_000, num_threads=1)
    for doc_id in ds.doc_ids():
        writer.add_document(tantivy.Document(doc_id=doc_id, body=(ds.docs_dir / doc_id).read_text(encoding="utf-8")))
    writer.commit()
    index.reload()
    searcher = index.searcher()
    run: dict[str, dict[str, float]] = {}
    for case in ds.cases:
        words = re.findall(r"[a-z0-9]+", case.question.lower())  # no query-syntax characters left
        query = index.parse_query(" ".join(words), ["body"])
        run[case.id] = {
            searcher.doc(addr)["doc_id"][0]: float(score) for score, addr in searcher.search(query, 100).hits
        }
    qrels = {c.id: {r.id: r.grade for r in c.relevant_ids} for c in ds.cases}  # includes grade-0 judgements
    return qrels, run


def _untie(run):
    """Strictly decreasing scores in our (stable) order, so ranx cannot reorder tied documents."""
    out = {}
    for q, docs in run.items():
        ranked = sorted(docs.items(), key=lambda kv: -kv[1])
        out[q] = {d: float(len(ranked) - i) for i, (d, _) in enumerate(ranked)}
    return out


def test_bm25_run_is_real(cranfield_bm25):
    qrels, run = cranfield_bm25
    assert len(run) == 225 and all(len(v) == 100 for v in run.values())
    mrr = means(qrels, run, ["mrr@10"])["mrr@10"]
    assert 0.5 < mrr < 0.9  # BM25 on Cranfield lands around 0.6-0.7


def test_matches_ranx_on_cranfield_bm25(cranfield_bm25):
    qrels, run = cranfield_bm25
    untied = _untie(run)
    ours = means(qrels, run, METRICS)
    assert means(qrels, untied, METRICS) == ours  # ties: stable order == the untied order
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(untied), METRICS)
    for m in METRICS:
        assert ours[m] == pytest.approx(float(theirs[m]), abs=1e-9), m
    per_ours = per_query(qrels, run, "ndcg@10")
    per_theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(untied), "ndcg@10", return_mean=False)
    assert len(per_ours) == 225
    for i, qid in enumerate(sorted(qrels)):
        assert per_ours[qid] == pytest.approx(float(per_theirs[i]), abs=1e-9)


def test_matches_ranx_on_random_small_runs():
    rng = random.Random(7)
    qrels, run = {}, {}
    for q in range(40):
        # ids as wide as Cranfield's ("1400.txt"): ranx holds doc ids as fixed-width strings, so the runs of
        # both tests share its compiled conversions (another width compiles every one of them again)
        docs = [f"doc{i:05d}" for i in range(30)]
        judged = rng.sample(docs, rng.randint(1, 8))
        qrels[f"q{q}"] = {d: rng.randint(0, 3) for d in judged}
        qrels[f"q{q}"][judged[0]] = rng.randint(1, 3)  # at least one relevant
        n = rng.randint(0, 12)  # includes empty runs and runs shorter than k
        run[f"q{q}"] = {d: rng.random() for d in rng.sample(docs, n)}
    metrics = [f"{m}@{k}" for m in ("hit_rate", "precision", "recall", "mrr", "ndcg", "map") for k in (1, 3, 5, 20)]
    ours = means(qrels, run, metrics)
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), metrics)
    for m in metrics:
        assert ours[m] == pytest.approx(float(theirs[m]), abs=1e-9), m
