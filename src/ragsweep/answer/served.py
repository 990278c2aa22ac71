"""The answer the app serves for a question: with ``--llm``, its own question answerer when the
pipeline declares one (:mod:`ragsweep.answer.app`), else ragsweep's LLM answerer over the
served chunks; without an LLM the deterministic extractive one; a dataset's own responses are
scored as given."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragsweep.answer.base import Answer
from ragsweep.answer.extractive import ExtractiveAnswerer
from ragsweep.answer.llm import LLMAnswerer
from ragsweep.answer.refusal import is_refusal
from ragsweep.core.hits import Hit
from ragsweep.datasets.schema import Case
from ragsweep.llm.settings import LLMSettings
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus
from ragsweep.pipeline.retrieval import parsed_scopes


def make_answerer(config: PipelineConfig, use_llm: bool) -> tuple[Any, Any]:
    """With ``--llm``, the app's own question answerer when the pipeline declares one; else
    ragsweep's LLM answerer when asked for (or configured), else the extractive one."""
    if use_llm and config.question_answerer_ref() is not None:
        # deferred: the app's answerer brings the LLM client and httpx, which other runs never need
        from ragsweep.answer.app import AppAnswerer

        return AppAnswerer(config), LLMSettings.from_mapping(config.scalars())
    if use_llm or config.variables.llm_model:
        settings = LLMSettings.from_mapping(config.scalars())
        return LLMAnswerer(settings, prompt_template=config.variables.prompt_template), settings
    return ExtractiveAnswerer(), None


def answer(answerer: Any, items: Sequence[tuple[str, Sequence[Hit]]]) -> list[Answer]:
    if hasattr(answerer, "answer_batch"):
        answers: list[Answer] = answerer.answer_batch(list(items))
        return answers
    return [answerer.answer(q, list(h)) for q, h in items]


def app_answers(answerer: Any, cases: Sequence[Case], corpus: Corpus, use_given: bool = True) -> dict[str, Answer]:
    """The app's question answerer asked every case that needs an answer, in one Pathway run
    (``{}`` for other answerers, which answer batch by batch from the served chunks)."""
    if not hasattr(answerer, "answer_cases"):
        return {}
    todo = [c for c in cases if not (use_given and c.response is not None)]
    if not todo:
        return {}
    answerer.corpus = corpus
    scopes = parsed_scopes(todo, {d.doc_id for d in corpus.documents})
    return dict(zip([c.id for c in todo], answerer.answer_cases(todo, scopes), strict=True))


def app_answers_together(
    answerers: Sequence[Any], cases: Sequence[Case], corpus: Corpus, use_given: bool = True
) -> None:
    """The app question answerers of several configurations of one index asked in one Pathway run, over
    one DocumentStore; each keeps its answers for :func:`app_answers` (other answerers: nothing to do)."""
    apps = [a for a in answerers if hasattr(a, "answer_cases")]  # as app_answers tells them apart
    todo = [c for c in cases if not (use_given and c.response is not None)]
    if len(apps) < 2 or not todo:
        return
    from ragsweep.answer.app import answer_together  # deferred: the LLM client, httpx

    for app in apps:
        app.corpus = corpus
    answer_together(apps, todo, parsed_scopes(todo, {d.doc_id for d in corpus.documents}))


def answer_or_given(
    answerer: Any,
    cases: Sequence[Case],
    hits: Sequence[Sequence[Hit]],
    use_given: bool = True,
    prepared: dict[str, Answer] | None = None,
) -> list[Answer]:
    """Each case's answer: the response the dataset gives for it (pre-computed answers,
    e.g. ragas' ``response``/``answer``), scored as given, else the answerer's (``prepared``:
    answers :func:`app_answers` got before)."""
    todo = [i for i, c in enumerate(cases) if not (use_given and c.response is not None)]
    if prepared:
        produced = iter([prepared[cases[i].id] for i in todo])
    else:
        produced = iter(answer(answerer, [(cases[i].question, hits[i]) for i in todo]) if todo else [])
    out = []
    for i, case in enumerate(cases):
        if use_given and case.response is not None:
            out.append(Answer(text=case.response, abstained=is_refusal(case.response), answerer="dataset"))
        else:
            out.append(next(produced))
    return out
