"""What every run starts from: the options naming a pipeline and a dataset, and the cases they select."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ragsweep.datasets.schema import Case, Dataset
from ragsweep.evaluation.runfolder import RunError
from ragsweep.pipeline.config import PipelineConfig


class RunInputs(BaseModel):
    """What every run (eval, sweep, the Python API) starts from, and where it goes."""

    pipeline: str = "pipelines/default.yaml"
    overrides: dict[str, Any] = Field(default_factory=dict)
    dataset: str
    split: str | None = None
    limit: int | None = Field(default=None, ge=1)  # the first N cases
    sample: int | None = Field(default=None, ge=1)  # a random sample of N cases, stratified by question type
    seed: int = 0
    validate_dataset: bool = True  # refuse a dataset that `ragsweep validate` rejects
    workers: int | None = Field(default=None, ge=1)  # Docling worker processes (None: one per core)
    fresh_retrieval: bool = False  # ask Pathway every query, not the served-list cache
    out: str = "runs"
    name: str | None = None
    resume: str | None = None
    progress: bool = True


def stratified_sample(cases: Sequence[Case], n: int, seed: int) -> list[Case]:
    """``n`` cases drawn at random, each question type in proportion to its share
    (largest remainders), reproducible for a seed; the dataset's order is kept."""
    import random

    if n >= len(cases):
        return list(cases)
    by_type: dict[str, list[int]] = defaultdict(list)
    for i, case in enumerate(cases):
        by_type[case.type or "(none)"].append(i)
    quotas = {t: n * len(ix) / len(cases) for t, ix in by_type.items()}
    take = {t: int(q) for t, q in quotas.items()}
    for t in sorted(quotas, key=lambda t: (-(quotas[t] - take[t]), t))[: n - sum(take.values())]:
        take[t] += 1
    rng = random.Random(seed)
    chosen: set[int] = set()
    for t in sorted(by_type):
        chosen.update(rng.sample(by_type[t], take[t]))
    return [cases[i] for i in sorted(chosen)]


def load_inputs(inputs: RunInputs) -> tuple[PipelineConfig, Dataset, list[Case]]:
    """The pipeline config, the dataset (validated first) and the cases to evaluate."""
    from ragsweep.datasets.loader import DatasetError, load_dataset
    from ragsweep.datasets.pathway_limits import unscopable_reason
    from ragsweep.pipeline.config import ConfigError

    try:
        config = PipelineConfig.load(inputs.pipeline, inputs.overrides)
    except ConfigError as err:
        raise RunError(str(err)) from err
    if inputs.validate_dataset and Path(inputs.dataset).is_dir():
        from ragsweep.datasets.validate import validate_dataset

        problems = validate_dataset(inputs.dataset)
        if problems:
            listed = "\n  ".join(str(p) for p in problems[:30])
            more = f"\n  ... and {len(problems) - 30} more" if len(problems) > 30 else ""
            raise RunError(
                f"{inputs.dataset}: `ragsweep validate` finds {len(problems)} problem(s):\n  {listed}{more}\n"
                "fix them, or run with --no-validate to evaluate anyway"
            )
    try:
        dataset = load_dataset(inputs.dataset, split=inputs.split)
    except DatasetError as err:
        raise RunError(str(err)) from err
    cases = []
    for case in dataset.cases:
        reason = next((r for d in case.doc_scope or [] if (r := unscopable_reason(d))), None)
        if reason:
            print(f"warning: case {case.id} skipped: {reason}", file=sys.stderr)
        else:
            cases.append(case)
    if inputs.sample:
        cases = stratified_sample(cases, inputs.sample, inputs.seed)
    if inputs.limit:
        cases = cases[: inputs.limit]
    if not cases:
        raise RunError(f"{inputs.dataset}: no case to evaluate (split={inputs.split}, limit={inputs.limit})")
    return config, dataset, cases


class AnswerOptions(BaseModel):
    """How answers are produced, judged and scored: the same for eval, sweep and the Python API."""

    use_llm: bool = False
    judge: bool = False
    ragas_llm: bool = False
    ragas_nonllm: bool = True  # ragas' string similarity, BLEU and ROUGE on the answers
    # the judge's trust: replicates per LLM-judged case, its own temperature (None: the pipeline's),
    # sanity probes on N cases before the run (0: none), failure-rate gate
    judge_replicates: int = Field(default=1, ge=1)
    judge_temperature: float | None = Field(default=None, ge=0, le=2)
    judge_probe: int = Field(default=3, ge=0)
    max_failure_rate: float | None = Field(default=None, ge=0, le=1)

    @property
    def llm_metrics(self) -> bool:
        return self.judge or self.ragas_llm
