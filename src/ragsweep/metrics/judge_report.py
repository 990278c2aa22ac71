"""report.json's ``judge`` section: how far the LLM metrics of a run can be trusted.

Built from the case records alone (``cases.jsonl``: each record's ``judge`` dict and
``metrics``/``notes``), so a resumed run, the HTML report and compare read the same thing.
Per LLM metric (``judge_correct``, and each ``ragas_llm_*`` present):

- ``failures``        cases where the metric was attempted and no value came back, by named
                      reason; for the judge also replicate calls that failed and replies that
                      needed the one re-ask (``repaired``);
- ``self_agreement``  with replicates: agreement rate, Krippendorff's alpha (nominal), Fleiss'
                      kappa, share of cases whose verdict flips (and which), intra-case SD;
- ``noise``           the share of the CI of the metric's mean that is judge noise;
- ``reference``       with reference verdicts in the dataset: Cohen's kappa, confusion matrix,
                      and a prediction-powered estimate beside the raw judge mean.

Formulas: :mod:`ragsweep.metrics.judge_stats`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ragsweep.metrics import judge_stats as js
from ragsweep.metrics.judge import failure_kind

JUDGE_METRIC = "judge_correct"
DEFAULT_WARN_RATE = 0.05  # a metric failing on more than this share of its cases is flagged at the top


def _replicate_verdicts(judge: dict[str, Any]) -> list[bool]:
    reps = judge.get("replicates") or []
    if reps:
        return [bool(r["is_correct"]) for r in reps if r.get("is_correct") is not None]
    return [] if judge.get("is_correct") is None else [bool(judge["is_correct"])]


def _failure_block(attempted: int, failed_reasons: list[str], examples: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "attempted": attempted,
        "failed": len(failed_reasons),
        "rate": (len(failed_reasons) / attempted) if attempted else None,
        "reasons": dict(Counter(failed_reasons).most_common()),
        "examples": examples[:5],
    }


def judge_metric_section(records: Sequence[dict[str, Any]], confidence: float = 0.95) -> dict[str, Any] | None:
    """The ``judge_correct`` block; None when no record was judged."""
    judged = [r for r in records if r.get("judge")]
    if not judged:
        return None
    llm = [r for r in judged if r["judge"].get("method") == "llm"]
    rule = [r for r in judged if r["judge"].get("method") == "rule"]
    skipped = [r for r in judged if r["judge"].get("method") == "skipped"]
    asked = max((int(r["judge"].get("n_replicates") or 1) for r in llm), default=1)

    failed = [r for r in llm if r["judge"].get("score") is None and r["judge"].get("is_correct") is None]
    reps = [rep for r in llm for rep in (r["judge"].get("replicates") or [r["judge"]])]
    failures = _failure_block(
        len(llm),
        [r["judge"].get("failure") or failure_kind(r["judge"].get("error")) or "other" for r in failed],
        [{"id": r["id"], "error": str(r["judge"].get("error"))[:300]} for r in failed],
    )
    failures["replicate_calls"] = len(reps)
    failures["replicate_calls_failed"] = sum(1 for rep in reps if rep.get("is_correct") is None)
    failures["replicate_reasons"] = dict(
        Counter(
            rep.get("failure") or failure_kind(rep.get("error")) or "other"
            for rep in reps
            if rep.get("is_correct") is None
        )
    )
    failures["repaired"] = sum(1 for rep in reps if rep.get("repaired"))
    failures["not_judged_answer_failed"] = len(skipped)

    out: dict[str, Any] = {
        "kind": "verdict",
        "replicates": asked,
        "cases": len(judged),
        "llm_judged": len(llm),
        "rule_decided": len(rule),
        "failures": failures,
    }

    units = [_replicate_verdicts(r["judge"]) for r in llm]
    if asked > 1:
        share, flipped = js.flip_share(units)
        ids = [llm[i]["id"] for i in flipped]
        sd = js.intra_case_sd([[float(v) for v in u] for u in units])
        out["self_agreement"] = {
            "cases": sum(1 for u in units if len(u) >= 2),
            "agreement_rate": js.pairwise_agreement(units),
            "krippendorff_alpha": js.krippendorff_alpha(units, "nominal"),
            "fleiss_kappa": js.fleiss_kappa(units),
            "flip_share": share,
            "flipped": ids,
            "mean_sd": sd["mean_sd"],
            "pooled_sd": sd["pooled_sd"],
            "note": 'over LLM-judged cases only (cases decided by the "I don\'t know" rule never vary)',
        }
        noise_units, deterministic = [], []
        for r in judged:
            j = r["judge"]
            if j.get("method") == "llm":
                u = [float(v) for v in _replicate_verdicts(j)]
                if u:
                    noise_units.append(u)
                    deterministic.append(False)
            elif j.get("score") is not None or j.get("is_correct") is not None:
                value = j.get("score")
                noise_units.append([float(value if value is not None else bool(j["is_correct"]))])
                deterministic.append(True)
        out["noise"] = js.noise_share(noise_units, deterministic, confidence)

    ref = reference_section(records, confidence)
    if ref is not None:
        out["reference"] = ref
    return out


def reference_section(records: Sequence[dict[str, Any]], confidence: float = 0.95) -> dict[str, Any] | None:
    """The judge against the dataset's reference verdicts, and the PPI-corrected mean."""
    checks = [
        (r["id"], r["judge"]["reference_check"])
        for r in records
        if r.get("judge") and r["judge"].get("reference_check")
    ]
    if not checks:
        return None
    binary = [
        (c["reference_is_correct"], c["judge_is_correct"])
        for _, c in checks
        if c.get("reference_is_correct") is not None and c.get("judge_is_correct") is not None
    ]
    agreement = js.verdict_agreement([b[0] for b in binary], [b[1] for b in binary])
    judge_all = [r["metrics"][JUDGE_METRIC] for r in records if r.get("metrics", {}).get(JUDGE_METRIC) is not None]
    labelled = [
        (c["judge"], c["reference"]) for _, c in checks if c.get("judge") is not None and c.get("reference") is not None
    ]
    ppi = js.ppi_mean(judge_all, [f for f, _ in labelled], [y for _, y in labelled], confidence, bounds=(0.0, 1.0))
    same = sum(1 for _, c in checks if c.get("answer_is_run_answer"))
    disagreements = [
        {
            "id": i,
            "reference": c.get("reference_is_correct"),
            "judge": c.get("judge_is_correct"),
            "source": c.get("source"),
        }
        for i, c in checks
        if c.get("reference_is_correct") is not None
        and c.get("judge_is_correct") is not None
        and c["reference_is_correct"] != c["judge_is_correct"]
    ]
    return {
        "labelled": len(checks),
        "sources": dict(Counter(str(c.get("source")) for _, c in checks)),
        "labelled_answer_is_run_answer": same,
        "not_judged": sum(1 for _, c in checks if c.get("judge") is None),
        **agreement,
        "disagreements": disagreements[:20],
        "ppi": ppi,
        "note": (
            "PPI: judge mean over every judged case + mean(reference - judge) on the labelled answers; "
            "valid when the labelled answers are a random sample of the judged ones"
            + (
                ""
                if same == len(checks)
                else f"; {len(checks) - same} labelled answer(s) differ from this run's answers and were "
                "judged separately"
            )
        ),
    }


