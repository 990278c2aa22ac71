"""LLM judge of answer correctness: ``{"is_correct": bool, "reason": str}``.

Modelled on Pathway's rag_evals ``LLMAnswerEvaluator`` (integration_tests/rag_evals/
evaluator.py): lenient on wording, date format and verbosity; "I don't know" is
right when the answer cannot be deduced.

The "I don't know" rule is decided in code, never by the model:

- the case is unanswerable  -> correct iff the answer is a refusal (no call);
- the answer is a refusal   -> incorrect, since the case is answerable (no call);
- the answer failed         -> not judged (``is_correct=None``, ``method="skipped"``);
- otherwise the LLM decides, from a JSON reply parsed robustly (code fences,
  prose around the object, "true"/"yes" strings); a reply without a verdict is
  a recorded failure (``is_correct=None`` with ``error``), never a crash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ragsweep.answer.llm import is_refusal
from ragsweep.llm.client import ChatResult, LLMClient
from ragsweep.llm.cost import CallEstimate, count_message_tokens
from ragsweep.llm.settings import LLMSettings

JUDGE_SYSTEM_PROMPT = (
    "Your task is to determine the answer correctness in a RAG system. "
    "You will be given a question, a prediction and a label. "
    "You will decide whether the prediction is correct given the label. "
    "The prediction does not need to match the label exactly: differences in wording, "
    "date format or the verbosity between the prediction and the label are fine. "
    "You can consider a case as correct as long as the answer is correct, that is the "
    "prediction states the same facts as the label. "
    "For instance, if the label is `01/01/2021` and the prediction is "
    "`According to this and that, date is 1st of January 2021.`, it is correct. "
    "Dates written with numbers are month/day/year: the label `3/5/19` means March 5, 2019. "
    "If the label is `Yes` and the prediction is `Yes, [... some details]`, it is correct. "
    "If the label lists several items (for example parties separated by `;`), the prediction "
    "is correct when it names all of them, in any form or order, even with extra details. "
    "If the prediction gives a different party, date, amount, place or yes/no than the "
    "label, or misses the information the label asks for, it is incorrect. "
    "Reply with one JSON object only, no other text: "
    '{"reason": "<one short sentence>", "is_correct": true or false}'
)

JUDGE_USER_TEMPLATE = "Question: {question}\nPrediction: {prediction}\nLabel: {label}"

_JUDGE_COMPLETION_TOKENS = 60  # assumed reply length for estimates
_JUDGE_MAX_TOKENS = 256


class JudgeVerdict(BaseModel):
    is_correct: bool | None = None
    reason: str = ""
    method: str = ""  # "rule" | "llm" | "skipped"
    error: str | None = None
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    raw: str = ""  # the judge's reply (truncated), for inspection


class JudgeItem(BaseModel):
    question: str
    answer: str
    reference: str = ""
    unanswerable: bool = False
    abstained: bool | None = None  # the answerer's flag; None -> detected from the text
    answer_error: str | None = None
    expected_facts: list[str] = []


# ----------------------------------------------------------------- parsing
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_TRUE = {"true", "yes", "correct", "1", "y"}
_FALSE = {"false", "no", "incorrect", "0", "n"}
_KEYS = ("is_correct", "iscorrect", "correct", "is correct", "verdict", "answer_correct")


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().strip(".").lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    return None


def _objects(text: str):
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch == "{":
            try:
                obj, _ = decoder.raw_decode(text[i:])
            except ValueError:
                continue
            if isinstance(obj, dict):
                yield obj


def parse_verdict(text: str) -> tuple[bool, str]:
    """``(is_correct, reason)`` from a judge reply; ``ValueError`` if there is no verdict."""
    candidates = [m.group(1) for m in _FENCE_RE.finditer(text or "")] + [text or ""]
    for chunk in candidates:
        for obj in _objects(chunk):
            lowered = {str(k).strip().lower(): v for k, v in obj.items()}
            for key in _KEYS:
                if key in lowered:
                    verdict = _as_bool(lowered[key])
                    if verdict is not None:
                        reason = lowered.get("reason") or lowered.get("explanation") or ""
                        return verdict, str(reason)
    m = re.search(r'"?is_correct"?\s*[:=]\s*"?(true|false)', text or "", re.I)
    if m:
        return m.group(1).lower() == "true", ""
    raise ValueError("no is_correct verdict in the reply")


# ----------------------------------------------------------------- rule
def rule_verdict(item: JudgeItem) -> JudgeVerdict | None:
    """The deterministic part; None when the LLM must decide."""
    if item.answer_error:
        return JudgeVerdict(method="skipped", reason="the answer failed; nothing to judge")
    refused = item.abstained if item.abstained is not None else is_refusal(item.answer)
    if item.unanswerable:
        return JudgeVerdict(
            is_correct=bool(refused),
            method="rule",
            reason="unanswerable case: " + ("the answer abstains" if refused else "the answer does not abstain"),
        )
    if refused:
        return JudgeVerdict(is_correct=False, method="rule", reason="answerable case but the answer abstains")
    return None


def _label(item: JudgeItem) -> str:
    label = item.reference.strip()
    if item.expected_facts:
        facts = "; ".join(f.strip() for f in item.expected_facts if f.strip())
        label = f"{label} (key facts: {facts})" if label else facts
    return label


def judge_messages(item: JudgeItem) -> list[dict]:
    return [
        {"role": "system", "content": JUDGE_SYSTEM_PROMPT},
        {
            "role": "user",
            "content": JUDGE_USER_TEMPLATE.format(
                question=item.question.strip(), prediction=item.answer.strip(), label=_label(item)
            ),
        },
    ]


class LLMJudge:
    def __init__(self, settings: LLMSettings, client: LLMClient | None = None):
        self.settings = settings
        self.client = client or LLMClient(settings)
        self.name = f"llm-judge:{settings.model}"

    def __repr__(self) -> str:
        return f"LLMJudge({self.settings})"

    def _from_result(self, result: ChatResult) -> JudgeVerdict:
        base = dict(
            method="llm",
            cached=result.cached,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            raw=result.text[:1000],
        )
        if result.error:
            return JudgeVerdict(error=result.error, **base)
        if result.refusal and not result.text.strip():
            return JudgeVerdict(error=f"the judge model refused: {result.refusal[:300]}", **base)
        try:
            verdict, reason = parse_verdict(result.text)
        except ValueError as err:
            return JudgeVerdict(error=f"unparsable judge reply: {err}", **base)
        return JudgeVerdict(is_correct=verdict, reason=reason, **base)

    def _chat_kwargs(self) -> dict:
        return {"json_mode": self.settings.json_mode, "max_tokens": min(self.settings.max_tokens, _JUDGE_MAX_TOKENS)}

    def judge(
        self,
        question: str,
        answer: str,
        reference: str = "",
        unanswerable: bool = False,
        abstained: bool | None = None,
        answer_error: str | None = None,
        expected_facts: Sequence[str] = (),
    ) -> JudgeVerdict:
        item = JudgeItem(
            question=question, answer=answer, reference=reference or "", unanswerable=unanswerable,
            abstained=abstained, answer_error=answer_error, expected_facts=list(expected_facts),
        )
        return self.judge_items([item])[0]

    def judge_items(self, items: Sequence[JudgeItem]) -> list[JudgeVerdict]:
        """Batch, bounded concurrency, verdicts in input order."""
        out: list[JudgeVerdict | None] = [rule_verdict(it) for it in items]
        todo = [i for i, v in enumerate(out) if v is None]
        results = self.client.chat_batch([judge_messages(items[i]) for i in todo], **self._chat_kwargs())
        for i, result in zip(todo, results):
            out[i] = self._from_result(result)
        return [v for v in out if v is not None]

    def judge_batch(self, items: Sequence[dict]) -> list[JudgeVerdict]:
        """Same as :meth:`judge_items` with plain dicts of JudgeItem fields."""
        return self.judge_items([JudgeItem(**d) for d in items])


def estimate_judge_calls(
    items: Sequence[tuple[str, str, bool]],
    settings: LLMSettings,
    assumed_answer_tokens: int = 64,
) -> CallEstimate:
    """Dry run for ``(question, reference, unanswerable)`` triples.

    Unanswerable cases are decided by rule (no call); answerable ones count one
    call each (an upper bound: refusals are also decided by rule). The answer is
    not known before the run, so it counts as ``assumed_answer_tokens``.
    """
    est = CallEstimate(what="judge", model=settings.model)
    filler = " ".join(["word"] * assumed_answer_tokens)
    for question, reference, unanswerable in items:
        if unanswerable:
            continue
        item = JudgeItem(question=question, answer=filler, reference=reference or "")
        prompt = count_message_tokens(judge_messages(item), settings.model)
        est.add(1, prompt, _JUDGE_COMPLETION_TOKENS)
    est.notes.append(
        f"answers assumed {assumed_answer_tokens} tokens, judge replies {_JUDGE_COMPLETION_TOKENS}; "
        "refusals on answerable cases need no call (upper bound)"
    )
    return est.priced(settings)
