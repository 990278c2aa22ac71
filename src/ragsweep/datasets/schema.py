"""The canonical evaluation case and dataset models.

A dataset on disk is a folder::

    <dataset>/
        docs/          the documents (doc ids are paths relative to docs/, '/'-separated)
        cases.jsonl    one canonical :class:`Case` per line
        README.md      provenance and licence
        dataset.yaml   optional settings, e.g. ``relevance: evidence_offsets``

Besides the canonical form, the loader reads ragas test sets (new and legacy field names),
JSON objects holding their records under ``samples`` (or ``cases``/``data``/...), and other
foreign field names: see :mod:`ragsweep.datasets.loader`.

Canonical JSONL example (one line)::

    {"id": "cuad-0001", "question": "Who are the parties?", "type": "Parties",
     "doc_scope": ["a.pdf"], "relevant_ids": ["a.pdf"],
     "evidence": [{"text": "ACME Corp.", "doc_id": "a.pdf", "start": 120, "end": 130}],
     "reference_answer": "ACME Corp.; Foo Inc.", "unanswerable": false, "split": "dev"}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

RelevanceRule = Literal["doc_id", "evidence_offsets", "word_overlap"]
UnlocatedMode = Literal["exclude", "zero"]
UNLOCATED_MODES: tuple[str, ...] = ("exclude", "zero")
RELEVANCE_RULES: tuple[str, ...] = ("doc_id", "evidence_offsets", "word_overlap")


class RelevantId(BaseModel):
    """A relevant document, optionally graded (grade >= 1 is relevant, 0 = judged not relevant)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    grade: int = Field(default=1, ge=0)


class Evidence(BaseModel):
    """A text span a relevant chunk must cover, optionally with the document it comes from and
    its exact place there.

    Canonical JSONL (an item of a case's ``evidence``)::

        {"text": "governed by the laws of the State of New York", "doc_id": "a.pdf", "start": 5120, "end": 5166}
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    text: str = Field(min_length=1)
    """The span (a quote of the document)."""
    doc_id: str | None = None
    """The document it comes from; None = any document of the case's ``doc_scope``."""
    start: int | None = Field(default=None, ge=0)
    """Character offset of the span's first character in the document's parsed text (the text
    :func:`ragsweep.pipeline.corpus.parse_corpus` gives, as ``ragsweep generate`` computes offsets); None =
    not given. ``text`` is that text's ``[start, end)`` after normalisation (quotes, dashes,
    Unicode forms, case, whitespace: :func:`ragsweep.datasets.textnorm.normalize`), which
    ``ragsweep validate`` checks."""
    end: int | None = Field(default=None, ge=1)
    """Character offset just past the span's last character (exclusive); given with ``start``."""

    @model_validator(mode="after")
    def _offsets(self) -> "Evidence":
        if (self.start is None) != (self.end is None):
            raise ValueError("start and end are given together (character offsets [start, end))")
        if self.start is not None:
            if self.end <= self.start:  # type: ignore[operator]
                raise ValueError(f"end ({self.end}) must be greater than start ({self.start})")
            if self.doc_id is None:
                raise ValueError("offsets need the doc_id of the document they point into")
        return self

    @property
    def has_offsets(self) -> bool:
        return self.start is not None


