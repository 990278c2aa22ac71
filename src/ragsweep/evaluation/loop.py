"""The one evaluation loop: retrieve -> rerank -> answer (given answers too) -> judge -> score.

:func:`evaluate_configuration` is the only place that turns one configuration and its cases
into :class:`~ragsweep.evaluation.records.CaseResult` s; ``ragsweep eval``, ``ragsweep sweep``,
``ragsweep.evaluate()``, ``ragsweep.sweep()`` and ``assert_quality`` all call it. Where the
results go (a run folder, a sweep configuration's folder, nowhere) is the caller's
:class:`CaseSink`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ragsweep.answer.base import Answer
from ragsweep.answer.served import answer_or_given, app_answers
from ragsweep.core.hits import Hit
from ragsweep.datasets.pathway_limits import served_app_failure
from ragsweep.datasets.schema import Case, RelevanceConfig
from ragsweep.evaluation.case_scoring import build_case_result
from ragsweep.evaluation.records import CaseResult
from ragsweep.evaluation.scored_cache import CaseCache, Inputs, ReadTexts, case_key
from ragsweep.execution.base import Executor, IndexWork
from ragsweep.execution.local import LOCAL
from ragsweep.funnel.attribute import StageInputs
from ragsweep.funnel.lists import pre_rerank_lists
from ragsweep.judge.metric import JudgeVerdict, LLMJudge
from ragsweep.llm.settings import LLMSettings
from ragsweep.metrics.ragas_bridge import ragas_answer_scores_batch
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus
from ragsweep.pipeline.retrieval import Retrieved, Served, serve, store_depths

if TYPE_CHECKING:  # ragas' LLM metrics (with the LLM client and httpx) are imported when asked for
    from ragsweep.metrics.ragas_llm import RagasLLMScorer

SCORE_BATCH = 64  # cases answered and scored together without an LLM (each result is still saved at once)


def scored_ks(ks: Iterable[int], top_k: int) -> list[int]:
    """The depths a configuration is scored at: the asked ones and the one it serves, each asked
    of its store as its own query (a hybrid top-3 is not the prefix of a hybrid top-10)."""
    return sorted(set(ks) | {top_k})


@dataclass
class Answering:
    """How a configuration's cases are answered, judged and scored beyond retrieval.

    ``answerer`` None: retrieval only (no answer, no answer metric). ``use_given``: a case
    carrying the system's own response is scored as given. ``judge``: an
    :class:`~ragsweep.judge.metric.LLMJudge`; ``ragas_llm``: a
    :class:`~ragsweep.metrics.ragas_llm.RagasLLMScorer`, run once every case has its answer.
    """

    answerer: Any | None
    llm_settings: LLMSettings | None = None
    use_given: bool = True
    judge: LLMJudge | None = None
    ragas_nonllm: bool = True  # ragas' string similarity, BLEU and ROUGE on the answers
    ragas_llm: RagasLLMScorer | None = None

    @property
    def name(self) -> str:
        return getattr(self.answerer, "name", "extractive")

    @property
    def batch(self) -> int:
        return max(1, self.llm_settings.concurrency * 2) if self.llm_settings else SCORE_BATCH


class CaseSink(Protocol):
    """Where the loop puts what it computes, as soon as it is computed."""

    def served(self, served: Served, retrieved: Retrieved) -> None: ...  # what a resume needs to skip retrieval

    def write(self, result: CaseResult) -> None: ...

    def rewrite(self, results: Sequence[CaseResult]) -> None: ...  # results changed after they were written


class NullSink:
    """Results kept in memory only (the Python API without ``out``)."""

    def served(self, served: Served, retrieved: Retrieved) -> None:
        pass

    def write(self, result: CaseResult) -> None:
        pass

    def rewrite(self, results: Sequence[CaseResult]) -> None:
        pass


@dataclass
class Evaluated:
    """Every case's result, in the cases' order, and what the store was asked (None: nothing was)."""

    results: list[CaseResult]
    retrieved: Retrieved | None = None
    timings: dict[str, float] = field(default_factory=dict)


def evaluate_configuration(
    config: PipelineConfig,
    cases: Sequence[Case],
    *,
    corpus: Corpus,
    ks: Iterable[int],
    relevance: RelevanceConfig,
    answering: Answering,
    sink: CaseSink | None = None,
    done: Mapping[str, CaseResult] | None = None,
    retrieved: Retrieved | None = None,
    served: Served | None = None,
    progress: bool = False,
    fresh: bool = False,
    budgets: Sequence[int] = (),
    executor: Executor = LOCAL,
) -> Evaluated:
    """Evaluate one configuration on ``cases``.

    ``done``: results a previous process computed (a resumed run): kept as they are.
    ``retrieved``: what the configuration's index already returned (a sweep asks one index for
    every configuration that shares it) at :func:`~ragsweep.pipeline.retrieval.store_depths`;
    ``served``: the lists themselves (a resumed run saved them); otherwise the store is asked.
    ``budgets``: the context-token budgets scored (``recall@1500tok``) on the deepest list served.
    """
    sink = sink or NullSink()
    done = dict(done or {})
    todo = [c for c in cases if c.id not in done]
    timings: dict[str, float] = {}
    if todo and (served is None or any(c.id not in served for c in todo)):
        started = time.perf_counter()
        # a resumed run whose saved lists miss a case asks the store again for the cases to do
        ask_store = retrieved is None or served is not None
        retrieved, served = _serve(
            config, corpus, todo, ks, None if ask_store else retrieved, progress, fresh, executor
        )
        timings.update(retrieved.timings)  # after serve: a reranker's time is in them
        sink.served(served, retrieved)
        timings["retrieve"] = time.perf_counter() - started
    started = time.perf_counter()
    scored = _answer_and_score(config, todo, served or {}, retrieved, corpus, relevance, answering, progress, budgets)
    for result in scored:
        sink.write(result)
        done[result.id] = result
    timings["answer_and_score"] = time.perf_counter() - started
    results = [done[c.id] for c in cases if c.id in done]
    warn_unfilled_budgets(results, budgets)
    warn_served_app_failures(results)
    if answering.ragas_llm is not None:
        started = time.perf_counter()
        if score_ragas_llm(answering.ragas_llm, cases, done):
            sink.rewrite(results)
        timings["ragas_llm"] = time.perf_counter() - started
    return Evaluated(results=results, retrieved=retrieved, timings=timings)


def _serve(
    config: PipelineConfig,
    corpus: Corpus,
    cases: Sequence[Case],
    ks: Iterable[int],
    retrieved: Retrieved | None,
    progress: bool,
    fresh: bool,
    executor: Executor,
) -> tuple[Retrieved, Served]:
    """What the index returned (asked now unless ``retrieved`` holds it) and the configuration's lists."""
    depths = scored_ks(ks, config.top_k)
    if retrieved is None:
        retrieved = executor.retrieve(IndexWork(config, corpus, cases, store_depths(config, depths), progress, fresh))
    return retrieved, serve(config, retrieved, cases, depths)


