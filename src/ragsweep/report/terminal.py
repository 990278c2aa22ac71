"""What ragsweep prints on the terminal: eval's summary table, the sweep's table and its verdict on
the held-out split, the notes under them (uninformative rows, unlocated cases, LLM calls) and the
gate's lines. Plain functions from results to text; the command modules print them."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping

from ragsweep.evaluation.choice import measured, tie_knobs
from ragsweep.evaluation.manifest import DatasetManifest
from ragsweep.evaluation.records import ChoiceMeasure, ConfigResult, HoldoutVerdict, RunResult, SweepResult
from ragsweep.evaluation.scoring import unlocated_lines
from ragsweep.evaluation.sweep import shown_value
from ragsweep.funnel.terminal import funnel_lines
from ragsweep.judge.report import format_judge_section, format_warnings
from ragsweep.llm.call_stats import LLMCalls
from ragsweep.metrics.registry import REPEATS, lower_is_better, summary_metrics
from ragsweep.metrics.uninformative import answerer_way, uninformative
from ragsweep.report.funnel_view import lost_text
from ragsweep.report.values import mean_of


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
        *funnel_lines(result.diagnosis),
        "chance: expected value under a random order of the case's candidate chunks (its scoped documents', or the "
        "corpus')",
        "oracle: the best any order reaches",
    ]
    if result.manifest.spent is not None:
        notes.extend(result.manifest.spent.lines())
    notes.extend(llm_call_lines(result.manifest.llm_calls))
    errors = result.answer_errors
    if errors.n:
        common = "; ".join(f"{n}x {msg}" for msg, n in list(errors.by_message.items())[:3])
        notes.append(f"answer_error: {errors.n} of {result.n_cases} answers failed ({common})")
    if result.answers.refused:
        notes.append(f"refusals: {result.answers.refused} answer(s) were refusals, counted as abstaining")
    if (unparsed := result.count("unanswerable_unparsed")) is not None:
        notes.append(
            f"abstention: {unparsed.n} unanswerable case(s) whose documents were not parsed are left out of the "
            "abstention metrics (nothing to find is no test of knowing when to refuse)"
        )
    notes.extend(unlocated_lines(result.unlocated, result.n_cases, table="eval"))
    notes.extend(uninformative_notes(result, [n for n in names if n in result.metrics]))
    warnings = format_warnings(result.judge)
    judge_text = format_judge_section(result.judge)
    parts = [*([warnings] if warnings else []), header, *lines, *notes, *([judge_text] if judge_text else [])]
    return "\n".join(fit("\n".join(parts).splitlines()))


def fit(lines: Iterable[str], width: int | None = None) -> list[str]:
    """``lines`` within ``width`` columns (:data:`TERMINAL_COLUMNS`): a longer line is wrapped at its
    spaces, its continuation indented under its own text; no word is cut, so every number stays whole
    (a single word longer than the width, a path, stays as it is)."""
    width = width or TERMINAL_COLUMNS
    out = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [
            line
        ]
    return out


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
    count = result.count(name) or result.count(name.split("_mean")[0].split("_median")[0])
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


TERMINAL_COLUMNS = 120  # what the sweep table fits in


def sweep_label(params: Mapping[str, object]) -> str:
    """A configuration's row label: its values in the grid's order, never cut (the knobs are named above); a
    multi-line or very long text (a prompt) by its hash, as the configuration's id shows it."""
    return ",".join(shown_value(v) for v in params.values())


GROUP = f"{'value':>6} {'chance':>6} {'lift':>6}"  # each objective's columns, under its name


def sweep_table(report: SweepResult) -> str:
    objectives = report.objectives
    params = {r.id: r.params for r in report.configs} | {r.id: r.params for r in report.failed}
    labels = {cid: sweep_label(p) for cid, p in params.items()}
    knobs = list(dict.fromkeys(k for p in params.values() for k in p))
    width = max([len("configuration"), *map(len, labels.values())])
    names = " ".join(f"{m:^{len(GROUP)}}" for m in objectives)
    lines = [
        f"configuration = {','.join(knobs)}",
        f"{'':<{width}} {names}",
        f"{'configuration':<{width}} {' '.join(GROUP for _ in objectives)} {'ms/query':>8}",
    ]
    sign = 1 if lower_is_better(objectives[0]) else -1
    for r in sorted(report.configs, key=lambda r: sign * (mean_of(r, objectives[0]) or 0)):
        cells = []
        for m in objectives:
            v = mean_of(r, m)
            mark = "*" if r.is_significant(m) else (" " if r.id != report.baseline else "=")
            chance, lift = (r.chance_level[m], r.lift_over_chance[m]) if m in r.chance_level else (None, None)
            cells.append(
                f"{'n/a' if v is None else f'{v:.3f}'}{mark}".rjust(6)
                + f" {'n/a' if chance is None else f'{chance:.3f}':>6} {'n/a' if lift is None else f'{lift:+.3f}':>6}"
            )
        lines.append(f"{labels[r.id]:<{width}} " + " ".join(cells) + f" {r.latency_ms_per_query:>8.2f}")
    lines += failed_lines(report, labels)
    lines += sweep_funnel_lines(report, labels)
    notes = [*sweep_notes(report), *(line for m in report.best for line in best_lines(report, m))]
    if report.verdict:
        notes += verdict_lines(report.verdict)
    notes.append(f"Pareto set ({' vs '.join(report.pareto_axes)}): " + ", ".join(report.pareto))
    lines += [part for note in notes for part in wrapped(note)]
    lines += llm_call_lines(sweep_llm_calls(report.configs))
    return "\n".join(lines)


