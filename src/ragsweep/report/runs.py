"""Reading eval and sweep run folders (read-only) into the typed results, and the conventions the
reports share: metric ordering, the correctness metric, and what counts as a failing case.

Every report (report.html, compare, MLflow) reads a folder through :func:`read_run`,
:func:`read_sweep` and :func:`read_config_cases`, so it sees a
:class:`~ragsweep.evaluation.records.RunResult`, a :class:`~ragsweep.evaluation.records.SweepResult`
and :class:`~ragsweep.evaluation.records.CaseResult` objects, never the stored dicts. The main k
of a report is the result's own ``top_k``: the depth the pipeline served.

Older layouts are read as they are: eval layout 1 (every hit with its text, no ``version``, no
``top_k`` in a line), 2 (a chunk id per hit) and 3 (compact lines); sweeps up to layout 3 (full
lines in each configuration, ``recall@k``-style aliases in them) and 4 (compact lines, one chunk
table). A line written before lines carried their ``top_k`` gets the depth its folder records
(:func:`stored_top_k`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    JsonValue,
    StrictInt,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_validator,
)

from ragsweep.evaluation.records import (
    AnswerCounts,
    AnswerErrors,
    CaseResult,
    ConfigResult,
    RunResult,
    SweepResult,
)
from ragsweep.evaluation.scoring import aggregate
from ragsweep.evaluation.storage import expand_lines
from ragsweep.metrics.registry import (  # noqa: F401 - the one registry, re-exported for the reports
    HIT_FAMILY,
    JUDGE_CORRECT,
    SIMILARITY_CORRECTNESS,
    at_k_families,
    at_own_k,
    lower_is_better,
    metric_sort_key,
    ordered,
    split_at_k,
)
from ragsweep.report.values import num


class RunFolderError(FileNotFoundError):
    """A run folder, or a file it must hold, is missing or unreadable."""


# ----------------------------------------------------------------------------- files


def read_json(path: Path) -> JsonValue:
    if not path.is_file():
        raise RunFolderError(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise RunFolderError(f"{path}: not valid JSON ({err})") from err


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a ``cases.jsonl`` as stored (compact or full)."""
    if not path.is_file():
        raise RunFolderError(f"{path}: no such file")
    lines = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise RunFolderError(f"{path}:{n}: not valid JSON ({err})") from err
    return lines


def read_cases(path: Path) -> list[dict[str, Any]]:
    """The case records of a ``cases.jsonl`` (every layout), as :meth:`CaseResult.line` gives them
    (the stored record as data; the reports read :func:`read_case_results`)."""
    return expand_cases(read_lines(path), path.parent)


def chunk_table_paths(folder: Path) -> list[Path]:
    """Where the chunk table of the cases in ``folder`` may be, in order: the folder's own
    ``chunks.jsonl`` (an eval run), then, for a sweep configuration (``<sweep>/configs/<id>``),
    the sweep's ``<sweep>/chunks.jsonl``, which every configuration shares (sweep layout 4)."""
    folder = Path(folder)
    paths = [folder / "chunks.jsonl"]
    if is_config_dir(folder):
        paths.append(folder.parent.parent / "chunks.jsonl")
    return paths


def is_config_dir(folder: Path) -> bool:
    """Is ``folder`` a sweep configuration's (``<sweep>/configs/<id>``)?"""
    return Path(folder).parent.name == "configs"


def read_chunk_rows(folder: Path) -> dict[str, dict]:
    """The chunk table of the cases in ``folder`` (:func:`chunk_table_paths`): chunk id -> its row
    (``id, doc_id, start, end, text``; layout 2 wrote only ``id, text``); {} when absent. A torn
    line (a killed run) is skipped: this reads, it never rewrites a folder."""
    path = next((p for p in chunk_table_paths(folder) if p.is_file()), None)
    if path is None:
        return {}
    table = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                row = json.loads(line)
                key, _ = row["id"], row["text"]
            except (ValueError, KeyError, TypeError):
                continue
            table[key] = row
    return table


def read_chunk_texts(folder: Path) -> dict[str, str]:
    """The chunk table of the cases in ``folder``: chunk id -> text ({} when absent)."""
    return {key: row["text"] for key, row in read_chunk_rows(folder).items()}


