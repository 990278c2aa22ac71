"""`ragsweep eval`: options -> one configuration through the evaluation loop -> a run folder -> gate.

The run folder is where results leave ragsweep:

- ``state.json``   what this run is (config hash, dataset hash, split, limit, ks, case ids)
- ``chunks.jsonl`` the index's chunks (doc id, offsets, text): the candidates of chance/oracle
- ``hits.jsonl``   every served list (each case at each depth), written as soon as retrieval ends
                   (removed once every case is in cases.jsonl)
- ``cases.jsonl``  one :class:`~ragsweep.evaluation.records.CaseResult` per line, fsynced as computed, stored
                   compact (:func:`~ragsweep.evaluation.records.compact`); once report.json is written, the
                   lines lose their chance/oracle values and metrics without a value
- ``report.json``  the :class:`~ragsweep.evaluation.records.RunResult`: aggregate metrics, intervals,
                   chance/oracle, groups and the manifest
- ``report.html``  written by :mod:`ragsweep.report`

``--resume`` reopens a folder (locked against a second process), keeps every valid
case line, re-uses saved hits, and computes only what is missing.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ragsweep.core.errors import RunError, StageError
from ragsweep.core.hits import Hit
from ragsweep.datasets.schema import Case, Dataset
from ragsweep.evaluation.answering import llm_call_lines, llm_calls, metric_temperature, prepare_answering
from ragsweep.evaluation.inputs import AnswerOptions, RunInputs, load_inputs, option
from ragsweep.evaluation.loop import Answering, evaluate_configuration, scored_ks
from ragsweep.evaluation.records import AnswerCounts, AnswerErrors, CaseResult, RunResult, metric_names
from ragsweep.evaluation.runfolder import (
    LAYOUT_VERSION,
    RunCaseFile,
    RunFolder,
    file_hash,
    git_commit,
    now,
    package_versions,
)
from ragsweep.evaluation.scoring import aggregate, quality_failures, unlocated_lines, unlocated_report
from ragsweep.execution.base import Executor, ExecutorError
from ragsweep.execution.local import LOCAL
from ragsweep.execution.registry import ExecutorSettings, check_executor, open_executor
from ragsweep.metrics.registry import REPEATS, summary_metrics, unknown_name
from ragsweep.metrics.uninformative import answerer_way, uninformative
from ragsweep.pipeline.app_components import Spent, embedding_usage, usage_since
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus
from ragsweep.pipeline.retrieval import parse_documents, retrieve, serve, store_depths
from ragsweep.report import write_html

DEFAULT_KS = (1, 3, 5, 10)
RESUME_KEYS = (
    "config_hash", "dataset_hash", "split", "limit", "sample", "seed", "ks", "budgets", "use_llm", "unlocated",
)  # fmt: skip


class EvalOptions(AnswerOptions, RunInputs):
    """Everything `ragsweep eval` and ``ragsweep.evaluate()`` take (the command line is built from it)."""

    floors: dict[str, float] = option(
        help="CI gate: fail when a metric is below its floor", flag="--min", metavar="METRIC=FLOOR", parse="floors",
        alias="min", default_factory=dict,
    )  # fmt: skip
    ks: list[int] = option(
        help="depths to score besides the pipeline's top_k, e.g. 1,3,6,8 (each asked of the store as its own query)",
        parse="depths", default_factory=lambda: list(DEFAULT_KS),
    )  # fmt: skip
    dry_run: bool = option(False, "print the LLM calls and tokens a run would make, then stop")


# ------------------------------------------------------------------ the run


def run_eval(options: EvalOptions) -> tuple[Path | None, RunResult | dict[str, Any]]:
    """Evaluate; return the run folder and the result (or, for a dry run, the LLM estimate)."""
    config, dataset, cases = load_inputs(options)
    check_floor_names(options, config)  # before a folder exists (evaluate_run checks for the API too)
    check_executor(options.executor_settings)
    dataset_hash = dataset_file_hash(dataset)
    folder = open_folder(options, config, dataset.name, dataset_hash, cases)
    with folder:
        return folder.path, evaluate_run(options, config, dataset, cases, dataset_hash, folder)


def dataset_file_hash(dataset: Dataset) -> str:
    cases_file = dataset.cases_file or dataset.root / "cases.jsonl"
    return file_hash(cases_file) if cases_file.is_file() else "unknown"


def open_folder(
    options: EvalOptions, config: PipelineConfig, dataset_name: str, dataset_hash: str, cases: list[Case]
) -> RunFolder:
    """The run folder (new, or the one to resume, checked against this run), locked."""
    state = {
        "layout": LAYOUT_VERSION,
        "config_hash": config.hash,
        "dataset": str(options.dataset),
        "dataset_hash": dataset_hash,
        "split": options.split,
        "limit": options.limit,
        "sample": options.sample,
        "seed": options.seed,
        "ks": scored_ks(options.ks, config.top_k),
        "budgets": options.budgets or None,  # None: a folder from before budgets resumes as it was
        "use_llm": options.use_llm,
        "unlocated": options.unlocated,
        "case_ids": [c.id for c in cases],
        "started_at": now(),
    }
    folder = RunFolder.open(
        Path(options.out),
        marker="state.json",
        state=state,
        must_match=RESUME_KEYS,
        default_name=f"{time.strftime('%Y%m%d-%H%M%S')}-{dataset_name}-{config.hash[:8]}",
        name=options.name,
        resume=options.resume,
        create=not options.dry_run,
    )
    if folder.path is not None and not options.resume:
        print(f"run folder: {folder.path}", file=sys.stderr)
    return folder


def evaluate_run(
    options: EvalOptions,
    config: PipelineConfig,
    dataset: Dataset,
    cases: list[Case],
    dataset_hash: str,
    folder: RunFolder,
) -> RunResult | dict[str, Any]:
    """One configuration through the evaluation loop, into ``folder`` (``folder.path`` None: nothing is written)."""
    check_floor_names(options, config)
    check_executor(options.executor_settings)
    where = ExecutorSettings() if options.dry_run else options.executor_settings  # a dry run parses here
    with open_executor(where) as executor:  # open from the parse on: documents are parsed as its tasks
        return _evaluate_on(executor, options, config, dataset, cases, dataset_hash, folder)


def _evaluate_on(
    executor: Executor,
    options: EvalOptions,
    config: PipelineConfig,
    dataset: Dataset,
    cases: list[Case],
    dataset_hash: str,
    folder: RunFolder,
) -> RunResult | dict[str, Any]:
    stage: dict[str, float] = {}
    embedded_before = embedding_usage()
    done = folder.read_results("cases.jsonl") if options.resume else {}
    saved = folder.load_served() if options.resume else None
    if done:
        print(f"resuming: {len(done)} case(s) already done, {len(cases) - len(done)} to go", file=sys.stderr)
    corpus = timed(stage, "parse", lambda: parse_or_fail(dataset, options, executor, config))
    if options.dry_run:
        return dry_run_report(options, config, corpus, cases)
    answering, probes = prepare_answering(config, options, cases, stage)
    evaluated = evaluate_configuration(
        config, cases, corpus=corpus, ks=options.ks, relevance=dataset.relevance, answering=answering,
        sink=RunCaseFile(folder, folder.file("cases.jsonl")),
        done=done, retrieved=saved, served=saved.served if saved is not None else None, progress=options.progress,
        fresh=options.fresh_retrieval, budgets=options.budgets, executor=executor,
    )  # fmt: skip
    stage.update(evaluated.timings)
    started = time.perf_counter()
    result = run_result(evaluated.results, dataset, config, options, answering, probes)
    report = folder.file("report.json")
    if len(done) == len(cases) and report is not None and report.is_file():
        # finished before: its lines hold no chance/oracle any more, the levels come from its report
        result.baselines = RunResult.model_validate_json(report.read_text()).baselines
    stage["aggregate"] = time.perf_counter() - started
    result.manifest = manifest(options, config, dataset, dataset_hash, corpus, answering, folder.state, stage)
    retrieved = evaluated.retrieved
    if retrieved is not None and retrieved.queries:  # resumed runs may have asked nothing in this process
        result.manifest["retrieval"] = {
            "queries": retrieved.queries,
            "from_served_cache": retrieved.from_cache,
            "asked_pathway": retrieved.queries - retrieved.from_cache,
        }
    spent = Spent(
        embeddings=usage_since(embedded_before, config.variables.embedding_price_per_1k),
        app_llm=usage() if (usage := getattr(answering.answerer, "usage", None)) is not None else None,
    )
    result.manifest["spent"] = spent.model_dump()
    result.manifest["llm_calls"] = llm_calls(answering)
    result.manifest["executor"] = executor.describe()
    result.cases = evaluated.results
    result.run_dir = str(folder.path) if folder.path is not None else None
    if folder.path is not None:
        write_run(folder, result, complete=len(evaluated.results) >= len(cases))
    return result


def check_floor_names(options: EvalOptions, config: PipelineConfig) -> None:
    """A ``--min`` floor on a metric the run cannot report is an error before any work, not after it."""
    depths = scored_ks(options.ks, config.top_k)
    problems = [why for name in options.floors if (why := unknown_name(name, depths, options.budgets)) is not None]
    if problems:
        raise RunError("--min: " + "; ".join(problems))


def timed(stage: dict[str, float], name: str, fn: Any) -> Any:
    started = time.perf_counter()
    try:
        return fn()
    finally:
        stage[name] = time.perf_counter() - started


def parse_or_fail(
    dataset: Dataset, options: RunInputs, executor: Executor = LOCAL, config: PipelineConfig | None = None
) -> Corpus:
    try:
        return parse_documents(
            dataset, options.progress, options.workers, options.follow_symlinks, executor.dispatch, config
        )
    except StageError as err:
        raise RunError(str(err)) from err


def write_run(folder: RunFolder, result: RunResult, complete: bool) -> None:
    """report.json, then (every case done) the settled case lines, then report.html."""
    folder.write_json("report.json", result.report_json())
    if complete:  # the resume copy and the per-case chance/oracle (means in report.json) are spent
        RunCaseFile(folder, folder.file("cases.jsonl")).rewrite(result.cases, settled=True)
        folder.file("hits.jsonl").unlink(missing_ok=True)  # type: ignore[union-attr]
    write_html(folder.path)


def answerer_name(cases: list[CaseResult], answering: Answering) -> str:
    """Who answered: ``dataset`` when every answer is a response the dataset gives, else the answerer."""
    given = [c.answer is not None and c.answer.answerer == "dataset" for c in cases]
    return "dataset" if given and all(given) else answering.name


def run_result(
    cases: list[CaseResult],
    dataset: Dataset,
    config: PipelineConfig,
    options: EvalOptions,
    answering: Answering,
    probes: dict[str, Any] | None,
) -> RunResult:
    """report.json's body (without the manifest): the one aggregator over the cases, the answers'
    outcome, and how far the LLM metrics can be trusted (:mod:`ragsweep.evaluation.judge_report`)."""
    from ragsweep.evaluation.judge_report import judge_section

    rules = sorted({c.relevance_rule for c in cases if c.relevance_rule})
    errors = [c for c in cases if c.answer is not None and c.answer.error]
    by_message = Counter(c.answer.error for c in errors if c.answer is not None)
    judge = judge_section(
        cases,
        replicates=options.judge_replicates if options.llm_metrics else 1,
        temperature=metric_temperature(answering, options, config),
        probes=probes,
        max_failure_rate=options.max_failure_rate,
    )
    return RunResult(
        **dict(aggregate(cases)),
        case_metrics=metric_names(cases),
        ks=scored_ks(options.ks, config.top_k),
        budgets=options.budgets,
        top_k=config.top_k,
        relevance_rule=dataset.relevance.rule,
        relevance_rules_applied=rules or [dataset.relevance.rule],
        no_llm=answering.llm_settings is None,
        answerer=answerer_name(cases, answering),
        n_cases=len(cases),
        answer_errors=AnswerErrors(
            n=len(errors),
            first=[{"id": c.id, "error": c.answer.error} for c in errors[:5] if c.answer and c.answer.error],
            by_message=dict(by_message.most_common(10)),
        ),
        answers=AnswerCounts(
            ok=sum(1 for c in cases if c.answer is not None and not c.answer.error),
            failed=len(errors),
            refused=sum(1 for c in cases if c.answer is not None and c.answer.refusal),
        ),
        unlocated=unlocated_report(cases, dataset.relevance.unlocated),
        judge=judge,
    )


def manifest(
    options: EvalOptions,
    config: PipelineConfig,
    dataset: Dataset,
    dataset_hash: str,
    corpus: Corpus,
    answering: Answering,
    state: dict[str, Any],
    stage: dict[str, float],
) -> dict[str, Any]:
    """Everything needed to know what ran (secrets masked)."""
    return {
        "pipeline": {**config.manifest(), "text": config.public_text()},
        "dataset": {
            "path": str(options.dataset),
            "name": dataset.name,
            "hash": dataset_hash,
            "split": options.split,
            "limit": options.limit,
            "sample": options.sample,
            "seed": options.seed,
            "relevance": dataset.relevance.model_dump(),
        },
        "corpus": {
            "docs_dir": str(dataset.docs_dir),
            "hash": corpus.content_hash,
            "documents": len(corpus.documents),
            "skipped": [s.model_dump() for s in corpus.skipped],
            "pdf_pipeline": corpus.pdf_pipeline,
            "parsers": sorted({d.parser for d in corpus.documents}),
            "parse_warnings": {
                d.doc_id: list(getattr(d, "warnings", None) or [])
                for d in corpus.documents
                if getattr(d, "warnings", None)
            },
        },
        "embedder": config.variables.embedder_model or config.embedder_description(),
        "llm": answering.llm_settings.public_dict() if answering.llm_settings is not None else None,
        "prompt": getattr(answering.answerer, "prompt_template", None),
        "packages": package_versions(),
        "git_commit": git_commit(),
        "python": sys.version.split()[0],
        "timestamps": {"started": state.get("started_at"), "finished": now()},
        "stage_seconds": {k: round(v, 3) for k, v in stage.items()},
    }


def dry_run_report(options: EvalOptions, config: PipelineConfig, corpus: Corpus, cases: list[Case]) -> dict[str, Any]:
    """What the run would cost at its endpoints, without a single call: the app embedder's texts
    that its cache lacks, and the LLM part (the prompts hold the served chunks, or, when retrieval
    would itself call the app's embedder, an upper bound: each case's longest chunks)."""
    from ragsweep.pipeline.answering import make_answerer
    from ragsweep.pipeline.app_components import estimate_embeddings

    answerer, llm_settings = make_answerer(config, options.use_llm)
    pipeline = config.build()
    chunks = split_corpus(pipeline.splitter, corpus)
    texts = [t for doc_chunks in chunks.values() for t in doc_chunks] + [c.question for c in cases]
    embeddings = estimate_embeddings(pipeline.embedder, texts, config.variables.embedding_price_per_1k)
    out: dict[str, Any] = {"dry_run": True, "cases": len(cases)}
    if embeddings is not None:
        out["embeddings"] = embeddings.model_dump()
    if llm_settings is None:
        return {**out, "llm_calls": 0, "note": "no LLM configured: extractive answers, no LLM call"}
    from ragsweep.metrics.dry_run import estimate_llm_run

    if embeddings is None:
        depths = scored_ks(options.ks, config.top_k)
        retrieved = retrieve(
            config, corpus, cases, store_depths(config, depths), options.progress, options.fresh_retrieval
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
        judge=options.judge,
        ragas_metrics=None if options.ragas_llm else (),
        replicates=options.judge_replicates,
    )
    return {**out, **{k: v.model_dump() for k, v in estimates.items()}}


def split_corpus(splitter: Any, corpus: Corpus) -> dict[str, list[str]]:
    """Each document's chunk texts, as the app's splitter cuts them (no embedding, no index), with
    the header a ``$chunk_header`` splitter makes of the document's metadata."""
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


