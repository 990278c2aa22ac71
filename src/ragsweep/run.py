"""`ragsweep eval`: cases -> hits -> answers -> scores -> run folder (resumable).

The run folder is where results leave ragsweep:

- ``state.json``   what this run is (config hash, dataset hash, split, limit, case ids)
- ``hits.jsonl``   retrieval results, written as soon as the batch retrieval ends
                   (removed once every case is in cases.jsonl)
- ``cases.jsonl``  one line per finished case, appended and flushed as computed
- ``report.json``  aggregate metrics, intervals, groups and the manifest
- ``report.html``  written by :mod:`ragsweep.report` when available

``--resume`` reopens a folder, keeps every finished case, re-uses saved hits,
and computes only what is missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ragsweep.answer.base import Answer
from ragsweep.config import PipelineConfig, parse_overrides
from ragsweep.datasets.schema import Case, Dataset
from ragsweep.hits import Hit
from ragsweep.scoring import DEFAULT_KS, aggregate, answer_scores, check_floors, judge_retrieval, parse_floors

PACKAGES = ("ragsweep", "pathway", "docling-slim", "docling-core", "tantivy", "sentence-transformers",
            "torch", "tiktoken", "openai", "ragas", "pydantic", "scipy")


class RunInputs(BaseModel):
    """What every run (eval or sweep) starts from, and where it goes."""

    pipeline: str = "pipelines/default.yaml"
    overrides: dict[str, Any] = Field(default_factory=dict)
    dataset: str
    split: str | None = None
    limit: int | None = None
    out: str = "runs"
    name: str | None = None
    resume: str | None = None
    progress: bool = True


class EvalOptions(RunInputs):
    floors: dict[str, float] = Field(default_factory=dict)
    ks: list[int] = Field(default_factory=lambda: list(DEFAULT_KS))
    use_llm: bool = False
    judge: bool = False
    ragas_llm: bool = False
    ragas_nonllm: bool = True
    dry_run: bool = False


class RunError(Exception):
    pass


# ------------------------------------------------------------------ helpers


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=5, cwd=Path(__file__).resolve().parent)
        if out.returncode == 0:
            return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_jsonl_tolerant(path: Path) -> list[dict[str, Any]]:
    """Lines of a JSONL file written by an interrupted run: a torn last line is dropped
    (and cut from the file, so appending continues cleanly)."""
    if not path.exists():
        return []
    good: list[dict[str, Any]] = []
    keep_bytes = 0
    with path.open("rb") as fh:
        for raw in fh:
            try:
                good.append(json.loads(raw))
            except ValueError:
                break
            keep_bytes += len(raw)
    if keep_bytes != path.stat().st_size:
        with path.open("r+b") as fh:
            fh.truncate(keep_bytes)
    return good


class JsonlWriter:
    """Append records and flush each one to disk: a kill loses at most the line being written."""

    def __init__(self, path: Path):
        self.fh = path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self.fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


def _bar(iterable=None, total=None, desc="", enabled=True):
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit="case", disable=not enabled, file=sys.stderr, leave=False)


# ------------------------------------------------------------------ answering


def make_answerer(config: PipelineConfig, use_llm: bool):
    """The LLM answerer when asked for (or configured), else the extractive one."""
    if use_llm or config.get("llm_model"):
        from ragsweep.answer.llm import LLMAnswerer
        from ragsweep.llm.settings import LLMSettings

        settings = LLMSettings.from_mapping(config.scalars())
        return LLMAnswerer(settings, prompt_template=config.get("prompt_template")), settings
    from ragsweep.answer.extractive import ExtractiveAnswerer

    return ExtractiveAnswerer(), None


def answer_cases(answerer, items: list[tuple[str, list[Hit]]]) -> list[Answer]:
    if hasattr(answerer, "answer_batch"):
        return answerer.answer_batch(items)
    return [answerer.answer(q, h) for q, h in items]


# ------------------------------------------------------------------ the run


def resolve_run_dir(options: EvalOptions, dataset_name: str, config_hash: str) -> Path:
    out = Path(options.out)
    if options.resume:
        if options.resume != "latest":
            run_dir = Path(options.resume)
        else:
            candidates = sorted(p.parent for p in out.glob("*/state.json"))
            if not candidates:
                raise RunError(f"--resume: no run folder under {out}")
            run_dir = candidates[-1]
        if not (run_dir / "state.json").exists():
            raise RunError(f"--resume: {run_dir} is not a run folder (no state.json)")
        return run_dir
    if options.name:
        return out / options.name
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = out / f"{stamp}-{dataset_name}-{config_hash[:8]}"
    n = 2
    while run_dir.exists():  # two runs of one config within a second
        run_dir = out / f"{stamp}-{dataset_name}-{config_hash[:8]}-{n}"
        n += 1
    return run_dir


def parsed_scopes(cases: list[Case], parsed: set[str]) -> list[list[str] | None]:
    """Each case's scope restricted to parsed documents. A scoped case whose every
    document was skipped gets ``[]``: it must get no hits, not the whole corpus."""
    return [[d for d in c.doc_scope if d in parsed] if c.doc_scope else None for c in cases]


def load_inputs(options: RunInputs) -> tuple[PipelineConfig, Dataset, list[Case]]:
    from ragsweep.datasets.loader import DatasetError, load_dataset

    config = PipelineConfig.load(options.pipeline, options.overrides)
    try:
        dataset = load_dataset(options.dataset, split=options.split)
    except DatasetError as err:
        raise RunError(str(err)) from err
    cases = list(dataset.cases)
    if options.limit:
        cases = cases[: options.limit]
    if not cases:
        raise RunError(f"{options.dataset}: no case to evaluate (split={options.split}, limit={options.limit})")
    return config, dataset, cases


def open_run(options: EvalOptions, config: PipelineConfig, dataset_name: str, dataset_hash: str,
             cases: list[Case]) -> tuple[Path, str]:
    """The run folder (new, or the one to resume, checked against this run) and its start time."""
    run_dir = resolve_run_dir(options, dataset_name, config.hash)
    state = {
        "config_hash": config.hash, "dataset": str(options.dataset), "dataset_hash": dataset_hash,
        "split": options.split, "limit": options.limit, "ks": options.ks, "use_llm": options.use_llm,
        "case_ids": [c.id for c in cases], "started_at": now(),
    }
    if options.resume:
        saved = json.loads((run_dir / "state.json").read_text())
        for key in ("config_hash", "dataset_hash", "split", "limit", "ks", "use_llm"):
            if saved.get(key) != state[key]:
                raise RunError(
                    f"--resume {run_dir}: {key} differs ({saved.get(key)!r} then, {state[key]!r} now); "
                    "start a new run instead"
                )
        return run_dir, saved.get("started_at", state["started_at"])
    if not options.dry_run:  # a dry run leaves nothing behind
        run_dir.mkdir(parents=True, exist_ok=False)
        (run_dir / "state.json").write_text(json.dumps(state, indent=2))
        print(f"run folder: {run_dir}", file=sys.stderr)
    return run_dir, state["started_at"]


def parse_documents(dataset: Dataset, progress: bool):
    """Docling over the dataset's documents; skipped files are named."""
    from ragsweep.corpus import parse_corpus

    corpus = parse_corpus(dataset.docs_dir, progress=progress)
    for skipped in corpus.skipped:
        print(f"skipped document {skipped.doc_id}: {skipped.reason}", file=sys.stderr)
    if not corpus.documents:
        raise RunError(f"{dataset.docs_dir}: no document could be parsed")
    return corpus


