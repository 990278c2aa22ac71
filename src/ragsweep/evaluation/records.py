"""The typed records that flow from retrieval to report.

:class:`CaseResult` is one case after retrieval, answering and scoring: one line of
``cases.jsonl``, the element of a Python API report, and what report.html, compare
and MLflow read. :func:`build_case_result` is the one function that builds it, for
eval, sweep and the API alike.

Depths. ``served[k]`` is exactly what the pipeline's DocumentStore returned when
asked for ``k`` (a hybrid top-3 is not the prefix of a hybrid top-10). Every
``<family>@k`` metric is computed on ``served[k]``; ``r_precision``,
``first_relevant_rank`` and citations on ``served[top_k]``, the list the
configuration really returns; every ``<family>@<N>tok`` (a context-token budget) on the
deepest list served (``served[max(served)]``), whatever the top_k: the chunks that fit in N
tokens of it. A case whose deepest list ran out before N tokens while its store had more
chunks has no value there (a note says so): the depth asked was too shallow to tell. A sweep's ``<family>@k`` (at each configuration's own
top_k) is read with :meth:`CaseResult.metric`; a sweep reports a depth deeper than a
configuration's top_k as missing in its aggregate (:class:`ConfigResult`).

Chance and oracle. For every retrieval metric the record also holds, when the
case's candidate chunks are known (every chunk of its scoped documents, or of the
corpus), the metric's expected value under a uniformly random ordering of those
candidates (``chance``) and the best value any ordering reaches (``oracle``), so a
number is read against what it would be by luck and at best.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, Field, model_serializer

from ragsweep.answer.base import Answer
from ragsweep.core.hits import Hit, chunk_id, chunk_key
from ragsweep.datasets.schema import Case, RelevanceConfig
from ragsweep.evaluation.manifest import RunManifest, SweepManifest
from ragsweep.metrics.judge import JudgeVerdict
from ragsweep.metrics.registry import at_k_families, budget_names, leveled_names, ranking_metrics
from ragsweep.metrics.retrieval import UnlocatedSpan

RECORD_VERSION = 2


class JudgedHit(Hit):
    """A served chunk with the relevance verdict of the dataset's rule."""

    relevant: bool = False
    grade: int = 0