def expand_cases(lines: list[dict], folder: Path, names: Sequence[str] | None = None) -> list[dict]:
    """Stored case lines in full (:func:`ragsweep.evaluation.storage.expand_lines`): hit texts from the
    chunk table (the folder's own, or a sweep configuration's, :func:`chunk_table_paths`; a
    layout-1 eval folder or a sweep of layout 3 or earlier, with the text in every hit, needs
    none), the metrics named by ``names`` (default: the folder's report.json's ``case_metrics``)."""
    needs_table = any("text" not in h for c in lines for h in c.get("hits") or [])
    texts = read_chunk_texts(folder) if needs_table else {}
    if needs_table and not texts:
        raise RunFolderError(
            f"{folder}: cases.jsonl refers to chunks by id but chunks.jsonl is missing (looked for "
            f"{' and '.join(str(p) for p in chunk_table_paths(folder))})"
        )
    if names is None:
        report = Path(folder) / "report.json"
        names = _Recorded.of(read_json(report)).case_metrics if report.is_file() else []
    return expand_lines(lines, texts, names)


# ----------------------------------------------------------------------------- typed results


def _invalid(path: Path, err: ValidationError, what: str) -> RunFolderError:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return RunFolderError(f"{path}: not {what} ({where}: {first['msg']}; {err.error_count()} error(s))")


class _Lenient(BaseModel):
    """A model read leniently from folders older than the typed results: a part of another shape
    (at any level) says nothing here and is left out, never an error; not an object: all defaults."""

    @model_validator(mode="wrap")
    @classmethod
    def _leave_out_bad_parts(cls, data: object, handler: ValidatorFunctionWrapHandler) -> _Lenient:
        if not isinstance(data, Mapping):
            return handler({})
        try:
            return handler(data)
        except ValidationError as err:
            bad = {str(e["loc"][0]) for e in err.errors() if e["loc"]}
            return handler({k: v for k, v in data.items() if k not in bad})


class _Depth(_Lenient):
    top_k: StrictInt | None = None  # a bool, a float or a string is no depth


class _RecordedPipeline(_Lenient):
    variables: _Depth = Field(default_factory=_Depth)


class _RecordedManifest(_Lenient):
    pipeline: _RecordedPipeline = Field(default_factory=_RecordedPipeline)


class _Recorded(_Depth):
    """What a report.json, a result.json or sweep.json (and each of its rows) records of the depth
    a configuration served, and a report.json of the metrics its case lines hold (``case_metrics``)."""

    id: str | int | None = None
    case_metrics: list[str] = Field(default_factory=list)
    params: _Depth = Field(default_factory=_Depth)
    manifest: _RecordedManifest = Field(default_factory=_RecordedManifest)
    configs: list[_Recorded] = Field(default_factory=list)

    @classmethod
    def of(cls, data: JsonValue) -> _Recorded:
        return cls.model_validate(data)

    def depth(self) -> int | None:
        """Its own ``top_k``, else its parameters', else the pipeline's of its manifest."""
        variables = self.manifest.pipeline.variables
        for value in (self.top_k, self.params.top_k, variables.top_k):
            if value is not None and value >= 1:
                return value
        return None

    def row(self, config_id: str) -> _Recorded | None:
        """A sweep's row of a configuration."""
        return next((r for r in self.configs if str(r.id) == config_id), None)


def stored_top_k(folder: Path) -> int | None:
    """The depth the folder's configuration served, as the folder records it, for case lines
    written before each line carried its ``top_k`` (eval layout 1, the first sweeps): an eval
    folder's report.json ``top_k`` (or its manifest's pipeline ``top_k``); a sweep configuration's
    result.json or sweep.json row ``top_k`` (or its ``params``'), else the sweep's pipeline ``top_k``.
    None when none says."""
    folder = Path(folder)
    report = folder / "report.json"
    if report.is_file():
        return _Recorded.of(read_json(report)).depth()
    if not is_config_dir(folder):
        return None
    result, sweep = folder / "result.json", folder.parent.parent / "sweep.json"
    if result.is_file() and (k := _Recorded.of(read_json(result)).depth()) is not None:
        return k
    if not sweep.is_file():
        return None
    recorded = _Recorded.of(read_json(sweep))
    row = recorded.row(folder.name)
    return (row.depth() if row is not None else None) or recorded.depth()


def _line_top_k(line: Mapping[str, Any]) -> int:
    """A legacy line's depth when its folder records none: the hits it holds, else its deepest @k metric
    (an expanded line, :func:`expand_cases`: both keys are there)."""
    if line["hits"]:
        return len(line["hits"])
    ks = [at[1] for name in line["metrics"] if (at := split_at_k(name))]
    return max(ks, default=1)


