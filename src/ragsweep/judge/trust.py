"""How far a run's LLM metrics can be trusted: report.json's ``judge`` section, as models.

Built by :func:`ragsweep.judge.report.judge_section` from the cases; read by the
terminal, the gate, report.html and compare as :attr:`RunResult.judge <ragsweep.evaluation.records.RunResult>`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from ragsweep.evaluation.manifest import AsSet

DEFAULT_WARN_RATE = 0.05  # a metric failing on more than this share of its cases is flagged at the top


# ----------------------------------------------------------------- the section's parts
# Each part is written as it was set (a score metric's block has no ``llm_judged``, a run without
# probes has ``probes: null``), in declaration order: the keys and order report.json always had.


class Example(AsSet):
    id: str
    error: str = ""


class Failures(AsSet):
    attempted: int = 0
    failed: int = 0
    rate: float | None = None
    reasons: dict[str, int] = Field(default_factory=dict)
    examples: list[Example] = Field(default_factory=list)
    # the judge's (kind "verdict") only
    replicate_calls: int = 0
    replicate_calls_failed: int = 0
    replicate_reasons: dict[str, int] = Field(default_factory=dict)
    repaired: int = 0
    not_judged_answer_failed: int = 0


class VerdictAgreement(AsSet):
    """The judge's replicate verdicts agreeing with each other (LLM-judged cases only)."""

    cases: int = 0
    agreement_rate: float | None = None
    krippendorff_alpha: float | None = None  # nominal
    fleiss_kappa: float | None = None
    flip_share: float | None = None
    flipped: list[str] = Field(default_factory=list)
    mean_sd: float | None = None
    pooled_sd: float | None = None
    note: str = ""


class ScoreAgreement(AsSet):
    """A score metric's (``ragas_llm_*``) replicate values agreeing with each other."""

    cases: int = 0
    mean_sd: float | None = None
    pooled_sd: float | None = None
    max_sd: float | None = None
    krippendorff_alpha: float | None = None  # interval
    varying: list[str] = Field(default_factory=list)
    varying_share: float | None = None


class Noise(AsSet):
    """:func:`ragsweep.judge.stats.noise_share`'s result."""

    cases: int | None = None
    variance_share: float | None = None
    width_share: float | None = None
    single_replicate_variance_share: float | None = None
    ci_half_width: float | None = None
    ci_half_width_noise_free: float | None = None
    case_variance: float | None = None
    noise_variance: float | None = None


class Confusion(AsSet):
    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0


class Ppi(AsSet):
    """:func:`ragsweep.judge.stats.ppi_mean`'s result."""

    N: int | None = None
    n: int | None = None
    confidence: float | None = None
    judge_mean: float | None = None
    judge_ci: list[float] | None = None
    rectifier: float | None = None
    estimate: float | None = None
    ci: list[float] | None = None
    reference_mean: float | None = None
    reference_ci: list[float] | None = None


class Disagreement(AsSet):
    id: str
    reference: bool | None = None
    judge: bool | None = None
    source: Any = None  # the dataset's label source, as the case gave it


class ReferenceAgreement(AsSet):
    labelled: int = 0
    sources: dict[str, int] = Field(default_factory=dict)
    labelled_answer_is_run_answer: int = 0
    not_judged: int = 0
    n: int = 0
    agreement: float | None = None
    cohen_kappa: float | None = None
    confusion: Confusion = Field(default_factory=Confusion)
    disagreements: list[Disagreement] = Field(default_factory=list)
    ppi: Ppi = Field(default_factory=Ppi)
    note: str = ""


class MetricTrust(AsSet):
    """One LLM metric's block of the section."""

    kind: str = ""  # "verdict" (judge_correct) | "score" (ragas_llm_*)
    replicates: int = 1
    cases: int = 0
    llm_judged: int = 0
    rule_decided: int = 0
    failures: Failures = Field(default_factory=Failures)
    self_agreement: VerdictAgreement | ScoreAgreement | None = None
    noise: Noise | None = None
    reference: ReferenceAgreement | None = None

    @model_validator(mode="before")
    @classmethod
    def _agreement_of_its_kind(cls, data: object) -> object:
        """A stored block's ``self_agreement`` read as its kind's (the two share most keys)."""
        if not isinstance(data, dict):
            return data
        match data:
            case {"kind": "score", "self_agreement": dict() as given}:
                return {**data, "self_agreement": ScoreAgreement.model_validate(given)}
            case {"self_agreement": dict() as given}:
                return {**data, "self_agreement": VerdictAgreement.model_validate(given)}
        return data


class Probe(AsSet):
    case: str | None = None
    probe: str | None = None
    answer: str | None = None
    expected: bool | None = None
    got: bool | None = None
    method: str | None = None
    ok: bool = False
    reason: str | None = None
    error: str | None = None


class Probes(AsSet):
    """:func:`ragsweep.judge.probes.probe_judge`'s result."""

    total: int = 0
    passed: int = 0
    llm_total: int = 0
    llm_passed: int = 0
    failed: list[Probe] = Field(default_factory=list)
    probes: list[Probe] = Field(default_factory=list)


class JudgeSection(AsSet):
    """report.json's ``judge`` section (``RunResult.judge``)."""

    replicates: int = 1
    temperature: float | None = None
    failure_threshold: float = DEFAULT_WARN_RATE
    metrics: dict[str, MetricTrust] = Field(default_factory=dict)
    probes: Probes | None = None
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def self_agreement(self, metric: str) -> VerdictAgreement | ScoreAgreement | None:
        block = self.metrics.get(metric)
        return block.self_agreement if block is not None else None
