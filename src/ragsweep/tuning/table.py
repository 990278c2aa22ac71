"""The terminal table of a tune: its best trials on the main objective, then what the search cost and the
honest choice (dev next to test, against the baseline), and where each shown trial's cases were lost (lost@k,
as sweep's table shows it per configuration)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragsweep.report.funnel_view import lost_text
from ragsweep.report.runs import read_config
from ragsweep.tuning.records import TrialRecord, TuneReport

SHOWN = 10


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def best_trials(report: TuneReport, n: int = SHOWN) -> list[TrialRecord]:
    """The complete trials, best first on the main objective (its direction)."""
    main = report.objectives[0]
    done = [t for t in report.trials if t.state == "complete" and t.values[main] is not None]
    lower = report.directions[main] == "lower"
    return sorted(done, key=lambda t: (t.values[main] or 0.0) * (1 if lower else -1))[:n]


def lost_lines(folder: Path, shown: Sequence[TrialRecord]) -> list[str]:
    """``lost@k`` of each shown trial, from the result it wrote in ``folder`` (configs/<id>/result.json)."""
    rows = []
    for trial in shown:
        if (result := read_config(folder / "configs" / trial.config_id)) is not None and (d := result.diagnosis):
            rows.append(f"  {trial.number:>5} @{d.k}: {lost_text(d.headline())}")
    if not rows:
        return []
    return ["lost@k: where each trial's cases were lost at its top_k (found + each stage = its cases)", *rows]


def tune_table(report: TuneReport, folder: Path | None = None) -> str:
    """The table; with the run ``folder``, each shown trial's lost@k line too."""
    main = report.objectives[0]
    head = f"{'trial':>5}  " + "  ".join(f"{m:>12}" for m in report.objectives) + f"  {'cases':>5}  params"
    lines = [f"tune: {report.n_trials} trial(s), best on dev {main} ({report.directions[main]} is better)", head]
    top = best_trials(report)
    for t in top:
        values = "  ".join(f"{_fmt(t.values[m]):>12}" for m in report.objectives)
        params = ", ".join(f"{k}={v}" for k, v in sorted(t.params.items()))
        lines.append(f"{t.number:>5}  {values}  {t.cases_evaluated:>5}  {params}")
    if folder is not None:
        lines += lost_lines(folder, top)
    states = {s: sum(1 for t in report.trials if t.state == s) for s in ("complete", "pruned", "failed")}
    lines.append(
        f"trials: {states['complete']} complete, {states['pruned']} pruned, {states['failed']} failed; cases "
        f"evaluated {report.cases_evaluated} of {report.cases_possible} ({report.dev_cases} dev case(s) a trial)"
    )
    if (best := report.best) is not None:
        test = f", test {_fmt(best.test[main])}" if best.test else ""
        lines.append(f"chosen: trial {best.trial} of {best.trials_tried} tried: dev {_fmt(best.dev[main])}{test}")
        if best.paired is not None and best.paired.p_value is not None:
            lines.append(
                f"  vs the baseline on test ({main}, paired): difference {_fmt(best.paired.difference)}, "
                f"p = {best.paired.p_value:.3g}{' (significant)' if best.paired.significant else ''}"
            )
    if report.importance:
        shown = ", ".join(f"{k} {v:.2f}" for k, v in report.importance.items())
        lines.append(f"importance ({main}): {shown}")
    return "\n".join(lines)
