"""What a run would cost at its endpoints, without a single call (``ragsweep eval --dry-run``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragsweep.answer.served import make_answerer
from ragsweep.core.environment import placeholder_openai_key
from ragsweep.core.hits import Hit
from ragsweep.datasets.schema import Case
from ragsweep.dry_run.llm_calls import estimate_llm_run
from ragsweep.evaluation.loop import scored_ks
from ragsweep.evaluation.settings import RunSettings
from ragsweep.pipeline.app_components import EMBEDDING_NO_PRICE, estimate_embeddings
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus
from ragsweep.pipeline.retrieval import retrieve, serve, store_depths


def dry_run_report(
    settings: RunSettings, config: PipelineConfig, corpus: Corpus, cases: Sequence[Case]
) -> dict[str, Any]:
    """What the run would cost at its endpoints, without a single call: the app embedder's texts
    that its cache lacks, and the LLM part (the prompts hold the served chunks, or, when retrieval
    would itself call the app's embedder, an upper bound: each case's longest chunks)."""

    answerer, llm_settings = make_answerer(config, settings.answer.use_llm)
    with placeholder_openai_key():  # an app's OpenAI components are built, never called: no key needed
        pipeline = config.build()
    chunks = split_corpus(pipeline.splitter, corpus)
    chunk_texts = [t for doc_chunks in chunks.values() for t in doc_chunks]
    questions = [c.question for c in cases]
    embeddings = estimate_embeddings(pipeline.embedder, chunk_texts, questions, config.variables.embedding_price_per_1k)
    out: dict[str, Any] = {"dry_run": True, "cases": len(cases)}
    if embeddings is not None:
        notes = [EMBEDDING_NO_PRICE] if embeddings.cost_usd is None else []
        out["embeddings"] = {**embeddings.model_dump(), "notes": notes}
    if llm_settings is None:
        return {**out, "llm_calls": 0, "note": "no LLM configured: extractive answers, no LLM call"}

    if embeddings is None:
        depths = scored_ks(settings.ks, config.top_k)
        retrieved = retrieve(
            config, corpus, cases, store_depths(config, depths), settings.progress, settings.fresh_retrieval
        )
        served = serve(config, retrieved, cases, depths)
        items = [(c.question, served[c.id][config.top_k]) for c in cases]
    else:
        items = [(c.question, longest_chunks(chunks, c.doc_scope, config.top_k)) for c in cases]
    estimates = estimate_llm_run(
        items,
        llm_settings,
        prompt_template=getattr(answerer, "prompt_template", None),
        references=[c.reference_answer or "" for c in cases],
        unanswerable=[c.unanswerable for c in cases],
        judge=settings.answer.judge,
        ragas_metrics=None if settings.answer.ragas_llm else (),
        replicates=settings.answer.judge_replicates,
    )
    return {**out, **{k: v.model_dump() for k, v in estimates.items()}}


def split_corpus(splitter: Any, corpus: Corpus) -> dict[str, list[str]]:
    """Each document's chunk texts, as the app's splitter cuts them (no embedding, no index), with
    the header a ``$chunk_header`` splitter makes of the document's metadata."""
    # deferred: pipeline.store imports pathway (~3 s); a dry run without a splitter must not
    from ragsweep.pipeline.store import outline_metadata

    def pieces(doc: Any) -> Any:  # element by element, as the DocumentStore hands them to the splitter
        if not getattr(splitter, "takes_metadata", False):
            return [chunk for text, _ in doc.pieces() for chunk in splitter.__wrapped__(text)]
        meta = {"doc_id": doc.doc_id, "path": doc.doc_id, **outline_metadata(doc)}
        return [chunk for text, own in doc.pieces() for chunk in splitter.__wrapped__((text, {**meta, **own}))]

    return {d.doc_id: [str(text) for text, _ in pieces(d)] for d in corpus.documents}


def longest_chunks(chunks: dict[str, list[str]], scope: list[str] | None, k: int) -> list[Hit]:
    """The k longest chunks a case could be served: its prompt's upper bound."""
    docs = [d for d in scope if d in chunks] if scope else sorted(chunks)  # a scope's parsed documents
    texts = sorted((t for d in docs for t in chunks[d]), key=len, reverse=True)[:k]
    return [Hit(rank=i + 1, score=0.0, text=t, doc_id="", start=0, end=len(t)) for i, t in enumerate(texts)]