def sweep_funnel_lines(report: SweepResult, labels: Mapping[str, str]) -> list[str]:
    """``lost@k`` of each configuration: where its cases were lost at its own top_k (ragsweep.funnel)."""
    rows = [(r, r.diagnosis) for r in report.configs if r.diagnosis is not None]
    if not rows:
        return []
    width = max(len(labels[r.id]) for r, _ in rows)
    lines = ["lost@k: where each configuration's cases were lost at its top_k (found + each stage = its cases)"]
    return lines + [
        part for r, d in rows for part in wrapped(f"  {labels[r.id]:<{width}} @{d.k}: {lost_text(d.headline())}")
    ]


def failed_lines(report: SweepResult, labels: Mapping[str, str]) -> list[str]:
    """The configurations without numbers, each with its reason: listed, never ranked."""
    if not report.failed:
        return []
    lines = [f"failed: {len(report.failed)} of {len(report.configs) + len(report.failed)} configurations "
             "(no numbers: not ranked, not chosen, compared with nothing; --resume runs them again)"]  # fmt: skip
    for row in report.failed:
        role = " (the baseline)" if row.id == report.baseline else ""
        lines += wrapped(f"  {labels[row.id]}{role}: {row.reason}")
    return lines


def wrapped(line: str) -> list[str]:
    """A note in lines of at most :data:`TERMINAL_COLUMNS` (a configuration's id is never split)."""
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return textwrap.wrap(
        line, TERMINAL_COLUMNS, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    ) or [line]


def sweep_notes(report: SweepResult) -> list[str]:
    """What the marks and columns of the sweep table mean."""
    lines = [
        f"= baseline; * differs from what it is compared with (paired randomization test, Holm-adjusted p <= "
        f"{report.alpha}): an @k objective at equal depth (the baseline's pipeline at the row's top_k; where the "
        "grid has none, on the lift over chance); a row that differs from the baseline only in depth is not tested",
        "chance: the objective under a random order of each case's candidate chunks; lift: value - chance "
        "(over the cases with a chance level); @<N>tok: over the chunks of the deepest list that fit in N tokens",
        f"@k = at the configuration's own top_k; a depth deeper than a configuration serves ({served_to(report)}) "
        "is missing for it",
    ]
    if report.same_cases_for_choice_and_report:
        lines.append('note: "best" was chosen on the same cases it is reported on (no held-out split)')
    if any(row.id == report.baseline for row in report.failed):
        lines.append(
            "the baseline failed: nothing is compared with it (no paired test, no delta); no other configuration "
            "stands in for it"
        )
    return lines


def served_to(report: SweepResult) -> str:
    """How deep a configuration serves: to its top_k, or an adaptive answerer to its deepest ask (it
    widens its context past its first ask; evaluation.sweep.served_depths)."""
    adaptive = any(max(r.served_ks, default=r.top_k) > r.top_k for r in report.configs)
    return "its top_k; an adaptive answerer: its deepest ask" if adaptive else "its top_k"


CHOSEN_ON: dict[ChoiceMeasure, str] = {
    "lift": "on lift over chance (value - chance at its own top_k: a deeper list is not better for being deeper)",
    "value": "on its value",
}


def best_lines(report: SweepResult, metric: str) -> list[str]:
    """The best configuration on ``metric``, what it was chosen on, and a tie named as one."""
    best = report.best[metric]
    on = report.chosen_on(metric)
    split = " on the dev split" if report.verdict else ""
    lines = [f"best {metric}{split}, {CHOSEN_ON[on]}: {best}"]
    tied = report.tied(metric)
    if len(tied) > 1:
        row = report.config(best)
        value = measured(row, metric, on)
        knobs = tie_knobs(report.configs, tied)
        differ = f", differing only in {', '.join(knobs)}" if knobs else ""
        shown = "n/a" if value is None else f"{value:.4f}"
        lines.append(
            f"  a tie: {len(tied)} configurations score {shown}{differ}; the cheapest (fewest chunks, then "
            f"fastest) is chosen; tied with it: {', '.join(t for t in tied if t != best)}"
        )
    return lines


def sweep_llm_calls(configs: list[ConfigResult]) -> dict[str, LLMCalls]:
    """Each LLM part's calls over the configurations (a resumed sweep's earlier ones from their result.json)."""
    parts: dict[str, list[LLMCalls]] = {}
    for c in configs:
        for name, calls in c.llm_calls.items():
            parts.setdefault(name, []).append(LLMCalls.model_validate(calls))
    return {f"{name} (over {len(v)} configurations)": LLMCalls.total(v) for name, v in parts.items()}


