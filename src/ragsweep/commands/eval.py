"""`ragsweep eval`: options -> stages (parse, retrieve, answer, score) -> run folder -> gate.

The run folder is where results leave ragsweep:

- ``state.json``   what this run is (config hash, dataset hash, split, limit, ks, case ids)
- ``chunks.jsonl`` the index's chunks (doc id, offsets, text): the candidates of chance/oracle
- ``hits.jsonl``   every served list (each case at each depth), written as soon as retrieval ends
                   (removed once every case is in cases.jsonl)
- ``cases.jsonl``  one :class:`~ragsweep.evaluation.records.CaseResult` per line, fsynced as computed, stored
                   compact (:func:`~ragsweep.evaluation.records.compact`); once report.json is written, the
                   lines lose their chance/oracle values and metrics without a value
- ``report.json``  aggregate metrics, intervals, chance/oracle, groups and the manifest
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

from pydantic import Field

from ragsweep.datasets.schema import Case, Dataset
from ragsweep.evaluation import stages
from ragsweep.evaluation.records import CaseResult, compact, metric_names
from ragsweep.evaluation.runfolder import (
    LAYOUT_VERSION,
    JsonlWriter,
    RunError,
    RunLock,
    append_chunks,
    check_resumable,
    file_hash,
    find_resume_dir,
    git_commit,
    make_dir,
    new_run_dir,
    now,
    package_versions,
    read_jsonl,
    write_json,
)
from ragsweep.evaluation.scoring import aggregate, check_floors, parse_floors
from ragsweep.evaluation.stages import RunInputs, load_inputs
from ragsweep.pipeline.config import PipelineConfig, parse_overrides
from ragsweep.pipeline.hits import Hit
from ragsweep.report import write_html
from ragsweep.report.runs import expand_cases

DEFAULT_KS = (1, 3, 5, 10)
SCORE_BATCH = 64  # cases answered and scored together without an LLM (each line is still saved at once)


class EvalOptions(RunInputs):
    floors: dict[str, float] = Field(default_factory=dict)
    # depths scored besides the pipeline's own top_k; each is asked of the store as its own query
    ks: list[int] = Field(default_factory=lambda: list(DEFAULT_KS))
    use_llm: bool = False
    judge: bool = False
    ragas_llm: bool = False
    ragas_nonllm: bool = True  # ragas' string similarity, BLEU and ROUGE on the answers
    dry_run: bool = False
    # the judge's trust (issue 16): replicates per LLM-judged case, its own temperature (None: the
    # pipeline's), sanity probes on N cases before the run (0: none), failure-rate gate
    judge_replicates: int = Field(default=1, ge=1)
    judge_temperature: float | None = Field(default=None, ge=0, le=2)
    judge_probe: int = Field(default=3, ge=0)
    max_failure_rate: float | None = Field(default=None, ge=0, le=1)


def scored_ks(options: EvalOptions, config: PipelineConfig) -> list[int]:
    return sorted(set(options.ks) | {config.top_k})


# ------------------------------------------------------------------ the run folder


def open_run(
    options: EvalOptions, config: PipelineConfig, dataset_name: str, dataset_hash: str, cases: list[Case]
) -> tuple[Path, str, RunLock | None]:
    """The run folder (new, or the one to resume, checked against this run), its start time and lock."""
    state = {
        "layout": LAYOUT_VERSION,
        "config_hash": config.hash,
        "dataset": str(options.dataset),
        "dataset_hash": dataset_hash,
        "split": options.split,
        "limit": options.limit,
        "sample": options.sample,
        "seed": options.seed,
        "ks": scored_ks(options, config),
        "use_llm": options.use_llm,
        "case_ids": [c.id for c in cases],
        "started_at": now(),
    }
    out = Path(options.out)
    if options.resume:
        run_dir = find_resume_dir(out, options.resume, "state.json")
        lock = RunLock(run_dir)
        try:
            saved = json.loads((run_dir / "state.json").read_text())
            check_resumable(
                run_dir,
                saved,
                state,
                ("config_hash", "dataset_hash", "split", "limit", "sample", "seed", "ks", "use_llm"),
            )
        except BaseException:
            lock.release()
            raise
        return run_dir, saved.get("started_at", state["started_at"]), lock
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = new_run_dir(out, options.name, f"{stamp}-{dataset_name}-{config.hash[:8]}")
    if options.dry_run:  # a dry run leaves nothing behind
        return run_dir, state["started_at"], None
    make_dir(run_dir)
    lock = RunLock(run_dir)
    write_json(run_dir / "state.json", state)
    print(f"run folder: {run_dir}", file=sys.stderr)
    return run_dir, state["started_at"], lock


class NullWriter(JsonlWriter):
    """A writer for runs without a folder (the Python API): lines go nowhere."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, record: dict[str, Any]) -> None:
        self.written += 1

    def close(self) -> None:
        pass


