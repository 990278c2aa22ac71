"""What a run needs to know besides its configuration and cases, as objects: how to answer and score,
which cases were selected, the depths and budgets, the unlocated mode.

The command line and the Python API build these from their options (``ragsweep.commands``); nothing
below the command modules sees an options object.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ragsweep.datasets.schema import UnlocatedMode


class AnswerSettings(BaseModel):
    """How answers are produced, judged and scored."""

    model_config = ConfigDict(extra="forbid")

    use_llm: bool = False  # answer with the configured endpoint (else extractive, or the dataset's given answers)
    judge: bool = False
    ragas_llm: bool = False
    ragas_nonllm: bool = True  # ragas' string similarity, BLEU and ROUGE on the answers
    judge_replicates: int = 1
    judge_temperature: float | None = None  # None: the pipeline's $llm_temperature
    judge_probe: int = 3  # cases fed to the judge with known answers before the run (0: none)
    max_failure_rate: float | None = None

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
    """How the documents folder is parsed."""

    model_config = ConfigDict(extra="forbid")

    workers: int | None = None
    follow_symlinks: bool = False


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
