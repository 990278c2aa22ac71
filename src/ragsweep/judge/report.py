"""report.json's ``judge`` section: how far the LLM metrics of a run can be trusted.

Built from the cases alone (:class:`~ragsweep.evaluation.records.CaseResult`: each case's
``judge`` verdict, ``metrics``, ``notes`` and ``llm_replicates``), so a resumed run, the HTML
report and compare read the same thing. Per LLM metric (``judge_correct``, and each
``ragas_llm_*`` present):

- ``failures``        cases where the metric was attempted and no value came back, by named
                      reason; for the judge also replicate calls that failed and replies that
                      needed the one re-ask (``repaired``);
- ``self_agreement``  with replicates: agreement rate, Krippendorff's alpha (nominal), Fleiss'
                      kappa, share of cases whose verdict flips (and which), intra-case SD;
- ``noise``           the share of the CI of the metric's mean that is judge noise;
- ``reference``       with reference verdicts in the dataset: Cohen's kappa, confusion matrix,
                      and a prediction-powered estimate beside the raw judge mean.

:func:`judge_section` builds the section, a :class:`JudgeSection`: what report.json holds, and
what the terminal, the gate and report.html read.

Formulas: :mod:`ragsweep.judge.stats`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ragsweep.evaluation.records import CaseResult
from ragsweep.judge import stats as js
from ragsweep.judge.metric import JudgeVerdict, ReplicateVerdict, failure_kind
from ragsweep.judge.trust import (
    DEFAULT_WARN_RATE,
    Disagreement,
    Example,
    Failures,
    JudgeSection,
    MetricTrust,
    Noise,
    Ppi,
    Probes,
    ReferenceAgreement,
    ScoreAgreement,
    VerdictAgreement,
)
from ragsweep.metrics.registry import JUDGE_CORRECT

# ----------------------------------------------------------------- the section, built from the cases


def _replicate_verdicts(judge: JudgeVerdict) -> list[bool]:
    if judge.replicates:
        return [bool(r.is_correct) for r in judge.replicates if r.is_correct is not None]
    return [] if judge.is_correct is None else [bool(judge.is_correct)]


def _failure_block(attempted: int, failed_reasons: list[str], examples: list[Example]) -> Failures:
    return Failures(
        attempted=attempted,
        failed=len(failed_reasons),
        rate=(len(failed_reasons) / attempted) if attempted else None,
        reasons=dict(Counter(failed_reasons).most_common()),
        examples=examples[:5],
    )


def _judged(cases: Sequence[CaseResult]) -> list[tuple[CaseResult, JudgeVerdict]]:
    return [(c, c.judge) for c in cases if c.judge is not None]


_Judged = list[tuple[CaseResult, JudgeVerdict]]


def _verdict_failures(llm: _Judged, skipped: _Judged) -> Failures:
    """The judge's failures: LLM-judged cases without a verdict by reason, failed replicate
    calls, repaired replies, cases not judged because their answer failed."""
    failed = [(c, j) for c, j in llm if j.score is None and j.is_correct is None]
    reps: list[ReplicateVerdict | JudgeVerdict] = []
    for _, j in llm:
        reps += j.replicates or [j]
    failures = _failure_block(
        len(llm),
        [j.failure or failure_kind(j.error) or "other" for _, j in failed],
        [Example(id=c.id, error=str(j.error)[:300]) for c, j in failed],
    )
    failures.replicate_calls = len(reps)
    failures.replicate_calls_failed = sum(1 for rep in reps if rep.is_correct is None)
    failures.replicate_reasons = dict(
        Counter(rep.failure or failure_kind(rep.error) or "other" for rep in reps if rep.is_correct is None)
    )
    failures.repaired = sum(1 for rep in reps if rep.repaired)
    failures.not_judged_answer_failed = len(skipped)
    return failures


def _verdict_self_agreement(llm: _Judged) -> VerdictAgreement:
    """Agreement of the LLM-judged cases' replicate verdicts."""
    units = [_replicate_verdicts(j) for _, j in llm]
    share, flipped = js.flip_share(units)
    sd = js.intra_case_sd([[float(v) for v in u] for u in units])
    return VerdictAgreement(
        cases=sum(1 for u in units if len(u) >= 2),
        agreement_rate=js.pairwise_agreement(units),
        krippendorff_alpha=js.krippendorff_alpha(units, "nominal"),
        fleiss_kappa=js.fleiss_kappa(units),
        flip_share=share,
        flipped=[llm[i][0].id for i in flipped],
        mean_sd=sd["mean_sd"],
        pooled_sd=sd["pooled_sd"],
        note='over LLM-judged cases only (cases decided by the "I don\'t know" rule never vary)',
    )