def save_retrieved(run_dir: Path, retrieved: stages.Retrieved) -> None:
    """The chunk table, then every served list: what a resume needs to skip retrieval."""
    chunks_file = run_dir / "chunks.jsonl"
    chunks_file.unlink(missing_ok=True)
    append_chunks(chunks_file, (h for hits in retrieved.chunks_by_doc.values() for h in hits), set())
    with JsonlWriter(run_dir / "hits.jsonl") as writer:  # chunk ids, not texts: the table holds those
        for case_id, by_k in retrieved.served.items():
            writer.write(
                {
                    "id": case_id,
                    "served": {str(k): [h.model_dump(exclude={"text"}) for h in hits] for k, hits in by_k.items()},
                }
            )


def load_retrieved(run_dir: Path) -> stages.Retrieved | None:
    """What an interrupted run saved of retrieval (None when the chunk table is missing)."""
    chunk_rows = read_jsonl(run_dir / "chunks.jsonl")
    if not chunk_rows:
        return None
    by_doc: dict[str, list[Hit]] = {}
    texts: dict[str, str] = {}
    for row in chunk_rows:
        by_doc.setdefault(row["doc_id"], []).append(
            Hit(rank=1, score=0.0, text=row["text"], doc_id=row["doc_id"], start=row["start"], end=row["end"])
        )
        texts[row["id"]] = row["text"]
    served = {}
    for row in read_jsonl(run_dir / "hits.jsonl"):
        try:
            served[row["id"]] = {
                int(k): [Hit(**h, text=texts[f"{h['doc_id']}#{h['start']}-{h['end']}"]) for h in hits]
                for k, hits in row["served"].items()
            }
        except (KeyError, TypeError, ValueError):
            continue
    return stages.Retrieved(served=served, chunks_by_doc=by_doc, n_chunks=len(chunk_rows))


# ------------------------------------------------------------------ the run


def run_eval(options: EvalOptions) -> tuple[Path, dict[str, Any]]:
    """Evaluate; return the run folder and the report (or, for a dry run, the LLM estimate)."""
    config, dataset, cases = load_inputs(options)
    cases_file = dataset.cases_file or dataset.root / "cases.jsonl"
    dataset_hash = file_hash(cases_file) if cases_file.is_file() else "unknown"
    run_dir, started_at, lock = open_run(options, config, dataset.name, dataset_hash, cases)
    try:
        return _run_eval(options, config, dataset, cases, dataset_hash, run_dir, started_at)
    finally:
        if lock is not None:
            lock.release()