def _ragas_kind(note: str) -> str:
    kind = failure_kind(note)
    if kind and kind != "other":
        return kind
    head = note.split(":", 1)[0].strip()
    return head if head and len(head) <= 40 and " " not in head else "other"


def score_self_agreement(records: Sequence[dict[str, Any]], name: str, confidence: float = 0.95) -> dict[str, Any]:
    """Self-agreement of a score metric over its replicates (``record["llm_replicates"][name]``)."""
    units, ids = [], []
    for r in records:
        values = ((r.get("llm_replicates") or {}).get(name)) or []
        valid = [float(v) for v in values if v is not None]
        if valid:
            units.append(valid)
            ids.append(r["id"])
    sd = js.intra_case_sd(units)
    spread = [(i, max(u) - min(u)) for i, u in zip(ids, units) if len(u) >= 2]
    return {
        "self_agreement": {
            "cases": sum(1 for u in units if len(u) >= 2),
            "mean_sd": sd["mean_sd"],
            "pooled_sd": sd["pooled_sd"],
            "max_sd": sd["max_sd"],
            "krippendorff_alpha": js.krippendorff_alpha(units, "interval"),
            "varying": [i for i, d in spread if d > 1e-9],
            "varying_share": (sum(1 for _, d in spread if d > 1e-9) / len(spread)) if spread else None,
        },
        "noise": js.noise_share(units, None, confidence),
    }