# ------------------------------------------------------------------ terminal


def summary_table(result: RunResult) -> str:
    """The terminal table at the served k: each metric with its CI and counts; retrieval metrics
    with the chance level (random order of the case's candidate chunks) and the oracle (best order)."""
    k = result.top_k
    names = summary_metrics(k, result.budgets)
    unlocated = bool(result.unlocated.none_located)  # a column saying how many of n/missing they are
    lines = [
        f"{'metric':<30} {'value':>8}  {'95% CI':<17} {'chance':>7} {'oracle':>7} {'n':>6} {'missing':>7}"
        + (f" {'unlocated':>9}" if unlocated else "")
    ]
    for name in (n for n in names if n in result.metrics):
        lines.append(_summary_line(result, name, unlocated))
    header = (
        f"answerer: {result.answerer}{'  (no LLM)' if result.no_llm else ''}   "
        f"relevance rule: {result.relevance_rule}   cases: {result.n_cases}   top_k: {k}"
    )
    notes = [
        "chance: expected value under a random order of the case's candidate chunks (its scoped "
        "documents', or the corpus'); oracle: the best any order reaches"
    ]
    if "spent" in result.manifest:
        notes.extend(Spent.model_validate(result.manifest["spent"]).lines())
    notes.extend(llm_call_lines(result.manifest.get("llm_calls") or {}))
    errors = result.answer_errors
    if errors.n:
        common = "; ".join(f"{n}x {msg}" for msg, n in list(errors.by_message.items())[:3])
        notes.append(f"answer_error: {errors.n} of {result.n_cases} answers failed ({common})")
    if result.answers.refused:
        notes.append(f"refusals: {result.answers.refused} answer(s) were refusals, counted as abstaining")
    notes.extend(unlocated_lines(result.unlocated, result.n_cases, table="eval"))
    notes.extend(uninformative_notes(result, [n for n in names if n in result.metrics]))
    from ragsweep.evaluation.judge_report import format_judge_section, format_warnings

    warnings = format_warnings(result.judge)
    judge_text = format_judge_section(result.judge)
    return "\n".join([*([warnings] if warnings else []), header, *lines, *notes, *([judge_text] if judge_text else [])])


