"""What ran: the manifest of an eval run (``report.json``) and of a sweep (``sweep.json``).

Each part is written as it was set: a part never set (``retrieval`` of a run that asked the
store nothing, a sweep's ``dataset`` without ``name``) is left out, and keys these models do not
know are kept, so a manifest of another version loads and writes back unchanged. A known part
of an unexpected shape is dropped on load rather than failing the whole report.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.functional_validators import ModelWrapValidatorHandler

from ragsweep.pipeline.app_components import Spent
from ragsweep.pipeline.corpus import SkippedDocument


class AsSet(BaseModel):
    """Serialises only the fields that were set (and any unknown keys), in declaration order."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="wrap")
    @classmethod
    def _tolerant(cls, data: object, handler: ModelWrapValidatorHandler[Any]) -> Any:
        try:
            return handler(data)
        except ValidationError as err:
            if not isinstance(data, dict):
                raise
            bad = {e["loc"][0] for e in err.errors() if e["loc"]}
            return handler({k: v for k, v in data.items() if k not in bad})

    @model_serializer(mode="wrap")
    def _only_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        kept = self.model_fields_set | set(self.model_extra or {})
        return {k: v for k, v in handler(self).items() if k in kept}


class DatasetManifest(AsSet):
    path: str | None = None
    name: str | None = None
    hash: str | None = None
    split: str | None = None
    limit: int | None = None
    sample: int | None = None
    seed: int | None = None
    relevance: dict[str, Any] | None = None
    cases: int | None = None  # a sweep's: how many cases it ran


class CorpusManifest(AsSet):
    docs_dir: str | None = None
    hash: str | None = None
    documents: int | None = None
    skipped: list[SkippedDocument] | None = None
    pdf_pipeline: str | None = None
    parsers: list[str] | None = None
    parse_warnings: dict[str, list[str]] | None = None


class Timestamps(AsSet):
    started: str | None = None
    finished: str | None = None


class RetrievalCounts(AsSet):
    """What the store was asked in this process, and how much of it the served cache answered."""

    queries: int = 0
    from_served_cache: int = 0
    asked_pathway: int = 0


class RunManifest(AsSet):
    """Everything needed to know what an eval run ran (secrets masked)."""

    pipeline: dict[str, Any] = Field(default_factory=dict)  # PipelineConfig.manifest() and its public text
    dataset: DatasetManifest | None = None
    corpus: CorpusManifest | None = None
    embedder: str | None = None
    llm: dict[str, Any] | None = None  # LLMSettings.public_dict()
    prompt: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    git_commit: str | None = None
    python: str | None = None
    timestamps: Timestamps = Field(default_factory=Timestamps)
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    retrieval: RetrievalCounts | None = None
    spent: Spent | None = None
    llm_calls: dict[str, dict[str, Any]] = Field(default_factory=dict)
    executor: dict[str, Any] | None = None  # Executor.describe()


class SweepManifest(AsSet):
    """What a sweep ran: its base pipeline, the cases, the corpus parsed once, where it ran."""

    pipeline: dict[str, Any] = Field(default_factory=dict)
    dataset: DatasetManifest | None = None
    corpus: CorpusManifest | None = None
    parse_seconds: float | None = None
    embedded_texts_this_run: int | None = None
    executor: dict[str, Any] | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    git_commit: str | None = None
    timestamps: Timestamps = Field(default_factory=Timestamps)