def ragas_metric_sections(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Failures per ``ragas_llm_*`` metric (a value of None with a note that is not "not applicable");
    with replicates, the intra-case SD, Krippendorff's alpha (interval) and the noise share."""
    names = sorted({n for r in records for n in r.get("metrics", {}) if n.startswith("ragas_llm_")})
    out = {}
    for name in names:
        attempted, reasons, examples = 0, [], []
        for r in records:
            if name not in r.get("metrics", {}):
                continue
            value = r["metrics"][name]
            note = (r.get("notes") or {}).get(name) or ""
            if value is not None:
                attempted += 1
            elif note and not note.startswith("not applicable"):
                attempted += 1
                reasons.append(_ragas_kind(note))
                examples.append({"id": r["id"], "error": note[:300]})
        asked = max((len((r.get("llm_replicates") or {}).get(name) or []) for r in records), default=0)
        out[name] = {
            "kind": "score",
            "replicates": max(asked, 1),
            "failures": _failure_block(attempted, reasons, examples),
        }
        if asked > 1:
            out[name].update(score_self_agreement(records, name))
    return out


def judge_section(
    records: Sequence[dict[str, Any]],
    *,
    replicates: int = 1,
    temperature: float | None = None,
    probes: dict[str, Any] | None = None,
    max_failure_rate: float | None = None,
    confidence: float = 0.95,
) -> dict[str, Any] | None:
    """report.json's ``judge`` section; None when the run has no LLM metric and no probe."""
    metrics: dict[str, Any] = {}
    jm = judge_metric_section(records, confidence)
    if jm is not None:
        metrics[JUDGE_METRIC] = jm
    metrics.update(ragas_metric_sections(records))
    if not metrics and not probes:
        return None
    threshold = DEFAULT_WARN_RATE if max_failure_rate is None else max_failure_rate
    warnings = []
    for name, block in metrics.items():
        f = block["failures"]
        if f["rate"] is not None and f["rate"] > threshold:
            why = ", ".join(f"{n}x {k}" for k, n in f["reasons"].items())
            warnings.append(
                f"{name} failed on {f['failed']} of {f['attempted']} cases ({f['rate']:.1%} > {threshold:.1%}): {why}"
            )
    if probes and probes.get("total") and probes["passed"] < probes["total"]:
        wrong = "; ".join(
            f"{p['case']} {p['probe']}: expected {p['expected']}, got {p['got']}"
            + (f" ({p['error']})" if p.get("error") else "")
            for p in probes["failed"][:4]
        )
        warnings.append(f"judge probes: {probes['total'] - probes['passed']} of {probes['total']} wrong ({wrong})")
    notes = []
    if replicates > 1 and temperature == 0:
        notes.append(
            "judge replicates at temperature 0: they measure only the endpoint's own "
            "nondeterminism (--judge-temperature sets the judge's)"
        )
    return {
        "replicates": replicates,
        "temperature": temperature,
        "failure_threshold": threshold,
        "metrics": metrics,
        "probes": probes,
        "warnings": warnings,
        "notes": notes,
    }


def failure_gate(section: dict[str, Any] | None, max_failure_rate: float | None) -> list[str]:
    """One line per LLM metric whose failure rate exceeds ``max_failure_rate``."""
    if section is None or max_failure_rate is None:
        return []
    out = []
    for name, block in section["metrics"].items():
        f = block["failures"]
        if f["rate"] is not None and f["rate"] > max_failure_rate:
            out.append(
                f"{name}: failed on {f['failed']} of {f['attempted']} cases ({f['rate']:.1%}) "
                f"> --max-failure-rate {max_failure_rate:g}"
            )
    return out


# ----------------------------------------------------------------- terminal


def _f(value: Any, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def _ci(ci: Any) -> str:
    return "" if not ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


def format_judge_section(section: dict[str, Any] | None) -> str:
    """The judge section as terminal lines ("" when there is none)."""
    if not section:
        return ""
    lines = [
        f"judge: {section['replicates']} replicate(s), temperature "
        f"{_f(section.get('temperature'), 'g')}, failure threshold {section['failure_threshold']:.1%}"
    ]
    lines += [f"  note: {n}" for n in section.get("notes") or []]
    for name, block in section["metrics"].items():
        pad = " " * 4
        f = block["failures"]
        head = f"  {name}: failures {f['failed']} of {f['attempted']} ({_f(f['rate'], '.1%')})"
        if f["reasons"]:
            head += " - " + ", ".join(f"{n}x {k}" for k, n in f["reasons"].items())
        if block.get("kind") == "verdict":
            head += f'; {block["llm_judged"]} judged by the LLM, {block["rule_decided"]} by the "I don\'t know" rule'
            if f.get("repaired") or f.get("replicate_calls_failed"):
                head += (
                    f"; replies repaired {f['repaired']}, replicate calls failed "
                    f"{f['replicate_calls_failed']} of {f['replicate_calls']}"
                )
        lines.append(head)
        sa = block.get("self_agreement")
        if sa and block.get("kind") == "score":
            lines.append(
                f"{pad}self-agreement over {sa['cases']} case(s) x {block['replicates']} replicates: "
                f"intra-case SD {_f(sa['mean_sd'])} (pooled {_f(sa['pooled_sd'])}, max {_f(sa['max_sd'])}), "
                f"Krippendorff alpha (interval) {_f(sa['krippendorff_alpha'])}, values vary in "
                f"{_f(sa['varying_share'], '.1%')} of cases"
            )
        elif sa:
            lines.append(
                f"{pad}self-agreement over {sa['cases']} case(s) x {block['replicates']} replicates: "
                f"agreement {_f(sa['agreement_rate'])}, Krippendorff alpha {_f(sa['krippendorff_alpha'])}, "
                f"Fleiss kappa {_f(sa['fleiss_kappa'])}, verdict flips {_f(sa['flip_share'], '.1%')}"
                f"{' (' + ', '.join(sa['flipped'][:5]) + ')' if sa['flipped'] else ''}, "
                f"intra-case SD {_f(sa['mean_sd'])}"
            )
        nz = block.get("noise")
        if nz and nz.get("variance_share") is not None:
            lines.append(
                f"{pad}judge noise: {nz['variance_share']:.1%} of the CI's variance, "
                f"{nz['width_share']:.1%} of its width (CI half-width {_f(nz['ci_half_width'])}, "
                f"{_f(nz['ci_half_width_noise_free'])} without judge noise; one replicate: "
                f"{_f(nz['single_replicate_variance_share'], '.1%')} of the variance)"
            )
        ref = block.get("reference")
        if ref:
            sources = ", ".join(sorted({str(k).split(" (")[0] for k in ref["sources"]}))
            c = ref["confusion"]
            lines.append(
                f"{pad}vs reference verdicts ({sources}): n {ref['n']}, agreement "
                f"{_f(ref['agreement'])}, Cohen's kappa {_f(ref['cohen_kappa'])}, confusion "
                f"(reference x judge) TT {c['tp']} TF {c['fn']} FT {c['fp']} FF {c['tn']}"
            )
            p = ref["ppi"]
            lines.append(
                f"{pad}{name}: judge mean {_f(p['judge_mean'])}{_ci(p['judge_ci'])}, "
                f"prediction-powered {_f(p['estimate'])}{_ci(p['ci'])} (n={p['n']} labelled, "
                f"N={p['N']}), references alone {_f(p['reference_mean'])}{_ci(p['reference_ci'])}"
            )
    probes = section.get("probes")
    if probes and probes.get("total"):
        lines.append(
            f"  probes: {probes['passed']} of {probes['total']} right (decided by the LLM: "
            f"{probes['llm_passed']} of {probes['llm_total']})"
        )
        for p in probes["failed"][:6]:
            lines.append(
                f"    wrong: {p['case']} {p['probe']}: expected {p['expected']}, got {p['got']}"
                + (f" ({p['error']})" if p.get("error") else f" ({p['reason']})" if p.get("reason") else "")
            )
    return "\n".join(lines)


def format_warnings(section: dict[str, Any] | None) -> str:
    """The lines printed above the summary table."""
    if not section or not section.get("warnings"):
        return ""
    return "\n".join("WARNING: " + w for w in section["warnings"])
