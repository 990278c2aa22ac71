"""Step 1: an LLM proposes a question, its answer and verbatim quotes from sampled passages.

One prompt per question kind, kept here beside the code that fills and reads it:

- ``single_hop``: one passage -> question, answer, 1-3 quotes that hold the answer;
- ``multi_hop``: two passages (two chunks of one document, or of two documents when a
  document has one chunk left) -> a question needing a fact of each, quotes from both;
- ``unanswerable``: one passage -> a question about the document's subject that the
  document does not answer (verified later by retrieval and a second call).

A proposal is only a candidate: :mod:`ragsweep.generate.verify` locates every quote,
checks the answer against the quotes alone, removes near-duplicates and checks the
unanswerable ones against the corpus. ``hint`` (``--from-failures``) asks for the same
kind of question as a failed case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NotRequired, TypedDict

from pydantic import BaseModel

from ragsweep.datasets.pathway_limits import clean_query
from ragsweep.generate.sampling import SourceChunk
from ragsweep.llm.client import Messages
from ragsweep.llm.replies import Strings, Text, read_object

if TYPE_CHECKING:
    from ragsweep.generate.failures import Seed


class Span(TypedDict):
    """A quote located in its document (:func:`ragsweep.generate.verify.locate_quotes`)."""

    doc_id: str
    start: int
    end: int
    method: str  # how it was found: exact or alnum
    text: NotRequired[str]  # the document's own text at the offsets (set when the spans are merged)


class DuplicateCheck(TypedDict):
    question: str
    similarity: float


class SupportVerdict(TypedDict):
    supported: bool | None
    reason: str


class AnswerabilityVerdict(TypedDict):
    answered: bool | None
    passage: int | None
    reason: str
    retrieved: list[dict[str, str | int]]  # doc_id, start, end of each chunk the checker saw


class Checks(TypedDict, total=False):
    """What each verification step said of a candidate."""

    duplicate_of: DuplicateCheck
    support: SupportVerdict
    answerability: AnswerabilityVerdict


KINDS = ("single_hop", "multi_hop", "unanswerable")

SYSTEM = (
    "You write test questions for a document search system, from passages of the user's documents. "
    "You reply with one JSON object and nothing else."
)

SINGLE_HOP_PROMPT = """Passage from a document:
<<<
{passage}
>>>

Write one question that this passage answers, about a fact it states (a party, an obligation, a date, an amount, a condition). The question must make sense to someone who has not seen the passage: name the party or subject it is about (never say "the passage" or "the text"). Do not ask for the name or title of the document.{hint}
Then give the answer in a few words or one sentence, and copy one to three quotes from the passage that contain the answer. Copy each quote exactly, character for character, from the passage: a phrase or a sentence of at most 40 words.

Reply with this JSON object:
{{"question": "...", "answer": "...", "quotes": ["..."]}}"""

MULTI_HOP_PROMPT = """Two passages from {where}.

Passage 1:
<<<
{passage_1}
>>>

Passage 2:
<<<
{passage_2}
>>>

Write one question whose answer needs a fact from passage 1 AND a fact from passage 2 (for example, combining or comparing them). The question must make sense to someone who has not seen the passages: name the party or subject (never say "the passage"). Do not ask for the name or title of a document.{hint}
Then give the answer, and copy the quotes that state the two facts: one or two from passage 1 and one or two from passage 2. Copy each quote exactly, character for character: a phrase or a sentence of at most 40 words.

Reply with this JSON object:
{{"question": "...", "answer": "...", "quotes_1": ["..."], "quotes_2": ["..."]}}"""

UNANSWERABLE_PROMPT = """Passage from a document:
<<<
{passage}
>>>

Write one question that a reader of this document could reasonably ask about its subject, but that the document does NOT answer: ask for a specific detail (a date, an amount, a person, a condition) that the passage does not give and that the rest of such a document would most likely not give either. Do not ask who the parties are or what the document is called: documents state those. The question must make sense to someone who has not seen the passage: name the party or subject (never say "the passage"). Do not ask for the name or title of the document.{hint}