UNINFORMATIVE_MARK = "†"


def uninformative_notes(result: RunResult, names: list[str]) -> list[str]:
    """Why each marked row says nothing about this run's answerer (metrics.uninformative)."""
    why = [(name, reason) for name in names if (reason := uninformative(name, result.answerer))]
    if not why:
        return []
    way = answerer_way(result.answerer)
    return [f"{UNINFORMATIVE_MARK} no information here about the {result.answerer} answerer's answers ({way}):"] + [
        f"  {name}: {reason}" for name, reason in why
    ]


def _summary_line(result: RunResult, name: str, unlocated: bool = False) -> str:
    value = result.metrics[name]
    # a name repeating another metric's mean (first_relevant_rank_mean) shows that metric's CI
    low, high = result.interval(REPEATS[name] if name in REPEATS else name)
    count = result.counts.get(name) or result.counts.get(name.split("_mean")[0].split("_median")[0])
    ci_text = f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    val = "n/a" if value is None else f"{value:.4f}"
    chance, oracle = ("" if (v := result.level(name, which)) is None else f"{v:.3f}" for which in ("chance", "oracle"))
    n, missing = (count.n, count.missing) if count is not None else ("", "")
    shown = f"{name} {UNINFORMATIVE_MARK}" if uninformative(name, result.answerer) else name
    line = f"{shown:<30} {val:>8}  {ci_text:<17} {chance:>7} {oracle:>7} {n:>6} {missing:>7}"
    if unlocated:
        left_out, in_n = (count.unlocated, count.unlocated_in_n) if count is not None else (None, None)
        cell = f"{in_n} in n" if in_n else "" if left_out is None else str(left_out)
        line += f" {cell:>9}"
    return line