def retrieve_cases(config: PipelineConfig, corpus, cases: list[Case], k: int, hits_file: Path | None,
                   progress: bool):
    """Every case's top-k in one Pathway run; each case's hits saved to ``hits_file`` for a resume.

    Returns ``({case id: hits}, the store run)``; a case scoped to documents that
    were all skipped gets no hits rather than the whole corpus.
    """
    from ragsweep.store import Query, RagStore

    print(f"retrieve: {len(cases)} question(s) in one Pathway run (k={k})...", file=sys.stderr)
    scopes = parsed_scopes(cases, {d.doc_id for d in corpus.documents})
    unscoped = [c.id for c, s in zip(cases, scopes) if s == []]
    if unscoped:
        print(f"warning: {len(unscoped)} case(s) scoped to documents that were not parsed "
              f"(first: {unscoped[0]}); they get no hits", file=sys.stderr)
    run = RagStore(config, corpus).run([Query(c.question, k, s or None) for c, s in zip(cases, scopes)],
                                       progress=progress)
    writer = JsonlWriter(hits_file) if hits_file else None
    found: dict[str, list[Hit]] = {}
    for case, scope, hits in zip(cases, scopes, run.hits):
        found[case.id] = [] if scope == [] else hits
        if writer:
            writer.write({"id": case.id, "hits": [h.model_dump() for h in found[case.id]]})
    if writer:
        writer.close()
    return found, run