def _verdict_noise(judged: _Judged, confidence: float) -> Noise:
    """The judge-noise share of ``judge_correct``'s CI: LLM-judged cases by their replicate
    verdicts, rule-decided ones as deterministic."""
    noise_units: list[list[float]] = []
    deterministic: list[bool] = []
    for _, j in judged:
        if j.method == "llm":
            u = [float(v) for v in _replicate_verdicts(j)]
            if u:
                noise_units.append(u)
                deterministic.append(False)
        elif j.score is not None or j.is_correct is not None:
            noise_units.append([float(j.score if j.score is not None else bool(j.is_correct))])
            deterministic.append(True)
    return Noise.model_validate(js.noise_share(noise_units, deterministic, confidence))


def judge_metric_section(cases: Sequence[CaseResult], confidence: float = 0.95) -> MetricTrust | None:
    """The ``judge_correct`` block; None when no case was judged."""
    judged = _judged(cases)
    if not judged:
        return None
    llm = [(c, j) for c, j in judged if j.method == "llm"]
    rule = [(c, j) for c, j in judged if j.method == "rule"]
    skipped = [(c, j) for c, j in judged if j.method == "skipped"]
    asked = max((int(j.n_replicates or 1) for _, j in llm), default=1)
    out = MetricTrust(
        kind="verdict",
        replicates=asked,
        cases=len(judged),
        llm_judged=len(llm),
        rule_decided=len(rule),
        failures=_verdict_failures(llm, skipped),
    )
    if asked > 1:
        out.self_agreement = _verdict_self_agreement(llm)
        out.noise = _verdict_noise(judged, confidence)
    ref = reference_section(cases, confidence)
    if ref is not None:
        out.reference = ref
    return out


class _ReferenceCheck(BaseModel):
    """A case's ``judge.reference_check`` (:mod:`ragsweep.judge.metric`), as read here."""

    source: Any = None
    reference: float | None = None
    reference_is_correct: bool | None = None
    judge: float | None = None
    judge_is_correct: bool | None = None
    answer_is_run_answer: bool = False


def _ppi_note(same: int, labelled: int) -> str:
    differ = labelled - same
    return (
        "PPI: judge mean over every judged case + mean(reference - judge) on the labelled answers; "
        "valid when the labelled answers are a random sample of the judged ones"
        + (
            ""
            if differ == 0
            else f"; {differ} labelled answer(s) differ from this run's answers and were judged separately"
        )
    )


