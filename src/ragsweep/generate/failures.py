"""``--from-failures RUN_DIR``: the failed cases of an eval run, as seeds for new cases.

A case of the run's ``cases.jsonl`` failed when

- answerable: no served chunk was relevant (``retrieval_miss``), the LLM judge said the
  answer is wrong (``judged_wrong``), the system abstained (``abstained``) or answering
  failed (``answer_error``);
- unanswerable: the system answered instead of abstaining (``answered_unanswerable``).

Each failed case seeds new cases of the *same question type* (its ``type``, e.g. a CUAD
category) about *other documents* than its ``doc_scope``: the failed question is asked of
the pipeline's store over the other documents and the best unused chunk becomes the
passage (an unanswerable seed takes a passage of another document, drawn like any
other); the proposal prompt shows the failed question as the example of the kind to ask.
The new cases then go through the same verification as any generated case.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, ValidatorFunctionWrapHandler, field_validator

from ragsweep.evaluation.records import CaseResult
from ragsweep.report.runs import RunFolderError, read_case_results, read_json


class FailuresError(Exception):
    pass


class CorpusSource(BaseModel):
    docs_dir: str | None = None


class DatasetSource(BaseModel):
    path: str | None = None


class _Lenient(BaseModel):
    """Parts that are models themselves; one of another shape (an older or foreign manifest)
    is read as nothing known, never an error."""

    @field_validator("*", mode="wrap")
    @classmethod
    def _or_nothing(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return handler({})


class RunSources(_Lenient):
    """Where an eval run's documents and dataset were: the parts of its manifest (report.json's
    ``manifest``, written by ``ragsweep eval``) a generation from its failures reads."""

    corpus: CorpusSource = Field(default_factory=CorpusSource)
    dataset: DatasetSource = Field(default_factory=DatasetSource)

    def docs_dir(self) -> str | None:
        """The documents folder the run read: its corpus's, else its dataset's ``docs``."""
        if self.corpus.docs_dir:
            return self.corpus.docs_dir
        return str(Path(self.dataset.path) / "docs") if self.dataset.path else None


class _Report(_Lenient):
    """A run's report.json, as far as a generation reads it."""

    manifest: RunSources = Field(default_factory=RunSources)


class Seed(BaseModel):
    """A failed case of a run, the seed of new cases. As the hint of a grown candidate it also
    names the ``run``; the first five fields, in this order, are the ``from_failure`` a grown
    case records (:data:`FROM_FAILURE`)."""

    run: str | None = None
    id: str
    question: str
    type: str | None = None
    failure: str
    doc_scope: list[str] | None = None
    unanswerable: bool = False
    relevant_docs: list[str] = Field(default_factory=list)

    @property
    def kind(self) -> str:
        """The kind of case it grows."""
        if self.unanswerable:
            return "unanswerable"
        return "multi_hop" if self.type == "multi_hop" else "single_hop"


FROM_FAILURE = {"run", "id", "question", "type", "failure"}


def read_run(run_dir: str | Path) -> tuple[list[CaseResult], RunSources]:
    """The run's cases (a ``cases.jsonl`` of any layout) and where its documents were (from its
    ``report.json``; nothing known when absent or unreadable)."""
    root = Path(run_dir)
    cases_file = root / "cases.jsonl"
    if not cases_file.is_file():
        raise FailuresError(f"{root}: no cases.jsonl (is it an eval run folder?)")
    try:
        cases = read_case_results(cases_file)
    except RunFolderError as err:
        raise FailuresError(str(err)) from None
    report = root / "report.json"
    try:
        data = read_json(report) if report.is_file() else {}
    except RunFolderError:
        data = {}
    return cases, _Report.model_validate(data).manifest if isinstance(data, dict) else RunSources()


def failure_reason(case: CaseResult) -> str | None:
    """Why a case counts as failed, or None when it passed."""
    answer = case.answer
    if case.unanswerable:
        if answer is not None and not answer.abstained and not answer.error:
            return "answered_unanswerable"
        return None
    if case.hits and not any(h.relevant for h in case.hits):
        return "retrieval_miss"
    if case.judge is not None and case.judge.is_correct is False:
        return "judged_wrong"
    if answer is not None and answer.error:
        return "answer_error"
    if answer is not None and answer.abstained:
        return "abstained"
    return None


def failed_seeds(cases: list[CaseResult]) -> list[Seed]:
    """The failed cases, in the run's order, with ``failure`` set to the reason."""
    out = []
    for case in cases:
        reason = failure_reason(case)
        if reason:
            out.append(
                Seed(
                    id=case.id,
                    question=case.question,
                    type=case.type,
                    doc_scope=case.doc_scope,
                    unanswerable=case.unanswerable,
                    failure=reason,
                    relevant_docs=sorted({h.doc_id for h in case.hits if h.relevant}),
                )
            )
    return out