Reply with this JSON object:
{{"question": "...", "why_unanswerable": "..."}}"""

PROMPTS = {"single_hop": SINGLE_HOP_PROMPT, "multi_hop": MULTI_HOP_PROMPT, "unanswerable": UNANSWERABLE_PROMPT}

HINT = ' Ask the same kind of question as this example (category "{type}"), but about this passage: "{example}"'

# words that give away a question written about the passage rather than the document
_PASSAGE_WORDS = ("the passage", "this passage", "the text above", "passage 1", "passage 2", "the excerpt")


@dataclass
class Candidate:
    """A proposed case on its way through the verification steps."""

    order: int  # position in the sampled order: what is kept when more than needed pass
    kind: str  # single_hop | multi_hop | unanswerable
    type: str  # the case's type: the kind, or (--from-failures) the failed case's type
    sources: list[SourceChunk]
    hint: Seed | None = None  # the failed case this one grows from
    question: str = ""
    answer: str = ""
    quotes: list[list[str]] = field(default_factory=list)  # per source passage
    why_unanswerable: str = ""
    evidence: list[Span] = field(default_factory=list)  # located quotes, merged
    checks: Checks = field(default_factory=lambda: Checks())
    drop: tuple[str, str] | None = None  # (reason, detail)
    asks: int = 1  # times it went through the steps (an endpoint failure asks once more)
    failed_call: str | None = None  # the error of the call that dropped it, when a call failed

    @property
    def doc_scope(self) -> list[str]:
        return sorted({s.doc_id for s in self.sources})

    @property
    def alive(self) -> bool:
        return self.drop is None

    def dropped(self, reason: str, detail: str) -> None:
        if self.drop is None:
            self.drop = (reason, detail)

    def again(self) -> "Candidate":
        """The same passages and place in the order, through every step once more (the replies
        that were good come from the cache)."""
        return Candidate(
            order=self.order, kind=self.kind, type=self.type, sources=self.sources, hint=self.hint, asks=self.asks + 1
        )


class Proposal(BaseModel):
    """The object a proposal prompt asks for (the keys of its kind's template)."""

    question: Text = ""
    answer: Text = ""
    why_unanswerable: Text = ""  # unanswerable
    quotes: Strings = []  # single_hop
    quotes_1: Strings = []  # multi_hop: from passage 1
    quotes_2: Strings = []  # and from passage 2


def _hint(candidate: Candidate) -> str:
    if not candidate.hint:
        return ""
    return HINT.format(
        type=candidate.hint.type or candidate.kind,
        example=" ".join(candidate.hint.question.split()),
    )


def messages(candidate: Candidate) -> Messages:
    """The proposal prompt of a candidate (its kind's template, its passages)."""
    hint = _hint(candidate)
    if candidate.kind == "multi_hop":
        a, b = candidate.sources
        where = "one document" if a.doc_id == b.doc_id else "two documents"
        user = MULTI_HOP_PROMPT.format(where=where, passage_1=a.text.strip(), passage_2=b.text.strip(), hint=hint)
    else:
        (src,) = candidate.sources
        user = PROMPTS[candidate.kind].format(passage=src.text.strip(), hint=hint)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def read_reply(candidate: Candidate, reply) -> None:
    """Fill the candidate from the model's reply, or mark it dropped with the reason."""
    if reply.error:
        candidate.failed_call = reply.error
        candidate.dropped("llm_error", f"proposal call failed: {reply.error}")
        return
    if reply.refusal:
        candidate.dropped("llm_refused", f"proposal refused: {reply.refusal}")
        return
    proposal = read_object(reply.text, Proposal)
    if proposal is None:
        candidate.dropped("unparsable_reply", f"no JSON object in the proposal: {reply.text[:120]!r}")
        return
    candidate.question = proposal.question
    if not candidate.question or not clean_query(candidate.question):
        candidate.dropped("no_question", f"the proposal has no question: {reply.text[:120]!r}")
        return
    lowered = candidate.question.lower()
    if any(w in lowered for w in _PASSAGE_WORDS):
        candidate.dropped("refers_to_passage", "the question refers to the passage, not to the document")
        return
    if candidate.kind == "unanswerable":
        candidate.why_unanswerable = proposal.why_unanswerable
        return
    candidate.answer = proposal.answer
    if not candidate.answer:
        candidate.dropped("no_answer", "the proposal has no answer")
        return
    if candidate.kind == "multi_hop":
        candidate.quotes = [proposal.quotes_1, proposal.quotes_2]
    else:
        candidate.quotes = [proposal.quotes]
