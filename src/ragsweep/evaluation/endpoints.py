"""Every endpoint a run will call, probed before any work (before a run folder, an executor or a parse):
a run that cannot get one vector or one answer ends in seconds with one line, rather than after parsing
every document or asking every case."""

from __future__ import annotations

from ragsweep.evaluation.settings import AnswerSettings
from ragsweep.llm.settings import LLMSettings
from ragsweep.pipeline.app_components import check_endpoint
from ragsweep.pipeline.config import PipelineConfig


def check_endpoints(config: PipelineConfig, settings: AnswerSettings) -> None:
    """The app's embedder (:func:`check_endpoint`), then the LLM endpoints of the answering."""
    if config.keeps_app_embedder():
        built = config.build()
        check_endpoint(built.embedder, built.retriever_factory)  # and its width against the index's
    check_answering(config, settings)


def check_answering(config: PipelineConfig, settings: AnswerSettings | None) -> None:
    """Every LLM endpoint the run will call (its answering's, none when ``settings`` is None, and an LLM
    reranker's), probed once (:func:`ragsweep.llm.probe.check_llm_endpoint`)."""
    users = llm_users(config, settings)
    if not users:
        return
    from ragsweep.llm.probe import check_llm_endpoint  # deferred: httpx, which a run calling no LLM never needs

    endpoint = LLMSettings.from_mapping(config.scalars())
    for what, key_too in users:
        check_llm_endpoint(endpoint, what, key_too=key_too)


def llm_users(config: PipelineConfig, settings: AnswerSettings | None) -> list[tuple[str, bool]]:
    """Who in the run calls the LLM endpoint, in the order they are probed, each with whether its key is
    ragsweep's to check (an app's LLM component may hold its own)."""
    users = [("reranker's LLM", True)] if config.variables.reranker == "llm" else []
    if settings is None:
        return users
    if settings.use_llm and config.question_answerer_ref() is not None:
        users.append(("app's LLM", False))
    elif settings.use_llm or config.variables.llm_model:
        users.append(("LLM", True))
    if settings.judge:
        users.append(("judge", True))
    if settings.ragas_llm:
        users.append(("ragas LLM", True))
    return users
