"""The answer the app serves for a question and its served chunks: the LLM answerer when the
pipeline has one (or ``--llm``), else the deterministic extractive one; a dataset's own
responses are scored as given."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragsweep.answer.base import Answer
from ragsweep.answer.refusal import is_refusal
from ragsweep.datasets.schema import Case
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.hits import Hit


def make_answerer(config: PipelineConfig, use_llm: bool) -> tuple[Any, Any]:
    """The LLM answerer when asked for (or configured), else the extractive one."""
    if use_llm or config.variables.llm_model:
        from ragsweep.answer.llm import LLMAnswerer
        from ragsweep.llm.settings import LLMSettings

        settings = LLMSettings.from_mapping(config.scalars())
        return LLMAnswerer(settings, prompt_template=config.variables.prompt_template), settings
    from ragsweep.answer.extractive import ExtractiveAnswerer

    return ExtractiveAnswerer(), None


def answer(answerer: Any, items: Sequence[tuple[str, Sequence[Hit]]]) -> list[Answer]:
    if hasattr(answerer, "answer_batch"):
        return answerer.answer_batch(list(items))
    return [answerer.answer(q, list(h)) for q, h in items]


def answer_or_given(
    answerer: Any, cases: Sequence[Case], hits: Sequence[Sequence[Hit]], use_given: bool = True
) -> list[Answer]:
    """Each case's answer: the response the dataset gives for it (pre-computed answers,
    e.g. ragas' ``response``/``answer``), scored as given, else the answerer's."""
    todo = [i for i, c in enumerate(cases) if not (use_given and c.response is not None)]
    produced = iter(answer(answerer, [(cases[i].question, hits[i]) for i in todo]) if todo else [])
    out = []
    for i, case in enumerate(cases):
        if use_given and case.response is not None:
            out.append(Answer(text=case.response, abstained=is_refusal(case.response), answerer="dataset"))
        else:
            out.append(next(produced))
    return out
