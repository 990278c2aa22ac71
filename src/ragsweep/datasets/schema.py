"""The canonical evaluation case and dataset models.

A dataset on disk is a folder::

    <dataset>/
        docs/          the documents (doc ids are paths relative to docs/, '/'-separated)
        cases.jsonl    one canonical :class:`Case` per line
        README.md      provenance and licence
        dataset.yaml   optional settings, e.g. ``relevance: evidence_offsets``

Canonical JSONL example (one line)::

    {"id": "cuad-0001", "question": "Who are the parties?", "type": "Parties",
     "doc_scope": ["a.pdf"], "relevant_ids": ["a.pdf"],
     "evidence": [{"text": "ACME Corp.", "doc_id": "a.pdf"}],
     "reference_answer": "ACME Corp.; Foo Inc.", "unanswerable": false, "split": "dev"}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

RelevanceRule = Literal["doc_id", "evidence_offsets", "word_overlap"]
RELEVANCE_RULES: tuple[str, ...] = ("doc_id", "evidence_offsets", "word_overlap")


class RelevantId(BaseModel):
    """A relevant document, optionally graded (grade >= 1 is relevant, 0 = judged not relevant)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    grade: int = Field(default=1, ge=0)


class Evidence(BaseModel):
    """A text span a relevant chunk must cover, optionally with the document it comes from."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)
    doc_id: str | None = None


class Case(BaseModel):
    """One evaluation case (question + what counts as relevant + reference answer)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    type: str | None = None
    doc_scope: list[str] | None = None
    relevant_ids: list[RelevantId] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    reference_answer: str | None = None
    expected_facts: list[str] = Field(default_factory=list)
    unanswerable: bool = False
    sub_questions: list[str] = Field(default_factory=list)
    split: Literal["dev", "test"] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    _line: int | None = PrivateAttr(default=None)  # line of the file it was read from

    @field_validator("relevant_ids", mode="before")
    @classmethod
    def _norm_relevant_ids(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, (str, dict)):
            value = [value]
        if isinstance(value, list):
            return [{"id": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("evidence", mode="before")
    @classmethod
    def _norm_evidence(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, (str, dict)):
            value = [value]
        if isinstance(value, list):
            return [{"text": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("expected_facts", "sub_questions", mode="before")
    @classmethod
    def _str_to_list(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        return value

    @property
    def has_relevance(self) -> bool:
        """True when the case says what is relevant (a relevant_id with grade >= 1, or evidence)."""
        return bool(self.evidence) or any(r.grade >= 1 for r in self.relevant_ids)

    def relevant_grades(self) -> dict[str, int]:
        """``{doc_id: grade}`` for relevant_ids with grade >= 1."""
        return {r.id: r.grade for r in self.relevant_ids if r.grade >= 1}


class RelevanceConfig(BaseModel):
    """How retrieved chunks are judged for a dataset (``dataset.yaml``)."""

    model_config = ConfigDict(extra="forbid")

    rule: RelevanceRule = "evidence_offsets"
    word_overlap_threshold: float = Field(default=0.65, gt=0, le=1)
    # evidence_offsets: a chunk covers a span when the overlap is at least
    # min(evidence_min_overlap_chars, ceil(evidence_min_overlap_fraction * len(span))) characters
    evidence_min_overlap_fraction: float = Field(default=0.5, gt=0, le=1)
    evidence_min_overlap_chars: int = Field(default=100, ge=1)
    # fuzzy location of a span in parsed text (rapidfuzz partial_ratio score, 0..100); 0 disables
    evidence_fuzzy_min_score: float = Field(default=90.0, ge=0, le=100)


class Dataset(BaseModel):
    """A loaded dataset folder."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    root: Path
    docs_dir: Path
    cases: list[Case]
    relevance: RelevanceConfig = Field(default_factory=RelevanceConfig)
    provenance: str = ""
    settings: dict[str, Any] = Field(default_factory=dict)  # raw dataset.yaml

    def doc_ids(self) -> list[str]:
        """Document ids = files under docs/ relative to it, '/'-separated, sorted."""
        return list_doc_ids(self.docs_dir)

    def by_id(self) -> dict[str, Case]:
        return {c.id: c for c in self.cases}


def list_doc_ids(docs_dir: Path) -> list[str]:
    docs_dir = Path(docs_dir)
    if not docs_dir.is_dir():
        return []
    return sorted(
        p.relative_to(docs_dir).as_posix()
        for p in docs_dir.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    )