def no_answer_succeeded(result: RunResult) -> bool:
    return result.n_cases > 0 and result.answer_errors.n >= result.n_cases


def run_eval_cli(options: EvalOptions, args: Any) -> int:
    """The command: run, print the summary, log to MLflow when asked, then the gate's exit code."""
    try:
        run_dir, result = run_eval(options)
    except (RunError, ExecutorError) as err:
        print(f"ragsweep: error: {err}", file=sys.stderr)
        return 2
    if not isinstance(result, RunResult):  # a dry run's estimate
        print(json.dumps(result, indent=2))
        return 0
    assert run_dir is not None
    print(summary_table(result))
    if args.mlflow:
        from ragsweep.report.mlflow_log import log_to_mlflow

        print(f"MLflow run: {log_to_mlflow(run_dir, tracking_uri=args.mlflow_uri, pipeline_path=options.pipeline)}")
    html = run_dir / "report.html"
    print(f"\nreport: {run_dir / 'report.json'}" + (f"  {html}" if html.exists() else ""))
    return gate(result, options)


def gate(result: RunResult, options: EvalOptions) -> int:
    """The CI gate: 1 when no answer succeeded, a metric is below its floor or an LLM metric failed too often."""
    from ragsweep.evaluation.judge_report import failure_gate

    if no_answer_succeeded(result):
        print("ragsweep: error: no answer succeeded (every case has an answer_error); see cases.jsonl", file=sys.stderr)
        return 1
    failures = quality_failures(result, options.floors) + failure_gate(result.judge, options.max_failure_rate)
    if failures:
        print("gate FAILED:\n" + "\n".join(failures), file=sys.stderr)
        return 1
    if options.floors or options.max_failure_rate is not None:
        rate = options.max_failure_rate
        passed = [f"{k} >= {v}" for k, v in options.floors.items()]
        print("gate passed: " + ", ".join(passed + ([f"LLM metric failures <= {rate:g}"] if rate is not None else [])))
    return 0
