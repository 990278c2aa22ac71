"""Answering by an LLM over the retrieved chunks, the way Pathway's RAG does it.

The prompt template is a string with ``{context}`` and ``{query}`` placeholders
(Pathway's ``RAGPromptTemplate`` contract; it lives in the pipeline config). The
default is exactly what ``pathway.xpacks.llm.prompts.prompt_qa`` renders (the
default of ``BaseRAGQuestionAnswerer``) with its ``additional_rules`` slot set
to a citation rule taken from ``prompt_citing_qa``. As in Pathway, the
rendered prompt is sent as one user message.

Chunks are numbered ``[1]``, ``[2]``, ... in the context (chunk i = hits[i-1]);
citations like ``[2]`` or ``[1, 3]`` in the reply become ``Answer.cited``.
A reply saying the answer cannot be found ("No information found.", "I don't
know", ...) is a refusal: ``abstained=True``. So is a safety refusal, whether the
endpoint flags it (OpenAI's ``message.refusal``, ``content: null``) or only says it
("I'm sorry, I can't help with that."): ``abstained=True`` and ``Answer.refusal``
holds the model's words. A question with no hits is a refusal without a call.
Endpoint failures become ``Answer.error``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragsweep.answer.base import IDK, Answer
from ragsweep.answer.prompt import validate_template
from ragsweep.answer.refusal import is_refusal as metric_refusal
from ragsweep.core.hits import Hit
from ragsweep.cost.calls import CallEstimate, count_message_tokens
from ragsweep.llm.settings import LLMSettings

if TYPE_CHECKING:  # the client (with httpx) is imported where one is made
    from ragsweep.llm.client import ChatResult, LLMClient, Messages

NOT_FOUND_RESPONSE = "No information found."

# from pathway's prompt_citing_qa, with the bracket format made explicit
CITATION_RULE = (
    "When referencing information from a source, cite the appropriate source(s) "
    "using their corresponding numbers in square brackets, for example [1]. "
    "Every answer should include at least one source citation."
)

# == pathway.xpacks.llm.prompts.prompt_qa(context="{context}", query="{query}",
#        additional_rules=CITATION_RULE)  (checked by tests/test_llm_answer.py)
DEFAULT_PROMPT_TEMPLATE = (
    "Please provide an answer based solely on the provided sources. "
    "Keep your answer concise and accurate. "
    + CITATION_RULE
    + " "
    + f"If question cannot be inferred from documents SAY `{NOT_FOUND_RESPONSE}`. "
    "Now it's your turn. Below are several sources of information:"
    "\n------\n"
    "{context}"
    "\n------\n"
    "Query: {query}\n"
    "Answer:"
)

DEFAULT_CHUNK_FORMAT = "[{n}] {text}"
CHUNK_SEPARATOR = "\n\n"

# A reply that starts with one of these is a refusal.
_REFUSAL_PREFIXES = (
    "no information found",
    "no information",
    "no relevant information",
    "i don't know",
    "i do not know",
    "i dont know",
    "i cannot answer",
    "i can't answer",
    "i am unable to",
    "i'm unable to",
    "unable to answer",
    "unable to determine",
    "cannot be inferred",
    "can't be inferred",
    "the question cannot be",
    "this question cannot be",
    "it cannot be inferred",
    "there is no information",
    "not enough information",
    "insufficient information",
)
# A short reply containing one of these is a refusal too.
_REFUSAL_PHRASES = (
    "no information found",
    "don't know",
    "do not know",
    "cannot be inferred",
    "can't be inferred",
    "cannot be determined",
    "not enough information",
    "no information",
)
_SHORT_REPLY_WORDS = 15

# A safety refusal: the model declines to help (recorded in Answer.refusal, beside abstained=True).
_SAFETY_REFUSAL_RE = re.compile(
    r"\b(?:i|we)\s+(?:cannot|can't|can\s+not|won't|will\s+not|must\s+decline\s+to|am\s+unable\s+to|"
    r"are\s+unable\s+to|am\s+not\s+able\s+to)\s+(?:be\s+able\s+to\s+)?(?:help|assist|comply|fulfil|fulfill|engage)\b"
    r"|\bi'm\s+(?:unable|not\s+able)\s+to\s+(?:help|assist|comply|fulfil|fulfill|engage)\b"
    r"|\bi\s+(?:must|have\s+to)\s+(?:respectfully\s+)?(?:decline|refuse)\b"
    r"|^\s*(?:sorry|i'm\s+sorry|i\s+am\s+sorry|i\s+apologi[sz]e)\b[^.!?]{0,40}?\b(?:i|we)\s+"
    r"(?:cannot|can't|can\s+not|won't|will\s+not)\b"
    r"|^\s*as\s+an\s+ai\b",
    re.IGNORECASE,
)

_CITATION_RE = re.compile(r"\[\s*(\d+(?:\s*[,;]\s*\d+)*)\s*\]")


def format_context(hits: Sequence[Hit], chunk_format: str = DEFAULT_CHUNK_FORMAT) -> str:
    return CHUNK_SEPARATOR.join(
        chunk_format.format(n=i, text=h.served_text.strip(), doc_id=h.doc_id) for i, h in enumerate(hits, start=1)
    )


def render_prompt(
    question: str,
    hits: Sequence[Hit],
    template: str = DEFAULT_PROMPT_TEMPLATE,
    chunk_format: str = DEFAULT_CHUNK_FORMAT,
) -> str:
    return template.format(context=format_context(hits, chunk_format), query=question)


def build_messages(question: str, hits: Sequence[Hit], template: str, chunk_format: str) -> Messages:
    return [{"role": "user", "content": render_prompt(question, hits, template, chunk_format)}]


def parse_citations(text: str, n_chunks: int) -> list[int]:
    """``[2]``, ``[1, 3]``, ``[1][4]`` -> [2, 1, 3, 4]: unique, first-appearance order, in 1..n_chunks."""
    out: list[int] = []
    for group in _CITATION_RE.findall(text or ""):
        for part in re.split(r"[,;]", group):
            n = int(part.strip())
            if 1 <= n <= n_chunks and n not in out:
                out.append(n)
    return out


def _normalise(text: str) -> str:
    text = _CITATION_RE.sub(" ", text or "")
    text = text.replace("’", "'").replace("`", " ").replace('"', " ").replace("*", " ")
    return " ".join(text.lower().split()).strip(" .:-")


def is_refusal(text: str, extra_phrases: Sequence[str] = ()) -> bool:
    """Whether an answer says it cannot answer (``I don't know``, ``No information found.``, ...).

    The abstention metrics' patterns (:func:`ragsweep.answer.refusal.is_refusal`) plus
    the reply shapes LLMs give (a refusal prefix, a short reply holding a refusal
    phrase, the prompt's own not-found response): one notion of refusal for the
    answerer, the judge, ragas and the metrics.
    """
    if metric_refusal(text):
        return True
    norm = _normalise(text)
    if not norm:
        return True
    prefixes = _REFUSAL_PREFIXES + tuple(_normalise(p) for p in extra_phrases if p)
    if any(
        norm == p
        or norm.startswith(p + " ")
        or norm.startswith(p + ",")
        or norm.startswith(p + ".")
        or norm.startswith(p + ";")
        for p in prefixes
    ):
        return True
    if norm in {"none", "no answer", "not found", "not available", "unknown", "n/a"}:
        return True
    if len(norm.split()) <= _SHORT_REPLY_WORDS:
        phrases = _REFUSAL_PHRASES + tuple(_normalise(p) for p in extra_phrases if p)
        return any(p in norm for p in phrases)
    return False


def is_safety_refusal(text: str) -> bool:
    """Whether a reply declines to help ("I'm sorry, I can't help with that.", "I must decline")."""
    t = (text or "").replace("’", "'").replace("‘", "'").strip()
    return bool(t) and bool(_SAFETY_REFUSAL_RE.search(t[:200]))


class LLMAnswerer:
    """``answer(question, hits) -> Answer`` through an OpenAI-compatible endpoint."""

    def __init__(
        self,
        settings: LLMSettings,
        prompt_template: str | None = None,
        chunk_format: str = DEFAULT_CHUNK_FORMAT,
        not_found_response: str = NOT_FOUND_RESPONSE,
        client: LLMClient | None = None,
    ):
        self.settings = settings
        self.prompt_template = validate_template(prompt_template or DEFAULT_PROMPT_TEMPLATE)
        self.chunk_format = chunk_format
        self.not_found_response = not_found_response
        if client is None:
            from ragsweep.llm.client import LLMClient  # deferred: httpx, for a client only

            client = LLMClient(settings)
        self.client = client
        self.name = f"llm:{settings.model}"

    def __repr__(self) -> str:
        return f"LLMAnswerer({self.settings})"

    def messages(self, question: str, hits: Sequence[Hit]) -> Messages:
        return build_messages(question, hits, self.prompt_template, self.chunk_format)

    def _to_answer(self, result: ChatResult, n_hits: int) -> Answer:
        if result.error:
            return Answer(
                text="",
                abstained=False,
                answerer=self.name,
                error=result.error,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                cached=result.cached,
            )
        text = result.text.strip()
        refusal = getattr(result, "refusal", None)
        if refusal:  # the endpoint flagged a refusal (OpenAI's message.refusal)
            text = text or refusal
            abstained = True
        else:
            abstained = is_refusal(text, (self.not_found_response,))
            refusal = text if abstained and is_safety_refusal(text) else None
        return Answer(
            text=text,
            abstained=abstained,
            refusal=refusal,
            cited=parse_citations(text, n_hits),
            answerer=self.name,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            cached=result.cached,
        )

    def _no_hits(self) -> Answer:
        return Answer(text=IDK, abstained=True, answerer=self.name)

    def answer(self, question: str, hits: Sequence[Hit]) -> Answer:
        if not hits:
            return self._no_hits()
        return self._to_answer(self.client.chat(self.messages(question, hits)), len(hits))

    def answer_batch(self, items: Sequence[tuple[str, Sequence[Hit]]]) -> list[Answer]:
        """Bounded concurrency (``settings.concurrency``), answers in input order."""
        out: list[Answer | None] = [None] * len(items)
        todo = [(i, q, h) for i, (q, h) in enumerate(items) if h]
        for i, (_q, h) in enumerate(items):
            if not h:
                out[i] = self._no_hits()
        results = self.client.chat_batch([self.messages(q, h) for _, q, h in todo])
        for (i, _q, h), result in zip(todo, results):
            out[i] = self._to_answer(result, len(h))
        return [a for a in out if a is not None]

    def estimate(self, items: Sequence[tuple[str, Sequence[Hit]]]) -> CallEstimate:
        return estimate_answer_calls(items, self.settings, self.prompt_template, self.chunk_format)


def estimate_answer_calls(
    items: Sequence[tuple[str, Sequence[Hit]]],
    settings: LLMSettings,
    prompt_template: str | None = None,
    chunk_format: str = DEFAULT_CHUNK_FORMAT,
) -> CallEstimate:
    """Dry run: calls, prompt tokens (exact prompts, tiktoken) and an upper-bound cost.

    Completion tokens are bounded by ``max_tokens`` per call. The cache is not
    consulted, so the estimate is what a cold run would cost.
    """
    template = validate_template(prompt_template or DEFAULT_PROMPT_TEMPLATE)
    est = CallEstimate(what="answer", model=settings.model)
    skipped = 0
    for question, hits in items:
        if not hits:
            skipped += 1
            continue
        est.add(
            1,
            count_message_tokens(build_messages(question, hits, template, chunk_format), settings.model),
            settings.max_tokens,
        )
    est.notes.append(f"completion tokens are the max_tokens={settings.max_tokens} bound per call")
    if skipped:
        est.notes.append(f"{skipped} question(s) without hits need no call")
    return est.priced(settings)
