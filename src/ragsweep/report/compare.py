"""``ragsweep compare RUN_A RUN_B``: paired per-metric deltas (B - A) between two runs.

Cases are joined on ``id``. For every per-case metric the two runs share, over the cases
where both runs have a value: the mean of each run, the mean paired difference ``B - A``, its
paired bootstrap CI (:func:`ragsweep.metrics.stats.paired_bootstrap_ci`), the paired
randomization test p-value (:func:`ragsweep.metrics.stats.paired_test`) and the
Holm-adjusted p-value across all compared metrics. Binary per-case metrics (every value 0 or
1 in both runs, e.g. ``hit_rate@k``, ``judge_correct``, ``exact_match``) and the answer's
``abstained`` flag are checked for cases that flipped (1 -> 0 or 0 -> 1).

A run is a :class:`~ragsweep.evaluation.records.RunResult` in memory (with its ``cases``, as
``ragsweep.evaluate()`` returns it), an eval run folder (``cases.jsonl``), a sweep configuration
folder (``<sweep>/configs/<id>``), or a ``cases.jsonl`` file. When a side is a sweep configuration
or the two runs serve different top_k, the ``<family>@k`` metrics (each case at its own top_k,
:meth:`~ragsweep.evaluation.records.CaseResult.metric`) are compared too: what each serves.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ragsweep.core.errors import RunError
from ragsweep.evaluation.records import CaseResult, RunResult
from ragsweep.evaluation.runfolder import check_writable
from ragsweep.metrics.stats import holm, paired_bootstrap_ci, paired_test, significant
from ragsweep.report.runs import (
    RunFolderError,
    at_k_families,
    is_config_dir,
    lower_is_better,
    num,
    ordered,
    read_case_results,
    read_sweep,
)
from ragsweep.report.stage_moves import StageComparison, stage_lines, stage_markdown, stage_moves

ABSTAINED = "abstained"


Verdict = Literal["better", "worse", ""]  # "": no significant difference


class MetricDelta(BaseModel):
    metric: str
    n: int = Field(description="cases with a value in both runs")
    mean_a: float | None
    mean_b: float | None
    delta: float | None = Field(description="mean(B - A) over the paired cases")
    ci_low: float | None
    ci_high: float | None
    p_value: float | None = Field(description="paired randomization test, two-sided")
    p_adjusted: float | None = Field(description="Holm-adjusted across the compared metrics")
    significant: bool
    lower_is_better: bool = False

    @property
    def verdict(self) -> Verdict:
        """'better' / 'worse' when significant, else ''."""
        if not self.significant or self.delta is None or self.delta == 0:
            return ""
        return "better" if (self.delta > 0) != self.lower_is_better else "worse"


class Flip(BaseModel):
    id: str
    question: str
    metric: str
    a: float
    b: float

    @property
    def direction(self) -> str:
        return f"{self.a:g}->{self.b:g}"


class Comparison(BaseModel):
    run_a: str
    run_b: str
    label_a: str
    label_b: str
    n_a: int
    n_b: int
    n_common: int
    only_in_a: list[str]
    only_in_b: list[str]
    confidence: float
    alpha: float
    metrics: list[MetricDelta]
    flips: list[Flip]
    stages: StageComparison | None = None  # the funnel's stages, paired (None: neither run has a funnel)

    def flips_of(self, metric: str, direction: str | None = None) -> list[Flip]:
        return [f for f in self.flips if f.metric == metric and (direction is None or f.direction == direction)]


def _cases_path(run: str | Path) -> Path:
    p = Path(run)
    if p.is_file():
        return p
    if not p.exists():
        raise RunFolderError(f"{p}: no such run folder or file")
    if (p / "cases.jsonl").is_file():
        return p / "cases.jsonl"
    if (p / "sweep.json").is_file():
        ids = [c.id for c in read_sweep(p).configs]
        raise RunFolderError(
            f"{p} is a sweep; compare one configuration, e.g. {p / 'configs' / (ids[0] if ids else '<id>')}"
            f" (configurations: {', '.join(ids)})"
        )
    raise RunFolderError(f"{p}: no cases.jsonl in this folder")


def _label(path: Path) -> str:
    folder = path.parent if path.name == "cases.jsonl" else path
    if is_config_dir(folder):  # a sweep configuration: <sweep>/configs/<id>
        return f"{folder.parent.parent.name}/{folder.name}"
    return folder.name


class _Side(BaseModel):
    """One side of a comparison: where it is from, its label, its cases, whether it is a sweep configuration."""

    where: str
    label: str
    cases: list[CaseResult]
    config: bool = False


def _side(run: RunResult | str | Path, default_label: str) -> _Side:
    if isinstance(run, RunResult):
        where = run.run_dir or f"(in memory: {default_label})"
        label = Path(run.run_dir).name if run.run_dir else default_label
        return _Side(where=where, label=label, cases=run.cases)
    path = _cases_path(run)
    return _Side(where=str(path), label=_label(path), cases=read_case_results(path), config=is_config_dir(path.parent))


def _value(case: CaseResult, metric: str, flag: bool = False) -> float | None:
    if flag:  # the answer's abstained flag
        return None if case.answer is None else float(case.answer.abstained)
    return num(case.metric(metric))


def _own_k_names(a: list[CaseResult], b: list[CaseResult]) -> list[str]:
    """``<family>@k`` for each family both runs score at their own top_k."""
    return [
        name
        for name in (f"{family}@k" for family in at_k_families())
        if any(c.metric(name) is not None for c in a) and any(c.metric(name) is not None for c in b)
    ]


def _compared_metrics(
    side_a: _Side, side_b: _Side, cases_a: dict[str, CaseResult], cases_b: dict[str, CaseResult]
) -> list[str]:
    """The per-case metrics both runs score (``cases_*``: each side's cases by id), plus
    ``<family>@k`` when a side is a sweep configuration or the runs serve different top_k."""
    names_a = {m for c in cases_a.values() for m in c.metrics}
    names_b = {m for c in cases_b.values() for m in c.metrics}
    metrics = ordered(names_a & names_b)
    top_ks = {c.top_k for c in side_a.cases} | {c.top_k for c in side_b.cases}
    if side_a.config or side_b.config or len(top_ks) > 1:  # what each serves, at its own top_k
        metrics = ordered([*metrics, *_own_k_names(side_a.cases, side_b.cases)])
    return metrics


def _pairs(
    common: list[str], cases_a: dict[str, CaseResult], cases_b: dict[str, CaseResult], metric: str, flag: bool
) -> list[tuple[str, float, float]]:
    """``(id, A's value, B's value)`` for the common cases where both runs have a value."""
    a = [_value(cases_a[i], metric, flag) for i in common]
    b = [_value(cases_b[i], metric, flag) for i in common]
    return [(i, x, y) for i, x, y in zip(common, a, b, strict=False) if x is not None and y is not None]


def _flips(
    pairs: list[tuple[str, float, float]], cases_b: dict[str, CaseResult], metric: str, flag: bool
) -> list[Flip]:
    """The cases whose value changed, for a binary metric (or the abstained flag)."""
    binary = all(v in (0.0, 1.0) for _, x, y in pairs for v in (x, y))
    if not pairs or not (binary or flag):
        return []
    return [Flip(id=i, question=cases_b[i].question, metric=metric, a=x, b=y) for i, x, y in pairs if x != y]


def _delta(
    metric: str,
    pairs: list[tuple[str, float, float]],
    confidence: float,
    n_bootstrap: int,
    n_permutations: int,
    seed: int,
) -> MetricDelta:
    """One metric's paired delta, CI and p-value (not yet Holm-adjusted)."""
    if not pairs:
        return MetricDelta(
            metric=metric,
            n=0,
            mean_a=None,
            mean_b=None,
            delta=None,
            ci_low=None,
            ci_high=None,
            p_value=None,
            p_adjusted=None,
            significant=False,
            lower_is_better=lower_is_better(metric),
        )
    xs = [x for _, x, _ in pairs]
    ys = [y for _, _, y in pairs]
    lo, hi = paired_bootstrap_ci(ys, xs, confidence=confidence, n_resamples=n_bootstrap, seed=seed)
    if len(pairs) == 1:
        lo = hi = None
    return MetricDelta(
        metric=metric,
        n=len(pairs),
        mean_a=sum(xs) / len(xs),
        mean_b=sum(ys) / len(ys),
        delta=sum(y - x for x, y in zip(xs, ys, strict=False)) / len(xs),
        ci_low=lo,
        ci_high=hi,
        p_value=paired_test(ys, xs, n_resamples=n_permutations, seed=seed),
        p_adjusted=None,
        significant=False,
        lower_is_better=lower_is_better(metric),
    )


def _adjust(rows: list[MetricDelta], alpha: float) -> None:
    """Holm-adjust the rows' p-values across the compared metrics; mark the significant ones."""
    adjusted = holm({row.metric: row.p_value for row in rows})
    for row in rows:
        row.p_adjusted = adjusted[row.metric]
        row.significant = significant(row.p_adjusted, alpha)


def compare_runs(
    run_a: RunResult | str | Path,
    run_b: RunResult | str | Path,
    confidence: float = 0.95,
    alpha: float = 0.05,
    n_bootstrap: int = 2000,
    n_permutations: int = 9999,
    seed: int = 0,
) -> Comparison:
    """Paired comparison of run B against run A (deltas are B - A). Each run is a
    :class:`RunResult` with its cases (in memory) or a run folder / configuration folder /
    ``cases.jsonl`` path."""
    side_a, side_b = _side(run_a, "A"), _side(run_b, "B")
    cases_a = {c.id: c for c in side_a.cases}
    cases_b = {c.id: c for c in side_b.cases}
    common = [i for i in cases_a if i in cases_b]
    metrics = _compared_metrics(side_a, side_b, cases_a, cases_b)
    rows: list[MetricDelta] = []
    flips: list[Flip] = []
    # the answer's abstained flag is checked for flips unless the runs score it as a metric already
    flag_only = [ABSTAINED] if ABSTAINED not in metrics else []
    for m in [*metrics, *flag_only]:
        is_flag = m == ABSTAINED and bool(flag_only)
        pairs = _pairs(common, cases_a, cases_b, m, is_flag)
        flips += _flips(pairs, cases_b, m, is_flag)
        if not is_flag:  # a flag, not a metric: flips only
            rows.append(_delta(m, pairs, confidence, n_bootstrap, n_permutations, seed))
    _adjust(rows, alpha)
    return Comparison(
        run_a=side_a.where,
        run_b=side_b.where,
        label_a=side_a.label,
        label_b=side_b.label,
        n_a=len(cases_a),
        n_b=len(cases_b),
        n_common=len(common),
        only_in_a=[i for i in cases_a if i not in cases_b],
        only_in_b=[i for i in cases_b if i not in cases_a],
        confidence=confidence,
        alpha=alpha,
        metrics=rows,
        flips=flips,
        stages=stage_moves(common, cases_a, cases_b),
    )


# ----------------------------------------------------------------------------- rendering


def _f(v: float | None, digits: int = 3, signed: bool = False) -> str:
    if v is None:
        return "–"
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def _p(v: float | None) -> str:
    if v is None:
        return "–"
    return "<0.001" if v < 0.001 else f"{v:.3f}"


def _row_cells(r: MetricDelta) -> list[str]:
    ci = f"[{_f(r.ci_low, signed=True)}, {_f(r.ci_high, signed=True)}]" if r.ci_low is not None else "–"
    mark = {"better": "better *", "worse": "worse *", "": ""}[r.verdict]
    name = r.metric + (" ↓" if r.lower_is_better else "")
    return [
        name,
        str(r.n),
        _f(r.mean_a),
        _f(r.mean_b),
        _f(r.delta, signed=True),
        ci,
        _p(r.p_value),
        _p(r.p_adjusted),
        mark,
    ]


def _headers(c: Comparison) -> list[str]:
    pct = f"{round(c.confidence * 100):g}% CI"
    return ["metric", "n", "A", "B", "Δ (B−A)", pct, "p", "p (Holm)", "sig"]


def _flip_groups(c: Comparison) -> list[tuple[str, str, list[Flip]]]:
    groups = []
    names = list(dict.fromkeys(f.metric for f in c.flips))
    for m in names:
        for d in ("1->0", "0->1"):
            fl = c.flips_of(m, d)
            if fl:
                groups.append((m, d, fl))
    return groups


def _flip_meaning(metric: str, direction: str) -> str:
    if metric == ABSTAINED:
        return "started abstaining" if direction == "0->1" else "stopped abstaining"
    return "regressed" if (direction == "1->0") != lower_is_better(metric) else "improved"


def render_terminal(comparison: Comparison, max_flips: int = 20) -> str:
    """An aligned plain-text table (plus case counts and flipped cases)."""
    c = comparison
    headers = _headers(c)
    rows = [_row_cells(r) for r in c.metrics]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(w) if i == 0 or i == len(cells) - 1 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=False))
        ).rstrip()

    out = [
        f"A: {c.label_a}  ({c.run_a})",
        f"B: {c.label_b}  ({c.run_b})",
        f"cases: {c.n_common} paired · only in A: {len(c.only_in_a)} · only in B: {len(c.only_in_b)}",
        "",
    ]
    out += [line(headers), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    out += [
        "",
        f"Δ = mean(B − A) over paired cases; CI: paired bootstrap; p: paired randomization test; "
        f"sig: Holm-adjusted p ≤ {c.alpha:g}; ↓ lower is better.",
    ]
    if c.only_in_a:
        out.append(f"only in A ({len(c.only_in_a)}): {_ids(c.only_in_a)}")
    if c.only_in_b:
        out.append(f"only in B ({len(c.only_in_b)}): {_ids(c.only_in_b)}")
    groups = _flip_groups(c)
    if groups:
        out += ["", "flipped cases:"]
        for m, d, fl in groups:
            out.append(f"  {m} {d} ({_flip_meaning(m, d)}): {len(fl)}")
            for f in fl[:max_flips]:
                out.append(f"    {f.id}  {_one_line(f.question, 90)}")
            if len(fl) > max_flips:
                out.append(f"    … {len(fl) - max_flips} more")
    else:
        out += ["", "flipped cases: none"]
    if c.stages is not None:
        out += ["", *stage_lines(c.stages)]
    return "\n".join(out) + "\n"


def _ids(ids: list[str], n: int = 20) -> str:
    return ", ".join(ids[:n]) + (f", … ({len(ids) - n} more)" if len(ids) > n else "")


def _one_line(text: str, n: int) -> str:
    s = " ".join(text.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _md(text: str) -> str:
    """Escape text for a Markdown table cell / list item (no HTML, no pipes, one line)."""
    s = " ".join(str(text).split())
    for ch in ("\\", "|", "*", "_", "`", "[", "]", "<", ">"):
        s = s.replace(ch, "\\" + ch)
    return s


def _code(text: str) -> str:
    """Inline code for an id (backslash escapes do not work inside code spans)."""
    return "`" + " ".join(str(text).split()).replace("`", "'") + "`"


def render_markdown(comparison: Comparison, max_flips: int = 50) -> str:
    """Markdown for a PR comment: a summary line, the metric table, and the flipped cases."""
    c = comparison
    better = [r.metric for r in c.metrics if r.verdict == "better"]
    worse = [r.metric for r in c.metrics if r.verdict == "worse"]
    out = [f"### ragsweep compare: {_code(c.label_b)} (B) vs {_code(c.label_a)} (A)", ""]
    summary = f"{c.n_common} paired cases"
    if c.only_in_a or c.only_in_b:
        summary += f" ({len(c.only_in_a)} only in A, {len(c.only_in_b)} only in B)"
    summary += ". Significantly better: " + (", ".join(f"`{m}`" for m in better) or "none")
    summary += "; significantly worse: " + (", ".join(f"`{m}`" for m in worse) or "none") + "."
    out += [summary, ""]
    headers = _headers(c)
    out.append("| " + " | ".join(headers) + " |")
    out.append("|" + "|".join([":---"] + ["---:"] * (len(headers) - 2) + [":---:"]) + "|")
    for r in c.metrics:
        cells = _row_cells(r)
        cells[0] = f"`{r.metric}`" + (" ↓" if r.lower_is_better else "")
        cells[-1] = {"better": "✅ better", "worse": "❌ worse", "": ""}[r.verdict]
        if r.verdict:
            cells[4] = f"**{cells[4]}**"
        out.append("| " + " | ".join(cells) + " |")
    out += [
        "",
        f"Δ = mean(B − A) over paired cases · {round(c.confidence * 100):g}% paired bootstrap CI · "
        f"p: paired randomization test · Holm-adjusted across {len(c.metrics)} metrics, α = {c.alpha:g} · "
        "↓ lower is better.",
        "",
    ]
    out.append(f"A: {_code(c.run_a)}  ")
    out.append(f"B: {_code(c.run_b)}")
    if c.only_in_a or c.only_in_b:
        out += [
            "",
            f"Cases only in A: {_md(_ids(c.only_in_a)) or 'none'}  ",
            f"Cases only in B: {_md(_ids(c.only_in_b)) or 'none'}",
        ]
    groups = _flip_groups(c)
    out += ["", f"#### Flipped cases ({len({f.id for f in c.flips})} cases)" if groups else "#### Flipped cases: none"]
    for m, d, fl in groups:
        out += ["", f"<details><summary><code>{m}</code> {d} ({_flip_meaning(m, d)}): {len(fl)}</summary>", ""]
        out += [f"- {_code(f.id)} {_md(_one_line(f.question, 160))}" for f in fl[:max_flips]]
        if len(fl) > max_flips:
            out.append(f"- … {len(fl) - max_flips} more")
        out += ["", "</details>"]
    if c.stages is not None:
        out += ["", *stage_markdown(c.stages, {i: _code(i) for m in c.stages.moves for i in m.ids})]
    return "\n".join(out) + "\n"


def run_compare_cli(args) -> int:
    """``args.run_a``, ``args.run_b``, optional ``args.markdown`` and ``args.json`` (paths to also write the
    comparison to, as Markdown and as JSON: every case id of every flip and stage move)."""
    outputs = {
        option: Path(path)
        for option, path in (("--markdown", getattr(args, "markdown", None)), ("--json", getattr(args, "json", None)))
        if path
    }
    try:
        for option, path in outputs.items():  # before the comparison: a file that cannot be written is known now
            check_writable(path, option)
        comparison = compare_runs(args.run_a, args.run_b)
    except (RunFolderError, RunError) as err:
        print(f"ragsweep compare: error: {err}", file=sys.stderr)
        return 2
    print(render_terminal(comparison), end="")
    for option, path in outputs.items():
        text = render_markdown(comparison) if option == "--markdown" else comparison.model_dump_json(indent=2) + "\n"
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as err:
            print(f"ragsweep compare: error: {option} {path}: cannot write it: {err}", file=sys.stderr)
            return 2
        print(f"{'Markdown' if option == '--markdown' else 'JSON'} written to {path}")
    return 0


__all__ = ["Comparison", "Flip", "MetricDelta", "compare_runs", "render_markdown", "render_terminal", "run_compare_cli"]