class CaseResult(BaseModel):
    """One case, scored: what goes in ``cases.jsonl`` and what every report reads."""

    id: str
    question: str
    type: str | None = None
    doc_scope: list[str] | None = None
    unanswerable: bool = False
    reference_answer: str | None = None
    split: str | None = None
    top_k: int  # the depth the configuration serves; ``hits`` holds that list
    hits: list[JudgedHit] = Field(default_factory=list)
    answer: Answer | None = None
    judge: JudgeVerdict | None = None
    metrics: dict[str, float | None] = Field(default_factory=dict)
    chance: dict[str, float | None] = Field(default_factory=dict)
    oracle: dict[str, float | None] = Field(default_factory=dict)
    relevance_rule: str | None = None
    # its evidence spans found in no parsed document they may come from
    unlocated: list[UnlocatedSpan] = Field(default_factory=list)
    # none of its evidence is found: its retrieval metrics are missing (--unlocated exclude) or 0 (zero)
    evidence_unlocated: bool = False
    notes: dict[str, str] = Field(default_factory=dict)  # metric or stage -> why it is missing / what happened
    llm_replicates: dict[str, list[float | None]] = Field(default_factory=dict)  # LLM metric -> each replicate
    version: int = RECORD_VERSION

    def line(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def metric(self, name: str) -> float | None:
        """A metric's value; ``<family>@k`` names the one at this case's own ``top_k``."""
        return self.metrics.get(own_k_name(name, self.top_k))


def own_k_name(name: str, top_k: int) -> str:
    """``recall@k`` -> ``recall@<top_k>`` (a sweep's objectives are at each configuration's own k)."""
    return f"{name[:-2]}@{top_k}" if name.endswith("@k") else name


# ------------------------------------------------------------------ aggregates


Interval = list[float | None]
Baseline = dict[str, float | int | None]  # pipeline, chance, oracle, lift (means over the same cases), n
GroupSummary = dict[str, dict[str, float | int]]  # metric -> mean, min, max, count (an int)


class Count(BaseModel):
    """How many cases a metric has a value for (``n``) and not (``missing``); of those, the cases
    whose evidence is in no parsed document: left out (``unlocated``) or scored 0 in n
    (``unlocated_in_n``). Written without the parts that do not apply, as report.json always had it."""

    n: int = 0
    missing: int = 0
    unlocated: int | None = None
    unlocated_in_n: int | None = None

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class Aggregate(BaseModel):
    """The cases' means (over the cases where a metric exists), counts, bootstrap intervals,
    chance/oracle levels and per-type / per-document groups (:func:`ragsweep.evaluation.scoring.aggregate`)."""

    metrics: dict[str, float | None] = Field(default_factory=dict)
    counts: dict[str, Count] = Field(default_factory=dict)
    intervals: dict[str, Interval] = Field(default_factory=dict)
    baselines: dict[str, Baseline] = Field(default_factory=dict)
    groups: dict[str, dict[str, GroupSummary]] = Field(default_factory=dict)

    def interval(self, metric: str) -> tuple[float | None, float | None]:
        pair = self.intervals.get(metric) or [None, None]
        return pair[0], pair[1]

    def chance(self, metric: str) -> float | None:
        return self.level(metric, "chance")

    def level(self, metric: str, which: Literal["chance", "oracle"]) -> float | None:
        """``metric``'s chance level (a random order of each case's candidates) or oracle (the best order)."""
        level = (self.baselines.get(metric) or {}).get(which)
        return None if level is None else float(level)


class UnlocatedCase(BaseModel):
    id: str
    none_located: bool  # no span found: left out of the retrieval metrics (or scored 0)
    spans: list[UnlocatedSpan]


class UnlocatedReport(BaseModel):
    """The cases whose evidence (all of it, or some spans) occurs in no parsed document."""

    mode: str = "exclude"  # --unlocated: exclude | zero
    cases: list[UnlocatedCase] = Field(default_factory=list)

    @property
    def none_located(self) -> list[UnlocatedCase]:
        return [c for c in self.cases if c.none_located]

    @property
    def partly(self) -> list[UnlocatedCase]:
        return [c for c in self.cases if not c.none_located]


class AnswerErrors(BaseModel):
    n: int = 0
    first: list[dict[str, str]] = Field(default_factory=list)  # id, error of the first few
    by_message: dict[str, int] = Field(default_factory=dict)


class AnswerCounts(BaseModel):
    ok: int = 0
    failed: int = 0
    refused: int = 0


class RunResult(Aggregate):
    """One evaluation of one configuration: ``report.json`` (without ``cases``), what
    ``ragsweep.evaluate()`` returns, and what report.html, compare and MLflow read."""

    case_metrics: list[str] = Field(default_factory=list)
    ks: list[int] = Field(default_factory=list)
    budgets: list[int] = Field(default_factory=list)  # the context-token budgets of ``<family>@<N>tok``
    top_k: int = 5  # the depth the pipeline serves: every report's headline k
    relevance_rule: str | None = None
    relevance_rules_applied: list[str] = Field(default_factory=list)
    no_llm: bool = True
    answerer: str | None = None
    n_cases: int = 0
    answer_errors: AnswerErrors = Field(default_factory=AnswerErrors)
    answers: AnswerCounts = Field(default_factory=AnswerCounts)
    unlocated: UnlocatedReport = Field(default_factory=UnlocatedReport)
    # how far the LLM metrics can be trusted (ragsweep.evaluation.judge_report.judge_section); None without them
    judge: dict[str, Any] | None = None
    manifest: RunManifest = Field(default_factory=RunManifest)
    cases: list[CaseResult] = Field(default_factory=list, exclude=True)
    run_dir: str | None = Field(default=None, exclude=True)
    seconds: float = Field(default=0.0, exclude=True)

    def self_agreement(self, metric: str = "judge_correct") -> dict[str, Any] | None:
        """The replicates' self-agreement of an LLM metric (``judge_correct``, ``ragas_llm_*``);
        None without replicates or without that metric."""
        block = ((self.judge or {}).get("metrics") or {}).get(metric) or {}
        return block.get("self_agreement")

    def first_relevant_rank(self, case: CaseResult) -> int | None:
        value = case.metrics.get("first_relevant_rank")
        return None if value is None else int(value)

    def report_json(self) -> dict[str, Any]:
        """report.json's content."""
        return self.model_dump(mode="python")


class ConfigResult(Aggregate):
    """One configuration of a sweep (``configs/<id>/result.json``, then a row of sweep.json)."""

    id: str
    params: dict[str, Any] = Field(default_factory=dict)
    config_hash: str = ""
    index_key: str = ""
    top_k: int
    served_ks: list[int] = Field(default_factory=list)
    unserved_ks: list[int] = Field(default_factory=list)  # reported depths deeper than its top_k: missing
    seconds: float = 0.0
    index_run_seconds: float = 0.0
    latency_ms_per_query: float = 0.0
    chunks: int = 0
    embedded_texts: int = 0
    rss_mb: float = 0.0
    rss_mb_before: float = 0.0
    peak_rss_mb: float = 0.0
    # against the sweep's baseline, set when the sweep is finished
    p_values: dict[str, float | None] = Field(default_factory=dict)
    p_adjusted: dict[str, float | None] = Field(default_factory=dict)
    significant: dict[str, bool] = Field(default_factory=dict)
    delta_vs_baseline: dict[str, float | None] = Field(default_factory=dict)
    # per objective: its chance level and the lift over it (value - chance), over the same cases
    chance_level: dict[str, float | None] = Field(default_factory=dict)
    lift_over_chance: dict[str, float | None] = Field(default_factory=dict)
    # with --answers: each LLM part's calls and failure rate (ragsweep.evaluation.answering.llm_calls)
    llm_calls: dict[str, dict[str, Any]] = Field(default_factory=dict)


class HoldoutConfig(Aggregate):
    params: dict[str, Any] = Field(default_factory=dict)


class HoldoutVerdict(BaseModel):
    """The configuration chosen on dev and the baseline, scored on the test split."""

    split: str = "test"
    cases: int
    objective: str
    chosen: str
    baseline: str
    configs: dict[str, HoldoutConfig] = Field(default_factory=dict)
    p_value: float | None = None
    significant: bool | None = None


class SweepResult(BaseModel):
    """sweep.json: every configuration with its paired test against the baseline, the best
    per objective, the Pareto set, and the held-out verdict when the dataset has a test split."""

    baseline: str
    grid: dict[str, list[Any]]
    objectives: list[str]
    configs: list[ConfigResult]
    directions: dict[str, str] = Field(default_factory=dict)
    alpha: float = 0.05
    best: dict[str, str] = Field(default_factory=dict)
    pareto: list[str] = Field(default_factory=list)
    pareto_axes: list[str] = Field(default_factory=list)
    ks: list[int] = Field(default_factory=list)
    budgets: list[int] = Field(default_factory=list)  # the context-token budgets of ``<family>@<N>tok``
    choice_split: str | None = None
    same_cases_for_choice_and_report: bool = True
    verdict: HoldoutVerdict | None = None
    # the cases whose evidence is found in no parsed document (the same in every configuration: one parse)
    unlocated: UnlocatedReport = Field(default_factory=UnlocatedReport)
    manifest: SweepManifest = Field(default_factory=SweepManifest)
    sweep_dir: str | None = Field(default=None, exclude=True)

    def config(self, config_id: str) -> ConfigResult:
        return next(c for c in self.configs if c.id == config_id)


# ------------------------------------------------------------------ the stored line


def compact(line: dict[str, Any], *, settled: bool = False) -> dict[str, Any]:
    """The line a run folder stores for a :meth:`CaseResult.line` (read back by :func:`expand_lines`).

    Left out: each hit's text (the run's ``chunks.jsonl`` holds it once, keyed by the
    :func:`chunk_id` of the hit's ``doc_id``, ``start`` and ``end``, or by its ``chunk`` id where the
    line has one) and every field at its
    default (None, false, 0, empty) in the case, its hits and its answer; ``version`` is
    always kept. ``settled``: ``report.json`` holds the run's aggregate, so the case's chance
    and oracle values (their means are there) and its metrics without a value (the list of
    metrics is there, ``case_metrics``) are left out too.
    """
    out = _without_defaults(line, CaseResult)
    if out.get("hits"):
        out["hits"] = [
            _without_defaults({k: v for k, v in hit.items() if k != "text"}, JudgedHit) for hit in out["hits"]
        ]
    if out.get("answer"):
        out["answer"] = _without_defaults(out["answer"], Answer)
    if settled:
        out.pop("chance", None)
        out.pop("oracle", None)
        out["metrics"] = {name: value for name, value in out.get("metrics", {}).items() if value is not None}
        if not out["metrics"]:
            del out["metrics"]
    out["version"] = line.get("version", RECORD_VERSION)
    return out


def expand_lines(
    lines: Sequence[dict[str, Any]], chunk_texts: Mapping[str, str], names: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Stored lines of one run back in the shape of :meth:`CaseResult.line`: defaults filled
    in, each hit's text put back from the chunk table, and in each line every metric of
    ``names`` (report.json's ``case_metrics``) or of any line, None where the case
    has no value. Lines of older layouts (hit texts inline, or a ``chunk`` id per hit; every
    field written) come back the same way."""
    every = _merged_order([names, *(line.get("metrics") or {} for line in lines)])
    return [_expand(line, chunk_texts, every) for line in lines]


def metric_names(cases: Sequence[CaseResult]) -> list[str]:
    """Every metric of the cases, in the order the cases give them."""
    return _merged_order(case.metrics for case in cases)


@cache
def _fields(model: type[BaseModel]) -> tuple[tuple[str, bool, Any, Callable[..., Any] | None], ...]:
    """(name, has a default, default, default factory) of each field but ``version``, in order."""
    return tuple(
        (name, not field.is_required() and name != "version", field.default, field.default_factory)
        for name, field in model.model_fields.items()
    )


def _defaults(model: type[BaseModel]) -> dict[str, Any]:
    """Fresh default values (a new list or dict each call)."""
    return {name: factory() if factory else default for name, has, default, factory in _fields(model) if has}


def _same(value: Any, default: Any) -> bool:
    return value is None if default is None else type(value) is type(default) and value == default


def _without_defaults(record: Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    defaults = _defaults(model)
    return {k: v for k, v in record.items() if not (k in defaults and _same(v, defaults[k]))}


def _with_defaults(record: Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """The record with the model's defaults filled in, in the model's field order (other keys after)."""
    out = {}
    for name, has, default, factory in _fields(model):
        if name in record:
            out[name] = record[name]
        elif has:
            out[name] = factory() if factory else default
    out.update((k, v) for k, v in record.items() if k not in out)
    return out


def _expand(line: dict[str, Any], chunk_texts: Mapping[str, str], names: Sequence[str]) -> dict[str, Any]:
    out = _with_defaults(line, CaseResult)
    out["hits"] = [_expand_hit(hit, chunk_texts) for hit in out["hits"]]
    if out["answer"] is not None:
        out["answer"] = _with_defaults(out["answer"], Answer)
    metrics = out["metrics"]
    out["metrics"] = {name: metrics.get(name) for name in names}
    return out


def _expand_hit(hit: dict[str, Any], chunk_texts: Mapping[str, str]) -> dict[str, Any]:
    out = _with_defaults({k: v for k, v in hit.items() if k != "chunk"}, JudgedHit)
    if "text" not in out:
        out["text"] = chunk_texts.get(hit.get("chunk") or chunk_id(hit["doc_id"], hit["start"], hit["end"]), "")
    return out


def _merged_order(sequences: Iterable[Iterable[str]]) -> list[str]:
    """Every name of the sequences once; a name first seen in a later sequence goes right
    after the name it follows there (so sequences missing some names keep the full order)."""
    merged: list[str] = []
    seen: set[str] = set()
    for sequence in sequences:
        sequence = list(sequence)
        if seen.issuperset(sequence):
            continue
        previous = None
        for name in sequence:
            if name not in seen:
                merged.insert(merged.index(previous) + 1 if previous is not None else 0, name)
                seen.add(name)
            previous = name
    return merged


def _judged(hits: Sequence[Hit], judgement) -> list[JudgedHit]:
    by_rank = {jh.rank: jh for jh in judgement.hits}
    out = []
    for pos, hit in enumerate(sorted(hits, key=lambda h: h.rank), start=1):
        jh = by_rank.get(pos)
        out.append(JudgedHit(**hit.model_dump(), relevant=bool(jh and jh.relevant), grade=int(jh.grade) if jh else 0))
    return out


def _num(value: Any) -> float | None:
    return None if value is None else float(value)


def build_case_result(
    case: Case,
    served: Mapping[int, Sequence[Hit]],
    *,
    top_k: int,
    relevance: RelevanceConfig,
    texts: Mapping[str, str],
    answer: Answer | None = None,
    verdict: JudgeVerdict | None = None,
    candidates: Sequence[Hit] | None = None,
    notes: Mapping[str, str] | None = None,
    language: str = "en",
    budgets: Sequence[int] = (),
) -> CaseResult:
    """Judge the served lists, score them, and carry the answer and verdict.

    ``served``: ``{k: hits the store returned for k}``; must hold ``top_k``.
    ``candidates``: every chunk the case could have been served (for chance/oracle
    and the chunk-id context metrics); None skips those. ``budgets``: the context-token
    budgets of the ``<family>@<N>tok`` metrics.
    """
    if top_k not in served:
        raise ValueError(f"case {case.id}: no list served at its top_k={top_k}")
    cited = (answer.cited or None) if answer is not None else None
    pool = _candidate_pool(case, candidates, relevance, texts, budgets) if candidates is not None else None
    metrics, own = _retrieval_metrics(case, served, top_k, relevance, texts, pool, candidates, cited)
    budget_notes = _budget_metrics(metrics, case, served, relevance, texts, budgets, pool, candidates)
    chance: dict[str, float | None] = {}
    oracle: dict[str, float | None] = {}
    if pool is not None and candidates is not None and own.scored:
        chance, oracle = _levels(case.id, pool, sorted(served), budgets)
        relevant_ids = {chunk_key(h) for h, jh in zip(candidates, pool.hits, strict=True) if jh.relevant}
        metrics.update(chunk_id_context_scores([chunk_key(h) for h in served[top_k]], relevant_ids))
    if answer is not None:
        metrics.update(_answer_metrics(case, answer, language))
    if verdict is not None:  # the mean of the case's replicate verdicts (the verdict itself with one)
        metrics["judge_correct"] = _num(verdict.score)
    return CaseResult(
        id=case.id,
        question=case.question,
        type=case.type,
        doc_scope=case.doc_scope,
        unanswerable=case.unanswerable,
        reference_answer=case.reference_answer,
        split=case.split,
        top_k=top_k,
        hits=_judged(served[top_k], own),
        answer=answer,
        judge=verdict,
        metrics=metrics,
        chance=chance,
        oracle=oracle,
        relevance_rule=own.rule,
        **_unlocated_fields(own, relevance, {**budget_notes, **(notes or {})}),
    )


def _candidate_pool(
    case: Case, candidates: Sequence[Hit], relevance: RelevanceConfig, texts: Mapping[str, str], budgets: Sequence[int]
) -> Any:
    """Every candidate judged once (a chunk's verdict does not depend on the list it stands in),
    with its length in tokens when budgets are scored."""
    from ragsweep.metrics.relevance import mark_hits

    ranked = [h.model_copy(update={"rank": i}) for i, h in enumerate(candidates, start=1)]
    pool = mark_hits(case, ranked, relevance, texts)
    return with_tokens(pool, candidates) if budgets else pool


def _unlocated_fields(judgement: Any, relevance: RelevanceConfig, notes: Mapping[str, str]) -> dict[str, Any]:
    """The record's unlocated spans, and the note of a case none of whose evidence is found:
    what its retrieval numbers are."""
    spans = list(judgement.detail.get("unlocated") or [])
    none_located = bool(judgement.detail.get("none_located"))
    fields = {"unlocated": spans, "evidence_unlocated": none_located, "notes": dict(notes)}
    if none_located:
        what = (
            "left out of the retrieval metrics" if relevance.unlocated == "exclude" else "scored 0 (--unlocated zero)"
        )
        named = "; ".join(f"{s.shown()} in {s.doc_id or 'its scope'} ({s.reason})" for s in spans[:3])
        nothing = (
            "no relevant document has parsed text"
            if judgement.rule == "doc_id"
            else "no evidence span is found in the parsed documents"
        )
        note = f"unlocated evidence: {nothing} ({named}): {what}"
        fields["notes"] = {"retrieval": note, **notes}
    return fields


def _answer_metrics(case: Case, answer: Answer, language: str) -> dict[str, float | None]:
    from ragsweep.metrics.answer import answer_metrics_for_case

    scores = answer_metrics_for_case(
        answer, case.reference_answer, case.expected_facts, case.unanswerable, language=language
    )
    return {k: _num(v) for k, v in scores.items()}


def _retrieval_metrics(
    case: Case,
    served: Mapping[int, Sequence[Hit]],
    top_k: int,
    relevance: RelevanceConfig,
    texts: Mapping[str, str],
    pool: Any,
    candidates: Sequence[Hit] | None,
    cited: Any,
) -> tuple[dict[str, float | None], Any]:
    """Every ``<family>@k`` on the list served at k; the ranking metrics and citations on the one
    served at ``top_k``, whose judgement comes back too."""
    from ragsweep.metrics.relevance import mark_hits
    from ragsweep.metrics.retrieval import per_case_value

    metrics: dict[str, float | None] = {}
    judgements = {}
    for k in sorted(served):
        judgement = _judge_from_pool(pool, candidates, served[k], cited if k == top_k else None)
        if judgement is None:
            judgement = mark_hits(case, served[k], relevance, texts, cited if k == top_k else None)
        judgements[k] = judgement
        for family in at_k_families():
            metrics[f"{family}@{k}"] = _num(per_case_value(judgement, f"{family}@{k}"))
    own = judgements[top_k]
    for name in ranking_metrics():
        metrics[name] = _num(per_case_value(own, name))
    metrics["citation_precision"] = _num(per_case_value(own, "citation_precision")) if cited and own.scored else None
    return metrics, own


def _budget_metrics(
    metrics: dict[str, float | None],
    case: Case,
    served: Mapping[int, Sequence[Hit]],
    relevance: RelevanceConfig,
    texts: Mapping[str, str],
    budgets: Sequence[int],
    pool: Any,
    candidates: Sequence[Hit] | None,
) -> dict[str, str]:
    """Every ``<family>@<N>tok`` on the deepest list served, into ``metrics``; the notes of the
    budgets that list could not fill (missing, not under-counted)."""
    from ragsweep.metrics.relevance import mark_hits
    from ragsweep.metrics.retrieval import per_case_value

    if not budgets:
        return {}
    deepest = max(served)
    hits = sorted(served[deepest], key=lambda h: h.rank)
    judgement = with_tokens(
        _judge_from_pool(pool, candidates, hits, None) or mark_hits(case, hits, relevance, texts), hits
    )
    held = sum(h.tokens or 0 for h in judgement.hits)
    # fewer chunks than asked: the store had no more to serve, the list is all there is
    more = len(hits) >= deepest and (candidates is None or len(candidates) > len(hits))
    notes = {}
    for budget in sorted(set(budgets)):
        short = more and held < budget
        for name in budget_names([budget]):
            metrics[name] = None if short or not judgement.scored else _num(per_case_value(judgement, name))
        if short:
            notes[f"@{budget}tok"] = (
                f"the list served at depth {deepest} holds {held} tokens, fewer than the {budget}-token budget, "
                "and the store has more chunks: no value (ask deeper, e.g. a larger k in --ks)"
            )
    return notes


def with_tokens(judgement: Any, hits: Sequence[Hit]) -> Any:
    """The judgement with each rank's chunk length in tokens as served (its header included: the
    context a model reads), ``hits`` in the judgement's order."""
    from dataclasses import replace

    from ragsweep.pipeline.chunking import chunk_tokens

    judged = [replace(jh, tokens=chunk_tokens(h.served_text)) for jh, h in zip(judgement.hits, hits, strict=True)]
    return replace(judgement, hits=judged)


def _levels(
    case_id: str, pool: Any, ks: Sequence[int], budgets: Sequence[int] = ()
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """The case's chance and oracle level of every ``<family>@k`` and ``<family>@<N>tok`` over its
    candidate pool."""
    from ragsweep.metrics.baselines import case_baselines

    names = leveled_names(ks, budgets)
    levels = case_baselines([pool], names)
    chance = {n: _num(v) for n, v in levels.chance.get(case_id, {}).items()}
    oracle = {n: _num(v) for n, v in levels.oracle.get(case_id, {}).items()}
    return chance, oracle


def _judge_from_pool(pool, candidates: Sequence[Hit] | None, hits: Sequence[Hit], cited):
    """A served list's judgement from the candidates' verdicts (None if a hit is not a candidate)."""
    if pool is None or candidates is None:
        return None
    from dataclasses import replace

    verdict = {chunk_key(h): jh for h, jh in zip(candidates, pool.hits)}
    judged = []
    for pos, hit in enumerate(sorted(hits, key=lambda h: h.rank), start=1):
        jh = verdict.get(chunk_key(hit))
        if jh is None:
            return None
        judged.append(replace(jh, rank=pos))
    return replace(pool, hits=judged, cited=list(cited) if cited is not None else None)


def chunk_id_context_scores(served_ids: Sequence[str], relevant_ids: set[str]) -> dict[str, float | None]:
    """ragas' ID-based context precision and recall over chunk ids.

    ``IDBasedContextPrecision`` = |served ∩ relevant| / |served|;
    ``IDBasedContextRecall`` = |served ∩ relevant| / |relevant|, where "relevant" is
    every candidate chunk the dataset's rule judges relevant. Computed by ragas
    itself (:mod:`ragsweep.metrics.ragas_bridge`).
    """
    from ragsweep.metrics.ragas_bridge import id_based_context_scores

    return id_based_context_scores(list(served_ids), sorted(relevant_ids))