def _answer_and_score(
    config: PipelineConfig,
    cases: Sequence[Case],
    served: Served,
    retrieved: Retrieved | None,
    corpus: Corpus,
    relevance: RelevanceConfig,
    answering: Answering,
    progress: bool,
    budgets: Sequence[int] = (),
) -> Iterable[CaseResult]:
    """Each case answered, judged and scored, in batches; yielded as soon as it is scored."""
    texts = {d.doc_id: d.text for d in corpus.documents}
    language = config.variables.language or "en"
    tantivy = _queries_tantivy(config)
    prepared = app_answers(answering.answerer, cases, corpus, answering.use_given) if answering.answerer else {}
    cache = CaseCache.open(texts)
    pre_rerank = pre_rerank_lists(config, retrieved)
    with progress_bar(len(cases), "answer+score", progress) as bar:
        for part in in_batches(cases, answering.batch):
            answers = _answers(answering, part, [served[c.id][config.top_k] for c in part], prepared)
            verdicts = judge_answers(answering.judge, part, answers) if answering.judge and answers else None
            for result in score(
                part, served, top_k=config.top_k, relevance=relevance, texts=texts, retrieved=retrieved,
                answers=answers, verdicts=verdicts, ragas_answer_metrics=answering.ragas_nonllm and bool(answers),
                language=language, budgets=budgets, cache=cache, route_docs=config.variables.route_docs,
                pre_rerank=pre_rerank,
            ):  # fmt: skip
                bar.update(1)
                if tantivy and (why := served_app_failure(result.question)) is not None:
                    result.notes[SERVED_APP] = why  # scored on ragsweep's cleaned question, beside this note
                yield result


