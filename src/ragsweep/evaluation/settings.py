"""What a run needs to know besides its configuration and cases, as objects: how to answer and score,
which cases were selected, the depths and budgets, the unlocated mode.

The command line and the Python API build these from their options (``ragsweep.commands``); nothing
below the command modules sees an options object. :class:`AnswerSettings` is declared once, with each
field's option (:func:`option`): the answer options are these settings.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticUndefined

from ragsweep.datasets.schema import UnlocatedMode


def option(default: Any = None, help: str = "", *, alias: str | None = None, **cli: Any) -> Any:
    """A field that is also a command-line option and a keyword of the Python API: defined once.

    ``help`` is the option's help text (a field without it is not on the command line).
    ``alias``: the API keyword when it differs from the field's name (``llm`` for ``use_llm``).
    ``cli``: how the command line spells it: ``flag`` (default ``--field-name``), ``metavar``,
    ``what`` (what a number is, for the range message), ``choices``, ``const`` (an optional
    value), ``parse`` (``depths``, ``append``, ``assignments``, ``floors``). Range constraints
    (``ge``, ``le``) are pydantic's and the command line's alike.
    """
    constraints = {k: cli.pop(k) for k in ("ge", "le", "default_factory") if k in cli}
    if "default_factory" in constraints:
        default = PydanticUndefined
    return Field(default, description=help or None, alias=alias, json_schema_extra=cli or None, **constraints)


class AnswerSettings(BaseModel):
    """How answers are produced, judged and scored: the same for eval, sweep and the Python API (each field
    an option of both commands and a keyword of the API, and what the run takes)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    use_llm: bool = option(False, "answer with the configured OpenAI-compatible endpoint", alias="llm", flag="--llm")
    judge: bool = option(False, "LLM judge of answer correctness")
    ragas_llm: bool = option(False, "ragas LLM metrics on the same endpoint")
    # ragas' string similarity, BLEU and ROUGE on the answers (the API leaves them out by default: ragas' import is slow)
    ragas_nonllm: bool = option(True, alias="ragas")
    judge_replicates: int = option(
        1, "compute each LLM metric (--judge, --ragas-llm) N times per case (each its own request and cache entry); "
        "the report gives self-agreement, verdict flips and the judge-noise share of the CI", ge=1, metavar="N",
    )  # fmt: skip
    judge_temperature: float | None = option(
        None, "the sampling temperature of the LLM metrics (judge, ragas LLM); default: the pipeline's "
        "$llm_temperature", ge=0, le=2, metavar="T", what="a temperature",
    )  # fmt: skip
    judge_probe: int = option(
        3, "with --judge, before the run: feed the judge known-correct, known-wrong and \"I don't know\" answers "
        "for N cases and report what it got right (0: off)", ge=0, metavar="N",
    )  # fmt: skip
    max_failure_rate: float | None = option(
        None, "CI gate: fail when an LLM metric (judge, ragas LLM) failed on more than this share of its cases, "
        "or the app's parser raised on more than this share of the documents (none allowed without it), e.g. 0.05",
        ge=0, le=1, metavar="R", what="a share",
    )  # fmt: skip

    @property
    def llm_metrics(self) -> bool:
        return self.judge or self.ragas_llm


class Selection(BaseModel):
    """Where the cases came from and which of them were taken: recorded in the state and the manifest."""

    model_config = ConfigDict(extra="forbid")

    dataset: str  # the dataset folder, or what the caller's own cases were given as
    split: str | None = None
    limit: int | None = None
    sample: int | None = None
    seed: int = 0


class ParseSettings(BaseModel):
    """How the documents folder is parsed: the same for every command that parses one (index,
    retrieve, validate --parse, eval, sweep, generate) and for the Python API."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    workers: int | None = option(
        None, "processes parsing the documents the parse cache does not hold (default: the number of cores, at most "
        "one per 8 documents; 1: no worker process)", ge=1, metavar="N", what="a whole number of processes",
    )  # fmt: skip
    follow_symlinks: bool = option(
        False, "index the targets of symlinks that lead outside the documents folder (by default each is "
        "skipped with a warning naming it)",
    )  # fmt: skip


class RunSettings(BaseModel):
    """One evaluation: everything :func:`ragsweep.evaluation.run.evaluate` needs beyond config and cases."""

    model_config = ConfigDict(extra="forbid")

    selection: Selection
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    parse: ParseSettings = Field(default_factory=ParseSettings)
    ks: list[int] = Field(default_factory=lambda: [1, 3, 5, 10])
    budgets: list[int] = Field(default_factory=list)
    unlocated: UnlocatedMode = "exclude"
    floors: dict[str, float] = Field(default_factory=dict)
    progress: bool = True
    fresh_retrieval: bool = False
    resume: bool = False  # the run folder holds an earlier process's cases: keep them


class SweepSettings(BaseModel):
    """One sweep: what :func:`ragsweep.evaluation.sweep.run_sweep` needs beyond the grid and the cases."""

    model_config = ConfigDict(extra="forbid")

    selection: Selection
    grid: str  # the grid file (recorded in the state)
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    parse: ParseSettings = Field(default_factory=ParseSettings)
    answers: bool = False  # answer and score the answers as eval does; retrieval only otherwise
    unlocated: UnlocatedMode = "exclude"
    progress: bool = True
    fresh_retrieval: bool = False