class ReferenceVerdict(BaseModel):
    """A verdict on one answer to a case, decided without any LLM judge: by people or by a
    deterministic rule. ragsweep compares its judge with it (Cohen's kappa, confusion matrix)
    and corrects the judge's mean with it (prediction-powered inference).

    Canonical JSONL (a field of the case)::

        "reference_verdict": {"answer": "The agreement is dated March 24, 2006.", "is_correct": true,
                              "source": "rule:date-match (datasets/cuad-judge-reference/README.md)"}
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    answer: str | None = None
    """The answer the verdict is about, verbatim; None = the case's ``response``. The judge is asked
    about this answer (its verdict on the run's own answer is re-used when the text is the same)."""
    is_correct: bool | None = None
    """The verdict: is ``answer`` a correct answer to the question (same meaning as the judge's)."""
    score: float | None = Field(default=None, ge=0, le=1)
    """A graded verdict in [0, 1], for labels that are not yes/no (used when ``is_correct`` is None)."""
    source: str = Field(min_length=1)
    """Who or what decided, named as what it is: ``"human:<annotator or team>"`` for people,
    ``"rule:<name> (<where the rule is written>)"`` for a deterministic rule. Reports show it."""
    note: str | None = None
    """Free text: why, or what the labeller saw."""

    @model_validator(mode="after")
    def _has_verdict(self) -> "ReferenceVerdict":
        if self.is_correct is None and self.score is None:
            raise ValueError("a reference_verdict needs is_correct or score")
        return self


class Case(BaseModel):
    """One evaluation case (question + what counts as relevant + reference answer).

    Each field's docstring is its description (``Case.model_fields[name].description``).
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    id: str = Field(min_length=1)
    """Unique id of the case within its dataset."""
    question: str = Field(min_length=1)
    """The question put to the pipeline."""
    type: str | None = None
    """Free category of the question (CUAD category, ragas synthesizer, ...); reports group by it."""
    doc_scope: list[str] | None = None
    """Document ids the question is restricted to (retrieval filters on them); None = whole corpus.
    A file stem naming exactly one document (``"manual"`` for ``manual.pdf``) is resolved to its id
    when the dataset folder is loaded."""
    relevant_ids: list[RelevantId] = Field(default_factory=list)
    """Relevant documents, optionally graded; like ``doc_scope``, a unique file stem is resolved."""
    evidence: list[Evidence] = Field(default_factory=list)
    """Text spans a relevant chunk must cover (ragas ``reference_contexts``), optionally with their
    exact offsets in the document's parsed text (``start``/``end``, see :class:`Evidence`)."""
    reference_answer: str | None = None
    """The reference (gold) answer (ragas ``reference``, legacy ``ground_truth``/``ground_truths``)."""
    expected_facts: list[str] = Field(default_factory=list)
    """Facts a good answer states; each is searched in the answer (fact coverage)."""
    knowledge_ids: list[str] = Field(default_factory=list)
    """Ids of the knowledge points the question needs (e.g. ``expected_knowledge: ["KP-12"]``). Labels
    for grouping and reporting only: never searched in answers, never part of ``expected_facts``."""
    unanswerable: bool = False
    """True when the documents hold no answer: the system should abstain."""
    sub_questions: list[str] = Field(default_factory=list)
    """The simpler questions a multi-hop question decomposes into (kept for per-case reporting)."""
    response: str | None = None
    """The system's own answer, given with the case (ragas ``response``, ragas' legacy ``answer``):
    pre-computed answers that can be scored as given, without running an answerer."""
    retrieved_contexts: list[str] | None = None
    """The contexts retrieved with ``response`` (ragas ``retrieved_contexts``, legacy ``contexts``, a
    ``context`` string or list), kept as given; None = not given."""
    split: Literal["dev", "test"] | None = None
    """Which split the case belongs to; None = no split."""
    reference_verdict: ReferenceVerdict | None = None
    """A verdict on one answer to this case made by people or by a documented rule, never by an LLM
    judge (``{"answer", "is_correct" or "score", "source"}``, see :class:`ReferenceVerdict`): reports
    give the judge's agreement with these verdicts and a prediction-powered estimate of
    ``judge_correct`` corrected by them. None = no reference verdict."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Everything else the source record carried (unknown keys of foreign formats, their ``meta``)."""

    _line: int | None = PrivateAttr(default=None)  # line of the file it was read from

    @field_validator("relevant_ids", mode="before")
    @classmethod
    def _norm_relevant_ids(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, (str, dict)):
            value = [value]
        if isinstance(value, list):
            return [{"id": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("evidence", mode="before")
    @classmethod
    def _norm_evidence(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, (str, dict)):
            value = [value]
        if isinstance(value, list):
            return [{"text": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("expected_facts", "sub_questions", mode="before")
    @classmethod
    def _str_to_list(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        return value

    @field_validator("knowledge_ids", mode="before")
    @classmethod
    def _ids_to_list(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            value = [value]
        if isinstance(value, list):  # numeric ids (``[12, 31]``) are ids too
            return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
        return value

    @field_validator("retrieved_contexts", mode="before")
    @classmethod
    def _contexts_to_list(cls, value: object) -> object:
        if isinstance(value, str):
            return [value]
        return value

    @model_validator(mode="after")
    def _reference_verdict_answer(self) -> "Case":
        rv = self.reference_verdict
        if rv is not None and rv.answer is None:
            if self.response is None:
                raise ValueError("reference_verdict has no answer and the case no response to refer to")
            self.reference_verdict = rv.model_copy(update={"answer": self.response})
        return self

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
    # a case whose evidence occurs in no parsed document: left out of the retrieval metrics
    # ("exclude") or scored 0 on them ("zero"); the run's --unlocated, not a dataset.yaml key
    unlocated: UnlocatedMode = "exclude"


class CaseLimits(BaseModel):
    """What ``validate`` accepts of a case's text (``dataset.yaml`` keys): evidence too short to point at
    one passage matches everywhere (a one-character span is "found" in every chunk), and one huge
    question or span costs memory out of proportion to the corpus, so eval refuses it."""

    model_config = ConfigDict(extra="forbid")

    evidence_min_chars: int = Field(default=2, ge=1)
    """The fewest non-space characters of an evidence span."""
    question_max_chars: int = Field(default=10_000, ge=1)
    """The longest question, in characters."""
    evidence_max_chars: int = Field(default=50_000, ge=1)
    """The longest evidence span, in characters."""


class DatasetSettings(BaseModel):
    """``dataset.yaml``: the dataset's name and description, where its documents and cases are,
    and its relevance ``rule``. Every other key is kept as it is (``model_extra``): the rule's
    parameters among them, which :class:`RelevanceConfig` checks."""

    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True)

    name: str | None = None  # default: the dataset folder's name
    description: str | None = None
    docs: str = "docs"  # the documents folder, relative to the dataset folder
    cases: str | None = None  # the cases file (default: see loader.cases_file_name)
    relevance: str | None = None  # the rule (default: evidence_offsets when a case has evidence, else doc_id)


class Dataset(BaseModel):
    """A loaded dataset folder."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    root: Path
    docs_dir: Path
    cases: list[Case]
    relevance: RelevanceConfig = Field(default_factory=RelevanceConfig)
    limits: CaseLimits = Field(default_factory=CaseLimits)
    provenance: str = ""
    settings: dict[str, Any] = Field(default_factory=dict)  # dataset.yaml's keys (DatasetSettings, as set there)
    # the file the cases were read from (cases.jsonl unless dataset.yaml or the folder says otherwise)
    cases_file: Path | None = None
    # the dataset's description: ``description`` of dataset.yaml, else that of a cases file holding
    # a JSON object (``{"name": .., "description": .., "samples": [...]}``)
    description: str | None = None
    # the top-level fields of such a JSON object besides its records (its ``name``, ``description``, ...)
    cases_header: dict[str, Any] = Field(default_factory=dict)

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
        p.relative_to(docs_dir).as_posix() for p in docs_dir.rglob("*") if p.is_file() and not p.name.startswith(".")
    )
