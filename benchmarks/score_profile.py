"""Answer + score alone, at scale: a first pass (every memo cold) and a second (warm) in one process.

    RAGSWEEP_CACHE_DIR=... .venv/bin/python benchmarks/score_profile.py DATASET [--twice] [--limit N]
    .venv/bin/python benchmarks/score_profile.py --smoke

A throughput harness, never a quality number: it parses the dataset's documents (from the parse
cache when it holds them), splits them with the default pipeline's splitter (250-600 tokens) and
gives each case, instead of what Pathway would serve, the first k chunks of its scoped document
starting at a position that rotates with the case (k = 1, 3, 5, 10), so every chunk of a document
gets used the way a contract's 41 CUAD questions use them. Then it runs eval's answer + score stage
(the evaluation loop given those lists, so the store is not asked) exactly as ``ragsweep eval`` does
(extractive answers, ragas' non-LLM answer metrics, chance and oracle levels, no run folder) and
prints its seconds and cases/s. ``scale.py`` measures the same stage inside real evals; this
isolates it so a profiler (``py-spy record -- python benchmarks/score_profile.py ...``) sees
nothing else.

The ragsweep internals it calls are all in ``internals()`` below, the one place to update when the
evaluation code moves. ``--smoke``: 20 cases of ``datasets/cuad-mini``, both passes: a check that
the script runs (``make test`` does it), not a measurement; a missing internal is named.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# ================================================================== INTERNALS
# Every ragsweep name this script uses outside the stable pipeline modules. When the evaluation
# code moves, update this function (only it); `--smoke` (run by `make test`) names what is missing.
def internals():
    """(load, make_retrieved, make_answering, score_all) over this version of ragsweep's internals."""
    import importlib

    wanted = {
        "EvalOptions": "ragsweep.commands.eval",
        "load_inputs": "ragsweep.commands.inputs",
        "Retrieved": "ragsweep.pipeline.retrieval",
        "prepare_answering": "ragsweep.answer.run_setup",
        "evaluate_configuration": "ragsweep.evaluation.loop",
    }
    found, missing = {}, []
    for name, module_name in wanted.items():
        try:
            found[name] = getattr(importlib.import_module(module_name), name)
        except ImportError as err:
            missing.append(f"{module_name}.{name} (import: {err})")
        except AttributeError:
            missing.append(f"{module_name}.{name}")
    if missing:
        raise SystemExit(
            "score_profile.py: ragsweep internals missing: " + ", ".join(missing) + " (update internals() at the "
            "top of benchmarks/score_profile.py)"
        )

    def load(dataset: str, limit: int | None):
        """The options, pipeline config, dataset and cases, as ``ragsweep eval`` loads them."""
        options = found["EvalOptions"](
            pipeline=str(ROOT / "pipelines" / "default.yaml"), dataset=dataset, limit=limit, progress=False
        )
        config, ds, cases = found["load_inputs"](options)
        return options, config, ds, cases

    def make_retrieved(served, by_doc):
        return found["Retrieved"](served=served, chunks_by_doc=by_doc, n_chunks=sum(map(len, by_doc.values())))

    def make_answering(config, options, cases):
        """eval's answering for these options: the extractive answerer, ragas' non-LLM answer metrics."""
        return found["prepare_answering"](config, options, cases, {})[0]

    def score_all(config, cases, corpus, dataset, retrieved, answering, ks):
        """eval's answer + score over every case, on the given lists (the store is not asked)."""
        found["evaluate_configuration"](
            config,
            cases,
            corpus=corpus,
            ks=ks,
            relevance=dataset.relevance,
            answering=answering,
            retrieved=retrieved,
            served=retrieved.served,
        )

    return load, make_retrieved, make_answering, score_all


# ================================================================== end of INTERNALS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?")
    parser.add_argument("--twice", action="store_true", help="score every case a second time in this process")
    parser.add_argument("--limit", type=int, help="only the first N cases")
    parser.add_argument(
        "--smoke", action="store_true", help="20 cuad-mini cases, twice: does it run (not a measurement)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.dataset, args.twice, args.limit = str(ROOT / "datasets" / "cuad-mini"), True, args.limit or 20
        print(f"SMOKE RUN: {args.limit} cases of datasets/cuad-mini, two passes; not a measurement", flush=True)
    if not args.dataset:
        parser.error("give a dataset folder")
    started = time.perf_counter()
    from ragsweep.core.offline import ensure_offline

    ensure_offline()
    from ragsweep.core.hits import Hit
    from ragsweep.pipeline.chunking import OffsetTokenCountSplitter
    from ragsweep.pipeline.corpus import parse_corpus

    load, make_retrieved, make_answering, score_all = internals()
    options, config, dataset, cases = load(args.dataset, args.limit)
    corpus = parse_corpus(dataset.docs_dir)
    splitter = OffsetTokenCountSplitter(250, 600)
    by_doc = {
        d.doc_id: [
            Hit(rank=1, score=0.0, text=text, doc_id=d.doc_id, start=meta["start"], end=meta["end"])
            for text, meta in splitter.chunk(d.text)
        ]
        for d in corpus.documents
    }
    ks = sorted({1, 3, 5, 10, config.top_k})
    served = {}
    for n, case in enumerate(cases):
        chunks = by_doc.get((case.doc_scope or [""])[0], [])
        first = n % max(1, len(chunks))
        order = chunks[first:] + chunks[:first]
        served[case.id] = {k: [h.model_copy(update={"rank": r}) for r, h in enumerate(order[:k], start=1)] for k in ks}
    retrieved = make_retrieved(served, by_doc)
    answering = make_answering(config, options, cases)
    n_chunks = sum(map(len, by_doc.values()))
    print(
        f"RESULT set-up {time.perf_counter() - started:.1f} s: {len(cases)} cases, {len(corpus.documents)} "
        f"documents, {n_chunks} chunks",
        flush=True,
    )
    passes = {}
    for label in ("first pass", "second pass")[: 2 if args.twice else 1]:
        t = time.perf_counter()
        score_all(config, list(cases), corpus, dataset, retrieved, answering, ks)
        seconds = time.perf_counter() - t
        passes[label] = {"seconds": round(seconds, 3), "cases_per_s": round(len(cases) / seconds, 1)}
        print(f"RESULT answer+score, {label}: {seconds:.1f} s, {len(cases) / seconds:.0f} cases/s", flush=True)
    print(
        "JSON "
        + json.dumps(
            {
                "smoke": args.smoke,
                "dataset": args.dataset,
                "cases": len(cases),
                "documents": len(corpus.documents),
                "chunks": n_chunks,
                "passes": passes,
            }
        )
    )
    return 0


if __name__ == "__main__":
    from lib.process_exit import exit_now

    exit_now(main())
