"""The options every run is asked with: each field a command-line option and a keyword of the Python API,
declared once. Only the interfaces hold them: :mod:`ragsweep.commands.inputs` turns them into the objects
a run takes (:mod:`ragsweep.evaluation.settings`)."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from ragsweep.core.starter import DEFAULT_PIPELINE
from ragsweep.datasets.schema import UNLOCATED_MODES, UnlocatedMode
from ragsweep.evaluation.settings import AnswerSettings, ParseSettings, option
from ragsweep.execution.registry import EXECUTORS, ExecutorSettings


class DocumentOptions(ParseSettings):
    """How a documents folder is read (index, retrieve, validate --parse, eval, sweep, generate and the
    API): the options are the parse settings, declared once there."""


class RunInputs(DocumentOptions):
    """What every run (eval, sweep, the Python API) starts from, and where it goes."""

    pipeline: str = option(
        DEFAULT_PIPELINE,
        "pipeline YAML (Pathway syntax, or your own app.yaml); where ./pipelines/default.yaml does not exist, "
        "the default is the one ragsweep ships",
    )
    overrides: dict[str, Any] = option(
        help="override a $variable of the pipeline", flag="--set", metavar="NAME=VALUE", parse="assignments",
        default_factory=dict,
    )  # fmt: skip
    dataset: str = option(..., "the dataset folder")
    split: str | None = option(None, "evaluate one split only", choices=("dev", "test"))
    limit: int | None = option(None, "only the first N cases", ge=1, metavar="N", what="a whole number of cases")
    sample: int | None = option(None, "a random sample of N cases, stratified by question type", ge=1, metavar="N")
    seed: int = option(0, "seed of --sample")
    validate_dataset: bool = option(
        True, "evaluate even when `ragsweep validate` finds problems", alias="validate", flag="--no-validate"
    )
    unlocated: UnlocatedMode = option(
        "exclude", "a case whose evidence occurs in no parsed document (the label cannot be found in the text the "
        "index holds): exclude leaves it out of the retrieval metrics and names it; zero scores it 0 on them, as a "
        "retrieval failure", choices=UNLOCATED_MODES, metavar="MODE",
    )  # fmt: skip
    budgets: list[int] = option(
        help="context budgets in tokens to score hit_rate and recall at, e.g. 500,1500 (recall@1500tok: over the "
        "deepest served list's chunks that fit in 1500 tokens, so chunk sizes compare at equal context)",
        parse="budgets", metavar="N,N", default_factory=list,
    )  # fmt: skip
    fresh_retrieval: bool = option(
        False, "ask Pathway every query again instead of reusing the lists it served before for the same corpus, "
        "index definition and code (the served-list cache; also RAGSWEEP_SERVED_CACHE=0)",
    )  # fmt: skip
    executor: str = option(
        "local", "where the index work runs: local (this process) or ray (parse-cached documents indexed and "
        "queried as Ray tasks, a shard of cases each; the driver writes the run folder)",
        choices=EXECUTORS.keys(),  # a live view: an executor registered later is a choice too
    )  # fmt: skip
    ray_address: str | None = option(
        None, "the Ray cluster of --executor ray (host:port, or auto; default: a local one for this run)",
        metavar="ADDR",
    )  # fmt: skip
    out: str = option("runs", "where run folders go")
    name: str | None = option(None, "run folder name (default: timestamp + dataset)")
    resume: str | None = option(None, "finish an interrupted run (a run folder, or the latest)", const="latest")
    progress: bool = True

    @field_validator("executor")
    @classmethod
    def _registered(cls, name: str) -> str:
        if name not in EXECUTORS:
            raise ValueError(f"no such executor: {name} (one of: {', '.join(EXECUTORS)})")
        return name

    @property
    def executor_settings(self) -> ExecutorSettings:
        """Where the run's index work runs, as the executor reads it."""
        return ExecutorSettings(name=self.executor, ray_address=self.ray_address)


class AnswerOptions(AnswerSettings):
    """How answers are produced, judged and scored: the options are the answer settings, declared once there."""
