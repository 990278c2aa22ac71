"""The stages every evaluation walks: parse -> retrieve -> answer -> score.

eval, sweep and the Python API call these; none of them touches a run folder
(that is :mod:`ragsweep.commands.eval` / :mod:`ragsweep.commands.sweep`). Each stage takes and
returns plain values and the typed records of :mod:`ragsweep.evaluation.records`.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ragsweep.answer.base import Answer
from ragsweep.datasets.schema import Case, Dataset, RelevanceConfig
from ragsweep.evaluation.records import CaseResult, build_case_result
from ragsweep.pipeline.hits import Hit


class StageError(Exception):
    """A stage cannot go on (e.g. no document could be parsed)."""


# ------------------------------------------------------------------ load


class RunInputs(BaseModel):
    """What every run (eval, sweep, the Python API) starts from, and where it goes."""

    pipeline: str = "pipelines/default.yaml"
    overrides: dict[str, Any] = Field(default_factory=dict)
    dataset: str
    split: str | None = None
    limit: int | None = Field(default=None, ge=1)  # the first N cases
    sample: int | None = Field(default=None, ge=1)  # a random sample of N cases, stratified by question type
    seed: int = 0
    validate_dataset: bool = True  # refuse a dataset that `ragsweep validate` rejects
    workers: int | None = Field(default=None, ge=1)  # Docling worker processes (None: one per core)
    fresh_retrieval: bool = False  # ask Pathway every query, not the served-list cache
    out: str = "runs"
    name: str | None = None
    resume: str | None = None
    progress: bool = True


def stratified_sample(cases: Sequence[Case], n: int, seed: int) -> list[Case]:
    """``n`` cases drawn at random, each question type in proportion to its share
    (largest remainders), reproducible for a seed; the dataset's order is kept."""
    import random

    if n >= len(cases):
        return list(cases)
    by_type: dict[str, list[int]] = defaultdict(list)
    for i, case in enumerate(cases):
        by_type[case.type or "(none)"].append(i)
    quotas = {t: n * len(ix) / len(cases) for t, ix in by_type.items()}
    take = {t: int(q) for t, q in quotas.items()}
    for t in sorted(quotas, key=lambda t: (-(quotas[t] - take[t]), t))[: n - sum(take.values())]:
        take[t] += 1
    rng = random.Random(seed)
    chosen: set[int] = set()
    for t in sorted(by_type):
        chosen.update(rng.sample(by_type[t], take[t]))
    return [cases[i] for i in sorted(chosen)]


def load_inputs(inputs: RunInputs):
    """The pipeline config, the dataset (validated first) and the cases to evaluate."""
    from ragsweep.datasets.loader import DatasetError, load_dataset
    from ragsweep.datasets.pathway_limits import unscopable_reason
    from ragsweep.evaluation.runfolder import RunError
    from ragsweep.pipeline.config import ConfigError, PipelineConfig

    try:
        config = PipelineConfig.load(inputs.pipeline, inputs.overrides)
    except ConfigError as err:
        raise RunError(str(err)) from err
    if inputs.validate_dataset and Path(inputs.dataset).is_dir():
        from ragsweep.datasets.validate import validate_dataset

        problems = validate_dataset(inputs.dataset)
        if problems:
            listed = "\n  ".join(str(p) for p in problems[:30])
            more = f"\n  ... and {len(problems) - 30} more" if len(problems) > 30 else ""
            raise RunError(
                f"{inputs.dataset}: `ragsweep validate` finds {len(problems)} problem(s):\n  {listed}{more}\n"
                "fix them, or run with --no-validate to evaluate anyway"
            )
    try:
        dataset = load_dataset(inputs.dataset, split=inputs.split)
    except DatasetError as err:
        raise RunError(str(err)) from err
    cases = []
    for case in dataset.cases:
        reason = next((r for d in case.doc_scope or [] if (r := unscopable_reason(d))), None)
        if reason:
            print(f"warning: case {case.id} skipped: {reason}", file=sys.stderr)
        else:
            cases.append(case)
    if inputs.sample:
        cases = stratified_sample(cases, inputs.sample, inputs.seed)
    if inputs.limit:
        cases = cases[: inputs.limit]
    if not cases:
        raise RunError(f"{inputs.dataset}: no case to evaluate (split={inputs.split}, limit={inputs.limit})")
    return config, dataset, cases


# ------------------------------------------------------------------ parse


