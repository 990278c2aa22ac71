"""What one generation needs, as an object: the command line builds it from its options
(``ragsweep.commands.generate``); nothing in ``ragsweep.generate`` sees an options object."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragsweep.core.starter import DEFAULT_PIPELINE
from ragsweep.evaluation.settings import ParseSettings
from ragsweep.generate.propose import KINDS

DEFAULT_DEDUPE_THRESHOLD = 0.9  # cosine similarity from which a question is a near-duplicate


class GenerateSettings(BaseModel):
    """One generation: where from and to, how many of which kinds, the pipeline, the rounds and checks."""

    model_config = ConfigDict(extra="forbid")

    out: str  # the dataset folder to write
    docs: str | None = None  # the documents folder (default with from_failures: the run's)
    from_failures: str | None = None  # a run folder whose failed cases seed the proposals
    n: int = Field(default=200, ge=1)
    types: list[str] = Field(default_factory=lambda: list(KINDS))
    seed: int = 0
    pipeline: str = DEFAULT_PIPELINE
    overrides: dict[str, Any] = Field(default_factory=dict)  # the pipeline's $variables, as given
    parse: ParseSettings = Field(default_factory=ParseSettings)
    dry_run: bool = False
    dedupe_threshold: float = Field(default=DEFAULT_DEDUPE_THRESHOLD, gt=0, le=1)
    test_fraction: float = Field(default=0.5, ge=0, le=1)
    oversample: float = Field(default=1.5, ge=1)
    max_rounds: int = Field(default=10, ge=1)
    check_k: int | None = Field(default=None, ge=1)  # chunks retrieved for the unanswerable check (default: top_k)
    link_docs: bool = False
    force: bool = False
    progress: bool = True
    command: str = "ragsweep generate"  # recorded in generation.json and the README
