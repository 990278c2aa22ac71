"""The "LLM judge" section of report.html: how far the run's LLM metrics can be trusted.

It shows report.json's ``judge`` block (:mod:`ragsweep.judge.report`, read back as a
:class:`~ragsweep.judge.trust.JudgeSection`) as tables, each with a line on how to read
it: failures, self-agreement of replicates, the judge-noise share of the CI, agreement with
reference verdicts (with the prediction-powered estimate) and the probes. A run without an LLM
metric or probe has no such block, and the page no such section.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ragsweep.judge.trust import JudgeSection, MetricTrust, Probes, ReferenceAgreement, ScoreAgreement
from ragsweep.report.svg import esc, fmt

MAX_IDS = 12  # case ids listed in a cell (flips, varying cases) before "… n more"


def judge_warnings_html(read: JudgeSection | None, link: bool = True) -> str:
    """The warnings (a metric failing too often, wrong probes), also at the top of the page."""
    warnings = read.warnings if read is not None else []
    more = ' (<a href="#judge">LLM judge</a>)' if link else ""
    return "".join(f'<p class="warning"><span class="badge warn">warning</span> {esc(w)}{more}</p>' for w in warnings)


def judge_html(read: JudgeSection | None) -> str:
    if read is None:
        return ""
    metrics = read.metrics
    parts = [_settings(read), judge_warnings_html(read, link=False)]
    parts += [f'<p class="note">{esc(n)}</p>' for n in read.notes]
    if metrics:
        parts.append(_failures(metrics))
    if any(b.self_agreement for b in metrics.values()):
        parts.append(_self_agreement(metrics))
    if any(b.noise is not None and b.noise.variance_share is not None for b in metrics.values()):
        parts.append(_noise(metrics))
    parts += [_reference(name, b.reference) for name, b in metrics.items() if b.reference]
    if read.probes is not None and read.probes.total:
        parts.append(_probes(read.probes))
    return "".join(parts)


def _settings(section: JudgeSection) -> str:
    temperature = section.temperature
    return (
        f"<p>{esc(section.replicates)} replicate(s) per case · temperature "
        f"{'the endpoint’s default' if temperature is None else esc(temperature)} · warning above "
        f"{_pct(section.failure_threshold)} failures</p>"
    )


def _table(head: list[str], rows: list[list[str]], note: str, numeric: Collection[int] | None = None) -> str:
    """A table, its columns ``numeric`` (default: all but the first) right-aligned, and how to read it."""
    numeric = range(1, len(head)) if numeric is None else numeric
    th = "".join(f"<th{' class=num' if i in numeric else ''}>{h}</th>" for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f"<td{' class=num' if i in numeric else ''}>{c}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return (
        f'<div class="scroll"><table class="judge"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'
        f'</div><p class="note">{note}</p>'
    )


def _failures(metrics: dict[str, MetricTrust]) -> str:
    rows = []
    for name, block in metrics.items():
        f = block.failures
        reasons = ", ".join(f"{n}× {esc(k)}" for k, n in f.reasons.items()) or "–"
        examples = "<br>".join(f'<a href="#case={esc(e.id)}">{esc(e.id)}</a>: {esc(e.error)}' for e in f.examples)
        how = ""
        if block.kind == "verdict":
            how = (
                f"{esc(block.llm_judged)} by the LLM, {esc(block.rule_decided)} by the “I don’t know” rule"
                + (
                    f"; replicate calls failed {esc(f.replicate_calls_failed)} of {esc(f.replicate_calls)}"
                    if f.replicate_calls
                    else ""
                )
                + (f"; replies repaired {esc(f.repaired)}" if f.repaired else "")
            )
        rows.append([esc(name), esc(f.attempted), esc(f.failed), _pct(f.rate), reasons, how, examples])
    return "<h3>Failures</h3>" + _table(
        ["metric", "attempted", "failed", "rate", "why", "how the cases were decided", "examples"],
        rows,
        "A case whose judge call failed, or whose reply could not be read even after one re-ask with the error, has "
        "no value: it is left out of the metric's mean (counted as missing), never scored 0. Many failures bias the "
        "mean towards the cases that did not fail: read the examples.",
        numeric={1, 2, 3},
    )


def _self_agreement(metrics: dict[str, MetricTrust]) -> str:
    rows = []
    for name, block in metrics.items():
        sa = block.self_agreement
        if sa is None:
            continue
        if isinstance(sa, ScoreAgreement):
            rows.append(
                [
                    esc(name),
                    esc(sa.cases),
                    esc(block.replicates),
                    "–",
                    _num(sa.krippendorff_alpha) + " (interval)",
                    "–",
                    f"{_pct(sa.varying_share)} vary{_ids(sa.varying)}",
                    f"{_num(sa.mean_sd)} (pooled {_num(sa.pooled_sd)}, max {_num(sa.max_sd)})",
                ]
            )
        else:
            rows.append(
                [
                    esc(name),
                    esc(sa.cases),
                    esc(block.replicates),
                    _num(sa.agreement_rate),
                    _num(sa.krippendorff_alpha),
                    _num(sa.fleiss_kappa),
                    f"{_pct(sa.flip_share)} flip{_ids(sa.flipped)}",
                    _num(sa.mean_sd),
                ]
            )
    return "<h3>Self-agreement of replicates</h3>" + _table(
        [
            "metric",
            "cases",
            "replicates",
            "agreement",
            "Krippendorff α",
            "Fleiss κ",
            "cases that change",
            "intra-case SD",
        ],
        rows,
        "Each case was judged several times. Agreement: the share of replicate pairs that agree; Krippendorff's α and "
        "Fleiss' κ: the same corrected for chance (≥ 0.8 reliable, 0.667–0.8 tentative, below: not a stable "
        "measurement; n/a when every verdict is identical). Cases that change: their replicates disagree, read "
        "them. At temperature 0 replicates only show the endpoint's own nondeterminism.",
        numeric={1, 2, 3, 4, 5, 7},
    )


def _noise(metrics: dict[str, MetricTrust]) -> str:
    rows = []
    for name, block in metrics.items():
        nz = block.noise
        if nz is None or nz.variance_share is None:
            continue
        rows.append(
            [
                esc(name),
                esc(nz.cases),
                _pct(nz.variance_share),
                _pct(nz.width_share),
                _num(nz.ci_half_width),
                _num(nz.ci_half_width_noise_free),
                _pct(nz.single_replicate_variance_share),
            ]
        )
    return "<h3>Judge noise in the confidence interval</h3>" + _table(
        [
            "metric",
            "cases",
            "share of the CI's variance",
            "share of its width",
            "CI half-width",
            "without judge noise",
            "with one replicate",
        ],
        rows,
        "How much of the metric's 95% CI comes from the judge changing its mind rather than from the sample of "
        "cases. Small: more cases narrow the CI; large: more replicates (or a steadier judge) will. The last column "
        "is the share a single replicate per case would have.",
    )


def _reference(name: str, ref: ReferenceAgreement) -> str:
    c = ref.confusion
    sources = ", ".join(f"{esc(s)} ({n})" for s, n in ref.sources.items())
    confusion = (
        '<table class="confusion"><thead><tr><th>reference ↓ judge →</th><th class=num>true</th>'
        "<th class=num>false</th></tr></thead><tbody>"
        f"<tr><th>true</th><td class=num>{esc(c.tp)}</td><td class=num>{esc(c.fn)}</td></tr>"
        f"<tr><th>false</th><td class=num>{esc(c.fp)}</td><td class=num>{esc(c.tn)}</td>"
        "</tr></tbody></table>"
    )
    p = ref.ppi
    estimates = _table(
        ["estimate of " + esc(name), "value", "95% CI", "cases"],
        [
            ["judge mean (every judged case)", _num(p.judge_mean), _ci(p.judge_ci), esc(p.N)],
            ["prediction-powered", _num(p.estimate), _ci(p.ci), f"{esc(p.N)} + {esc(p.n)}"],
            ["reference verdicts alone", _num(p.reference_mean), _ci(p.reference_ci), esc(p.n)],
        ],
        "Prediction-powered (Angelopoulos et al. 2023): the judge mean plus the mean of (reference − judge) on the "
        "labelled answers, its CI from both; valid when the labelled answers are a random sample of the judged "
        "ones." + _separately(ref),
    )
    disagreements = ", ".join(
        f'<a href="#case={esc(d.id)}">{esc(d.id)}</a> (reference {_verdict(d.reference)}, judge {_verdict(d.judge)})'
        for d in ref.disagreements
    )
    return (
        f"<h3>{esc(name)} against reference verdicts</h3>"
        f"<p>{esc(ref.labelled)} labelled answer(s) from {sources or '–'}; {esc(ref.n)} with both "
        f"verdicts: agreement {_num(ref.agreement)}, Cohen’s κ {_num(ref.cohen_kappa)}"
        f"{'; they disagree on ' + disagreements if disagreements else ''}.</p>"
        f'<div class="figs">{confusion}</div>'
        '<p class="note">Cases carrying a <code>reference_verdict</code> (a verdict by people or by a documented '
        "rule on one answer). κ corrects agreement for chance (0: no better than chance). Confusion: reference "
        "true, judge false: the judge is too strict; reference false, judge true: too lenient.</p>" + estimates
    )


def _probes(probes: Probes) -> str:
    rows = [
        [
            ("✓ " if p.ok else "✗ ") + esc(p.case),
            esc(p.probe),
            esc(p.answer),
            _verdict(p.expected),
            _verdict(p.got),
            esc(p.method),
            esc(p.error or p.reason or ""),
        ]
        for p in probes.probes or probes.failed
    ]
    head = (
        f"<p>{esc(probes.passed)} of {esc(probes.total)} probes right (decided by the LLM: "
        f"{esc(probes.llm_passed)} of {esc(probes.llm_total)}).</p>"
    )
    return (
        "<h3>Probes before the run</h3>"
        + head
        + _table(
            ["case", "probe", "answer shown to the judge", "expected", "got", "decided by", "reason"],
            rows,
            "For a few answerable cases the judge saw the reference answer alone and inside a sentence (must be judged "
            "correct), another case's reference and “I don't know.” (must be judged wrong; refusals are decided by a "
            "rule). Failing “wrong”: the judge says yes to everything; failing “correct_in_sentence”: it is too strict "
            "about wording.",
            numeric=set(),
        )
    )


def _separately(ref: ReferenceAgreement) -> str:
    other = ref.labelled - ref.labelled_answer_is_run_answer
    return f" {other} labelled answer(s) differ from this run's answers and were judged on their own." if other else ""


def _verdict(value: Any) -> str:
    return "correct" if value is True else "wrong" if value is False else "–"


def _num(value: Any) -> str:
    return "n/a" if value is None else fmt(value)


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _ci(pair: Any) -> str:
    return f"[{fmt(pair[0])}, {fmt(pair[1])}]" if pair and None not in pair else "–"


def _ids(ids: list[str] | None) -> str:
    if not ids:
        return ""
    links = ", ".join(f'<a href="#case={esc(i)}">{esc(i)}</a>' for i in ids[:MAX_IDS])
    return f": {links}" + (f", … {len(ids) - MAX_IDS} more" if len(ids) > MAX_IDS else "")