def _answers(
    answering: Answering, cases: Sequence[Case], hits: Sequence[Sequence[Any]], prepared: dict[str, Answer]
) -> list[Answer] | None:
    if answering.answerer is None:
        return None
    return answer_or_given(answering.answerer, cases, hits, use_given=answering.use_given, prepared=prepared)


def judge_answers(judge: LLMJudge, cases: Sequence[Case], answers: Sequence[Answer]) -> list[JudgeVerdict]:
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
        for c, a in zip(cases, answers, strict=True)
    ]
    return judge.judge_batch(items)


def score(
    cases: Sequence[Case],
    served: Mapping[str, Mapping[int, Sequence[Any]]],
    *,
    top_k: int,
    relevance: RelevanceConfig,
    texts: Mapping[str, str],
    retrieved: Retrieved | None = None,
    answers: Sequence[Answer | None] | None = None,
    verdicts: Sequence[JudgeVerdict | None] | None = None,
    ragas_answer_metrics: bool = False,
    language: str = "en",
    budgets: Sequence[int] = (),
    cache: CaseCache | None = None,
    route_docs: int | None = None,
    pre_rerank: Mapping[str, Sequence[Hit]] | None = None,
) -> list[CaseResult]:
    """One :class:`CaseResult` per case (:func:`ragsweep.evaluation.case_scoring.build_case_result`);
    with a ``cache`` (:mod:`ragsweep.evaluation.scored_cache`), a case whose inputs and read texts
    are unchanged comes from it.

    ``retrieved`` gives each case its candidate chunks (chance, oracle, ID-based context
    metrics). ``ragas_answer_metrics`` adds ragas' string similarity, BLEU and ROUGE,
    computed in one batch. ``route_docs`` and ``pre_rerank`` (each case's store list before the
    reranker) tell the funnel's routing and rerank stages.
    """
    answer_list = list(answers) if answers is not None else [None] * len(cases)
    verdict_list = list(verdicts) if verdicts is not None else [None] * len(cases)
    settings = repr((top_k, relevance.model_dump_json(), language, tuple(budgets), ragas_answer_metrics, route_docs))
    pre = pre_rerank or {}
    inputs = [
        Inputs(case, served[case.id], retrieved.candidates(parsed_scope(case, retrieved)) if retrieved else None,
               ans, verdict, settings, pre.get(case.id))
        for case, ans, verdict in zip(cases, answer_list, verdict_list, strict=True)
    ]  # fmt: skip
    keys = [case_key(one, cache.digests) for one in inputs] if cache is not None else []
    stored = cache.store.get_many(keys, cache.digests) if cache is not None else {}
    results: list[CaseResult | None] = [stored.get(key) for key in keys] if stored else [None] * len(cases)
    todo = [i for i, result in enumerate(results) if result is None]
    read: dict[int, set[str]] = {}
    for i in todo:
        one, texts_read = inputs[i], ReadTexts(texts)
        results[i] = build_case_result(
            cases[i], one.served, top_k=top_k, relevance=relevance, texts=texts_read, answer=answer_list[i],
            verdict=verdict_list[i], candidates=one.candidates, language=language, budgets=budgets,
            stages=StageInputs(route_docs, one.pre_rerank),
        )  # fmt: skip
        read[i] = texts_read.read
    done = [r for r in results if r is not None]
    assert len(done) == len(cases)
    if ragas_answer_metrics and todo:
        fresh = [done[i] for i in todo]
        pairs = [(None if r.answer is None or r.answer.abstained else r.answer.text, r.reference_answer) for r in fresh]
        for result, extra in zip(fresh, ragas_answer_scores_batch(pairs), strict=True):
            result.metrics.update(extra)
    if cache is not None:
        cache.store.put_many({keys[i]: (read[i], done[i]) for i in todo}, cache.digests)
    return done


