"""The typed records that flow from retrieval to report.

:class:`CaseResult` is one case after retrieval, answering and scoring: one line of
``cases.jsonl``, the element of a Python API report, and what report.html, compare
and MLflow read (built by :func:`ragsweep.evaluation.case_scoring.build_case_result`,
stored by :mod:`ragsweep.evaluation.storage`). :class:`RunResult` is report.json,
:class:`ConfigResult` one configuration of a sweep, :class:`SweepResult` sweep.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, JsonValue, SerializerFunctionWrapHandler, model_serializer

from ragsweep.answer.base import Answer
from ragsweep.core.hits import Hit
from ragsweep.cost.records import ConfigCost, CostPareto
from ragsweep.evaluation.manifest import RunManifest, SweepManifest
from ragsweep.funnel.records import Diagnosis, SpanLoss
from ragsweep.judge.metric import JudgeVerdict
from ragsweep.judge.trust import JudgeSection, ScoreAgreement, VerdictAgreement
from ragsweep.metrics.registry import FIRST_RELEVANT_RANK, JUDGE_CORRECT, lower_is_better
from ragsweep.metrics.retrieval import UnlocatedSpan

RECORD_VERSION = 2

JsonObject = dict[str, JsonValue]  # a record as JSON: a stored line, a row of a file a run wrote


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
    # the funnel (ragsweep.funnel): the first stage that lost its evidence at top_k (None: found, or
    # outside the funnel), the stage or "found" at every reported depth ({}: outside the funnel),
    # each evidence item's stage at top_k, and an answer judged correct without relevant context
    lost_at: str | None = None
    lost_at_k: dict[int, str] = Field(default_factory=dict)
    loss: list[SpanLoss] = Field(default_factory=list)
    correct_without_context: bool = False
    llm_replicates: dict[str, list[float | None]] = Field(default_factory=dict)  # LLM metric -> each replicate
    version: int = RECORD_VERSION

    def line(self) -> JsonObject:
        return self.model_dump(mode="json")

    def metric(self, name: str) -> float | None:
        """A metric's value; ``<family>@k`` names the one at this case's own ``top_k``."""
        return case_metric(self.metrics, name, self.top_k)


def own_k_name(name: str, top_k: int) -> str:
    """``recall@k`` -> ``recall@<top_k>`` (a sweep's objectives are at each configuration's own k)."""
    return f"{name[:-2]}@{top_k}" if name.endswith("@k") else name


def case_metric(metrics: Mapping[str, float | None], name: str, top_k: int) -> float | None:
    """A case's value of ``name`` (``<family>@k``: at the case's own ``top_k``); None where the case
    has none: a CaseResult's, or a stored line's as a paired test reads it."""
    return metrics.get(own_k_name(name, top_k))


# ------------------------------------------------------------------ aggregates


Interval = list[float | None]
ChoiceMeasure = Literal["lift", "value"]  # what a sweep's best is chosen on: lift over chance, or the value
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
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class Aggregate(BaseModel):
    """The cases' means (over the cases where a metric exists), counts, bootstrap intervals,
    chance/oracle levels and per-type / per-document groups (:func:`ragsweep.evaluation.scoring.aggregate`)."""

    metrics: dict[str, float | None] = Field(default_factory=dict)
    counts: dict[str, Count] = Field(default_factory=dict)
    intervals: dict[str, Interval] = Field(default_factory=dict)
    baselines: dict[str, Baseline] = Field(default_factory=dict)
    groups: dict[str, dict[str, GroupSummary]] = Field(default_factory=dict)
    diagnosis: Diagnosis | None = None  # where the cases were lost (ragsweep.funnel); None: no case in the funnel

    def metric(self, name: str) -> float | None:
        """``name``'s mean; None where no case has a value, or where ``name`` is not computed at all."""
        return self.metrics.get(name)

    def count(self, name: str) -> Count | None:
        """How many cases ``name`` has a value for and not; None: ``name`` is not counted."""
        return self.counts.get(name)

    def interval(self, metric: str) -> tuple[float | None, float | None]:
        pair = self.intervals.get(metric) or [None, None]
        return pair[0], pair[1]

    def chance(self, metric: str) -> float | None:
        return self.level(metric, "chance")

    def level(self, metric: str, which: Literal["chance", "oracle"]) -> float | None:
        """``metric``'s chance level (a random order of each case's candidates) or oracle (the best order)."""
        baseline = self.baselines.get(metric)  # absent: no case has the pipeline's, chance and oracle values
        level = None if baseline is None else baseline[which]
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
    # how far the LLM metrics can be trusted (ragsweep.judge.trust.JudgeSection); None without them
    judge: JudgeSection | None = None
    manifest: RunManifest = Field(default_factory=RunManifest)
    cases: list[CaseResult] = Field(default_factory=list, exclude=True)
    run_dir: str | None = Field(default=None, exclude=True)
    seconds: float = Field(default=0.0, exclude=True)

    def self_agreement(self, metric: str = JUDGE_CORRECT) -> VerdictAgreement | ScoreAgreement | None:
        """The replicates' self-agreement of an LLM metric (``judge_correct``, ``ragas_llm_*``);
        None without replicates or without that metric."""
        return self.judge.self_agreement(metric) if self.judge is not None else None

    def first_relevant_rank(self, case: CaseResult) -> int | None:
        value = case.metric(FIRST_RELEVANT_RANK)
        return None if value is None else int(value)

    def report_json(self) -> dict[str, Any]:
        """report.json's content."""
        return self.model_dump(mode="python")


