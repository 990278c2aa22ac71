"""Same input, same lists (:mod:`ragsweep.pipeline.stable_order`): equal scores are served in
one documented order, whichever run, process or number of Pathway workers serves them.

Pathway's indexes order equal scores by where each chunk sits inside them (the order the chunks
reached the index), so before this the top 5 of "When shall the supplier deliver the goods?" over
documents sharing that clause came back as d4, d3, d1, d2, d5 in one run and d3, d1, d2, d5, d4
in the next. Here: the order itself (no Pathway), then real Pathway runs over documents whose
chunks score exactly equal, in process and in fresh processes with their own caches and
``PATHWAY_THREADS`` 1 and 2 (benchmarks/same_lists.py, which names every list that differs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragsweep.pipeline.stable_order import TIE_TOLERANCE, first_depth, ordered, tie_key
from support import ROOT
from support.scripts import benchmark_module

# ------------------------------------------------------------------ the order (no Pathway)


def test_equal_scores_are_ordered_by_document_then_offset():
    matches = [
        ("c", 2.0, ("b.txt", 0, "")),
        ("a", 2.0, ("a.txt", 900, "")),
        ("d", 3.0, ("z.txt", 0, "")),
        ("b", 2.0, ("a.txt", 10, "")),
    ]
    final, reply = ordered(matches, 3, 10)
    assert final
    assert reply == [("d", 3.0), ("b", 2.0), ("a", 2.0)]  # c (b.txt) is the equal chunk left out


def test_scores_a_float32_ulp_apart_are_equal_and_served_equal():
    """Tantivy's score for one chunk moves by an ulp from run to run: that is not an order."""
    low = float(np.float32(7.504208564758301))
    high = float(np.nextafter(np.float32(low), np.float32(10)))
    assert high > low
    for first, second in ((high, low), (low, high)):  # whichever of the two got the higher score
        final, reply = ordered([("y", first, ("y.txt", 0, "")), ("x", second, ("x.txt", 0, ""))], 1, 10)
        assert final and reply == [("x", max(first, second))]


def test_a_real_gap_is_an_order_not_a_tie():
    above = 1.0 + 10 * TIE_TOLERANCE
    final, reply = ordered([("a", 1.0, ("a.txt", 0, "")), ("z", above, ("z.txt", 0, ""))], 2, 10)
    assert final and reply == [("z", above), ("a", 1.0)]  # z first, its key notwithstanding


def test_the_cut_is_final_only_when_its_equal_scores_end_inside_the_list():
    def keys(scores):
        return [(f"c{i}", s, (f"d{i}.txt", 0, "")) for i, s in enumerate(scores)]

    assert ordered(keys([3, 2, 2, 2]), 2, 4)[0] is False  # the 2s reach the end: more may follow
    assert ordered(keys([3, 2, 2, 1]), 2, 4)[0] is True
    assert ordered(keys([3, 2, 2]), 2, 4)[0] is True  # fewer than asked: the index had no more
    assert ordered(keys([3, 3, 3, 3]), 1, 4)[0] is False
    assert ordered(keys([]), 5, first_depth(5)) == (True, [])


def test_the_tie_key_is_document_offset_then_text():
    assert tie_key("x", {"doc_id": "a.txt", "path": "/p/a.txt", "start": 7}) == ("a.txt", 7, "")
    assert tie_key("x", {"path": "/p/a.txt"}) == ("/p/a.txt", -1, "x")  # a splitter without offsets
    assert tie_key("x", None) == ("", -1, "x")


# ------------------------------------------------------------------ real Pathway

SHARED = (
    "The supplier shall deliver the goods within thirty days of the purchase order. "
    "This agreement is governed by the laws of the State of New York."
)
OWN = {  # the brief's probe: six documents sharing two sentences, one chunk each
    "d1": "Alpha Corp sells industrial pumps and valves to the buyer.",
    "d2": "Beta Ltd licenses its accounting software to the customer for internal use.",
    "d3": "Gamma Inc provides cleaning services at the premises of the client every week.",
    "d4": "Delta LLC manufactures printed circuit boards under the specifications of the purchaser.",
    "d5": "Epsilon GmbH supplies fresh vegetables to the restaurants of the company.",
    "d6": "Zeta SA transports containers between the ports named in the schedule.",
}
CLAUSE = "Either party may terminate this contract upon sixty days written notice to the other party."
SAME = 12  # documents holding only CLAUSE: more equal scores than first_depth(1) = 10
QUESTIONS = ["When shall the supplier deliver the goods?", "Which law governs this agreement?", CLAUSE]