def _aliases() -> frozenset[str]:
    """The own-k names (``recall@k``) that sweep lines up to layout 3 carried."""
    return frozenset(f"{family}@k" for family in at_k_families())


def _without_aliases(values: dict[str, float | None], aliases: frozenset[str]) -> dict[str, float | None]:
    return values if aliases.isdisjoint(values) else {name: v for name, v in values.items() if name not in aliases}


def case_results(lines: Sequence[Mapping[str, Any]], path: Path, top_k: int | None = None) -> list[CaseResult]:
    """Expanded case lines (:func:`expand_cases`) as :class:`CaseResult` objects. A line without
    ``top_k`` gets ``top_k`` (its folder's, :func:`stored_top_k`); the own-k aliases of old sweep
    lines (``recall@k``...) are left out: :meth:`CaseResult.metric` gives them."""
    out = []
    aliases = _aliases()  # once: the registry builds it anew each time
    for n, line in enumerate(lines, 1):
        record = dict(line)
        if "top_k" not in record:
            record["top_k"] = top_k if top_k is not None else _line_top_k(record)
        try:
            case = CaseResult.model_validate(record)
        except ValidationError as err:
            raise _invalid(Path(f"{path}:{n}"), err, "a case record") from err
        case.metrics, case.chance, case.oracle = (
            _without_aliases(v, aliases) for v in (case.metrics, case.chance, case.oracle)
        )
        out.append(case)
    return out


def read_case_results(path: Path, names: Sequence[str] | None = None) -> list[CaseResult]:
    """A ``cases.jsonl`` of any layout as :class:`CaseResult` objects."""
    path = Path(path)
    lines = read_lines(path)
    legacy = any("top_k" not in line for line in lines)
    return case_results(expand_cases(lines, path.parent, names), path, stored_top_k(path.parent) if legacy else None)


def read_config_cases(config_dir: Path) -> list[CaseResult]:
    """A sweep configuration's cases (``<sweep>/configs/<id>/cases.jsonl``, sweep layouts 1-4)."""
    return read_case_results(Path(config_dir) / "cases.jsonl")


def _fallback_top_k(cases: Sequence[CaseResult]) -> int | None:
    counts = Counter(c.top_k for c in cases)
    return counts.most_common(1)[0][0] if counts else None