class ConfigResult(Aggregate):
    """One configuration of a sweep (``configs/<id>/result.json``, then a row of sweep.json)."""

    id: str
    params: JsonObject = Field(default_factory=dict)
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
    # per objective: the configuration its paired test is against (the baseline's pipeline at this one's
    # depth for an ``@k`` objective; None: not tested) and on what ("value" or "lift": value - chance)
    compared_with: dict[str, str | None] = Field(default_factory=dict)
    compared_on: dict[str, str] = Field(default_factory=dict)
    # with --answers: each LLM part's calls and failure rate (ragsweep.answer.run_setup.llm_calls)
    llm_calls: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # with --answers: what its answers cost (tokens, price, per 1,000 questions)
    cost: ConfigCost | None = None

    def param(self, name: str) -> JsonValue:
        """The grid's value of knob ``name`` here; None where the grid does not vary it."""
        return self.params.get(name)

    def chance_on(self, objective: str) -> float | None:
        """``objective``'s chance level over the same cases as its value; None where it has none."""
        return self.chance_level.get(objective)

    def is_significant(self, metric: str) -> bool:
        """Significantly different from the baseline on ``metric`` (Holm-adjusted); False where not tested."""
        return self.significant.get(metric, False)

    def lift(self, objective: str) -> float | None:
        """``objective``'s value less its chance level; None where it has no chance level."""
        return self.lift_over_chance.get(objective)


class HoldoutConfig(Aggregate):
    params: JsonObject = Field(default_factory=dict)


class HoldoutVerdict(BaseModel):
    """The configuration chosen on dev and the baseline, scored on the test split."""

    split: str = "test"
    cases: int
    objective: str
    chosen: str
    baseline: str
    baseline_failed: bool = False  # its run failed: it has no numbers here, and nothing is tested against it
    configs: dict[str, HoldoutConfig] = Field(default_factory=dict)
    # what the chosen one is tested against: the baseline's pipeline at the chosen depth for an ``@k``
    # objective (None: not tested, it is the baseline's pipeline at another depth), on "value" or "lift"
    compared_with: str | None = None
    compared_on: str = "value"
    p_value: float | None = None
    significant: bool | None = None
    # chosen - compared_with on ``compared_on``, the mean over the cases both have a value of
    difference: float | None = None

    def direction(self) -> str:
        """ "better", "worse" or "equal": the chosen configuration against what it is compared with."""
        if not self.difference:
            return "equal"
        return "better" if (self.difference > 0) != lower_is_better(self.objective) else "worse"


class FailedConfig(BaseModel):
    """A configuration of a sweep that has no numbers: its run failed (or the sweep stopped before it)."""

    id: str
    params: JsonObject = Field(default_factory=dict)
    reason: str  # one line: the component and the error, or why it was not run


class SweepResult(BaseModel):
    """sweep.json: every configuration with its paired test against the baseline, the best
    per objective, the Pareto set, and the held-out verdict when the dataset has a test split."""

    baseline: str
    grid: dict[str, list[JsonValue]]
    objectives: list[str]
    configs: list[ConfigResult]
    directions: dict[str, str] = Field(default_factory=dict)
    alpha: float = 0.05
    best: dict[str, str] = Field(default_factory=dict)
    # per objective: what "best" is chosen on ("lift" over chance for an ``@k`` objective, else "value"),
    # and the configurations that tie with the best on it (the best first: the cheapest of them)
    chosen_by: dict[str, ChoiceMeasure] = Field(default_factory=dict)
    ties: dict[str, list[str]] = Field(default_factory=dict)
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
    # with --answers: per answer-quality measure, the configurations no other beats on quality and cost
    cost_pareto: CostPareto | None = None
    # configurations without numbers: never ranked, never best, never what another is compared with
    failed: list[FailedConfig] = Field(default_factory=list)
    sweep_dir: str | None = Field(default=None, exclude=True)

    def config(self, config_id: str) -> ConfigResult:
        return next(c for c in self.configs if c.id == config_id)

    def best_on(self, objective: str) -> str | None:
        """The best configuration on ``objective``; None where no configuration has a value of it."""
        return self.best.get(objective)

    def chosen_on(self, objective: str) -> ChoiceMeasure:
        """What the best on ``objective`` was chosen on: "lift" over chance or its "value"."""
        return self.chosen_by.get(objective, "value")

    def tied(self, objective: str) -> list[str]:
        """The configurations that tie with the best on ``objective``, the best first (empty: no best)."""
        return self.ties.get(objective, [])
