"""The answering a run asks for, built once: answerer, judge (with its probes), ragas' LLM scorer."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from ragsweep.answer.served import make_answerer
from ragsweep.datasets.schema import Case
from ragsweep.evaluation.loop import Answering
from ragsweep.evaluation.settings import AnswerSettings
from ragsweep.judge.metric import LLMJudge
from ragsweep.judge.probes import probe_judge
from ragsweep.judge.trust import Probes
from ragsweep.llm.settings import LLMSettings
from ragsweep.metrics.ragas_llm import RagasLLMScorer
from ragsweep.pipeline.config import PipelineConfig


def llm_settings_of(config: PipelineConfig) -> LLMSettings:
    return LLMSettings.from_mapping(config.scalars())


def prepare_answering(
    config: PipelineConfig, settings: AnswerSettings, cases: Sequence[Case], stage: dict[str, float], probe: bool = True
) -> tuple[Answering, Probes | None]:
    """The answering ``settings`` ask for and, when judging with probes, the probes' result."""
    answerer, llm_settings = make_answerer(config, settings.use_llm)
    answering = Answering(
        answerer=answerer, llm_settings=llm_settings, use_given=not settings.use_llm, ragas_nonllm=settings.ragas_nonllm
    )
    probes = None
    if settings.judge:
        answering.judge = LLMJudge(
            llm_settings or llm_settings_of(config),
            replicates=settings.judge_replicates,
            temperature=settings.judge_temperature,
        )
        if settings.judge_probe and probe:
            started = time.perf_counter()
            probes = Probes.model_validate(probe_judge(answering.judge, list(cases), settings.judge_probe))
            stage["judge_probe"] = time.perf_counter() - started
            print(
                f"judge probes: {probes.passed} of {probes.total} right (decided by the LLM: "
                f"{probes.llm_passed} of {probes.llm_total})",
                file=sys.stderr,
            )
    if settings.ragas_llm:
        endpoint = llm_settings or llm_settings_of(config)
        if settings.judge_temperature is not None:
            endpoint = endpoint.with_updates(temperature=settings.judge_temperature)
        answering.ragas_llm = RagasLLMScorer(endpoint, replicates=settings.judge_replicates)
    return answering, probes


def metric_temperature(answering: Answering, settings: AnswerSettings, config: PipelineConfig) -> float | None:
    """The LLM metrics' sampling temperature (None without LLM metrics)."""
    if not settings.llm_metrics:
        return None
    if answering.judge is not None:
        return answering.judge.effective_temperature
    if settings.judge_temperature is not None:
        return settings.judge_temperature
    return (answering.llm_settings or llm_settings_of(config)).temperature


def llm_calls(answering: Answering) -> dict[str, dict[str, Any]]:
    """Each of ragsweep's own LLM parts (the answerer, the judge): its calls, failures and failure
    rate, and what its endpoint did (``LLMCalls``); an app's LLM is counted in ``spent``."""
    out: dict[str, dict[str, Any]] = {}
    for name, part in (("answer", answering.answerer), ("judge", answering.judge)):
        stats = getattr(getattr(part, "client", None), "stats", None)
        if callable(stats):
            calls = stats()
            if calls.calls:
                out[name] = {**calls.model_dump(), "failure_rate": round(calls.failure_rate, 4)}
    return out
