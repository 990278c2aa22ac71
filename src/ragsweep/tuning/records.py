"""What ``ragsweep tune`` writes: ``tune.json`` (:class:`TuneReport`), one :class:`TrialRecord` per
Optuna trial and the honest choice (:class:`TuneBest`): chosen on dev, reported on test.

Read by the terminal table (:mod:`ragsweep.tuning.table`), the HTML report and MLflow; the study itself
(every trial's parameters and values) is Optuna's SQLite storage beside it, ``study.db``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from ragsweep.pipeline.scalars import Scalar

TrialState = Literal["complete", "pruned", "failed"]


class TrialRecord(BaseModel):
    """One trial: the configuration Optuna proposed, what became of it, and what it cost."""

    number: int  # Optuna's trial number (0-based, in the order trials started)
    config_id: str  # the id sweep gives the same configuration (its cached records are shared)
    params: dict[str, Scalar]  # the pipeline overrides: the names --set and --write-best take
    state: TrialState
    values: dict[str, float | None] = Field(default_factory=dict)  # objective -> its dev value (None unless complete)
    cases_evaluated: int = 0  # dev cases this trial queried (fewer than all of them when pruned)
    seconds: float = 0.0
    cost: float | None = None  # dollars of answer/judge/embedding calls; None where no price is known
    reason: str | None = None  # why it failed, or the step it was pruned at

    @model_validator(mode="after")
    def _valued_only_when_complete(self) -> TrialRecord:
        # a pruned trial's value in Optuna is its last reported case's: it has none over the dev cases
        if self.state != "complete":
            self.values = dict.fromkeys(self.values)
        return self


class PairedVerdict(BaseModel):
    """The chosen configuration against the baseline on the test cases, paired by case at equal depth."""

    metric: str
    difference: float | None = None  # mean(chosen - baseline) over the cases both have a value of
    p_value: float | None = None
    significant: bool | None = None


class TuneBest(BaseModel):
    """The best trial on the main objective, chosen on dev and scored on test."""

    trial: int
    config_id: str
    params: dict[str, Scalar]
    dev: dict[str, float | None] = Field(default_factory=dict)
    dev_intervals: dict[str, tuple[float, float]] = Field(default_factory=dict)  # 95% bootstrap CI on dev
    test: dict[str, float | None] = Field(default_factory=dict)  # empty where the dataset has no test split
    test_intervals: dict[str, tuple[float, float]] = Field(default_factory=dict)  # 95% bootstrap CI
    baseline: dict[str, float | None] = Field(default_factory=dict)  # the base pipeline on the same test cases
    paired: PairedVerdict | None = None
    trials_tried: int  # a search that tries more finds luckier winners on dev: read dev next to test


class TuneReport(BaseModel):
    """``tune.json``: the study's trials, its best one, its Pareto front and each knob's importance."""

    dataset: str
    space: dict[str, object]  # knob -> its choices or its range, as the space file gives it
    objectives: list[str]
    directions: dict[str, Literal["higher", "lower"]]
    sampler: str
    seed: int | None = None
    prune: bool = False
    n_trials: int
    space_size: int | None = None  # configurations in the space; None where a range is continuous
    dev_cases: int
    cases_evaluated: int  # dev cases queried over all trials
    cases_possible: int  # trials x dev cases: what the same trials would have cost without pruning
    best: TuneBest | None = None
    pareto: list[int] = Field(default_factory=list)  # trial numbers on the Pareto front (multi-objective)
    trials: list[TrialRecord] = Field(default_factory=list)
    importance: dict[str, float] = Field(default_factory=dict)  # knob -> share (fANOVA), sums to 1


class TuneSettings(BaseModel):
    """What a tune asks beyond a sweep's settings: the space, the trials, the sampler, pruning and budgets."""

    space: str
    trials: int
    objectives: list[str] | None = None  # None: the space file's
    sampler: str = "tpe"
    seed: int | None = None
    prune: bool = False
    max_cost: float | None = None  # dollars of answer calls over the study
    max_calls: int | None = None  # LLM calls over the study