def run_eval(options: EvalOptions) -> tuple[Path, dict[str, Any]]:
    """Evaluate; return the run folder and the report (or, for a dry run, the LLM estimate)."""
    stage: dict[str, float] = {}
    config, dataset, cases = load_inputs(options)
    cases_file = dataset.root / "cases.jsonl"
    dataset_hash = file_hash(cases_file) if cases_file.exists() else "unknown"
    run_dir, started_at = open_run(options, config, dataset.name, dataset_hash, cases)

    done = {r["id"]: r for r in read_jsonl_tolerant(run_dir / "cases.jsonl")}
    saved_hits = {r["id"]: [Hit(**h) for h in r["hits"]] for r in read_jsonl_tolerant(run_dir / "hits.jsonl")}
    todo = [c for c in cases if c.id not in done]
    if done:
        print(f"resuming: {len(done)} case(s) already done, {len(todo)} to go", file=sys.stderr)

    t = time.perf_counter()
    corpus = parse_documents(dataset, options.progress)
    stage["parse"] = time.perf_counter() - t
    texts = {d.doc_id: d.text for d in corpus.documents}

    need = [c for c in todo if c.id not in saved_hits]
    t = time.perf_counter()
    if need:
        hits_file = None if options.dry_run else run_dir / "hits.jsonl"
        found, store_run = retrieve_cases(config, corpus, need, max(max(options.ks), config.top_k), hits_file,
                                          options.progress)
        saved_hits.update(found)
        stage.update(store_run.timings)
    stage["retrieve"] = time.perf_counter() - t

    answerer, llm_settings = make_answerer(config, options.use_llm)
    if options.dry_run:
        return run_dir, dry_run_report(options, config, cases, saved_hits, answerer, llm_settings)
    judge = None
    if options.judge:
        from ragsweep.metrics.judge import LLMJudge

        judge = LLMJudge(llm_settings or _llm_settings(config))

    t = time.perf_counter()
    rules = answer_and_score(todo, saved_hits, answerer, judge, llm_settings, dataset, texts, options,
                             config.top_k, run_dir / "cases.jsonl", done)
    stage["answer_and_score"] = time.perf_counter() - t
    if options.ragas_llm:
        t = time.perf_counter()
        _ragas_llm(run_dir, llm_settings or _llm_settings(config), cases, done)
        stage["ragas_llm"] = time.perf_counter() - t

    t = time.perf_counter()
    records = [done[c.id] for c in cases if c.id in done]
    report = {
        **aggregate(records),
        "ks": options.ks,
        "top_k": config.top_k,
        "relevance_rule": dataset.relevance.rule,
        "relevance_rules_applied": sorted(rules) or [dataset.relevance.rule],
        "no_llm": llm_settings is None,
        "answerer": getattr(answerer, "name", "extractive"),
        "n_cases": len(records),
    }
    stage["aggregate"] = time.perf_counter() - t
    report["manifest"] = manifest(options, config, dataset, dataset_hash, corpus, answerer, llm_settings,
                                  started_at, stage)
    (run_dir / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    if len(done) >= len(cases):  # every case is in cases.jsonl with its hits: the resume copy is spent
        (run_dir / "hits.jsonl").unlink(missing_ok=True)
    write_html(run_dir)
    return run_dir, report


def answer_and_score(todo: list[Case], hits: dict[str, list[Hit]], answerer, judge, llm_settings,
                     dataset: Dataset, texts: dict[str, str], options: EvalOptions, top_k: int,
                     cases_file: Path, done: dict[str, dict]) -> set[str]:
    """Answer, judge and score each case; append its record as soon as it is computed."""
    writer = JsonlWriter(cases_file)
    batch = max(1, (llm_settings.concurrency * 2) if llm_settings else 1)
    rules: set[str] = set()
    try:
        with _bar(total=len(todo), desc="answer+score", enabled=options.progress) as bar:
            for i in range(0, len(todo), batch):
                part = todo[i : i + batch]
                answers = answer_cases(answerer, [(c.question, hits.get(c.id, [])[:top_k]) for c in part])
                verdicts = _judge(judge, part, answers) if judge else [None] * len(part)
                for case, answer, verdict in zip(part, answers, verdicts):
                    record = score_case(case, hits.get(case.id, []), answer, verdict, dataset, texts, options, top_k)
                    rules.add(record.pop("_rule"))
                    writer.write(record)
                    done[case.id] = record
                    bar.update(1)
    finally:
        writer.close()
    return rules


def manifest(options: EvalOptions, config: PipelineConfig, dataset: Dataset, dataset_hash: str, corpus, answerer,
             llm_settings, started_at: str, stage: dict[str, float]) -> dict[str, Any]:
    """Everything needed to know what ran (secrets masked)."""
    return {
        "pipeline": {**config.manifest(), "text": config.public_text()},
        "dataset": {
            "path": str(options.dataset), "name": dataset.name, "hash": dataset_hash, "split": options.split,
            "limit": options.limit, "relevance": dataset.relevance.model_dump(),
        },
        "corpus": {
            "docs_dir": str(dataset.docs_dir), "hash": corpus.content_hash, "documents": len(corpus.documents),
            "skipped": [s.model_dump() for s in corpus.skipped], "pdf_pipeline": corpus.pdf_pipeline,
            "parsers": sorted({d.parser for d in corpus.documents}),
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


def write_html(run_dir: Path) -> None:
    """report.html beside report.json; a failure here loses nothing already computed."""
    from ragsweep.report.html import write_html_report

    try:
        write_html_report(run_dir)
    except Exception as err:  # noqa: BLE001 - the run's results are already on disk
        print(f"warning: report.html not written: {err}", file=sys.stderr)


def _llm_settings(config: PipelineConfig):
    from ragsweep.llm.settings import LLMSettings

    return LLMSettings.from_mapping(config.scalars())


def _judge(judge, cases: list[Case], answers: list[Answer]):
    items = [
        {"question": c.question, "reference": c.reference_answer or "", "answer": a.text,
         "unanswerable": c.unanswerable, "abstained": a.abstained, "answer_error": a.error,
         "expected_facts": c.expected_facts}
        for c, a in zip(cases, answers)
    ]
    return judge.judge_batch(items)


def score_case(case: Case, hits: list[Hit], answer: Answer, verdict, dataset: Dataset, texts: dict[str, str],
               options: EvalOptions, top_k: int) -> dict[str, Any]:
    marked, metrics, rule = judge_retrieval(case, hits, dataset.relevance, texts, options.ks,
                                            cited=answer.cited or None)
    metrics.update(answer_scores(case, answer))
    if options.ragas_nonllm:
        from ragsweep.metrics.ragas_bridge import ragas_nonllm_scores

        reference_contexts = [e.text for e in case.evidence] or None
        metrics.update(ragas_nonllm_scores(
            case.question, None if answer.abstained else answer.text, [h.text for h in hits[:top_k]],
            case.reference_answer, reference_contexts))
    judge_dict = None
    if verdict is not None:
        judge_dict = verdict.model_dump() if hasattr(verdict, "model_dump") else dict(verdict)
        correct = judge_dict.get("is_correct")
        metrics["judge_correct"] = None if correct is None else float(bool(correct))
    return {
        "id": case.id,
        "question": case.question,
        "type": case.type,
        "doc_scope": case.doc_scope,
        "unanswerable": case.unanswerable,
        "reference_answer": case.reference_answer,
        "split": case.split,
        "hits": marked,
        "answer": answer.model_dump(),
        "metrics": metrics,
        "judge": judge_dict,
        "_rule": rule,
    }


def _ragas_llm(run_dir: Path, settings, cases: list[Case], done: dict[str, dict]) -> None:
    from ragsweep.metrics.ragas_llm import RagasCase, RagasLLMScorer

    todo = [c for c in cases if c.id in done and not any(k.startswith("ragas_llm_") for k in done[c.id]["metrics"])]
    if not todo:
        return
    scorer = RagasLLMScorer(settings)
    rows = []
    for c in todo:
        rec = done[c.id]
        rows.append(RagasCase(question=c.question, answer=rec["answer"]["text"],
                              contexts=[h["text"] for h in rec["hits"]], reference=c.reference_answer or "",
                              abstained=rec["answer"]["abstained"], answer_error=rec["answer"].get("error")))
    scores = scorer.score_batch(rows)
    for c, per_metric in zip(todo, scores):
        for name, score in per_metric.items():  # names come as ragas_llm_<metric>
            done[c.id]["metrics"][name] = score.value
            if score.reason or score.error:
                done[c.id].setdefault("notes", {})[name] = score.reason or score.error
    # rewrite cases.jsonl with the new metrics (atomic replace)
    tmp = run_dir / "cases.jsonl.tmp"
    with tmp.open("w", encoding="utf-8") as fh:
        for c in cases:
            if c.id in done:
                fh.write(json.dumps(done[c.id], ensure_ascii=False) + "\n")
    tmp.replace(run_dir / "cases.jsonl")


def dry_run_report(options, config, cases, saved_hits, answerer, llm_settings) -> dict[str, Any]:
    """What the LLM part of a run would cost, without a single call."""
    if llm_settings is None:
        return {"dry_run": True, "cases": len(cases), "llm_calls": 0,
                "note": "no LLM configured: extractive answers, no LLM call"}
    from ragsweep.llm.dry_run import estimate_llm_run

    estimates = estimate_llm_run(
        [(c.question, saved_hits.get(c.id, [])[: config.top_k]) for c in cases],
        llm_settings,
        prompt_template=getattr(answerer, "prompt_template", None),
        references=[c.reference_answer or "" for c in cases],
        unanswerable=[c.unanswerable for c in cases],
        judge=options.judge,
        ragas_metrics=None if options.ragas_llm else (),
    )
    return {"dry_run": True, "cases": len(cases), **{k: v.model_dump() for k, v in estimates.items()}}


# ------------------------------------------------------------------ terminal


SUMMARY_METRICS = ("hit_rate@{k}", "recall@{k}", "precision@{k}", "mrr@{k}", "ndcg@{k}", "map@{k}")


def summary_table(report: dict[str, Any]) -> str:
    k = report.get("top_k", 5)
    names = [m.format(k=k) for m in SUMMARY_METRICS] + [
        "first_relevant_rank_mean", "first_relevant_rank_median", "citation_precision", "exact_match", "token_f1",
        "fact_coverage", "pathway_strsim", "abstention_precision", "abstention_recall", "judge_correct",
        "ragas_context_precision", "ragas_context_recall", "ragas_rouge",
        "ragas_llm_faithfulness", "ragas_llm_answer_correctness", "ragas_llm_context_precision",
        "ragas_llm_context_recall", "ragas_llm_answer_relevancy",
    ]
    lines = [f"{'metric':<28} {'value':>8}  {'95% CI':<17} {'n':>6} {'missing':>7}"]
    for name in names:
        value = report["metrics"].get(name)
        if value is None and name not in report["metrics"]:
            continue
        ci = report["intervals"].get(name)
        count = report["counts"].get(name) or report["counts"].get(name.split("_mean")[0].split("_median")[0], {})
        ci_text = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci and ci[0] is not None else ""
        val = "n/a" if value is None else f"{value:.4f}"
        lines.append(f"{name:<28} {val:>8}  {ci_text:<17} {count.get('n', ''):>6} {count.get('missing', ''):>7}")
    header = (f"answerer: {report['answerer']}{'  (no LLM)' if report['no_llm'] else ''}   "
              f"relevance rule: {report['relevance_rule']}   cases: {report['n_cases']}")
    return header + "\n" + "\n".join(lines)


def run_eval_cli(args) -> int:
    try:
        floors = parse_floors(args.min)
    except ValueError as err:
        print(f"ragsweep: error: {err}", file=sys.stderr)
        return 2
    options = EvalOptions(
        pipeline=args.pipeline, overrides=parse_overrides(args.set), dataset=args.dataset, split=args.split,
        limit=args.limit, out=args.out, name=args.name, resume=args.resume, floors=floors,
        use_llm=args.llm, judge=args.judge, ragas_llm=args.ragas_llm, dry_run=args.dry_run,
    )
    try:
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
    print(f"\nreport: {run_dir / 'report.json'}" + (f"  {run_dir / 'report.html'}" if (run_dir / "report.html").exists() else ""))
    failures = check_floors(report["metrics"], floors)
    if failures:
        print("gate FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    if floors:
        print("gate passed: " + ", ".join(f"{k} >= {v}" for k, v in floors.items()))
    return 0