# the note of a case the app's own server cannot take (ragsweep.datasets.pathway_limits.served_app_failure)
SERVED_APP = "served_app"


def _queries_tantivy(config: PipelineConfig) -> bool:
    return config.uses_tantivy()


def warn_served_app_failures(results: Sequence[CaseResult]) -> None:
    """Name the questions the app's own server cannot take (its Pathway Tantivy BM25 ends the run on them:
    the app serves no answer), and say what their numbers are for instead."""
    failed = [r for r in results if SERVED_APP in r.notes]
    if failed:
        print(
            f"warning: the served app fails on {len(failed)} of {len(results)} question(s): "
            f"{failed[0].notes[SERVED_APP]} (first: {failed[0].id}); the app would serve no answer to them, "
            "their numbers are for the question with Tantivy's syntax removed on the BM25 side (any other "
            "index is asked it as it is); each case's notes say so",
            file=sys.stderr,
        )


def warn_unfilled_budgets(results: Sequence[CaseResult], budgets: Sequence[int]) -> None:
    """Name each context budget that some cases' deepest lists could not fill (those cases have no value)."""
    for budget in sorted(set(budgets)):
        short = [r for r in results if f"@{budget}tok" in r.notes]
        if short:
            print(
                f"warning: @{budget}tok: {len(short)} of {len(results)} case(s) have no value: "
                f"{short[0].notes[f'@{budget}tok']} (first: {short[0].id})",
                file=sys.stderr,
            )


def parsed_scope(case: Case, retrieved: Retrieved) -> list[str] | None:
    if not case.doc_scope:
        return None
    return [d for d in case.doc_scope if d in retrieved.chunks_by_doc]


def score_ragas_llm(scorer: Any, cases: Sequence[Case], done: dict[str, CaseResult]) -> bool:
    """ragas' LLM metrics for the answered cases without them; with replicates, each metric's value
    is the mean of its replicates and the result keeps every replicate value under
    ``llm_replicates``. True when anything was scored."""
    from ragsweep.metrics.ragas_llm import RagasCase  # deferred: httpx, when ragas' LLM metrics are asked

    todo = [
        done[c.id]
        for c in cases
        if c.id in done
        and done[c.id].answer is not None
        and not any(k.startswith("ragas_llm_") for k in done[c.id].metrics)
    ]
    if not todo:
        return False
    by_id = {c.id: c for c in cases}
    rows = [
        RagasCase(
            question=r.question,
            answer=r.answer.text if r.answer else "",
            contexts=[h.served_text for h in r.hits],
            reference=by_id[r.id].reference_answer or "",
            abstained=r.answer.abstained if r.answer else None,
            answer_error=r.answer.error if r.answer else None,
        )
        for r in todo
    ]
    for result, per_metric in zip(todo, scorer.score_batch(rows), strict=True):
        for name, value in per_metric.items():  # names come as ragas_llm_<metric>
            result.metrics[name] = value.value
            if value.reason or value.error:
                result.notes[name] = value.reason or value.error
            if value.replicates is not None:
                result.llm_replicates[name] = value.replicates
    return True


def progress_bar(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="case", disable=not enabled, file=sys.stderr, leave=False)


def in_batches(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), max(1, size)):
        yield items[i : i + size]
