"""The funnel's records: a case's lost spans (:class:`SpanLoss`) and a run's totals
(:class:`Diagnosis`, report.json ``diagnosis``; each sweep configuration carries one too)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SpanLoss(BaseModel):
    """One evidence item of a case at the headline depth: the stage that lost it, or ``found``."""

    span: int  # its place in the case's evidence (doc_id rule: in its relevant documents)
    doc_id: str | None = None
    stage: str
    # retrieval / rerank: the best rank a relevant chunk has in the deepest list served (None: not
    # served at any depth asked); found: its rank within k
    rank: int | None = None
    # chunking: the span's length in tokens, the chunk size, and how many candidate chunks hold part of it
    span_tokens: int | None = None
    chunk_tokens: int | None = None
    chunks_split: int | None = None
    # rerank: the rank a relevant chunk had before the reranker
    pre_rerank_rank: int | None = None


class DiagnosisCounts(BaseModel):
    """How many cases are found, and how many each stage lost."""

    found: int = 0
    lost: dict[str, int] = Field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.found + sum(self.lost.values())


class Diagnosis(BaseModel):
    """Where a run's answerable cases with relevance information were lost, at the headline depth
    ``k`` (the configuration's top_k) and at every reported depth: ``found + sum(lost) == cases``.
    The cases outside the funnel are counted by reason in ``excluded``."""

    k: int
    cases: int = 0
    found: int = 0
    lost: dict[str, int] = Field(default_factory=dict)  # stage -> cases, in pipeline order
    excluded: dict[str, int] = Field(default_factory=dict)  # reason -> cases left out of the funnel
    by_k: dict[int, DiagnosisCounts] = Field(default_factory=dict)
    groups: dict[str, dict[str, DiagnosisCounts]] = Field(default_factory=dict)  # "type"/"document" -> value
    # what judged the answers at the answer stage ("judge", "f1>=0.5", ...); None: answers not scored
    answer_rule: str | None = None
    # lost at answer: why ("wrong", "abstained", "ignored the context", "beyond the context")
    answer_kinds: dict[str, int] = Field(default_factory=dict)
    # answered correctly without relevant context: the mirror of an answer loss (not a loss)
    correct_without_context: int = 0

    def headline(self) -> DiagnosisCounts:
        return DiagnosisCounts(found=self.found, lost=self.lost)
