"""The Pathway DocumentStore, built in-process and queried by direct function calls.

split (TokenCountSplitter) -> embed -> index (BM25, KNN or their RRF hybrid), then a
whole batch of questions answered in the same graph run. No HTTP anywhere.

Timing: ``DocumentStore.retrieve_query`` answers each query *as of now*. Documents
enter the graph at logical time 2 and queries at time 4, so every query sees the
fully indexed corpus (with ``pw.io.fs.read`` documents would carry wall-clock
times and time-0 queries would silently get ``[]``).
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from pydantic import BaseModel

from ragsweep.core.environment import queries_per_run
from ragsweep.core.hits import ChunkMetadata, Hit, chunk_source, split_header
from ragsweep.core.offline import ensure_offline
from ragsweep.datasets.pathway_limits import tantivy_safe
from ragsweep.pipeline.app_components import check_endpoint, run_with
from ragsweep.pipeline.config import BuiltPipeline, PipelineConfig
from ragsweep.pipeline.corpus import Corpus, ParsedDocument, parse_corpus
from ragsweep.pipeline.scalars import Overrides
from ragsweep.pipeline.served_cache import ServedCache
from ragsweep.pipeline.served_lists import (
    CachedLists,
    ChunkInfo,
    Query,
    ServedItem,
    StoreRun,
    cached_run,
    hits_of_run,
    read_cache,
    scope_filter,
    served_offsets,
    store_served,
)
from ragsweep.pipeline.served_lists import chunk_texts as chunk_texts  # the name tests and benchmarks import
from ragsweep.pipeline.served_paths import served_path

ensure_offline()

import pathway as pw  # noqa: E402

from ragsweep.pipeline.chunking import OffsetTokenCountSplitter, check_not_empty  # noqa: E402
from ragsweep.pipeline.fused_depths import exact_parts, fuse_served  # noqa: E402
from ragsweep.pipeline.parsing import check_parser  # noqa: E402
from ragsweep.pipeline.routing import serving_store  # noqa: E402
from ragsweep.pipeline.scoped_lists import Ask, answer_table  # noqa: E402
from ragsweep.pipeline.serving import DocumentStore  # noqa: E402
from ragsweep.pipeline.stable_order import StableOrderFactory, StableOrderIndex, exact_index  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Callable

DOCS_TIME = 2
QUERIES_TIME = 4


class IndexStats(BaseModel):
    documents: int
    chunks: int
    tokens: int
    chunks_per_document: dict[str, int]
    tokens_per_chunk_min: int
    tokens_per_chunk_max: int
    seconds: float
    embedded_texts: int  # texts that really went through the embedding model
    split_seconds: float = 0.0
    embed_seconds: float = 0.0


class ChunkRow(NamedTuple):
    """A chunk as the index holds it: where it is in its document, its text and its header."""

    doc_id: str
    start: int
    end: int
    text: str
    header: str


class ServedBatch(NamedTuple):
    """What one or more Pathway runs served: each query's raw list (by position), the chunk
    table, how many texts the embedder really embedded, and the split and embed seconds."""

    answers: dict[int, list[ServedItem]]
    chunks: list[ChunkInfo]
    embedded_texts: int
    timings: dict[str, float]


def sanitize_query(text: str) -> str:
    """What Pathway's Tantivy BM25 is asked (:mod:`ragsweep.pipeline.serving`): the question itself
    unless it holds Tantivy query syntax; ``""`` (no match) when nothing searchable is left. Every
    other index is asked the question as it is."""
    return tantivy_safe(text) if text is not None else ""


def _token_counter() -> Callable[[str], int]:
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")
    return lambda text: len(enc.encode_ordinary(text))


def prefix_exact(retriever_factory: Any) -> bool:
    """Is the top-k of this index the first k of a deeper answer? True for Pathway's BM25
    and brute-force KNN as ragsweep's DocumentStore serves them: one total order per query
    (score, then the tie key of :mod:`ragsweep.pipeline.stable_order`, which also settles which
    equal-scoring chunk makes any cut). False for a fused hybrid index (RRF over each
    retriever's top-k is not the prefix of RRF over a deeper top-k), for approximate indexes
    (USearch, LSH: a deeper search may find other neighbours) and for factories ragsweep
    cannot see inside: each depth is then asked on its own."""
    return exact_index(retriever_factory)


def outline_metadata(doc: ParsedDocument) -> dict[str, Any]:
    """A document's title and headings as its metadata carries them to a splitter that makes chunk
    headers (what a Pathway app's parser would put there): ``title``, ``headings`` (``[offset, text]``)."""
    return {
        **({"title": doc.title} if doc.title else {}),
        **({"headings": [[offset, text] for offset, text in doc.headings]} if doc.headings else {}),
    }


def document_store(corpus: Corpus, pipeline: BuiltPipeline) -> DocumentStore:
    """The app's DocumentStore over the corpus, in the graph being built: every document enters at
    :data:`DOCS_TIME`, before any query (asked at :data:`QUERIES_TIME`) is answered. With
    ``$route_docs`` it is :class:`ragsweep.pipeline.routing.RoutedDocumentStore`."""
    return serving_store(documents_table(corpus, pipeline), pipeline, parser=StoredElements())


def documents_table(corpus: Corpus, pipeline: BuiltPipeline) -> pw.Table:
    """The corpus as the DocumentStore's input table: each document's elements and metadata."""
    root = Path(corpus.docs_dir).resolve()
    folder = pipeline.served_folder
    outline = bool(getattr(pipeline.splitter, "takes_metadata", False))
    titled = pipeline.route_docs is not None  # the document stage names each document by its title
    doc_rows = [  # path: as the app reading its folder (pw.io.fs.read) gives it; its prompts show it
        (
            json.dumps(doc.pieces()).encode("utf-8"),  # its elements, as the app's parser gave them
            pw.Json(
                {
                    "path": str(root / doc.doc_id) if folder is None else served_path(folder, doc.doc_id),
                    "doc_id": doc.doc_id,
                    **(outline_metadata(doc) if outline else {"title": doc.title} if titled and doc.title else {}),
                }
            ),
            DOCS_TIME,
            1,
        )
        for doc in corpus.documents
    ]
    return pw.debug.table_from_rows(pw.schema_from_types(data=bytes, _metadata=pw.Json), doc_rows, is_stream=True)


class StoredElements(pw.UDF):
    """The DocumentStore's parser stage over the parse stage's result: each document's elements (text,
    metadata), as the app's parser gave them, handed to the splitter one by one (the app's parser ran
    once, outside the graph, behind the parse cache: :mod:`ragsweep.pipeline.parsing`)."""

    def __wrapped__(self, contents: bytes) -> list[tuple[str, dict]]:
        return [(str(text), dict(meta)) for text, meta in json.loads(contents)]


def _ask(store: DocumentStore, rows: list[tuple[str, int, str | None]], qids: list[int] | None = None) -> pw.Table:
    """``rows`` (question, k, scope filter) asked of ``store``: ``(qid, result)``, qid a row's position or its ``qids`` entry."""
    ids = qids if qids is not None else list(range(len(rows)))
    query_rows = [(i, text, k, where, None, QUERIES_TIME, 1) for i, (text, k, where) in zip(ids, rows, strict=True)]
    query_table = pw.debug.table_from_rows(
        pw.schema_from_types(qid=int, query=str, k=int, metadata_filter=str | None, filepath_globpattern=str | None),
        query_rows,
        is_stream=True,
    )
    answered = store.retrieve_query(
        query_table.select(pw.this.query, pw.this.k, pw.this.metadata_filter, pw.this.filepath_globpattern)
    )
    return query_table.select(pw.this.qid, result=answered.with_universe_of(query_table).result)


def _named_chunks(items: list[Any], chunks: dict[str, tuple[str, ChunkMetadata]]) -> list[ServedItem]:
    """A list as the store serves it: items that name a chunk (:mod:`ragsweep.pipeline.scoped_lists`)
    given its text and metadata."""
    return [
        {"text": chunks[item["chunk"]][0], "metadata": chunks[item["chunk"]][1], "dist": item["dist"]}
        if "chunk" in item
        else item
        for item in items or []
    ]


def _on_result(into: dict[int, list[ServedItem]], key: Any, row: dict[str, Any], time: int, is_addition: bool) -> None:
    if is_addition:
        value = row["result"]
        into[int(row["qid"])] = value.value if hasattr(value, "value") else value


def _question_groups(queries: list[Query]) -> tuple[list[tuple[str, int, str | None]], list[int]]:
    """One row per question and scope filter, at the deepest k asked of it; and each query's row."""
    deepest: defaultdict[tuple[str, str | None], int] = defaultdict(int)
    position: dict[tuple[str, str | None], int] = {}
    of_query = []
    for q in queries:
        group = (q.text, scope_filter(q.doc_scope))
        deepest[group] = max(deepest[group], q.k)
        of_query.append(position.setdefault(group, len(position)))
    return [(text, k, where) for (text, where), k in deepest.items()], of_query


def _fused_table(
    queries: list[Query], of_query: list[int], lists: list[pw.Table], rrf_k: float, qids: list[int]
) -> pw.Table:
    """Each query's list, fused in the graph from its question's sub-retriever lists at its own k
    (:func:`ragsweep.pipeline.fused_depths.fuse_served`), each question's lists read once for all its
    depths; the fused list's JSON is made in the graph, as the hybrid's store makes it (Pathway's JSON
    does not give every float back to its last bit)."""
    depths: dict[int, set[int]] = {}
    for q, group in zip(queries, of_query, strict=True):
        depths.setdefault(group, set()).add(q.k)
    schema = pw.schema_from_types(group=int, depths=tuple[int, ...])
    groups = pw.debug.table_from_rows(
        schema, [(g, tuple(sorted(ks)), QUERIES_TIME, 1) for g, ks in depths.items()], is_stream=True
    )
    for j, served in enumerate(lists):
        groups = groups.join(served, groups.group == served.qid).select(*pw.left, **{f"_pw_list_{j}": pw.right.result})

    def fuse(ks: tuple[int, ...], *served: pw.Json) -> list[tuple[int, pw.Json]]:
        items = [s.as_list() for s in served]
        return [(k, pw.Json(cast(list[Any], fuse_served(items, rrf_k, k)))) for k in ks]

    names = [f"_pw_list_{j}" for j in range(len(lists))]
    fused = groups.select(
        pw.this.group,
        at=pw.apply_with_type(fuse, list[tuple[int, pw.Json]], pw.this.depths, *(pw.this[n] for n in names)),
    ).flatten(pw.this.at)
    fused = fused.select(pw.this.group, k=pw.this.at[0], result=pw.this.at[1])
    return _by_query(fused, [(qid, group, q.k) for qid, q, group in zip(qids, queries, of_query, strict=True)])


def _by_query(lists: pw.Table, wanted: list[tuple[int, int, int]]) -> pw.Table:
    """``(qid, result)`` from ``lists`` of ``(group, k, result)``, for ``wanted`` rows ``(qid, group, k)``."""
    rows = [(qid, group, k, QUERIES_TIME, 1) for qid, group, k in wanted]
    table = pw.debug.table_from_rows(pw.schema_from_types(qid=int, group=int, k=int), rows, is_stream=True)
    joined = table.join(lists, table.group == lists.group, table.k == lists.k)
    return joined.select(pw.left.qid, result=pw.right.result)


def _at(queries: list[Query], positions: list[int]) -> list[Query]:
    return [queries[i] for i in positions]


class _CutPlan(NamedTuple):
    """The exact indexes a store's lists can be cut from (:mod:`ragsweep.pipeline.scoped_lists`), and
    the RRF constant that fuses them (None: one index, its own lists)."""

    factories: list[Any]
    rrf_k: float | None


def _cut_plan(pipeline: BuiltPipeline) -> _CutPlan | None:
    if pipeline.route_docs is not None:
        return None
    parts = exact_parts(pipeline.retriever_factory)
    if parts is not None:
        return _CutPlan([_unwrapped(f) for f in parts[0]], parts[1])
    if exact_index(pipeline.retriever_factory):
        return _CutPlan([_unwrapped(pipeline.retriever_factory)], None)
    return None


def _unwrapped(factory: Any) -> Any:
    return factory.inner if isinstance(factory, StableOrderFactory) else factory


def _split_by_scopes(queries: list[Query]) -> tuple[list[int], list[int]]:
    """The queries whose question is asked with two scopes or more (each cut from one full answer:
    the scoped searches would cost more), and the others (asked as they are: an unscoped or lone
    scoped query reads far fewer matches than the index holds)."""
    asked = [q.text for q in queries]
    many = _many_scoped(list(zip(asked, queries, strict=True)))
    cut = [i for i, text in enumerate(asked) if text in many]
    return cut, [i for i, text in enumerate(asked) if text not in many]


def _many_scoped(asked: list[tuple[str, Query]]) -> set[str]:
    """The texts asked with two scopes or more and never unscoped: the questions cut from one full answer."""
    scopes: dict[str, set[tuple[str, ...] | None]] = {}
    for text, q in asked:
        scopes.setdefault(text, set()).add(_scope(q.doc_scope))
    return {text for text, seen in scopes.items() if len(seen) > 1 and None not in seen}


def run_batches(queries: list[Query], todo: list[int], limit: int, cut_whole: bool) -> list[list[int]]:
    """``todo`` in Pathway runs of at most ``limit`` asks each, in order: Pathway's memory grows with
    the queries in flight. With ``cut_whole`` (an exact index: :func:`_cut_plan`), a question asked
    with two scopes or more is asked once for all its matches and its lists cut from that
    (:func:`_split_by_scopes`): its queries go in one run together and count as one ask, so a dataset
    that asks each question of each of 510 documents at 4 depths is 1 run, not 11 that each index the
    whole corpus again. Any other query is one ask. Each query is answered as it would be alone, so
    how they are grouped changes no list."""
    whole = _many_scoped([(queries[i].text, queries[i]) for i in todo]) if cut_whole else set()
    units: dict[str | int, list[int]] = {}  # a question asked whole, or one query on its own
    for i in todo:
        units.setdefault(queries[i].text if queries[i].text in whole else i, []).append(i)
    batches: list[list[int]] = [[]]
    asks = 0
    for unit in units.values():
        if asks == limit:
            batches.append([])
            asks = 0
        batches[-1].extend(unit)
        asks += 1
    return batches


def _scope(doc_scope: list[str] | None) -> tuple[str, ...] | None:
    if not doc_scope:
        return None
    scope_filter(doc_scope)  # an id no filter can express fails here, as it would asked of the store
    return tuple(sorted(set(doc_scope)))


def _cut_table(store: DocumentStore, plan: _CutPlan, queries: list[Query], cut: list[int]) -> pw.Table:
    """``(qid, result)`` for the queries at ``cut``: each question asked once of each index of ``plan``
    for all its matches, every (scope, k) list cut from that answer. The store's own index (built from
    the plan's first factory) serves as the first; the others are built over its chunks."""
    chunks = store.chunked_docs
    own = store.index.inner_index
    first = [own.inner] if isinstance(own, StableOrderIndex) else []
    indexes = first + [f.build_inner_index(chunks.text, chunks.metadata) for f in plan.factories[len(first) :]]
    questions: dict[str, int] = {}
    groups: dict[tuple[int, tuple[str, ...] | None], int] = {}
    depths: dict[int, set[int]] = {}
    wanted = []
    for qid in cut:
        q = queries[qid]
        row = questions.setdefault(q.text, len(questions))
        group = groups.setdefault((row, _scope(q.doc_scope)), len(groups))
        depths.setdefault(group, set()).add(q.k)
        wanted.append((qid, group, q.k))
    asks: dict[int, list[Ask]] = {}
    for (row, scope), group in groups.items():
        asks.setdefault(row, []).append(Ask(group, scope, tuple(sorted(depths[group]))))
    table = pw.debug.table_from_rows(
        pw.schema_from_types(query=str, row=int),
        [(text, row, QUERIES_TIME, 1) for text, row in questions.items()],
        is_stream=True,
    )
    return _by_query(answer_table(chunks, indexes, table, asks, plan.rrf_k), wanted)


class RagStore:
    """A Pathway DocumentStore over a parsed corpus, for one pipeline configuration.

    >>> store = RagStore.from_folder("pipelines/default.yaml", "docs", {"retriever_mode": "bm25"})
    >>> store.retrieve(["Who are the parties?"], k=5)   # one graph run for the batch
    """

    def __init__(self, config: PipelineConfig, corpus: Corpus):
        self.config = config
        self.corpus = corpus
        if not corpus.documents:
            raise ValueError(f"no parsable document in {corpus.docs_dir!r}: nothing to index")
        self.last_run: StoreRun | None = None

    @classmethod
    def from_folder(
        cls, pipeline: "str | Path | PipelineConfig", docs_dir: "str | Path", overrides: Overrides | None = None
    ) -> "RagStore":
        """A store from a pipeline config (path or object) and a documents folder.

        Bad files are skipped (see ``store.corpus.skipped``); a folder with no
        parsable document raises.
        """
        config = pipeline if isinstance(pipeline, PipelineConfig) else PipelineConfig.load(pipeline, overrides)
        if overrides and isinstance(pipeline, PipelineConfig):
            config = config.with_overrides(overrides)
        spec = check_parser(config, docs_dir)  # the pipeline's parser, as the app runs it
        return cls(config, parse_corpus(docs_dir, parse_fn=spec.parse_fn(), parser_id=spec.identity))

    # ----------------------------------------------------------------- graph
    def _build_graph(self, pipeline: BuiltPipeline, queries: list[Query]) -> tuple[DocumentStore, list[pw.Table]]:
        """The store and what is asked of it, as tables of ``(qid, result)``: for an exact index (or a
        hybrid of exact ones), a question asked with several scopes is asked once for all its matches
        and every list cut from that (:mod:`ragsweep.pipeline.scoped_lists`); any other query is asked
        of the store itself, or, for a hybrid of exact sub-retrievers, of each sub-retriever's own store
        once per question and scope at its deepest k (:mod:`ragsweep.pipeline.fused_depths`)."""
        from pathway.internals.parse_graph import G

        G.clear()
        plan = _cut_plan(pipeline)
        cut, rest = _split_by_scopes(queries) if plan is not None else ([], list(range(len(queries))))
        parts = exact_parts(pipeline.retriever_factory) if pipeline.route_docs is None else None
        asked: list[pw.Table] = []
        if plan is not None and not rest:  # every list cut: a store over the first index gives the chunks and it
            store = DocumentStore(
                documents_table(self.corpus, pipeline),
                retriever_factory=plan.factories[0],
                splitter=pipeline.splitter,
                parser=StoredElements(),
            )
        elif parts is None or not rest:
            store = document_store(self.corpus, pipeline)
            if rest:
                asked.append(_ask(store, [(q.text, q.k, scope_filter(q.doc_scope)) for q in _at(queries, rest)], rest))
        else:
            docs, (factories, rrf_k) = documents_table(self.corpus, pipeline), parts
            stores = [
                DocumentStore(docs, retriever_factory=f, splitter=pipeline.splitter, parser=StoredElements())
                for f in factories
            ]
            rows, of_query = _question_groups(_at(queries, rest))
            lists = [_ask(store, rows) for store in stores]
            store = stores[0]
            asked.append(_fused_table(_at(queries, rest), of_query, lists, rrf_k, rest))
        if cut and plan is not None:
            asked.append(_cut_table(store, plan, queries, cut))
        return store, asked

    def run(
        self,
        queries: list[Query],
        progress: bool = False,
        cache: ServedCache | None = None,
        cached: CachedLists | None = None,
    ) -> StoreRun:
        """Index the corpus and answer ``queries`` in one Pathway run (one per
        :func:`queries_per_run` asks when there are more, :func:`run_batches`: each run indexes the
        same chunks, and each query is answered against the whole index as it would be alone).

        ``progress`` shows a bar of the texts (chunks, then questions) going
        through the embedder, the part of the run that takes time. With a ``cache``
        (:mod:`ragsweep.pipeline.served_cache`), a query whose key is there gets the list Pathway
        served for it before; only the others go to Pathway (none at all when every query
        and the chunk table are there), and their lists are stored. ``cached``: what the cache held for
        ``queries`` when the caller read it already (:func:`ragsweep.pipeline.served_lists.read_cache`).
        """
        started = time.perf_counter()
        cached = read_cache(self.config, self.corpus, queries, cache) if cached is None else cached
        run = cached_run(queries, self.corpus, cached, started)
        if run is None:
            texts = {doc.doc_id: doc for doc in self.corpus.documents}
            answers, chunks, embedded, timings = self._serve_missing(queries, texts, progress, cached, cache)
            run = hits_of_run(
                queries,
                answers,
                chunks,
                self.corpus,
                started,
                embedded_texts=embedded,
                timings=timings,
                from_cache=len(queries) - len(cached.todo),
            )
        self.last_run = run
        return run

    def _serve_missing(
        self,
        queries: list[Query],
        texts: dict[str, ParsedDocument],
        progress: bool,
        cached: CachedLists,
        cache: ServedCache | None,
    ) -> ServedBatch:
        """The queries the cache did not answer, asked of Pathway (the stored ones added as they
        are); what Pathway served is stored. Same result as :meth:`_serve`."""
        answers = {i: cached.stored[key] for i, key in enumerate(cached.keys) if key in cached.stored}
        chunks: list[ChunkInfo] = []
        embedded, timings = 0, {"split": 0.0, "embed": 0.0}
        # every run indexes the same chunks (split and embeddings from the caches)
        cut_whole = _cut_plan(self.config.build()) is not None
        for part in run_batches(queries, cached.todo, queries_per_run(), cut_whole):
            batch = self._serve([queries[i] for i in part], texts, progress)
            answers.update({part[j]: value for j, value in batch.answers.items()})
            chunks = chunks or batch.chunks
            embedded += batch.embedded_texts
            timings = {name: timings[name] + batch.timings[name] for name in timings}
            if cached.index_key and cache is not None:
                store_served(cache, cached, part, answers, chunks)
        return ServedBatch(answers, chunks, embedded, timings)

    def _serve(self, queries: list[Query], texts: dict[str, ParsedDocument], progress: bool) -> ServedBatch:
        """One Pathway run (see :class:`ServedBatch`)."""
        pipeline = self.config.build()
        embedder = pipeline.embedder
        check_endpoint(embedder, pipeline.retriever_factory)
        embedded_before = getattr(embedder, "embedded_count", 0)
        split_before = OffsetTokenCountSplitter.seconds
        store, asked = self._build_graph(pipeline, queries)

        chunk_rows: dict[pw.Pointer, ChunkRow] = {}
        served_chunks: dict[str, tuple[str, ChunkMetadata]] = {}  # row id -> (text, metadata) as served

        def on_chunk(key, row, time, is_addition):
            if is_addition:
                meta = row["metadata"].as_dict() if hasattr(row["metadata"], "as_dict") else dict(row["metadata"])
                doc_id = chunk_source(meta)
                header, text = split_header(row["text"], meta)
                start, end = served_offsets(meta, text, texts.get(doc_id))
                chunk_rows[key] = ChunkRow(doc_id, start, end, text, header)
                served_chunks[str(key)] = (row["text"], meta)
            else:
                chunk_rows.pop(key, None)

        got: dict[int, list[ServedItem]] = {}
        for results in asked:
            pw.io.subscribe(results, on_change=partial(_on_result, got))
        pw.io.subscribe(store.chunked_docs, on_change=on_chunk)
        bar = None
        if progress and embedder is not None and hasattr(embedder, "on_progress"):
            import sys

            from tqdm import tqdm

            bar = tqdm(desc="embed (chunks + questions)", unit="text", file=sys.stderr, leave=False)
            embedder.on_progress = bar.update
        try:
            with run_with(embedder, pipeline.retriever_factory) as options:
                pw.run(monitoring_level=pw.MonitoringLevel.NONE, default_logging=False, **options)
        finally:
            if bar is not None:
                bar.close()

        count_tokens = _token_counter()
        chunks = sorted(  # tokens: what the index holds and serves of the chunk, its header included
            (ChunkInfo(**row._asdict(), tokens=count_tokens(row.header + row.text)) for row in chunk_rows.values()),
            key=lambda c: (c.doc_id, c.start),
        )
        check_not_empty([c.text for c in chunks], pipeline.splitter, self.config.path)  # before anything is kept
        timings = {"split": OffsetTokenCountSplitter.seconds - split_before, "embed": getattr(embedder, "seconds", 0.0)}
        answers = {qid: _named_chunks(items, served_chunks) for qid, items in got.items()}
        return ServedBatch(answers, chunks, getattr(embedder, "embedded_count", 0) - embedded_before, timings)

    # ----------------------------------------------------------------- API
    def retrieve(
        self, questions: list[str], k: int | None = None, doc_scopes: list[list[str] | None] | None = None
    ) -> list[list[Hit]]:
        """Top-k hits for every question, the whole batch in one graph run."""
        k = k or self.config.top_k
        scopes = doc_scopes or [None] * len(questions)
        if len(scopes) != len(questions):
            raise ValueError("doc_scopes must have one entry per question")
        return self.run([Query(q, k, s) for q, s in zip(questions, scopes)]).hits

    def index(self, progress: bool = False) -> IndexStats:
        """Split, embed and index the corpus; report what was built.

        Pathway only computes what some output consumes, so one probe query is
        asked: without it the index (and the embedding) would never be built.
        """
        run = self.run([Query("index", 1)], progress=progress)
        return index_stats(run, len(self.corpus.documents))


def index_stats(run: StoreRun, documents: int) -> IndexStats:
    per_doc = Counter(c.doc_id for c in run.chunks)
    tokens = [c.tokens for c in run.chunks]
    return IndexStats(
        documents=documents,
        chunks=len(run.chunks),
        tokens=sum(tokens),
        chunks_per_document=dict(sorted(per_doc.items())),
        tokens_per_chunk_min=min(tokens, default=0),
        tokens_per_chunk_max=max(tokens, default=0),
        seconds=run.seconds,
        embedded_texts=run.embedded_texts,
        split_seconds=run.timings["split"],
        embed_seconds=run.timings["embed"],
    )
