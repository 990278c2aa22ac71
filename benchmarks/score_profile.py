"""Answer + score alone, at scale: a first pass (every memo cold) and a second (warm) in one process.

    RAGSWEEP_CACHE_DIR=... .venv/bin/python benchmarks/score_profile.py DATASET [--twice]

A throughput harness, never a quality number: it parses the dataset's documents (from the parse
cache when it holds them), splits them with the default pipeline's splitter (250-600 tokens) and
gives each case, instead of what Pathway would serve, the first k chunks of its scoped document
starting at a position that rotates with the case (k = 1, 3, 5, 10), so every chunk of a document
gets used the way a contract's 41 CUAD questions use them. Then it runs ``run.answer_and_score``
exactly as ``ragsweep eval`` does (extractive answers, ragas' non-LLM answer metrics, chance and
oracle levels, no run folder) and prints its seconds and cases/s. ``scale.py`` measures the same
stage inside real evals; this isolates it so a profiler (``py-spy record -- python
benchmarks/score_profile.py ...``) sees nothing else.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--twice", action="store_true", help="score every case a second time in this process")
    args = parser.parse_args()
    started = time.perf_counter()
    from ragsweep.pipeline.offline import ensure_offline

    ensure_offline()
    from ragsweep.commands.eval import EvalOptions, answer_and_score
    from ragsweep.evaluation import stages
    from ragsweep.pipeline.chunking import OffsetTokenCountSplitter
    from ragsweep.pipeline.corpus import parse_corpus
    from ragsweep.pipeline.hits import Hit

    options = EvalOptions(pipeline=str(ROOT / "pipelines" / "default.yaml"), dataset=args.dataset, progress=False)
    config, dataset, cases = stages.load_inputs(options)
    corpus = parse_corpus(dataset.docs_dir)
    texts = {d.doc_id: d.text for d in corpus.documents}
    splitter = OffsetTokenCountSplitter(250, 600)
    by_doc = {
        d.doc_id: [
            Hit(rank=1, score=0.0, text=text, doc_id=d.doc_id, start=meta["start"], end=meta["end"])
            for text, meta in splitter.chunk(d.text)
        ]
        for d in corpus.documents
    }
    ks = [1, 3, 5, 10]
    served = {}
    for n, case in enumerate(cases):
        chunks = by_doc.get((case.doc_scope or [""])[0], [])
        first = n % max(1, len(chunks))
        order = chunks[first:] + chunks[:first]
        served[case.id] = {k: [h.model_copy(update={"rank": r}) for r, h in enumerate(order[:k], start=1)] for k in ks}
    retrieved = stages.Retrieved(served=served, chunks_by_doc=by_doc, n_chunks=sum(map(len, by_doc.values())))
    answerer, _ = stages.make_answerer(config, use_llm=False)
    print(
        f"RESULT set-up {time.perf_counter() - started:.1f} s: {len(cases)} cases, {len(corpus.documents)} "
        f"documents, {retrieved.n_chunks} chunks",
        flush=True,
    )
    for label in ("first pass", "second pass")[: 2 if args.twice else 1]:
        t = time.perf_counter()
        answer_and_score(list(cases), retrieved, answerer, None, None, dataset, texts, options, 5, ks, None, {})
        seconds = time.perf_counter() - t
        print(f"RESULT answer+score, {label}: {seconds:.1f} s, {len(cases) / seconds:.0f} cases/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
