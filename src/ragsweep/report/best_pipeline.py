"""``ragsweep sweep --write-best FILE``: the user's own pipeline file with the chosen configuration's values
set (:func:`ragsweep.pipeline.yaml_edit.set_values`: every other line as it was) under a header comment
that names the sweep, the objective, what the choice was made on, and the verdict on the held-out cases
with its interval. ``ragsweep eval --pipeline FILE`` scores exactly what the sweep scored for it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ragsweep.core.errors import ConfigError
from ragsweep.evaluation.records import Aggregate, HoldoutVerdict, SweepResult
from ragsweep.metrics.registry import split_budget
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.scalars import Overrides
from ragsweep.pipeline.yaml_edit import check_values, set_values
from ragsweep.report.terminal import difference_text, verdict_warning

HEADER = "# ragsweep best:"  # every header line starts so: a file written again gets a new header, not two


def best_values(result: SweepResult, base_config: PipelineConfig, objective: str) -> Overrides:
    """The values the chosen configuration was scored with: the command line's ``--set`` and its grid point."""
    chosen = result.best_on(objective)
    if chosen is None:
        raise ConfigError(f"--write-best: no configuration has a value of {objective}: nothing was chosen")
    return {**base_config.overrides, **result.config(chosen).params}  # type: ignore[dict-item]


def _value_text(row: Aggregate, metric: str) -> str:
    value, (low, high) = row.metric(metric), row.interval(metric)
    shown = "n/a" if value is None else f"{value:.4f}"
    return shown + ("" if low is None or high is None else f" (95% CI [{low:.3f}, {high:.3f}])")


def _verdict_line(verdict: HoldoutVerdict | None, chosen: str, cases: int) -> str:
    """What the held-out cases say of the choice (or that there were none)."""
    if verdict is None or verdict.chosen != chosen:
        return f"no held-out split: chosen and reported on the same {cases} case(s)"
    row = verdict.configs[chosen]
    text = f"test split ({verdict.cases} cases): {verdict.objective} = {_value_text(row, verdict.objective)}"
    if verdict.chosen == verdict.baseline:
        return text + "; it is the baseline"
    if verdict.compared_with is None:
        return text + "; the baseline's pipeline at another depth: not tested"
    against = "at equal depth" if verdict.compared_on == "value" else "on the lift over chance"
    verdict_word = "significant" if verdict.significant else "not significant"
    return (
        text
        + f"; vs {verdict.compared_with} ({against}): {difference_text(verdict)}, p = {verdict.p_value} ({verdict_word})"
    )


def _budget_note(objective: str) -> str:
    """What a context-budget objective does not say about the depth written."""
    _, tokens = split_budget(objective) or ("", 0)
    return (
        f"note: {objective} is over the chunks that fit in {tokens} tokens whatever the top_k; the app serves its "
        "top_k chunks, so its top_k is the cheapest of those that tie, not the depth that fills the budget"
    )


def header_lines(result: SweepResult, objective: str, values: Overrides, source: str) -> list[str]:
    """The header comment of a written best pipeline."""
    chosen = result.best_on(objective) or ""
    row = result.config(chosen)
    on = result.chosen_on(objective)
    split = f" on the {result.choice_split} split" if result.choice_split else ""
    measure = "lift over chance (value - chance at its own top_k)" if on == "lift" else "its value"
    lift = row.lift(objective)
    cases = (result.manifest.dataset.cases if result.manifest.dataset else None) or 0
    tie = result.tied(objective)
    lines = [
        f"sweep {Path(result.sweep_dir or '.').name}: {len(result.configs)} configurations, "
        f"dataset {result.manifest.dataset.path if result.manifest.dataset else '?'}",
        f"objective {objective}, chosen{split} on {measure}: {chosen}"
        + (f" (tied with {len(tie) - 1} others: the cheapest)" if len(tie) > 1 else ""),
        f"chosen on: {objective} = {_value_text(row, objective)}"
        + ("" if lift is None else f", lift {lift:+.4f} over chance {row.chance_on(objective) or 0:.4f}"),
        _verdict_line(result.verdict, chosen, cases),
        *([warning] if result.verdict and (warning := verdict_warning(result.verdict)) else []),
        *([_budget_note(objective)] if split_budget(objective) else []),
        "set here: " + ", ".join(f"{k}={v!r}" for k, v in values.items()) + f"; every other line as in {source}",
    ]
    return [f"{HEADER} {line}" for line in lines]


def check_best_target(path: str | Path, base_config: PipelineConfig, force: bool = False) -> None:
    """Refuse, before any work, a ``--write-best`` file that could not be written, or that is the input
    pipeline file (without ``force``): a sweep of hours must not end on it."""
    out = Path(path)
    if out.is_dir():
        raise ConfigError(f"--write-best {out}: is a folder; give a file name")
    if out.exists() and out.resolve() == Path(base_config.path).resolve() and not force:
        raise ConfigError(f"--write-best {out}: is the input pipeline file; --force writes over it")
    folder = out.absolute().parent
    if not folder.is_dir():
        raise ConfigError(f"--write-best {out}: no folder {str(folder)!r} to write it into")
    try:  # what a write will meet: a read-only folder or file system, no permission, a full disk
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".ragsweep-write-best-"):
            pass
        if out.exists():
            with out.open("r+b"):
                pass
    except OSError as err:
        raise ConfigError(f"--write-best {out}: cannot be written: {err.strerror or err}") from err


def write_best(
    path: str | Path, result: SweepResult, base_config: PipelineConfig, objective: str | None = None
) -> Path:
    """``path``: ``base_config``'s file with the best configuration on ``objective`` (the first) set."""
    objective = objective or result.objectives[0]
    values = best_values(result, base_config, objective)
    text = set_values(base_config, values)
    kept = text.split("\n")
    while kept and kept[0].startswith(HEADER):  # the header of an earlier --write-best of this file
        kept.pop(0)
    out = Path(path)
    header = header_lines(result, objective, values, base_config.path)
    try:
        out.write_text("\n".join([*header, *kept]))
    except OSError as err:
        raise ConfigError(f"--write-best {out}: {err.strerror or err}") from err
    check_values(out, values)
    return out