def parse_documents(dataset: Dataset, progress: bool = False, workers: int | None = None):
    """Docling over the dataset's documents; skipped files are named on stderr."""
    from ragsweep.pipeline.corpus import parse_corpus

    kwargs = {"progress": progress}
    if workers is not None:
        kwargs["workers"] = workers
    corpus = parse_corpus(dataset.docs_dir, **kwargs)
    for skipped in corpus.skipped:
        print(f"skipped document {skipped.doc_id}: {skipped.reason}", file=sys.stderr)
    if not corpus.documents:
        raise StageError(f"{dataset.docs_dir}: no document could be parsed")
    return corpus


# ------------------------------------------------------------------ retrieve


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
    config,
    corpus,
    cases: Sequence[Case],
    ks: Iterable[int],
    progress: bool = False,
    rerank: bool = True,
    fresh: bool = False,
) -> Retrieved:
    """Every case asked at every depth in ``ks`` (one Pathway run per ``queries_per_run()``
    queries), so each list is exactly what the DocumentStore serves for that k: for a fused
    hybrid index one query row per (case, k); for BM25 or KNN, whose top k is the first k of
    a deeper answer, one row per case at the deepest k, each depth cut from Pathway's own
    order (tests/test_server_parity.py).

    With a reranker configured (``$reranker``), the store is asked for
    ``$rerank_candidates`` and each depth is the top k of the reranked candidates, as
    Pathway's question answerer does (``rerank=False`` returns the candidates as served).
    A case scoped to documents that were all skipped gets no hits rather than the
    whole corpus. A query Pathway already answered for the same corpus, index and code
    comes from the served-list cache (:mod:`ragsweep.pipeline.served_cache`); ``fresh=True``
    asks Pathway every query again.
    """
    import time

    from ragsweep.pipeline.rerank import build_reranker, rerank_at_depths, rerank_candidates
    from ragsweep.pipeline.served_cache import ServedCache
    from ragsweep.pipeline.store import Query, RagStore, prefix_exact, queries_per_run

    depths = sorted(set(ks))
    n_candidates = rerank_candidates(config) if rerank else None
    store_ks = [n_candidates] if n_candidates else depths
    scopes = parsed_scopes(cases, {d.doc_id for d in corpus.documents})
    unscoped = [c.id for c, s in zip(cases, scopes) if s == []]
    if unscoped:
        print(
            f"warning: {len(unscoped)} case(s) scoped to documents that were not parsed "
            f"(first: {unscoped[0]}); they get no hits",
            file=sys.stderr,
        )
    store = RagStore(config, corpus)
    # BM25 and KNN serve at k the first k of a deeper answer: one query per case answers every
    # depth. A fused hybrid index does not (RRF over deeper lists): one query per (case, k).
    shared = n_candidates is None and len(store_ks) > 1 and prefix_exact(config.build().retriever_factory)
    per_case = [max(store_ks)] if shared else store_ks
    asked = [(c, s, k) for c, s in zip(cases, scopes) if s != [] for k in per_case]
    print(
        f"retrieve: {len(cases)} question(s) x k in {store_ks}"
        f"{' (prefixes of one query: exact for this index)' if shared else ''}: {len(asked)} queries "
        f"(at most {queries_per_run()} per Pathway run)...",
        file=sys.stderr,
    )
    prefix = tuple(store_ks) if shared else ()
    cache = None if fresh else ServedCache.default()
    try:
        run = store.run([Query(c.question, k, s or None, prefix) for c, s, k in asked], progress=progress, cache=cache)
    finally:
        if cache is not None:
            cache.close()
    if run.from_cache:
        print(
            f"retrieve: {run.from_cache} of {len(asked)} queries served from the served-list cache "
            "(same corpus, index and code; --fresh-retrieval asks Pathway again)",
            file=sys.stderr,
        )
    served: dict[str, dict[int, list[Hit]]] = {c.id: {k: [] for k in depths} for c in cases}
    timings = dict(run.timings)
    if shared:
        for (case, _scope, _k), by_k in zip(asked, run.hits_at):
            served[case.id] = by_k
    elif n_candidates is None:
        for (case, _scope, k), hits in zip(asked, run.hits):
            served[case.id][k] = hits
    else:
        started = time.perf_counter()
        lists = rerank_at_depths(
            [(case.question, hits) for (case, _s, _k), hits in zip(asked, run.hits)], build_reranker(config), depths
        )
        for (case, _s, _k), by_k in zip(asked, lists):
            served[case.id] = by_k
        timings["rerank"] = time.perf_counter() - started
    by_doc: dict[str, list[Hit]] = defaultdict(list)
    for chunk in run.chunks:
        by_doc[chunk.doc_id].append(chunk.as_hit())
    return Retrieved(
        served=served,
        chunks_by_doc=dict(by_doc),
        timings=timings,
        seconds=run.seconds,
        embedded_texts=run.embedded_texts,
        n_chunks=len(run.chunks),
        queries=len(asked),
        from_cache=run.from_cache,
    )


