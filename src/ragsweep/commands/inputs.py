"""The edge of every run: options (the command line's, the Python API's keywords) turned into the
objects the run takes: a :class:`PipelineConfig`, a :class:`Dataset` with its selected cases, and
the run's settings (:mod:`ragsweep.evaluation.settings`)."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragsweep.commands.options import AnswerOptions, DocumentOptions, RunInputs
from ragsweep.core.errors import ConfigError, RunError
from ragsweep.core.keys import digest
from ragsweep.datasets.loader import (
    DatasetError,
    Problem,
    case_to_json,
    load_dataset,
    relevance_from_settings,
    resolve_doc_ids,
)
from ragsweep.datasets.schema import Case, Dataset, DatasetSettings, UnlocatedMode, list_doc_ids
from ragsweep.evaluation.runfolder import file_hash
from ragsweep.evaluation.selection import select_cases
from ragsweep.evaluation.settings import AnswerSettings, ParseSettings, Selection
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.validate.dataset import oversized, validate_cases, validate_offsets
from ragsweep.validate.parsed import parsed_texts, validate_dataset

MAX_PROBLEMS_SHOWN = 30


def load_config(pipeline: str | Path | PipelineConfig, overrides: dict[str, Any] | None = None) -> PipelineConfig:
    """A pipeline YAML loaded (with ``overrides``), or a config given as an object, used as it is."""
    try:
        if isinstance(pipeline, PipelineConfig):
            return pipeline.with_overrides(overrides) if overrides else pipeline
        return PipelineConfig.load(pipeline, overrides)
    except ConfigError as err:
        raise RunError(str(err)) from None  # the message is the whole story: one exception, not two


def selection_of(inputs: RunInputs) -> Selection:
    return Selection(
        dataset=str(inputs.dataset), split=inputs.split, limit=inputs.limit, sample=inputs.sample, seed=inputs.seed
    )


def answer_settings(options: AnswerOptions) -> AnswerSettings:
    return AnswerSettings(**options.model_dump(include=set(AnswerSettings.model_fields)))


def parse_settings(options: DocumentOptions) -> ParseSettings:
    return ParseSettings(**options.model_dump(include=set(ParseSettings.model_fields)))


def load_inputs(inputs: RunInputs) -> tuple[PipelineConfig, Dataset, list[Case]]:
    """The pipeline config, the dataset folder (validated first) and the cases it selects."""
    config = load_config(inputs.pipeline, inputs.overrides)
    dataset = load_folder(inputs.dataset, inputs.split, validate=inputs.validate_dataset, unlocated=inputs.unlocated)
    return config, dataset, select_cases(dataset.cases, selection_of(inputs))


def load_folder(path: str | Path, split: str | None, *, validate: bool, unlocated: UnlocatedMode) -> Dataset:
    """A dataset folder, validated first (``validate``), with the run's unlocated mode."""
    if validate and Path(path).is_dir():
        refuse_problems(str(path), [str(p) for p in validate_dataset(path)], "run with --no-validate")
    try:
        dataset = load_dataset(path, split=split)
    except DatasetError as err:
        raise RunError(str(err)) from err
    refuse_oversized(str(path), dataset)
    dataset.relevance = dataset.relevance.model_copy(update={"unlocated": unlocated})
    return dataset


def refuse_oversized(where: str, dataset: Dataset) -> None:
    """A question or evidence span over the dataset's length limits is refused, validated or not: one such
    text costs memory out of all proportion to the corpus (a 5 MB question, gigabytes)."""
    for case in dataset.cases:
        for field, why in oversized(case, dataset.limits):
            raise RunError(f"{where}: case {case.id!r}: {field} is {why}: shorten it, or raise the limit")


def refuse_problems(where: str, problems: Sequence[str], way_out: str) -> None:
    if problems:
        listed = "\n  ".join(problems[:MAX_PROBLEMS_SHOWN])
        more = f"\n  ... and {len(problems) - MAX_PROBLEMS_SHOWN} more" if len(problems) > MAX_PROBLEMS_SHOWN else ""
        raise RunError(
            f"{where}: `ragsweep validate` finds {len(problems)} problem(s):\n  {listed}{more}\n"
            f"fix them, or {way_out} to evaluate anyway"
        )


def cases_dataset(
    cases: Sequence[Case], docs: str | Path, split: str | None, *, validate: bool, unlocated: UnlocatedMode
) -> Dataset:
    """A :class:`Dataset` of cases given as objects (the caller's own, or a cases file's) over a documents
    folder, checked as a dataset folder's are: each case's documents exist, references by file stem are
    resolved, evidence offsets match the parsed text. The caller's cases are not changed."""
    docs_dir = Path(docs)
    if not docs_dir.is_dir():
        raise RunError(f"{docs_dir}: documents folder not found")
    own = [copy.deepcopy(c) for c in cases]  # stems are resolved in place
    relevance, _ = relevance_from_settings(DatasetSettings(), own)
    doc_ids = list_doc_ids(docs_dir)
    if validate:
        problems = validate_cases(own, "cases", set(doc_ids), relevance.rule)
        if not doc_ids:
            problems.insert(0, Problem(str(docs_dir), None, None, "docs folder is empty"))
        if any(e.has_offsets for c in own for e in c.evidence):
            problems += validate_offsets(own, "cases", *parsed_texts(docs_dir))
        refuse_problems("cases", [str(p) for p in problems], "pass validate=False")
    resolve_problems = resolve_doc_ids(own, doc_ids, "cases")
    if resolve_problems:
        raise RunError("\n".join(str(p) for p in resolve_problems))
    if split is not None:
        own = [c for c in own if c.split == split]
    dataset = Dataset(
        name=docs_dir.name, root=docs_dir, docs_dir=docs_dir, cases=own,
        relevance=relevance.model_copy(update={"unlocated": unlocated}),
    )  # fmt: skip
    refuse_oversized("cases", dataset)
    return dataset


def dataset_hash(dataset: Dataset) -> str:
    """A dataset folder's cases file hash ("unknown" without one)."""
    cases_file = dataset.cases_file or dataset.root / "cases.jsonl"
    return file_hash(cases_file) if cases_file.is_file() else "unknown"


def cases_hash(cases: Sequence[Case]) -> str:
    """The hash of cases given as objects: that of a cases.jsonl holding them."""
    text = "".join(json.dumps(case_to_json(c), ensure_ascii=False) + "\n" for c in cases)
    return digest(text, 16)