def read_run(folder: str | Path) -> RunResult:
    """An eval run folder as a :class:`RunResult` with its ``cases`` and ``run_dir``.

    report.json is validated into the result; an interrupted run (cases.jsonl without
    report.json) gets its aggregate from :func:`ragsweep.evaluation.scoring.aggregate`, as
    the finished run would. A report.json of layout 1 without ``top_k`` gets its manifest's
    pipeline ``top_k``, else its cases'.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise RunFolderError(f"{folder}: no such run folder")
    report_path, cases_path = folder / "report.json", folder / "cases.jsonl"
    if not report_path.is_file() and not cases_path.is_file():
        raise RunFolderError(f"{folder}: no report.json and no cases.jsonl (an eval run folder holds them)")
    report = read_json(report_path) if report_path.is_file() else None
    if report is not None and not isinstance(report, dict):
        raise RunFolderError(f"{report_path}: not a report (a JSON object)")
    recorded = _Recorded.of(report)
    cases: list[CaseResult] = []
    if cases_path.is_file():
        lines = read_lines(cases_path)
        top_k = None
        if any("top_k" not in line for line in lines):
            top_k = stored_top_k(folder)
        cases = case_results(expand_cases(lines, folder, recorded.case_metrics), cases_path, top_k)
    if report is None:
        run = _aggregate_run(cases)
    else:
        if "top_k" not in report:  # layout 1
            top_k = recorded.depth() or _fallback_top_k(cases)
            if top_k is None:
                raise RunFolderError(f"{report_path}: no top_k, no pipeline top_k in its manifest and no cases")
            report = {**report, "top_k": top_k}
        try:
            run = RunResult.model_validate(report)
        except ValidationError as err:
            raise _invalid(report_path, err, "a run report") from err
    run.cases = cases
    run.run_dir = str(folder)
    return run


def _aggregate_run(cases: list[CaseResult]) -> RunResult:
    """The report an interrupted run would have written, from its cases alone (no manifest)."""
    errors = [c for c in cases if c.answer is not None and c.answer.error]
    answered = [c for c in cases if c.answer is not None]
    top_k = _fallback_top_k(cases)
    return RunResult(
        **aggregate(cases).model_dump(),
        case_metrics=list(dict.fromkeys(m for c in cases for m in c.metrics)),
        ks=case_ks(cases),
        top_k=top_k if top_k is not None else 1,
        relevance_rules_applied=sorted({c.relevance_rule for c in cases if c.relevance_rule}),
        relevance_rule=next((c.relevance_rule for c in cases if c.relevance_rule), None),
        no_llm=not any(c.answer.answerer.startswith("llm") for c in answered if c.answer is not None),
        answerer=next((c.answer.answerer for c in answered if c.answer is not None and c.answer.answerer), None),
        n_cases=len(cases),
        answer_errors=AnswerErrors(
            n=len(errors),
            first=[{"id": c.id, "error": str(c.answer.error)} for c in errors[:5] if c.answer is not None],
            by_message=dict(Counter(str(c.answer.error) for c in errors if c.answer is not None).most_common(10)),
        ),
        answers=AnswerCounts(
            ok=sum(1 for c in answered if c.answer is not None and not c.answer.error),
            failed=len(errors),
            refused=sum(1 for c in answered if c.answer is not None and c.answer.refusal),
        ),
    )


def read_sweep(folder: str | Path) -> SweepResult:
    """A sweep folder's sweep.json as a :class:`SweepResult` (with ``sweep_dir``). A configuration
    row of an old sweep without ``top_k`` gets its ``params``' top_k, else the pipeline's."""
    folder = Path(folder)
    path = folder / "sweep.json"
    data = read_json(path)
    if not isinstance(data, dict):
        raise RunFolderError(f"{path}: not a sweep (a JSON object)")
    recorded = _Recorded.of(data)
    base_k = recorded.depth()  # the pipeline's, from the sweep's manifest
    stored = data.get("configs")
    rows = [
        {**row, "top_k": typed.depth() or base_k} if isinstance(row, dict) and "top_k" not in row else row
        for row, typed in zip(stored if isinstance(stored, list) else [], recorded.configs)
    ]
    try:
        sweep = SweepResult.model_validate({**data, "configs": rows})
    except ValidationError as err:
        raise _invalid(path, err, "a sweep result") from err
    sweep.sweep_dir = str(folder)
    return sweep


def read_config(config_dir: Path) -> ConfigResult | None:
    """A sweep configuration's result.json (None when the configuration did not finish)."""
    path = Path(config_dir) / "result.json"
    if not path.is_file():
        return None
    try:
        return ConfigResult.model_validate(read_json(path))
    except ValidationError as err:
        raise _invalid(path, err, "a configuration result") from err


def run_kind(run_dir: Path) -> Literal["eval", "sweep"]:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunFolderError(f"{run_dir}: no such run folder")
    if (run_dir / "sweep.json").is_file():
        return "sweep"
    if (run_dir / "report.json").is_file() or (run_dir / "cases.jsonl").is_file():
        return "eval"
    raise RunFolderError(f"{run_dir}: neither report.json / cases.jsonl (eval run) nor sweep.json (sweep run)")


# ----------------------------------------------------------------------------- the manifest, as reports show it


class ParserManifest(_Lenient):
    """How the run's documents were parsed (``ParserSpec.manifest``)."""

    parser: str = ""
    by: str | None = None  # "app": the app's own parser; "ragsweep"
    replaced: str | None = None  # the app's parser that ragsweep's stood in for (``--set parser=native``)
    note: str = ""


class TopKOrigin(_Lenient):
    """Where a top-k that is not ``$top_k`` comes from (``question_answerer.search_topk``...)."""

    origin: JsonValue = Field(default=None, alias="from")


class PipelineManifest(_Lenient):
    path: str | None = None
    hash: str | None = None
    overrides: dict[str, JsonValue] | None = None
    variables: dict[str, JsonValue] = Field(default_factory=dict)
    parser: ParserManifest = Field(default_factory=ParserManifest)
    top_k: TopKOrigin | None = None
    served_metadata: str | None = None  # what an app reading a connector with no folder is served otherwise


class LLMManifest(_Lenient):
    model: str | None = None  # the answering model (``LLMSettings.public_dict``)


class Manifest(_Lenient):
    """The part of a run's manifest (``RunResult.manifest``, ``SweepResult.manifest``) reports show;
    a part of an unexpected shape is left out, never an error."""

    pipeline: PipelineManifest = Field(default_factory=PipelineManifest)
    llm: LLMManifest | None = None
    dataset: dict[str, JsonValue] | str | None = None
    corpus: dict[str, JsonValue] | str | None = None
    timestamps: dict[str, JsonValue] = Field(default_factory=dict)
    stage_seconds: dict[str, JsonValue] = Field(default_factory=dict)
    git_commit: str | None = None

    @classmethod
    def of(cls, manifest: BaseModel | None) -> Manifest:
        """The manifest of a result (its known parts)."""
        return cls.model_validate(manifest.model_dump(mode="json") if manifest is not None else {})


