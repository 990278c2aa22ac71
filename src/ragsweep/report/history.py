"""A watched folder's history (``ragsweep watch``): one :class:`Update` per evaluation in
``history.jsonl`` beside the run folders, and report.html's section drawing it over time."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from ragsweep.evaluation.records import RunResult
from ragsweep.report import svg
from ragsweep.report.svg import esc

HISTORY = "history.jsonl"
SHOWN_UPDATES = 20


class Change(BaseModel):
    """What differs between two looks at the documents folder."""

    added: list[str] = Field(default_factory=list)
    modified: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)

    def lines(self) -> list[str]:
        return [f"{name} {what}" for what in ("added", "modified", "deleted") for name in getattr(self, what)]

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.deleted)


class MetricMove(BaseModel):
    metric: str
    before: float | None
    after: float | None
    ci_low: float | None = None  # paired 95% CI of (after - before) over the cases scored in both
    ci_high: float | None = None

    def shown(self) -> str:
        def f(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.3f}"

        ci = "" if self.ci_low is None or self.ci_high is None else f" [{self.ci_low:+.3f}, {self.ci_high:+.3f}]"
        return f"{self.metric} {f(self.before)} -> {f(self.after)}{ci}"


class Update(BaseModel):
    """One evaluation of the folder: a line of history.jsonl."""

    generation: int
    at: str
    run: str
    seconds: float
    stage_seconds: dict[str, float] = Field(default_factory=dict)  # the evaluation's stages (its manifest's)
    change: Change = Field(default_factory=Change)
    cases_changed: list[str] = Field(default_factory=list)
    hit_to_miss: list[str] = Field(default_factory=list)
    miss_to_hit: list[str] = Field(default_factory=list)
    now_unlocated: list[str] = Field(default_factory=list)  # evidence in no parsed document now: left out
    metrics: dict[str, float | None] = Field(default_factory=dict)
    moves: list[MetricMove] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)


def read_history(folder: Path) -> list[Update]:
    """The updates of a watch folder, in order; a line that does not parse (a write cut short) is skipped."""
    path = folder / HISTORY
    updates = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        try:
            updates.append(Update.model_validate(json.loads(line)))
        except (ValueError, ValidationError):
            continue
    return updates


def history_html(run: RunResult) -> str | None:
    """The watched metrics at each evaluation of the folder, and the last updates; None outside a watch."""
    updates = read_history(Path(run.run_dir).parent) if run.run_dir else []
    if not updates:
        return None
    names = list(dict.fromkeys(m for u in updates for m in u.metrics))
    series = {m: [(u.metrics.get(m), None, None) for u in updates] for m in names}
    chart = svg.line_chart([str(u.generation) for u in updates], series, "watched metrics at each evaluation",
                           x_title="evaluation of the folder", y_title="mean over cases")  # fmt: skip
    rows = "".join(
        f"<tr><td>{u.generation}</td><td>{esc(u.at)}</td><td>{esc('; '.join(u.change.lines()) or '(start)')}</td>"
        f"<td>{len(u.cases_changed)}</td><td>{esc(', '.join(u.hit_to_miss[:5]))}</td></tr>"
        for u in reversed(updates[-SHOWN_UPDATES:])
    )
    table = (
        "<table><tr><th>evaluation</th><th>at</th><th>change</th><th>cases changed</th><th>hit -> miss</th></tr>"
        f"{rows}</table>"
    )
    return chart + table
