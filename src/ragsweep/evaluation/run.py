"""One evaluation, from objects: a configuration, its dataset's documents and cases, the run's
settings and an open :class:`~ragsweep.evaluation.context.RunContext` -> a
:class:`~ragsweep.evaluation.records.RunResult`.

``ragsweep eval`` and ``ragsweep.evaluate()`` both end here; neither hands it a path to read
back or an options object. What it writes to the run folder (nothing without one):

- ``state.json``   what this run is (:class:`~ragsweep.evaluation.context.RunState`)
- ``chunks.jsonl`` the index's chunks (doc id, offsets, text): the candidates of chance/oracle
- ``hits.jsonl``   every served list (each case at each depth), written as soon as retrieval ends
                   (removed once every case is in cases.jsonl)
- ``cases.jsonl``  one :class:`~ragsweep.evaluation.records.CaseResult` per line, saved as computed, stored
                   compact (:func:`~ragsweep.evaluation.storage.compact`); once report.json is written, the
                   lines lose their chance/oracle values and metrics without a value
- ``report.json``  the :class:`~ragsweep.evaluation.records.RunResult`: aggregate metrics, intervals,
                   chance/oracle, groups and the manifest

(``report.html`` is the report layer's, written by the caller.) A resumed run keeps every valid
case line, re-uses saved hits, and computes only what is missing.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ragsweep.answer.run_setup import llm_calls, metric_temperature, prepare_answering
from ragsweep.core.errors import RunError, StageError
from ragsweep.datasets.schema import Case, Dataset
from ragsweep.evaluation.context import RunContext, RunState
from ragsweep.evaluation.endpoints import check_endpoints
from ragsweep.evaluation.loop import Answering, Evaluated, evaluate_configuration, scored_ks
from ragsweep.evaluation.manifest import CorpusManifest, DatasetManifest, RetrievalCounts, RunManifest, Timestamps
from ragsweep.evaluation.records import AnswerCounts, AnswerErrors, CaseResult, RunResult
from ragsweep.evaluation.runfolder import RunCaseFile, RunFolder, git_commit, now, package_versions
from ragsweep.evaluation.scoring import aggregate, unlocated_report
from ragsweep.evaluation.settings import ParseSettings, RunSettings
from ragsweep.evaluation.storage import metric_names
from ragsweep.execution.base import Executor
from ragsweep.execution.local import LOCAL
from ragsweep.judge.report import judge_section
from ragsweep.judge.trust import Probes
from ragsweep.metrics.registry import unknown_name
from ragsweep.pipeline.app_components import Spent, embedding_usage, usage_since
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus
from ragsweep.pipeline.language import warn_unsearchable_language
from ragsweep.pipeline.retrieval import parse_documents

T = TypeVar("T")


def check_floor_names(floors: dict[str, float], depths: Sequence[int], budgets: Sequence[int]) -> None:
    """A ``--min`` floor on a metric the run cannot report is an error before any work, not after it."""
    problems = [why for name in floors if (why := unknown_name(name, depths, budgets)) is not None]
    if problems:
        raise RunError("--min: " + "; ".join(problems))


def timed(stage: dict[str, float], name: str, fn: Callable[[], T]) -> T:
    started = time.perf_counter()
    try:
        return fn()
    finally:
        stage[name] = time.perf_counter() - started


def parse_corpus(
    dataset: Dataset,
    parse: ParseSettings,
    progress: bool,
    executor: Executor = LOCAL,
    config: PipelineConfig | None = None,
) -> Corpus:
    """The dataset's documents, parsed (each one the parse cache lacks as the executor's task)."""
    try:
        return parse_documents(dataset, progress, parse.workers, parse.follow_symlinks, executor.dispatch, config)
    except StageError as err:
        raise RunError(str(err)) from err


def evaluate(
    config: PipelineConfig,
    dataset: Dataset,
    cases: Sequence[Case],
    settings: RunSettings,
    run: RunContext[RunState],
    say_language: bool = True,
) -> RunResult:
    """One configuration on ``cases`` through the evaluation loop, into ``run``'s folder (``say_language``:
    the language warning, unless the caller gave it already)."""
    check_floor_names(settings.floors, scored_ks(settings.ks, config.top_k), settings.budgets)
    embedded_before = embedding_usage()  # the embedder's probe below is one of the run's calls
    check_endpoints(config, settings.answer)
    stage: dict[str, float] = {}
    folder = run.folder
    done = folder.read_results("cases.jsonl") if settings.resume else {}
    if done:
        print(f"resuming: {len(done)} case(s) already done, {len(cases) - len(done)} to go", file=sys.stderr)
    corpus = timed(
        stage, "parse", lambda: parse_corpus(dataset, settings.parse, settings.progress, run.executor, config)
    )
    if say_language:
        warn_unsearchable_language(config, cases, corpus)
    answering, probes = prepare_answering(config, settings.answer, cases, stage)
    evaluated = _evaluate_cases(config, dataset, cases, settings, run, corpus, answering, done)
    stage.update(evaluated.timings)
    started = time.perf_counter()
    result = run_result(evaluated.results, dataset, config, settings, answering, probes)
    report = folder.file("report.json")
    if len(done) == len(cases) and report is not None and report.is_file():
        # finished before: its lines hold no chance/oracle any more, the levels come from its report
        result.baselines = RunResult.model_validate_json(report.read_text()).baselines
    stage["aggregate"] = time.perf_counter() - started
    result.manifest = manifest(settings, config, dataset, corpus, answering, run.state, stage)
    _add_spent(result, evaluated, answering, run.executor, config, embedded_before)
    result.cases = evaluated.results
    result.run_dir = str(folder.path) if folder.path is not None else None
    if folder.path is not None:
        write_run(folder, result, complete=len(evaluated.results) >= len(cases))
    return result


def _evaluate_cases(
    config: PipelineConfig,
    dataset: Dataset,
    cases: Sequence[Case],
    settings: RunSettings,
    run: RunContext[RunState],
    corpus: Corpus,
    answering: Answering,
    done: dict[str, CaseResult],
) -> Evaluated:
    saved = run.folder.load_served() if settings.resume else None
    return evaluate_configuration(
        config, cases, corpus=corpus, ks=settings.ks, relevance=dataset.relevance, answering=answering,
        sink=RunCaseFile(run.folder, run.folder.file("cases.jsonl")),
        done=done, retrieved=saved, served=saved.served if saved is not None else None, progress=settings.progress,
        fresh=settings.fresh_retrieval, budgets=settings.budgets, executor=run.executor,
    )  # fmt: skip


def _add_spent(
    result: RunResult,
    evaluated: Evaluated,
    answering: Answering,
    executor: Executor,
    config: PipelineConfig,
    embedded_before: Any,
) -> None:
    """What the store was asked, what the app's endpoints spent, ragsweep's LLM calls, where it ran."""
    retrieved = evaluated.retrieved
    if retrieved is not None and retrieved.queries:  # resumed runs may have asked nothing in this process
        result.manifest.retrieval = RetrievalCounts(
            queries=retrieved.queries,
            from_served_cache=retrieved.from_cache,
            asked_pathway=retrieved.queries - retrieved.from_cache,
        )
    usage = getattr(answering.answerer, "usage", None)
    spent = Spent(
        embeddings=usage_since(embedded_before, config.variables.embedding_price_per_1k),
        app_llm=usage() if usage is not None else None,
    )
    result.manifest.spent = spent
    result.manifest.llm_calls = llm_calls(answering)
    result.manifest.executor = dict(executor.describe())


def write_run(folder: RunFolder, result: RunResult, complete: bool) -> None:
    """report.json, then (every case done) the settled case lines."""
    folder.write_json("report.json", result.report_json())
    if complete:  # the resume copy and the per-case chance/oracle (means in report.json) are spent
        RunCaseFile(folder, folder.file("cases.jsonl")).rewrite(result.cases, settled=True)
        folder.file("hits.jsonl").unlink(missing_ok=True)  # type: ignore[union-attr]


def answerer_name(cases: list[CaseResult], answering: Answering) -> str:
    """Who answered: ``dataset`` when every answer is a response the dataset gives, else the answerer."""
    given = [c.answer is not None and c.answer.answerer == "dataset" for c in cases]
    return "dataset" if given and all(given) else answering.name


def run_result(
    cases: list[CaseResult],
    dataset: Dataset,
    config: PipelineConfig,
    settings: RunSettings,
    answering: Answering,
    probes: Probes | None,
) -> RunResult:
    """report.json's body (without the manifest): the one aggregator over the cases, the answers'
    outcome, and how far the LLM metrics can be trusted (:mod:`ragsweep.judge.report`)."""
    answer = settings.answer
    rules = sorted({c.relevance_rule for c in cases if c.relevance_rule})
    judge = judge_section(
        cases,
        replicates=answer.judge_replicates if answer.llm_metrics else 1,
        temperature=metric_temperature(answering, answer, config),
        probes=probes,
        max_failure_rate=answer.max_failure_rate,
    )
    return RunResult(
        **dict(aggregate(cases)),
        case_metrics=metric_names(cases),
        ks=scored_ks(settings.ks, config.top_k),
        budgets=settings.budgets,
        top_k=config.top_k,
        relevance_rule=dataset.relevance.rule,
        relevance_rules_applied=rules or [dataset.relevance.rule],
        no_llm=answering.llm_settings is None,
        answerer=answerer_name(cases, answering),
        n_cases=len(cases),
        answer_errors=answer_errors(cases),
        answers=AnswerCounts(
            ok=sum(1 for c in cases if c.answer is not None and not c.answer.error),
            failed=sum(1 for c in cases if c.answer is not None and c.answer.error),
            refused=sum(1 for c in cases if c.answer is not None and c.answer.refusal),
        ),
        unlocated=unlocated_report(cases, dataset.relevance.unlocated),
        judge=judge,
    )


def answer_errors(cases: list[CaseResult]) -> AnswerErrors:
    failed = [(c.id, c.answer.error) for c in cases if c.answer is not None and c.answer.error]
    return AnswerErrors(
        n=len(failed),
        first=[{"id": case_id, "error": error} for case_id, error in failed[:5]],
        by_message=dict(Counter(error for _, error in failed).most_common(10)),
    )


def manifest(
    settings: RunSettings,
    config: PipelineConfig,
    dataset: Dataset,
    corpus: Corpus,
    answering: Answering,
    state: RunState,
    stage: dict[str, float],
) -> RunManifest:
    """Everything needed to know what ran (secrets masked)."""
    selection = settings.selection
    return RunManifest(
        pipeline={**config.manifest(), "text": config.public_text()},
        dataset=DatasetManifest(
            path=selection.dataset,
            name=dataset.name,
            hash=state.dataset_hash,
            split=selection.split,
            limit=selection.limit,
            sample=selection.sample,
            seed=selection.seed,
            relevance=dataset.relevance.model_dump(),
        ),
        corpus=corpus_manifest(dataset, corpus),
        embedder=config.variables.embedder_model or config.embedder_description(),
        llm=answering.llm_settings.public_dict() if answering.llm_settings is not None else None,
        prompt=getattr(answering.answerer, "prompt_template", None),
        packages=package_versions(),
        git_commit=git_commit(),
        python=sys.version.split()[0],
        timestamps=Timestamps(started=state.started_at, finished=now()),
        stage_seconds={k: round(v, 3) for k, v in stage.items()},
    )


def corpus_manifest(dataset: Dataset, corpus: Corpus) -> CorpusManifest:
    return CorpusManifest(
        docs_dir=str(dataset.docs_dir),
        hash=corpus.content_hash,
        documents=len(corpus.documents),
        skipped=[s.model_dump() for s in corpus.skipped],
        pdf_pipeline=corpus.pdf_pipeline,
        parsers=sorted({d.parser for d in corpus.documents}),
        parse_warnings={
            d.doc_id: list(getattr(d, "warnings", None) or []) for d in corpus.documents if getattr(d, "warnings", None)
        },
    )