# ----------------------------------------------------------------------------- conventions


def case_ks(cases: Iterable[CaseResult]) -> list[int]:
    return sorted({at[1] for c in cases for m in c.metrics if (at := split_at_k(m))})


def has_values(cases: Sequence[CaseResult], metric: str) -> bool:
    """Does any case have a value of ``metric`` (``<family>@k``: at the case's own top_k)?"""
    return any(num(c.metric(metric)) is not None for c in cases)


def correctness_metric(cases: Sequence[CaseResult], k: int | None) -> str | None:
    """judge_correct when judged, else hit_rate@k, else pathway_strsim (first with values)."""
    candidates = [JUDGE_CORRECT]
    if k is not None:
        candidates.append(f"{HIT_FAMILY}@{k}")
    candidates += [m for m in ordered({m for c in cases for m in c.metrics}) if m.startswith(f"{HIT_FAMILY}@")]
    candidates += SIMILARITY_CORRECTNESS
    return next((m for m in candidates if has_values(cases, m)), None)


FAILURE_KINDS = {  # each case outcome that fails, by what happened
    "retrieval-miss": "no relevant chunk retrieved",
    "judged-wrong": "answer judged wrong",
    "abstained-answerable": "abstained on an answerable question",
    "answered-unanswerable": "answered an unanswerable question",
    "error": "answerer failed",
}
# what each kind means, as the page's header says it ({k}: the depth the pipeline serves)
FAILURE_MEANINGS = {
    "retrieval-miss": "no relevant chunk in the top {k} of an answerable question",
    "judged-wrong": "the LLM judge says the answer is wrong",
    "abstained-answerable": "abstained on an answerable question",
    "answered-unanswerable": "answered an unanswerable question",
    "error": "the answerer failed",
}


def failing_text(cases: Sequence[CaseResult], k: int | None) -> str:
    """``394 failing (312: no relevant chunk in the top 5 ...; 120: abstained ...)``: how many cases
    fail, and on what, in :func:`case_failures`' words."""
    kinds = [case_failures(c) for c in cases]
    n_fail = sum(1 for ks in kinds if ks)
    by_kind = Counter(kind for ks in kinds for kind in ks)
    if not n_fail:
        return "0 failing"
    parts = [f"{by_kind[kind]}: {FAILURE_MEANINGS[kind].format(k=k)}" for kind in FAILURE_KINDS if by_kind[kind]]
    several = "a case may fail in several ways; " if sum(by_kind.values()) > n_fail else ""
    return f"{n_fail} failing ({several}{'; '.join(parts)})"


def case_failures(case: CaseResult) -> list[str]:
    """Why a case fails (empty list: it passes).

    retrieval-miss: an answerable case with hit_rate at its top_k == 0 (or, without that
    metric, no relevant hit among the top_k it was served; a case whose evidence is found in no
    parsed document, left out of the retrieval metrics, is no retrieval miss); judged-wrong: the LLM judge (or
    judge_correct == 0) says the answer is wrong; abstained-answerable: abstained on an answerable
    case; answered-unanswerable: answered an unanswerable one; error: the answerer reported an error.
    """
    kinds = []
    if not case.unanswerable:
        hit = num(case.metric(at_own_k(HIT_FAMILY)))
        if hit is None and not case.evidence_unlocated:
            hit = float(any(h.relevant for h in case.hits if h.rank <= case.top_k))
        if hit == 0:
            kinds.append("retrieval-miss")
    if case.judge is not None and case.judge.is_correct is not None:
        if not case.judge.is_correct:
            kinds.append("judged-wrong")
    elif num(case.metric(JUDGE_CORRECT)) == 0:
        kinds.append("judged-wrong")
    if case.answer is not None:
        if case.answer.abstained and not case.unanswerable:
            kinds.append("abstained-answerable")
        if case.unanswerable and not case.answer.abstained:
            kinds.append("answered-unanswerable")
        if case.answer.error:
            kinds.append("error")
    return kinds


def natural_key(label: object) -> list[int | str]:
    """Sort key: 'type 2' before 'type 10'."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", str(label))]


def doc_label(case: CaseResult) -> str:
    if case.doc_scope:
        return ", ".join(str(s) for s in case.doc_scope)
    return "(unscoped)"