def reference_section(cases: Sequence[CaseResult], confidence: float = 0.95) -> ReferenceAgreement | None:
    """The judge against the dataset's reference verdicts, and the PPI-corrected mean."""
    checks = [(c.id, _ReferenceCheck.model_validate(j.reference_check)) for c, j in _judged(cases) if j.reference_check]
    if not checks:
        return None
    binary = [
        (ch.reference_is_correct, ch.judge_is_correct)
        for _, ch in checks
        if ch.reference_is_correct is not None and ch.judge_is_correct is not None
    ]
    agreement = js.verdict_agreement([bool(r) for r, _ in binary], [bool(j) for _, j in binary])
    judge_all = [v for c in cases if (v := c.metric(JUDGE_CORRECT)) is not None]
    labelled = [(ch.judge, ch.reference) for _, ch in checks if ch.judge is not None and ch.reference is not None]
    ppi = js.ppi_mean(judge_all, [f for f, _ in labelled], [y for _, y in labelled], confidence, bounds=(0.0, 1.0))
    same = sum(1 for _, ch in checks if ch.answer_is_run_answer)
    disagreements = [
        Disagreement(id=i, reference=ch.reference_is_correct, judge=ch.judge_is_correct, source=ch.source)
        for i, ch in checks
        if ch.reference_is_correct is not None
        and ch.judge_is_correct is not None
        and ch.reference_is_correct != ch.judge_is_correct
    ]
    return ReferenceAgreement.model_validate(
        {
            "labelled": len(checks),
            "sources": dict(Counter(str(ch.source) for _, ch in checks)),
            "labelled_answer_is_run_answer": same,
            "not_judged": sum(1 for _, ch in checks if ch.judge is None),
            **agreement,
            "disagreements": disagreements[:20],
            "ppi": Ppi.model_validate(ppi),
            "note": _ppi_note(same, len(checks)),
        }
    )


def _ragas_kind(note: str) -> str:
    kind = failure_kind(note)
    if kind and kind != "other":
        return kind
    head = note.split(":", 1)[0].strip()
    return head if head and len(head) <= 40 and " " not in head else "other"


def _replicate_values(case: CaseResult, name: str) -> list[float | None]:
    return case.llm_replicates[name] if name in case.llm_replicates else []


def score_self_agreement(
    cases: Sequence[CaseResult], name: str, confidence: float = 0.95
) -> tuple[ScoreAgreement, Noise]:
    """Self-agreement of a score metric over its replicates (``case.llm_replicates[name]``), and
    the judge-noise share of its CI."""
    units, ids = [], []
    for c in cases:
        valid = [float(v) for v in _replicate_values(c, name) if v is not None]
        if valid:
            units.append(valid)
            ids.append(c.id)
    sd = js.intra_case_sd(units)
    spread = [(i, max(u) - min(u)) for i, u in zip(ids, units) if len(u) >= 2]
    agreement = ScoreAgreement(
        cases=sum(1 for u in units if len(u) >= 2),
        mean_sd=sd["mean_sd"],
        pooled_sd=sd["pooled_sd"],
        max_sd=sd["max_sd"],
        krippendorff_alpha=js.krippendorff_alpha(units, "interval"),
        varying=[i for i, d in spread if d > 1e-9],
        varying_share=(sum(1 for _, d in spread if d > 1e-9) / len(spread)) if spread else None,
    )
    return agreement, Noise.model_validate(js.noise_share(units, None, confidence))


def _ragas_failures(cases: Sequence[CaseResult], name: str) -> Failures:
    """A ``ragas_llm_*`` metric's failures: a value of None with a note that is not "not applicable"."""
    attempted, reasons, examples = 0, [], []
    for c in cases:
        if name not in c.metrics:
            continue
        note = c.notes[name] if name in c.notes else ""
        if c.metrics[name] is not None:
            attempted += 1
        elif note and not note.startswith("not applicable"):
            attempted += 1
            reasons.append(_ragas_kind(note))
            examples.append(Example(id=c.id, error=note[:300]))
    return _failure_block(attempted, reasons, examples)


def ragas_metric_sections(cases: Sequence[CaseResult]) -> dict[str, MetricTrust]:
    """Failures per ``ragas_llm_*`` metric; with replicates, the intra-case SD, Krippendorff's
    alpha (interval) and the noise share."""
    names = sorted({n for c in cases for n in c.metrics if n.startswith("ragas_llm_")})
    out = {}
    for name in names:
        asked = max((len(_replicate_values(c, name)) for c in cases), default=0)
        block = MetricTrust(kind="score", replicates=max(asked, 1), failures=_ragas_failures(cases, name))
        if asked > 1:
            block.self_agreement, block.noise = score_self_agreement(cases, name)
        out[name] = block
    return out