# ------------------------------------------------------------------ answer


def make_answerer(config, use_llm: bool):
    """The LLM answerer when asked for (or configured), else the extractive one."""
    if use_llm or config.get("llm_model"):
        from ragsweep.answer.llm import LLMAnswerer
        from ragsweep.llm.settings import LLMSettings

        settings = LLMSettings.from_mapping(config.scalars())
        return LLMAnswerer(settings, prompt_template=config.get("prompt_template")), settings
    from ragsweep.answer.extractive import ExtractiveAnswerer

    return ExtractiveAnswerer(), None


def answer(answerer, items: Sequence[tuple[str, Sequence[Hit]]]) -> list[Answer]:
    if hasattr(answerer, "answer_batch"):
        return answerer.answer_batch(list(items))
    return [answerer.answer(q, list(h)) for q, h in items]


def answer_or_given(
    answerer, cases: Sequence[Case], hits: Sequence[Sequence[Hit]], use_given: bool = True
) -> list[Answer]:
    """Each case's answer: the response the dataset gives for it (pre-computed answers,
    e.g. ragas' ``response``/``answer``), scored as given, else the answerer's."""
    from ragsweep.metrics.answer import is_refusal

    todo = [i for i, c in enumerate(cases) if not (use_given and c.response is not None)]
    produced = iter(answer(answerer, [(cases[i].question, hits[i]) for i in todo]) if todo else [])
    out = []
    for i, case in enumerate(cases):
        if use_given and case.response is not None:
            out.append(Answer(text=case.response, abstained=is_refusal(case.response), answerer="dataset"))
        else:
            out.append(next(produced))
    return out


def judge_answers(judge, cases: Sequence[Case], answers: Sequence[Answer]):
    items = [
        {
            "question": c.question,
            "reference": c.reference_answer or "",
            "answer": a.text,
            "unanswerable": c.unanswerable,
            "abstained": a.abstained,
            "answer_error": a.error,
            "expected_facts": c.expected_facts,
            # a verdict by people or a rule on one answer: the judge is checked against it
            "reference_verdict": c.reference_verdict.model_dump() if c.reference_verdict else None,
        }
        for c, a in zip(cases, answers)
    ]
    return judge.judge_batch(items)


# ------------------------------------------------------------------ score


def score(
    cases: Sequence[Case],
    served: Mapping[str, Mapping[int, Sequence[Hit]]],
    *,
    top_k: int,
    relevance: RelevanceConfig,
    texts: Mapping[str, str],
    retrieved: Retrieved | None = None,
    unserved_ks: Sequence[int] = (),
    own_k_aliases: bool = False,
    answers: Sequence[Answer | None] | None = None,
    verdicts: Sequence[Any] | None = None,
    ragas_answer_metrics: bool = False,
    language: str = "en",
) -> list[CaseResult]:
    """One :class:`CaseResult` per case (see :func:`ragsweep.evaluation.records.build_case_result`).

    ``retrieved`` gives each case its candidate chunks (chance, oracle, ID-based context
    metrics). ``ragas_answer_metrics`` adds ragas' string similarity, BLEU and ROUGE,
    computed in one batch.
    """
    answers = list(answers) if answers is not None else [None] * len(cases)
    verdicts = list(verdicts) if verdicts is not None else [None] * len(cases)
    results = []
    for case, ans, verdict in zip(cases, answers, verdicts):
        candidates = None
        if retrieved is not None:
            scope = parsed_scope(case, retrieved)
            candidates = retrieved.candidates(scope)
        results.append(
            build_case_result(
                case,
                served[case.id],
                top_k=top_k,
                relevance=relevance,
                texts=texts,
                unserved_ks=unserved_ks,
                own_k_aliases=own_k_aliases,
                answer=ans,
                verdict=verdict,
                candidates=candidates,
                language=language,
            )
        )
    if ragas_answer_metrics:
        from ragsweep.metrics.ragas_bridge import ragas_answer_scores_batch

        pairs = [
            (None if r.answer is None or r.answer.abstained else r.answer.text, r.reference_answer) for r in results
        ]
        for result, extra in zip(results, ragas_answer_scores_batch(pairs)):
            result.metrics.update(extra)
    return results


def parsed_scope(case: Case, retrieved: Retrieved) -> list[str] | None:
    if not case.doc_scope:
        return None
    return [d for d in case.doc_scope if d in retrieved.chunks_by_doc]


def progress_bar(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="case", disable=not enabled, file=sys.stderr, leave=False)


def in_batches(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), max(1, size)):
        yield items[i : i + size]


ProgressFn = Callable[[int], None]
