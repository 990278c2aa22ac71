"""The app's DocumentStore asked for every case at every depth: exactly the lists it serves.

:func:`retrieve` asks the store (one Pathway run per ``queries_per_run()`` asks, or the
served-list cache); :func:`serve` turns what the store returned into each depth's list of one
configuration (its reranker, when it has one, reorders the candidates as Pathway's question
answerer does).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ragsweep.core.environment import queries_per_run
from ragsweep.core.errors import StageError
from ragsweep.core.hits import Hit
from ragsweep.datasets.schema import Case, Dataset
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus, Dispatch, ParseFn, convert, parse_corpus, shown_name
from ragsweep.pipeline.served_cache import ServedCache
from ragsweep.pipeline.served_lists import Query, StoreRun, cached_run, read_cache

Served = dict[str, dict[int, list[Hit]]]  # case id -> k -> the list served at k


def parse_documents(
    dataset: Dataset,
    progress: bool = False,
    workers: int | None = None,
    follow_symlinks: bool = False,
    dispatch: Dispatch | None = None,
    config: PipelineConfig | None = None,
) -> Corpus:
    """The dataset's documents parsed by the configuration's parser (the app's, as the app runs it:
    :mod:`ragsweep.pipeline.parsing`; ragsweep's own without ``config``), through
    :func:`~ragsweep.pipeline.corpus.parse_corpus` (``dispatch``: where each cache miss is parsed, e.g. a
    Ray task); skipped files are named on stderr. An app parser that cannot parse the folder's PDFs here
    (Docling's models missing) stops the stage before any document is parsed."""
    parse_fn: ParseFn = convert
    parser_id: str | None = None
    if config is not None:
        spec = config.parser_spec()
        if not spec.native:  # the app's parser: it must run here
            # deferred: parsing imports pathway (~1 s); ragsweep's own parse does not need it
            from ragsweep.pipeline.parsing import check_parser

            spec = check_parser(config, dataset.docs_dir)
        parse_fn, parser_id = spec.parse_fn(), spec.identity
        if spec.replaced is not None:
            print(f"parse: {spec.manifest()['note']}", file=sys.stderr)
    corpus = parse_corpus(
        dataset.docs_dir,
        parse_fn=parse_fn,
        progress=progress,
        workers=workers,
        follow_symlinks=follow_symlinks,
        dispatch=dispatch,
        parser_id=parser_id,
    )
    for skipped in corpus.skipped:
        print(f"skipped document {shown_name(skipped.doc_id)}: {skipped.reason}", file=sys.stderr)
    if not corpus.documents:
        raise StageError(f"{dataset.docs_dir}: no document could be parsed")
    return corpus


@dataclass
class Retrieved:
    """What the store served: ``served[case id][k]`` for every asked depth, plus the
    chunks of the index (the candidates of chance and oracle)."""

    served: dict[str, dict[int, list[Hit]]]
    chunks_by_doc: dict[str, list[Hit]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    embedded_texts: int = 0
    n_chunks: int = 0
    queries: int = 0  # asked of the store
    from_cache: int = 0  # of those, answered from the served-list cache

    def candidates(self, scope: Sequence[str] | None) -> list[Hit]:
        """Every chunk a case could have been served: its scoped documents', or all."""
        docs = scope if scope is not None else sorted(self.chunks_by_doc)
        return [h for d in docs for h in self.chunks_by_doc.get(d, [])]


def parsed_scopes(cases: Sequence[Case], parsed: set[str]) -> list[list[str] | None]:
    """Each case's scope restricted to parsed documents. A scoped case whose every
    document was skipped gets ``[]``: it must get no hits, not the whole corpus."""
    return [[d for d in c.doc_scope if d in parsed] if c.doc_scope else None for c in cases]


def retrieve(
    config: PipelineConfig,
    corpus: Corpus,
    cases: Sequence[Case],
    ks: Iterable[int],
    progress: bool = False,
    fresh: bool = False,
) -> Retrieved:
    """Every case asked at every depth in ``ks`` (one Pathway run per ``queries_per_run()``
    asks: :func:`ragsweep.pipeline.store.run_batches`), so each list is exactly what the
    DocumentStore serves for that k: for a fused
    hybrid index one query row per (case, k); for BM25 or KNN, whose top k is the first k of
    a deeper answer, one row per case at the deepest k, each depth cut from Pathway's own
    order (tests/test_server_parity.py).

    A configuration with a reranker asks for its candidates (:func:`store_depths`) and
    :func:`serve` reranks them. A case scoped to documents that were all skipped gets no hits rather than the
    whole corpus. A query Pathway already answered for the same corpus, index and code
    comes from the served-list cache (:mod:`ragsweep.pipeline.served_cache`); ``fresh=True``
    asks Pathway every query again.
    """
    depths = sorted(set(ks))
    scopes = parsed_scopes(cases, {d.doc_id for d in corpus.documents})
    _warn_unscoped(cases, scopes)
    if not corpus.documents:
        raise ValueError(f"no parsable document in {corpus.docs_dir!r}: nothing to index")
    # BM25 and KNN: a case's one query at the deepest k answers every depth; a hybrid: one per (case,
    # k), answered from one ask of each exact sub-retriever (ragsweep.pipeline.fused_depths)
    deepest = _adaptive_ask(config, depths)
    shared = deepest is not None or len(depths) > 1 and config.prefix_exact()
    per_case = [deepest or max(depths)] if shared else depths
    asked = [(c, s, k) for c, s in zip(cases, scopes, strict=True) if s != [] for k in per_case]
    print(
        f"retrieve: {len(cases)} question(s) x k in {depths}{_how_asked(config, depths, shared)}: {len(asked)} "
        f"queries (at most {queries_per_run()} asks per Pathway run)...",
        file=sys.stderr,
    )
    prefix = tuple(depths) if shared else ()
    run = _run_store(config, corpus, [Query(c.question, k, s or None, prefix) for c, s, k in asked], progress, fresh)
    served: Served = {c.id: {k: [] for k in depths} for c in cases}
    if shared:
        for (case, _scope, _k), by_k in zip(asked, run.hits_at, strict=True):
            served[case.id] = by_k
    else:
        for (case, _scope, k), hits in zip(asked, run.hits, strict=True):
            served[case.id][k] = hits
    by_doc: dict[str, list[Hit]] = defaultdict(list)
    for chunk in run.chunks:
        by_doc[chunk.doc_id].append(chunk.as_hit())
    return Retrieved(
        served=served,
        chunks_by_doc=dict(by_doc),
        timings=dict(run.timings),
        seconds=run.seconds,
        embedded_texts=run.embedded_texts,
        n_chunks=len(run.chunks),
        queries=len(asked),
        from_cache=run.from_cache,
    )


def _adaptive_ask(config: PipelineConfig, depths: Sequence[int]) -> int | None:
    """The one depth an adaptive answerer asks its index, its deepest (each of its asks gives the LLM a
    prefix of that one list: Pathway's geometric strategy), when every scored depth is within it; None
    for any other answerer."""
    own = config.answerer_depths()
    return max(own) if own and max(depths) <= max(own) else None


def _how_asked(config: PipelineConfig, depths: Sequence[int], shared: bool) -> str:
    if shared and _adaptive_ask(config, depths) is not None:
        return " (prefixes of the one list the adaptive answerer asks, at its deepest depth)"
    if shared:
        return " (prefixes of one query: exact for this index)"
    if len(depths) > 1 and config.fused_from_parts():
        return " (fused from one query per question of each sub-retriever, at the deepest k)"
    return ""


def _warn_unscoped(cases: Sequence[Case], scopes: Sequence[list[str] | None]) -> None:
    unscoped = [c.id for c, s in zip(cases, scopes, strict=True) if s == []]
    if unscoped:
        print(
            f"warning: {len(unscoped)} case(s) scoped to documents that were not parsed "
            f"(first: {unscoped[0]}); they get no hits",
            file=sys.stderr,
        )


def _run_store(config: PipelineConfig, corpus: Corpus, queries: list[Query], progress: bool, fresh: bool) -> StoreRun:
    """The store's answers to ``queries``: from the served-list cache where it holds them (unless ``fresh``),
    Pathway asked only when some are not there."""
    cache = None if fresh else ServedCache.default()
    try:
        started = time.perf_counter()
        cached = read_cache(config, corpus, queries, cache)
        run = cached_run(queries, corpus, cached, started)
        if run is None:
            # deferred: store imports pathway (~1 s); a run the cache answers whole does not need it
            from ragsweep.pipeline.store import RagStore

            run = RagStore(config, corpus).run(queries, progress=progress, cache=cache, cached=cached)
    finally:
        if cache is not None:
            cache.close()
    if run.from_cache:
        print(
            f"retrieve: {run.from_cache} of {len(queries)} queries served from the served-list cache "
            "(same corpus, index and code; --fresh-retrieval asks Pathway again)",
            file=sys.stderr,
        )
    return run


def store_depths(config: PipelineConfig, depths: Iterable[int]) -> list[int]:
    """What a configuration asks of its store to serve ``depths``: its reranker's candidates, or the depths."""
    if config.variables.reranker is None:  # no reranker: no candidates (rerank_candidates' answer)
        return sorted(set(depths))
    # deferred: rerank imports pathway (~1 s); importing retrieval (the API, via answering) must not
    from ragsweep.pipeline.rerank import rerank_candidates

    n_candidates = rerank_candidates(config)
    return [n_candidates] if n_candidates else sorted(set(depths))


def serve(config: PipelineConfig, retrieved: Retrieved, cases: Sequence[Case], depths: Sequence[int]) -> Served:
    """Each case's list at each of ``depths`` for ``config``, from what its index returned
    (``retrieved``, asked at :func:`store_depths`): the top k of its reranked candidates when it
    has a reranker, else the store's own list at k."""
    if config.variables.reranker is None:  # no reranker: the store's own lists
        return {c.id: {k: retrieved.served[c.id][k] for k in depths} for c in cases}
    # deferred: rerank imports pathway (~1 s); importing retrieval (the API, via answering) must not
    from ragsweep.pipeline.rerank import build_reranker, rerank_at_depths, rerank_candidates

    n_candidates = rerank_candidates(config)
    if n_candidates is None:
        return {c.id: {k: retrieved.served[c.id][k] for k in depths} for c in cases}
    started = time.perf_counter()
    lists = rerank_at_depths(
        [(c.question, retrieved.served[c.id][n_candidates]) for c in cases], build_reranker(config), list(depths)
    )
    retrieved.timings["rerank"] = retrieved.timings.get("rerank", 0.0) + time.perf_counter() - started
    return dict(zip([c.id for c in cases], lists, strict=True))