def verdict_lines(verdict: HoldoutVerdict) -> list[str]:
    main = verdict.objective
    lines = []
    for cid, row in verdict.configs.items():
        value, (low, high) = mean_of(row, main), row.interval(main)
        role = (
            "chosen" if cid == verdict.chosen else "baseline" if cid == verdict.baseline else "baseline at equal depth"
        )
        text = "n/a" if value is None else f"{value:.4f}"
        ci_text = "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"
        lines.append(f"test split ({verdict.cases} cases), {role}: {cid}: {main} = {text}{ci_text}")
    if verdict.chosen == verdict.baseline:
        return lines
    if verdict.baseline_failed:
        lines.append("test split: the baseline failed: the chosen configuration is tested against nothing")
        return lines
    if verdict.compared_with is None:
        lines.append(
            "test split: the chosen configuration is the baseline's pipeline at another depth: nothing is tested "
            "(a deeper list is not a better pipeline)"
        )
        return lines
    against = "at equal depth" if verdict.compared_on == "value" else "on the lift over chance"
    lines.append(
        f"test split: chosen vs {verdict.compared_with} ({against}): {difference_text(verdict)}, p = {verdict.p_value}"
        f"{' (significant)' if verdict.significant else ' (not significant)'}"
    )
    if warning := verdict_warning(verdict):
        lines.append(warning)
    return lines


def verdict_warning(verdict: HoldoutVerdict) -> str | None:
    """A line when the held-out cases contradict the choice: significantly worse than what it is compared with."""
    if verdict.significant and verdict.direction() == "worse":
        return (
            f"warning: on the test split the chosen configuration is significantly worse than "
            f"{verdict.compared_with} at equal depth: the choice does not hold; do not deploy it on this evidence"
        )
    return None


def difference_text(verdict: HoldoutVerdict) -> str:
    """The chosen configuration's difference from what it is compared with, and which way it goes."""
    if verdict.difference is None:
        return "no case to compare on"
    what = "lift" if verdict.compared_on == "lift" else verdict.objective
    return f"{what} {verdict.difference:+.4f} ({verdict.direction()})"


def llm_call_lines(parts: Mapping[str, LLMCalls | Mapping[str, object]]) -> list[str]:
    """The terminal lines of each LLM part's calls (an eval's, as its manifest stores them, or a sweep's total)."""
    return [LLMCalls.model_validate(calls).line(f"LLM {name}") for name, calls in parts.items()]


def no_answer_succeeded(result: RunResult) -> bool:
    return result.n_cases > 0 and result.answer_errors.n >= result.n_cases


def gate_passed_line(floors: Mapping[str, float], max_failure_rate: float | None) -> str | None:
    """The line of a gate that passed (None: no gate was asked for)."""
    if not floors and max_failure_rate is None:
        return None
    passed = [f"{k} >= {v}" for k, v in floors.items()]
    rate = [f"LLM metric failures <= {max_failure_rate:g}"] if max_failure_rate is not None else []
    return "\n".join(fit(["gate passed: " + ", ".join(passed + rate)]))


def sweep_unlocated_lines(report: SweepResult) -> list[str]:
    """The sweep's unlocated cases, under its table."""
    return unlocated_lines(
        report.unlocated, int((report.manifest.dataset or DatasetManifest()).cases or 0), table="sweep"
    )


def sweep_cost_lines(report: SweepResult) -> list[str]:
    """Each answered configuration's cost (calls, tokens, price per 1,000 questions) and the cost-quality
    Pareto sets, under the sweep's table, in 120 columns (nothing for a sweep that did not answer)."""
    costed = [c for c in report.configs if c.cost is not None and c.cost.questions]
    if not costed:
        return []
    varying = [
        p for p in dict.fromkeys(k for c in costed for k in c.params) if len({str(c.param(p)) for c in costed}) > 1
    ]
    labels = {c.id: " ".join(f"{p}={shown_value(c.param(p))}" for p in varying) or c.id for c in costed}
    width = min(60, max(len(label) for label in labels.values()))
    lines = [
        "",
        "answer cost (a cached reply counts: serving pays for it; sent: the calls this sweep made)",
        f"  {'configuration':<{width}} {'calls':>6} {'sent':>6} {'prompt+compl tok':>16}  per 1,000 questions",
    ]
    for c in costed:
        assert c.cost is not None
        k, label = c.cost, labels[c.id]
        label = label if len(label) <= width else label[: width - 1] + "…"
        tokens = f"{k.prompt_tokens}+{k.completion_tokens}"
        lines.append(f"  {label:<{width}} {k.calls:>6} {k.sent_calls:>6} {tokens:>16}  {k.shown()}")
    pareto = report.cost_pareto
    if pareto is not None:
        axis = "$ per 1k questions" if pareto.priced else "tokens per 1k questions (no price set)"
        for metric, front in pareto.fronts.items():
            lines.append(f"Pareto set ({metric} vs {axis}): {'; '.join(labels.get(cid, cid) for cid in front)}")
    return lines