def _warnings(metrics: Mapping[str, MetricTrust], probes: Probes | None, threshold: float) -> list[str]:
    """A metric failing on more than ``threshold`` of its cases; probes the judge got wrong."""
    warnings = []
    for name, block in metrics.items():
        f = block.failures
        if f.rate is not None and f.rate > threshold:
            why = ", ".join(f"{n}x {k}" for k, n in f.reasons.items())
            warnings.append(
                f"{name} failed on {f.failed} of {f.attempted} cases ({f.rate:.1%} > {threshold:.1%}): {why}"
            )
    if probes is not None and probes.total and probes.passed < probes.total:
        wrong = "; ".join(
            f"{p.case} {p.probe}: expected {p.expected}, got {p.got}" + (f" ({p.error})" if p.error else "")
            for p in probes.failed[:4]
        )
        warnings.append(f"judge probes: {probes.total - probes.passed} of {probes.total} wrong ({wrong})")
    return warnings


def judge_section(
    cases: Sequence[CaseResult],
    *,
    replicates: int = 1,
    temperature: float | None = None,
    probes: Probes | None = None,
    max_failure_rate: float | None = None,
    confidence: float = 0.95,
) -> JudgeSection | None:
    """report.json's ``judge`` section (``RunResult.judge``); None when the run has no LLM metric
    and no probe. ``probes``: :func:`ragsweep.judge.probes.probe_judge`'s result."""
    metrics: dict[str, MetricTrust] = {}
    jm = judge_metric_section(cases, confidence)
    if jm is not None:
        metrics[JUDGE_CORRECT] = jm
    metrics.update(ragas_metric_sections(cases))
    if not metrics and not probes:
        return None
    threshold = DEFAULT_WARN_RATE if max_failure_rate is None else max_failure_rate
    notes = []
    if replicates > 1 and temperature == 0:
        notes.append(
            "judge replicates at temperature 0: they measure only the endpoint's own "
            "nondeterminism (--judge-temperature sets the judge's)"
        )
    return JudgeSection(
        replicates=replicates,
        temperature=temperature,
        failure_threshold=threshold,
        metrics=metrics,
        probes=probes,
        warnings=_warnings(metrics, probes, threshold),
        notes=notes,
    )


def failure_gate(section: JudgeSection | None, max_failure_rate: float | None) -> list[str]:
    """One line per LLM metric whose failure rate exceeds ``max_failure_rate``."""
    read = section
    if read is None or max_failure_rate is None:
        return []
    out = []
    for name, block in read.metrics.items():
        f = block.failures
        if f.rate is not None and f.rate > max_failure_rate:
            out.append(
                f"{name}: failed on {f.failed} of {f.attempted} cases ({f.rate:.1%}) "
                f"> --max-failure-rate {max_failure_rate:g}"
            )
    return out


# ----------------------------------------------------------------- terminal


_PAD = " " * 4  # a metric's lines below its first


