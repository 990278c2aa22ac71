"""Steps 2-5: nothing unverified gets in.

2. **Quotes located** (no LLM): every quote of a proposal must be found in the parsed
   text of its passage's document by :func:`ragsweep.metrics.relevance.locate_spans`
   with the fuzzy step off: verbatim after normalisation (``exact``: quotes, dashes,
   case, Unicode forms and whitespace runs normalised) or on letters and digits only
   (``alnum``: a line break or hyphenation of the parse, with the same numbers). One
   quote not found drops the case; a quote shorter than :data:`MIN_QUOTE_CHARS`
   normalised characters too (it would match anywhere). The evidence span stored is the
   document's own text at the located offsets, so it is found exactly by every reader.
   A multi-hop case needs located quotes from both passages.
3. **Near-duplicates removed** (no LLM): questions are embedded with the project's
   embedder (all-MiniLM-L6-v2, :class:`ragsweep.pipeline.embedding.CachedSentenceTransformerEmbedder`);
   a question whose cosine similarity to an earlier kept question about an overlapping
   set of documents is >= the threshold (0.9 by default) is dropped. The same question
   about two different documents is two cases (each is scoped to its documents).
4. **Answer follows from the evidence** (a second LLM call, answerable kinds): the
   checker sees only the located evidence, the question and the proposed answer.
5. **Unanswerable checked against the corpus** (retrieval + an LLM call): the question is
   asked of the pipeline's own store (:meth:`ragsweep.pipeline.store.RagStore.retrieve`, scoped to
   the case's documents as the eval will scope it, ``k`` chunks); the checker sees those
   chunks and says whether any answers the question. Any "yes", or an unreadable reply,
   drops the case.

Every LLM reply that cannot be read as the verdict asked for drops the case: a check
that did not happen is not a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Protocol

import numpy as np
from pydantic import BaseModel, PlainValidator

from ragsweep.generate.propose import Candidate, Span
from ragsweep.generate.settings import DEFAULT_DEDUPE_THRESHOLD
from ragsweep.llm.client import ChatResult, Messages
from ragsweep.llm.replies import Flag, Text, read_object
from ragsweep.metrics.relevance import locate_spans, normalize


class Passage(Protocol):
    """A retrieved chunk as the answerability check reads it (a store's hit)."""

    doc_id: str
    start: int
    end: int
    text: str


MIN_QUOTE_CHARS = 8
ACCEPTED_METHODS = ("exact", "alnum")

CHECK_SYSTEM = "You check test questions for a document search system. You reply with one JSON object and nothing else."

SUPPORT_PROMPT = """Evidence (quoted from a document):
{evidence}

Question: {question}
Answer: {answer}

Is this answer to the question given by the evidence? It is when the evidence states the same fact, in the same or other words. It is not when the evidence says something else, or nothing about it.

Reply with this JSON object, the reason first:
{{"reason": "...", "supported": true or false}}"""

ANSWERED_PROMPT = """Passages found in the documents:

{passages}

Question: {question}

Does one of these passages give the specific information the question asks for? Mentioning the same subject is not enough: the passage must state the answer itself.

Reply with this JSON object, the reason first:
{{"reason": "...", "answered": true or false, "passage": <number of the passage that gives the answer, or null>}}"""


# ------------------------------------------------------------------ 2. quotes located
def _nearest(spans: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    def distance(span: tuple[int, int]) -> int:
        s, e = span
        return 0 if s < end and e > start else min(abs(s - end), abs(start - e))

    return min(spans, key=lambda sp: (distance(sp), sp[0]))


def locate_quotes(candidate: Candidate, texts: dict[str, str]) -> None:
    """Evidence spans with exact offsets for every quote, or the candidate is dropped."""
    if not candidate.alive or candidate.kind == "unanswerable":
        return
    evidence: list[Span] = []
    for n, (source, quotes) in enumerate(zip(candidate.sources, candidate.quotes), start=1):
        where = f" of passage {n}" if len(candidate.sources) > 1 else ""
        if not quotes:
            candidate.dropped("no_quote", f"no quote{where} given")
            return
        text = texts.get(source.doc_id) or ""
        for quote in quotes:
            if len(normalize(quote)) < MIN_QUOTE_CHARS:
                candidate.dropped(
                    "quote_too_short", f"quote{where} {quote!r} is shorter than {MIN_QUOTE_CHARS} characters"
                )
                return
            how, spans = locate_spans(text, quote, fuzzy_min_score=0)
            if how not in ACCEPTED_METHODS or not spans:
                candidate.dropped("quote_not_found", f"quote{where} not in {source.doc_id}: {quote[:100]!r}")
                return
            start, end = _nearest(spans, source.start, source.end)
            evidence.append({"doc_id": source.doc_id, "start": start, "end": end, "method": how})
    candidate.evidence = merge_spans(evidence, texts)


def merge_spans(spans: list[Span], texts: dict[str, str]) -> list[Span]:
    """Overlapping or repeated spans of one document become one; the text is the document's own."""
    out: list[Span] = []
    for span in sorted(spans, key=lambda s: (s["doc_id"], s["start"], s["end"])):
        last = out[-1] if out else None
        if last and last["doc_id"] == span["doc_id"] and span["start"] < last["end"]:
            last["end"] = max(last["end"], span["end"])
            if span["method"] != "exact":
                last["method"] = span["method"]
        else:
            out.append(span.copy())
    for span in out:
        span["text"] = texts[span["doc_id"]][span["start"] : span["end"]]
    return out


# ------------------------------------------------------------------ 3. near-duplicates
def default_embed(texts: list[str]) -> np.ndarray:
    # deferred: imports sentence_transformers and torch (seconds); only a run without its own embedder needs it
    from ragsweep.pipeline.embedding import CachedSentenceTransformerEmbedder

    return np.asarray(CachedSentenceTransformerEmbedder().embed(list(texts)), dtype=np.float32)


def drop_near_duplicates(
    candidates: Sequence[Candidate],
    kept: Sequence[tuple[str, Sequence[str] | None]] = (),
    threshold: float = DEFAULT_DEDUPE_THRESHOLD,
    embed: Callable[[list[str]], np.ndarray] = default_embed,
) -> None:
    """Drop, in order, each live candidate too similar to an earlier one (or to a ``kept``
    question) about overlapping documents (``None`` scope: the whole corpus)."""
    live = [c for c in candidates if c.alive]
    if not live:
        return
    questions = [q for q, _ in kept] + [c.question for c in live]
    vectors = embed(questions)
    vectors = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
    scopes: list[set[str] | None] = [set(s) if s else None for _, s in kept] + [set(c.doc_scope) for c in live]
    labels = [f"existing question {q!r}" for q, _ in kept] + [repr(c.question) for c in live]
    accepted = list(range(len(kept)))
    for i, c in enumerate(live, start=len(kept)):
        best, best_j = -1.0, None
        scope_i = scopes[i]
        for j in accepted:
            scope_j = scopes[j]
            if scope_i is not None and scope_j is not None and not scope_i & scope_j:
                continue
            sim = float(vectors[i] @ vectors[j])
            if sim > best:
                best, best_j = sim, j
        if best_j is not None and best >= threshold:
            c.checks["duplicate_of"] = {"question": questions[best_j], "similarity": round(best, 4)}
            c.dropped("near_duplicate", f"cosine {best:.3f} >= {threshold} with {labels[best_j]}")
        else:
            accepted.append(i)


# ------------------------------------------------------------------ 4. answer follows from the evidence
def support_messages(candidate: Candidate) -> Messages:
    evidence = "\n".join(f"[{i}] {' '.join(e['text'].split())}" for i, e in enumerate(candidate.evidence, start=1))
    user = SUPPORT_PROMPT.format(evidence=evidence, question=candidate.question, answer=candidate.answer)
    return [{"role": "system", "content": CHECK_SYSTEM}, {"role": "user", "content": user}]


class SupportCheck(BaseModel):
    """The object the support prompt asks for."""

    supported: Flag = None
    reason: Text = ""


def read_support(candidate: Candidate, reply: ChatResult) -> None:
    if reply.error:
        candidate.failed_call = reply.error
        candidate.dropped("check_failed", f"support check failed: {reply.error}")
        return
    check = read_object(reply.text, SupportCheck) or SupportCheck()
    verdict, reason = check.supported, check.reason
    candidate.checks["support"] = {"supported": verdict, "reason": reason}
    if verdict is None:
        candidate.dropped("check_unreadable", f"support check gave no verdict: {reply.text[:120]!r}")
    elif not verdict:
        candidate.dropped("answer_not_supported", f"the evidence alone does not give the answer: {reason}")


# ------------------------------------------------------------------ 5. unanswerable against the corpus
def answered_messages(candidate: Candidate, hits: Sequence[Passage]) -> Messages:
    passages = "\n\n".join(f"[{i}] {' '.join(h.text.split())}" for i, h in enumerate(hits, start=1))
    user = ANSWERED_PROMPT.format(passages=passages or "(no passage found)", question=candidate.question)
    return [{"role": "system", "content": CHECK_SYSTEM}, {"role": "user", "content": user}]


def _number(value: object) -> int | None:
    return value if isinstance(value, int) else None


class AnsweredCheck(BaseModel):
    """The object the answerability prompt asks for."""

    answered: Flag = None
    passage: Annotated[int | None, PlainValidator(_number)] = None  # the retrieved chunk that answers
    reason: Text = ""


def read_answered(candidate: Candidate, hits: Sequence[Passage], reply: ChatResult) -> None:
    if reply.error:
        candidate.failed_call = reply.error
        candidate.dropped("check_failed", f"answerability check failed: {reply.error}")
        return
    check = read_object(reply.text, AnsweredCheck) or AnsweredCheck()
    verdict, reason, passage = check.answered, check.reason, check.passage
    candidate.checks["answerability"] = {
        "answered": verdict,
        "passage": passage,
        "reason": reason,
        "retrieved": [{"doc_id": h.doc_id, "start": h.start, "end": h.end} for h in hits],
    }
    if verdict is None:
        candidate.dropped("check_unreadable", f"answerability check gave no verdict: {reply.text[:120]!r}")
    elif verdict:
        where = ""
        if passage is not None and 1 <= passage <= len(hits):
            h = hits[passage - 1]
            where = f" (retrieved chunk {passage}: {h.doc_id} [{h.start}:{h.end}])"
        candidate.dropped("answerable", f"a retrieved chunk answers the 'unanswerable' question{where}: {reason}")