def _run_eval(
    options: EvalOptions,
    config: PipelineConfig,
    dataset: Dataset,
    cases: list[Case],
    dataset_hash: str,
    run_dir: Path | None,
    started_at: str,
) -> tuple[Path | None, dict[str, Any]]:
    """The stages, with or without a run folder (``run_dir=None``: nothing is written)."""
    stage: dict[str, float] = {}
    persist = run_dir is not None and not options.dry_run
    ks = scored_ks(options, config)
    done = {r["id"]: r for r in read_jsonl(run_dir / "cases.jsonl")} if options.resume else {}
    if done:  # stored lines are compact: defaults, hit texts and metrics without a value come back
        done = {r["id"]: r for r in expand_cases(list(done.values()), run_dir)}
    done = {i: r for i, r in done.items() if r.get("version") == CaseResult.model_fields["version"].default}
    saved = load_retrieved(run_dir) if options.resume else None
    todo = [c for c in cases if c.id not in done]
    if done:
        print(f"resuming: {len(done)} case(s) already done, {len(todo)} to go", file=sys.stderr)

    t = time.perf_counter()
    try:
        corpus = stages.parse_documents(dataset, options.progress, options.workers)
    except stages.StageError as err:
        raise RunError(str(err)) from err
    stage["parse"] = time.perf_counter() - t
    texts = {d.doc_id: d.text for d in corpus.documents}

    t = time.perf_counter()
    retrieved = saved
    if todo and (saved is None or any(c.id not in saved.served for c in todo)):
        retrieved = stages.retrieve(config, corpus, todo, ks, options.progress, fresh=options.fresh_retrieval)
        stage.update(retrieved.timings)
        if persist:
            save_retrieved(run_dir, retrieved)
    stage["retrieve"] = time.perf_counter() - t

    answerer, llm_settings = stages.make_answerer(config, options.use_llm)
    if options.dry_run:
        return run_dir, dry_run_report(options, config, cases, retrieved, answerer, llm_settings)
    judge = None
    probes = None
    if options.judge:
        from ragsweep.metrics.judge import LLMJudge, probe_judge

        judge = LLMJudge(
            llm_settings or _llm_settings(config),
            replicates=options.judge_replicates,
            temperature=options.judge_temperature,
        )
        if options.judge_probe:
            t = time.perf_counter()
            probes = probe_judge(judge, cases, options.judge_probe)
            stage["judge_probe"] = time.perf_counter() - t
            print(
                f"judge probes: {probes['passed']} of {probes['total']} right (decided by the LLM: "
                f"{probes['llm_passed']} of {probes['llm_total']})",
                file=sys.stderr,
            )

    t = time.perf_counter()
    if todo:
        answer_and_score(
            todo,
            retrieved,
            answerer,
            judge,
            llm_settings,
            dataset,
            texts,
            options,
            config.top_k,
            ks,
            run_dir / "cases.jsonl" if persist else None,
            done,
            language=str(config.get("language", "en") or "en"),
        )
    stage["answer_and_score"] = time.perf_counter() - t
    if options.ragas_llm:
        t = time.perf_counter()
        ragas_settings = llm_settings or _llm_settings(config)
        if options.judge_temperature is not None:
            ragas_settings = ragas_settings.with_updates(temperature=options.judge_temperature)
        _ragas_llm(run_dir if persist else None, ragas_settings, cases, done, replicates=options.judge_replicates)
        stage["ragas_llm"] = time.perf_counter() - t

    t = time.perf_counter()
    records = [done[c.id] for c in cases if c.id in done]
    llm_metrics = judge is not None or options.ragas_llm
    metric_temperature = None  # the LLM metrics' sampling temperature
    if llm_metrics:
        metric_temperature = (
            judge.effective_temperature
            if judge
            else options.judge_temperature
            if options.judge_temperature is not None
            else (llm_settings or _llm_settings(config)).temperature
        )
    report = build_report(
        records,
        dataset,
        config,
        ks,
        answerer,
        llm_settings,
        judge_info={
            "replicates": options.judge_replicates if llm_metrics else 1,
            "temperature": metric_temperature,
            "probes": probes,
            "max_failure_rate": options.max_failure_rate,
        },
    )
    if persist and not todo and (run_dir / "report.json").is_file():  # finished before: its lines hold no
        report["baselines"] = json.loads((run_dir / "report.json").read_text())["baselines"]  # chance/oracle
    stage["aggregate"] = time.perf_counter() - t
    report["manifest"] = manifest(
        options, config, dataset, dataset_hash, corpus, answerer, llm_settings, started_at, stage
    )
    if retrieved is not None and retrieved.queries:  # resumed runs may have asked nothing in this process
        report["manifest"]["retrieval"] = {
            "queries": retrieved.queries,
            "from_served_cache": retrieved.from_cache,
            "asked_pathway": retrieved.queries - retrieved.from_cache,
        }
    report["cases"] = records
    if persist:
        write_json(run_dir / "report.json", {k: v for k, v in report.items() if k != "cases"})
        if len(done) >= len(cases):  # every case is in cases.jsonl: the resume copy and the per-case
            rewrite_cases(run_dir, cases, done, settled=True)  # chance/oracle (means in report.json) are spent
            (run_dir / "hits.jsonl").unlink(missing_ok=True)
        write_html(run_dir)
    return run_dir, report