def _f(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def _ci(ci: list[float] | None) -> str:
    return "" if not ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


def _metric_head(name: str, block: MetricTrust) -> str:
    """A metric's first line: its failures (by reason) and, for the judge, who decided the verdicts."""
    f = block.failures
    head = f"  {name}: failures {f.failed} of {f.attempted} ({_f(f.rate, '.1%')})"
    if f.reasons:
        head += " - " + ", ".join(f"{n}x {k}" for k, n in f.reasons.items())
    if block.kind == "verdict":
        head += f'; {block.llm_judged} judged by the LLM, {block.rule_decided} by the "I don\'t know" rule'
        if f.repaired or f.replicate_calls_failed:
            head += (
                f"; replies repaired {f.repaired}, replicate calls failed "
                f"{f.replicate_calls_failed} of {f.replicate_calls}"
            )
    return head


def _self_agreement_lines(block: MetricTrust) -> list[str]:
    sa = block.self_agreement
    if sa is None:
        return []
    if isinstance(sa, ScoreAgreement):
        return [
            f"{_PAD}self-agreement over {sa.cases} case(s) x {block.replicates} replicates: "
            f"intra-case SD {_f(sa.mean_sd)} (pooled {_f(sa.pooled_sd)}, max {_f(sa.max_sd)}), "
            f"Krippendorff alpha (interval) {_f(sa.krippendorff_alpha)}, values vary in "
            f"{_f(sa.varying_share, '.1%')} of cases"
        ]
    return [
        f"{_PAD}self-agreement over {sa.cases} case(s) x {block.replicates} replicates: "
        f"agreement {_f(sa.agreement_rate)}, Krippendorff alpha {_f(sa.krippendorff_alpha)}, "
        f"Fleiss kappa {_f(sa.fleiss_kappa)}, verdict flips {_f(sa.flip_share, '.1%')}"
        f"{' (' + ', '.join(sa.flipped[:5]) + ')' if sa.flipped else ''}, "
        f"intra-case SD {_f(sa.mean_sd)}"
    ]


def _noise_lines(block: MetricTrust) -> list[str]:
    nz = block.noise
    if not nz or nz.variance_share is None:
        return []
    return [
        f"{_PAD}judge noise: {nz.variance_share:.1%} of the CI's variance, "
        f"{_f(nz.width_share, '.1%')} of its width (CI half-width {_f(nz.ci_half_width)}, "
        f"{_f(nz.ci_half_width_noise_free)} without judge noise; one replicate: "
        f"{_f(nz.single_replicate_variance_share, '.1%')} of the variance)"
    ]


def _reference_lines(name: str, block: MetricTrust) -> list[str]:
    """Agreement with the reference verdicts, and the prediction-powered mean beside the judge's."""
    ref = block.reference
    if not ref:
        return []
    sources = ", ".join(sorted({str(k).split(" (")[0] for k in ref.sources}))
    c = ref.confusion
    p = ref.ppi
    return [
        f"{_PAD}vs reference verdicts ({sources}): n {ref.n}, agreement "
        f"{_f(ref.agreement)}, Cohen's kappa {_f(ref.cohen_kappa)}, confusion "
        f"(reference x judge) TT {c.tp} TF {c.fn} FT {c.fp} FF {c.tn}",
        f"{_PAD}{name}: judge mean {_f(p.judge_mean)}{_ci(p.judge_ci)}, "
        f"prediction-powered {_f(p.estimate)}{_ci(p.ci)} (n={p.n} labelled, "
        f"N={p.N}), references alone {_f(p.reference_mean)}{_ci(p.reference_ci)}",
    ]


def _probe_lines(probes: Probes | None) -> list[str]:
    """How many probes the judge got right, and up to six it got wrong."""
    if not probes or not probes.total:
        return []
    lines = [
        f"  probes: {probes.passed} of {probes.total} right (decided by the LLM: "
        f"{probes.llm_passed} of {probes.llm_total})"
    ]
    for probe in probes.failed[:6]:
        lines.append(
            f"    wrong: {probe.case} {probe.probe}: expected {probe.expected}, got {probe.got}"
            + (f" ({probe.error})" if probe.error else f" ({probe.reason})" if probe.reason else "")
        )
    return lines


def format_judge_section(read: JudgeSection | None) -> str:
    """The judge section as terminal lines ("" when there is none)."""
    if read is None:
        return ""
    lines = [
        f"judge: {read.replicates} replicate(s), temperature "
        f"{_f(read.temperature, 'g')}, failure threshold {read.failure_threshold:.1%}"
    ]
    lines += [f"  note: {n}" for n in read.notes]
    for name, block in read.metrics.items():
        lines.append(_metric_head(name, block))
        lines += _self_agreement_lines(block)
        lines += _noise_lines(block)
        lines += _reference_lines(name, block)
    lines += _probe_lines(read.probes)
    return "\n".join(lines)


def format_warnings(read: JudgeSection | None) -> str:
    """The lines printed above the summary table."""
    if read is None or not read.warnings:
        return ""
    return "\n".join("WARNING: " + w for w in read.warnings)