def write_tie_dataset(root: Path) -> Path:
    """The six probe documents, twelve identical ones, and a case per question."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    for name, text in OWN.items():
        (docs / f"{name}.txt").write_text(f"{text}\n\n{SHARED}\n")
    for i in range(1, SAME + 1):
        (docs / f"same-{i:02d}.txt").write_text(f"{CLAUSE}\n")
    cases = [{"id": f"q{i}", "question": q} for i, q in enumerate(QUESTIONS)]
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (root / "dataset.yaml").write_text("name: ties\n")
    return root


@pytest.fixture(scope="module")
def tie_dataset(tmp_path_factory) -> Path:
    return write_tie_dataset(tmp_path_factory.mktemp("ties"))


@pytest.mark.parametrize("mode", ["bm25", "knn", "hybrid"])
def test_identical_chunks_are_served_by_document_id(mode, tie_dataset, default_pipeline):
    """The twelve identical documents score exactly alike for their clause: every depth serves
    the first of them by document id, k=1 included (its equal scores run past the deeper list,
    so the index is asked for every chunk). For BM25 and KNN each depth, asked alone, is the
    first k of the deepest answer (what prefix_exact lets eval rely on), ties at the cut included."""
    from ragsweep.pipeline.config import PipelineConfig
    from ragsweep.pipeline.corpus import parse_corpus
    from ragsweep.pipeline.store import Query, RagStore, prefix_exact

    corpus = parse_corpus(tie_dataset / "docs", progress=False)
    config = PipelineConfig.load(default_pipeline, {"retriever_mode": mode})
    ks = (1, 3, 5, 20)
    run = RagStore(config, corpus).run([Query(q, k) for q in QUESTIONS for k in ks])
    lists = {
        (q, k): [(h.doc_id, h.score) for h in run.hits[i * len(ks) + j]]
        for i, q in enumerate(QUESTIONS)
        for j, k in enumerate(ks)
    }
    same = [f"same-{i:02d}.txt" for i in range(1, SAME + 1)]
    for k in ks[:-1]:
        assert [d for d, _ in lists[(CLAUSE, k)]] == same[:k], (mode, k, lists[(CLAUSE, k)])
    deep = lists[(CLAUSE, 20)]
    assert [d for d, _ in deep[:SAME]] == same and len(deep) == len(corpus.documents)
    assert prefix_exact(config.build().retriever_factory) is (mode != "hybrid")
    if mode != "hybrid":  # one score, served alike (a fused score falls with each rank); prefixes
        assert len({sc for _, sc in deep[:SAME]}) == 1
        for q in QUESTIONS:
            for k in ks[:-1]:
                assert lists[(q, k)] == lists[(q, 20)][:k], (mode, q, k)


def test_every_retriever_is_served_through_the_stable_order():
    """ragsweep's DocumentStore wraps plain indexes, and rebuilds a hybrid (Pathway's or its own)
    as ragsweep's fusion over wrapped sub-retrievers, never wrapping the fusion itself."""
    from pathway.stdlib.indexing import BruteForceKnnFactory, HybridIndexFactory, TantivyBM25Factory, UsearchKnnFactory

    from ragsweep.pipeline import fusion
    from ragsweep.pipeline.stable_order import StableOrderFactory, exact_index, stable_factory

    bm25, knn = TantivyBM25Factory(), BruteForceKnnFactory(dimensions=3, embedder=None)
    for hybrid in (HybridIndexFactory([knn, bm25], k=30), fusion.HybridIndexFactory([knn, bm25], k=30)):
        served = stable_factory(hybrid)
        assert type(served) is fusion.HybridIndexFactory and served.k == 30
        assert [type(f) for f in served.retriever_factories] == [StableOrderFactory, StableOrderFactory]
        assert [f.inner for f in served.retriever_factories] == [knn, bm25]
        assert not exact_index(hybrid)
    wrapped = stable_factory(bm25)
    assert isinstance(wrapped, StableOrderFactory) and stable_factory(wrapped) is wrapped
    assert exact_index(bm25) and exact_index(knn) and exact_index(wrapped)
    assert not exact_index(UsearchKnnFactory(dimensions=3, embedder=None))  # approximate: no prefix promise


def test_the_served_lists_are_the_same_in_fresh_processes_and_with_two_workers(tie_dataset, tmp_path, capsys):
    """Every mode, every case, every depth eval scores, from two processes with their own cold
    caches, PATHWAY_THREADS=1 and 2: identical lists (the benchmark's runs and comparison, which name
    any list that differs). The two processes share nothing, so they run side by side."""
    from argparse import Namespace
    from concurrent.futures import ThreadPoolExecutor

    bench = benchmark_module("same_lists")  # its child script, its runs and its comparison
    args = Namespace(dataset=str(tie_dataset), pipeline="pipelines/default.yaml", modes="bm25,knn,hybrid", limit=0)
    args.shared_cache = False  # each process its own cold cache
    (tmp_path / "child.py").write_text(bench.CHILD)
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda r: bench.run_child(tmp_path, r[0], r[1], args), (("1", 1), ("2", 2))))
    (first, _), (second, _) = runs
    differ = bench.report(first, second)
    shown = capsys.readouterr().out
    lists = sum(len(b) for m in first.values() for b in m.values())
    assert lists == 3 * len(QUESTIONS) * 4, shown  # 3 modes x 3 cases x k in (1, 3, 5, 10)
    assert differ == [], shown
