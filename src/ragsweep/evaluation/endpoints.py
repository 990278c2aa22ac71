"""Every endpoint a run will call, probed before any work (before a run folder, an executor or a parse):
a run that cannot get one vector or one answer ends in seconds with one line, rather than after parsing
every document or asking every case."""

from __future__ import annotations

from ragsweep.evaluation.settings import AnswerSettings
from ragsweep.llm.probe import check_llm_endpoint
from ragsweep.llm.settings import LLMSettings
from ragsweep.pipeline.app_components import check_endpoint
from ragsweep.pipeline.config import PipelineConfig


def check_endpoints(config: PipelineConfig, settings: AnswerSettings) -> None:
    """The app's embedder (:func:`check_endpoint`), then the LLM endpoints of the answering."""
    if config.keeps_app_embedder():
        check_endpoint(config.build().embedder)
    check_answering(config, settings)


def check_answering(config: PipelineConfig, settings: AnswerSettings | None) -> None:
    """Every LLM endpoint the run will call (its answering's, none when ``settings`` is None, and an LLM
    reranker's), probed once (:func:`ragsweep.llm.probe.check_llm_endpoint`)."""
    endpoint = LLMSettings.from_mapping(config.scalars())
    if config.variables.reranker == "llm":
        check_llm_endpoint(endpoint, "reranker's LLM")
    if settings is None:
        return
    if settings.use_llm and config.question_answerer_ref() is not None:
        check_llm_endpoint(endpoint, "app's LLM", key_too=False)  # its component may hold its own key
    elif settings.use_llm or config.variables.llm_model:
        check_llm_endpoint(endpoint, "LLM")
    if settings.judge:
        check_llm_endpoint(endpoint, "judge")
    if settings.ragas_llm:
        check_llm_endpoint(endpoint, "ragas LLM")