def build_report(
    records: list[dict[str, Any]],
    dataset: Dataset,
    config: PipelineConfig,
    ks: list[int],
    answerer,
    llm_settings,
    judge_info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """report.json's body (without the manifest): one aggregator over the case records.

    ``judge``: how far the LLM metrics can be trusted (failures, replicates' self-agreement,
    judge noise in the CI, agreement with reference verdicts, probes; see
    :mod:`ragsweep.metrics.judge_report`); None without LLM metrics. ``judge_info``: the
    judge's replicates, temperature, probe results and ``max_failure_rate``."""
    from ragsweep.metrics.judge_report import judge_section

    rules = sorted({r.get("relevance_rule") for r in records if r.get("relevance_rule")})
    answer_errors = [r for r in records if (r.get("answer") or {}).get("error")]
    by_message = Counter(r["answer"]["error"] for r in answer_errors)
    return {
        **aggregate(records),
        "case_metrics": metric_names(records),
        "ks": ks,
        "top_k": config.top_k,
        "relevance_rule": dataset.relevance.rule,
        "relevance_rules_applied": rules or [dataset.relevance.rule],
        "no_llm": llm_settings is None,
        "answerer": getattr(answerer, "name", "extractive"),
        "n_cases": len(records),
        "answer_errors": {
            "n": len(answer_errors),
            "first": [{"id": r["id"], "error": r["answer"]["error"]} for r in answer_errors[:5]],
            "by_message": dict(by_message.most_common(10)),
        },
        "answers": {
            "ok": sum(1 for r in records if r.get("answer") and not r["answer"].get("error")),
            "failed": len(answer_errors),
            "refused": sum(1 for r in records if (r.get("answer") or {}).get("refusal")),
        },
        "judge": judge_section(records, **(judge_info or {})),
    }


def answer_and_score(
    todo: list[Case],
    retrieved: stages.Retrieved,
    answerer,
    judge,
    llm_settings,
    dataset: Dataset,
    texts: dict[str, str],
    options: EvalOptions,
    top_k: int,
    ks: list[int],
    cases_file: Path | None,
    done: dict[str, dict],
    language: str = "en",
) -> None:
    """Answer, judge and score each case; append its record as soon as it is computed
    (to ``cases_file``, when there is one)."""
    batch = max(1, (llm_settings.concurrency * 2) if llm_settings else SCORE_BATCH)
    with (
        JsonlWriter(cases_file) if cases_file else NullWriter() as writer,
        stages.progress_bar(len(todo), "answer+score", options.progress) as bar,
    ):
        for part in stages.in_batches(todo, batch):
            answers = stages.answer_or_given(
                answerer, part, [retrieved.served[c.id][top_k] for c in part], use_given=not options.use_llm
            )
            verdicts = stages.judge_answers(judge, part, answers) if judge else None
            results = stages.score(
                part,
                retrieved.served,
                top_k=top_k,
                relevance=dataset.relevance,
                texts=texts,
                retrieved=retrieved,
                answers=answers,
                verdicts=verdicts,
                ragas_answer_metrics=options.ragas_nonllm,
                language=language,
            )
            if verdicts is not None:  # judge_correct = the mean of the case's replicate verdicts
                from ragsweep.metrics.judge import apply_judge_scores

                apply_judge_scores(results, verdicts)
            for result in results:
                line = result.line()
                writer.write(compact(line))  # hit texts are in chunks.jsonl
                done[result.id] = line
                bar.update(1)


def manifest(
    options: EvalOptions,
    config: PipelineConfig,
    dataset: Dataset,
    dataset_hash: str,
    corpus,
    answerer,
    llm_settings,
    started_at: str,
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
        "embedder": config.get("embedder_model"),
        "llm": llm_settings.public_dict() if llm_settings is not None else None,
        "prompt": getattr(answerer, "prompt_template", None),
        "packages": package_versions(),
        "git_commit": git_commit(),
        "python": sys.version.split()[0],
        "timestamps": {"started": started_at, "finished": now()},
        "stage_seconds": {k: round(v, 3) for k, v in stage.items()},
    }


def _llm_settings(config: PipelineConfig):
    from ragsweep.llm.settings import LLMSettings

    return LLMSettings.from_mapping(config.scalars())


def _ragas_llm(run_dir: Path | None, settings, cases: list[Case], done: dict[str, dict], replicates: int = 1) -> None:
    """ragas' LLM metrics for the cases without them; with ``replicates``, each metric's value is the
    mean of its replicates and the record keeps every replicate value under ``llm_replicates``."""
    from ragsweep.metrics.ragas_llm import RagasCase, RagasLLMScorer

    todo = [c for c in cases if c.id in done and not any(k.startswith("ragas_llm_") for k in done[c.id]["metrics"])]
    if not todo:
        return
    scorer = RagasLLMScorer(settings, replicates=replicates)
    rows = []
    for c in todo:
        rec = done[c.id]
        rows.append(
            RagasCase(
                question=c.question,
                answer=rec["answer"]["text"],
                contexts=[h["text"] for h in rec["hits"]],
                reference=c.reference_answer or "",
                abstained=rec["answer"]["abstained"],
                answer_error=rec["answer"].get("error"),
            )
        )
    scores = scorer.score_batch(rows)
    for c, per_metric in zip(todo, scores):
        for name, score in per_metric.items():  # names come as ragas_llm_<metric>
            done[c.id]["metrics"][name] = score.value
            if score.reason or score.error:
                done[c.id].setdefault("notes", {})[name] = score.reason or score.error
            if score.replicates is not None:
                done[c.id].setdefault("llm_replicates", {})[name] = score.replicates
    if run_dir is not None:
        rewrite_cases(run_dir, cases, done, settled=False)


def rewrite_cases(run_dir: Path, cases: list[Case], done: dict[str, dict], *, settled: bool) -> None:
    """cases.jsonl again from the records (an atomic replace); ``settled``: see :func:`compact`."""
    tmp = run_dir / "cases.jsonl.tmp"
    with tmp.open("w", encoding="utf-8") as fh:
        for c in cases:
            if c.id in done:
                fh.write(json.dumps(compact(done[c.id], settled=settled), ensure_ascii=False) + "\n")
    tmp.replace(run_dir / "cases.jsonl")


def dry_run_report(options, config, cases, retrieved, answerer, llm_settings) -> dict[str, Any]:
    """What the LLM part of a run would cost, without a single call."""
    if llm_settings is None:
        return {
            "dry_run": True,
            "cases": len(cases),
            "llm_calls": 0,
            "note": "no LLM configured: extractive answers, no LLM call",
        }
    from ragsweep.llm.dry_run import estimate_llm_run

    served = retrieved.served if retrieved is not None else {}
    estimates = estimate_llm_run(
        [(c.question, served.get(c.id, {}).get(config.top_k, [])) for c in cases],
        llm_settings,
        prompt_template=getattr(answerer, "prompt_template", None),
        references=[c.reference_answer or "" for c in cases],
        unanswerable=[c.unanswerable for c in cases],
        judge=options.judge,
        ragas_metrics=None if options.ragas_llm else (),
        replicates=options.judge_replicates,
    )
    return {"dry_run": True, "cases": len(cases), **{k: v.model_dump() for k, v in estimates.items()}}


# ------------------------------------------------------------------ terminal


SUMMARY_METRICS = ("hit_rate@{k}", "recall@{k}", "precision@{k}", "mrr@{k}", "ndcg@{k}", "map@{k}")
ANSWER_SUMMARY = (
    "citation_precision",
    "exact_match",
    "token_f1",
    "fact_coverage",
    "pathway_strsim",
    "abstention_precision",
    "abstention_recall",
    "judge_correct",
    "ragas_id_context_precision",
    "ragas_id_context_recall",
    "ragas_rouge",
    "ragas_llm_faithfulness",
    "ragas_llm_answer_correctness",
    "ragas_llm_context_precision",
    "ragas_llm_context_recall",
    "ragas_llm_answer_relevancy",
)


def summary_table(report: dict[str, Any]) -> str:
    """The terminal table: each metric with its CI and counts; retrieval metrics with the
    chance level (random order of the case's candidate chunks) and the oracle (best order)."""
    k = report.get("top_k", 5)
    names = [m.format(k=k) for m in SUMMARY_METRICS] + [
        "first_relevant_rank_mean",
        "first_relevant_rank_median",
        *ANSWER_SUMMARY,
    ]
    base = report.get("baselines") or {}
    lines = [f"{'metric':<30} {'value':>8}  {'95% CI':<17} {'chance':>7} {'oracle':>7} {'n':>6} {'missing':>7}"]
    for name in names:
        value = report["metrics"].get(name)
        if value is None and name not in report["metrics"]:
            continue
        ci = report["intervals"].get(name)
        count = report["counts"].get(name) or report["counts"].get(name.split("_mean")[0].split("_median")[0], {})
        ci_text = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci and ci[0] is not None else ""
        val = "n/a" if value is None else f"{value:.4f}"
        b = base.get(name) or {}
        chance = "" if b.get("chance") is None else f"{b['chance']:.3f}"
        oracle = "" if b.get("oracle") is None else f"{b['oracle']:.3f}"
        lines.append(
            f"{name:<30} {val:>8}  {ci_text:<17} {chance:>7} {oracle:>7} "
            f"{count.get('n', ''):>6} {count.get('missing', ''):>7}"
        )
    header = (
        f"answerer: {report['answerer']}{'  (no LLM)' if report['no_llm'] else ''}   "
        f"relevance rule: {report['relevance_rule']}   cases: {report['n_cases']}   top_k: {k}"
    )
    notes = [
        "chance: expected value under a random order of the case's candidate chunks (its scoped "
        "documents', or the corpus'); oracle: the best any order reaches"
    ]
    errors = report.get("answer_errors") or {}
    if errors.get("n"):
        common = "; ".join(f"{n}x {msg}" for msg, n in list((errors.get("by_message") or {}).items())[:3])
        notes.append(f"answer_error: {errors['n']} of {report['n_cases']} answers failed ({common})")
    answers = report.get("answers") or {}
    if answers.get("refused"):
        notes.append(f"refusals: {answers['refused']} answer(s) were refusals, counted as abstaining")
    from ragsweep.metrics.judge_report import format_judge_section, format_warnings

    warnings = format_warnings(report.get("judge"))
    judge_text = format_judge_section(report.get("judge"))
    return (
        (warnings + "\n" if warnings else "")
        + header
        + "\n"
        + "\n".join(lines)
        + "\n"
        + "\n".join(notes)
        + ("\n" + judge_text if judge_text else "")
    )


def no_answer_succeeded(report: dict[str, Any]) -> bool:
    errors = (report.get("answer_errors") or {}).get("n", 0)
    return report.get("n_cases", 0) > 0 and errors >= report["n_cases"]


def run_eval_cli(args) -> int:
    try:
        floors = parse_floors(args.min)
    except ValueError as err:
        print(f"ragsweep: error: {err}", file=sys.stderr)
        return 2
    try:
        options = EvalOptions(
            pipeline=args.pipeline,
            overrides=parse_overrides(args.set),
            dataset=args.dataset,
            split=args.split,
            limit=args.limit,
            sample=getattr(args, "sample", None),
            seed=getattr(args, "seed", 0),
            ks=args.ks or list(DEFAULT_KS),
            validate_dataset=not getattr(args, "no_validate", False),
            workers=getattr(args, "workers", None),
            out=args.out,
            name=args.name,
            resume=args.resume,
            fresh_retrieval=getattr(args, "fresh_retrieval", False),
            floors=floors,
            use_llm=args.llm,
            judge=args.judge,
            ragas_llm=args.ragas_llm,
            dry_run=args.dry_run,
            judge_replicates=getattr(args, "judge_replicates", None) or 1,
            judge_temperature=getattr(args, "judge_temperature", None),
            judge_probe=3 if getattr(args, "judge_probe", None) is None else args.judge_probe,
            max_failure_rate=getattr(args, "max_failure_rate", None),
        )
        run_dir, report = run_eval(options)
    except RunError as err:
        print(f"ragsweep: error: {err}", file=sys.stderr)
        return 2
    if options.dry_run:
        print(json.dumps(report, indent=2))
        return 0
    print(summary_table(report))
    if getattr(args, "mlflow", False):
        from ragsweep.report.mlflow_log import log_to_mlflow

        run_id = log_to_mlflow(run_dir, tracking_uri=args.mlflow_uri, pipeline_path=args.pipeline)
        print(f"MLflow run: {run_id}")
    print(
        f"\nreport: {run_dir / 'report.json'}"
        + (f"  {run_dir / 'report.html'}" if (run_dir / "report.html").exists() else "")
    )
    if no_answer_succeeded(report):
        print("ragsweep: error: no answer succeeded (every case has an answer_error); see cases.jsonl", file=sys.stderr)
        return 1
    failures = check_floors(report["metrics"], floors)
    from ragsweep.metrics.judge_report import failure_gate

    failures += failure_gate(report.get("judge"), options.max_failure_rate)
    if failures:
        print("gate FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    if floors or options.max_failure_rate is not None:
        print(
            "gate passed: "
            + ", ".join(
                [f"{k} >= {v}" for k, v in floors.items()]
                + (
                    [f"LLM metric failures <= {options.max_failure_rate:g}"]
                    if options.max_failure_rate is not None
                    else []
                )
            )
        )
    return 0
