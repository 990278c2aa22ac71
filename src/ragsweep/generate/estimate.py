"""``ragsweep generate --dry-run``: the calls and tokens a generation would make, nothing sent.

The first round is estimated exactly as it would run: the same seeded passages, the
proposal prompts built from them (prompt tokens counted with tiktoken like
``eval --llm --dry-run``). Replies are not known before the run, so completion tokens
and the inputs of the checks are assumptions, stated in the notes:

- a proposal reply: :data:`PROPOSAL_TOKENS` tokens;
- a support check: the quotes (:data:`QUOTE_TOKENS` per passage), question and answer
  (:data:`QUESTION_TOKENS`, :data:`ANSWER_TOKENS`), a reply of :data:`CHECK_TOKENS`;
  counted for every answerable proposal (an upper bound: drops before it save calls);
- an answerability check: ``check_k`` retrieved chunks, each as long as the proposal's
  own passage, for every unanswerable proposal.

Later rounds run only to replace drops (at most ``max_rounds - 1`` of them, each
proposing about ``shortfall x oversample``); the estimate names that bound.
"""

from __future__ import annotations

from ragsweep.core.hits import Hit
from ragsweep.cost.calls import CallEstimate, combine, count_message_tokens
from ragsweep.generate import propose, verify
from ragsweep.generate.propose import Candidate
from ragsweep.llm.settings import LLMSettings

PROPOSAL_TOKENS = 150
QUOTE_TOKENS = 60
QUESTION_TOKENS = 25
ANSWER_TOKENS = 20
CHECK_TOKENS = 40


def _filler(n: int) -> str:
    return " ".join(["word"] * n)


def estimate_generation(
    batch: list[Candidate], settings: LLMSettings, check_k: int, max_rounds: int
) -> dict[str, CallEstimate]:
    model = settings.model
    out = {name: CallEstimate(what=name, model=model) for name in ("propose", "support", "answerability")}
    for c in batch:
        out["propose"].add(
            1, count_message_tokens(propose.messages(c), model), min(PROPOSAL_TOKENS, settings.max_tokens)
        )
        if c.kind == "unanswerable":
            probe = Candidate(
                order=c.order, kind=c.kind, type=c.type, sources=c.sources, question=_filler(QUESTION_TOKENS)
            )
            hits = [
                Hit(rank=i + 1, score=0.0, text=c.sources[0].text, doc_id=c.sources[0].doc_id, start=0, end=1)
                for i in range(check_k)
            ]
            out["answerability"].add(
                1, count_message_tokens(verify.answered_messages(probe, hits), model), CHECK_TOKENS
            )
        else:
            probe = Candidate(
                order=c.order,
                kind=c.kind,
                type=c.type,
                sources=c.sources,
                question=_filler(QUESTION_TOKENS),
                answer=_filler(ANSWER_TOKENS),
                evidence=[
                    {
                        "doc_id": s.doc_id,
                        "start": s.start,
                        "end": s.end,
                        "method": "exact",
                        "text": _filler(QUOTE_TOKENS),
                    }
                    for s in c.sources
                ],
            )
            out["support"].add(1, count_message_tokens(verify.support_messages(probe), model), CHECK_TOKENS)
    out["propose"].notes.append(
        f"first round: {len(batch)} proposals from the seeded passages; replies assumed {PROPOSAL_TOKENS} tokens"
    )
    out["support"].notes.append(
        f"every answerable proposal (upper bound); quotes assumed {QUOTE_TOKENS} tokens "
        f"per passage, replies {CHECK_TOKENS}"
    )
    out["answerability"].notes.append(
        f"every unanswerable proposal, with {check_k} retrieved chunks as long as its passage; replies {CHECK_TOKENS}"
    )
    for est in out.values():
        est.priced(settings)
    total = combine(list(out.values()))
    total.notes.append(
        f"later rounds (at most {max_rounds - 1}) run only to replace drops, each about "
        "shortfall x oversample proposals with their checks"
    )
    out["total"] = total
    return out
