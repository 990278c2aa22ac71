"""LLM judge of answer correctness: ``{"is_correct": bool, "reason": str}``.

Modelled on Pathway's rag_evals ``LLMAnswerEvaluator`` (integration_tests/rag_evals/
evaluator.py): lenient on wording, date format and verbosity; "I don't know" is
right when the answer cannot be deduced.

The "I don't know" rule is decided in code, never by the model:

- the case is unanswerable  -> correct iff the answer is a refusal (no call);
- the answer is a refusal   -> incorrect, since the case is answerable (no call);
- the answer failed         -> not judged (``is_correct=None``, ``method="skipped"``);
- otherwise the LLM decides, from a JSON reply parsed robustly (code fences,
  prose around the object, "true"/"yes" strings). A reply without a verdict is asked
  once more, with the parse error (``repaired=True`` when that worked); if it still
  does not parse it is a named failure (``is_correct=None``, ``failure="unparsable"``,
  ``error``), never a crash. Every failure is named (:func:`failure_kind`).

Replicates (``LLMJudge(replicates=N)``): each LLM-judged case is asked ``N`` times.
Replicate 1 is the plain request (shared with single-replicate runs and their cache);
replicate ``r >= 2`` carries OpenAI's ``seed=r - 1``, so it is its own request and its own
cache entry. The case's ``score`` is the mean of its valid replicate verdicts (true = 1),
``sd`` their spread, ``is_correct`` the majority (None on a tie) and ``replicates`` each
one. Statistics over replicates are in :mod:`ragsweep.judge.stats`.

Reference verdicts (``Case.reference_verdict``): the judge also judges the labelled
answer (or re-uses its verdict on the run's answer when that is the same text) and the
verdict carries both in ``reference_check``. :func:`~ragsweep.judge.probes.probe_judge` feeds the judge answers
whose verdict is known before a run.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

from pydantic import BaseModel
from typing_extensions import TypedDict as ModelDict

from ragsweep.answer.llm import is_refusal
from ragsweep.cost.calls import CallEstimate, count_message_tokens
from ragsweep.datasets.schema import ReferenceVerdict
from ragsweep.llm.replies import as_verdict, json_objects
from ragsweep.llm.settings import LLMSettings
from ragsweep.metrics import registry

if TYPE_CHECKING:  # the client (with httpx) is imported where one is made: a run without a judge reads
    # only this module's verdict records
    from ragsweep.llm.client import ChatResult, LLMClient, Messages

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


_REPAIR_TEMPLATE = (
    "Your reply could not be read ({error}). Reply again with one JSON object only, no other text: "
    '{{"reason": "<one short sentence>", "is_correct": true or false}}'
)


class ReplicateVerdict(BaseModel):
    """One of a case's replicate judgements."""

    is_correct: bool | None = None
    reason: str = ""
    error: str | None = None
    failure: str | None = None
    repaired: bool = False
    cached: bool = False
    raw: str = ""


class ReferenceCheck(ModelDict):
    """The judge against a case's reference verdict (:func:`reference_check`), as cases.jsonl holds it."""

    source: str
    reference: float | None  # the reference's verdict as a number (reference_value)
    reference_is_correct: bool | None
    judge: float | None  # the judge's score on the same answer
    judge_is_correct: bool | None
    judge_method: str
    judge_sd: float | None
    judge_error: str | None
    answer_is_run_answer: bool
    answer: str | None  # the reference's own answer (None: the run's, judged already)


class JudgeVerdict(BaseModel):
    is_correct: bool | None = None  # with replicates: the majority (None on a tie)
    reason: str = ""
    method: str = ""  # "rule" | "llm" | "skipped"
    error: str | None = None
    failure: str | None = None  # named failure (see failure_kind) when there is no verdict
    repaired: bool = False  # the verdict came from the one re-ask after an unparsable reply
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    raw: str = ""  # the judge's reply (truncated), for inspection
    score: float | None = None  # mean of the valid replicate verdicts (true = 1.0); the case's judge_correct
    sd: float | None = None  # their sample standard deviation (two or more valid replicates)
    n_replicates: int = 1  # replicates asked
    replicates: list[ReplicateVerdict] = []  # each replicate, when more than one was asked
    reference_check: ReferenceCheck | None = None  # the judge against the case's reference verdict


def failure_kind(error: str | None) -> str | None:
    """A short stable name for why a judgement failed (for counts in reports)."""
    if not error:
        return None
    e = error.lower()
    if e.startswith("unparsable"):
        return "unparsable"
    if "refused" in e:
        return "refusal"
    if e.startswith("timeout"):
        return "timeout"
    if e.startswith("http 429"):
        return "rate_limited"
    if e.startswith("http 400") and "seed" in e:
        return "seed_rejected"
    if e.startswith("http "):
        return "http_" + e.split()[1].rstrip(":")
    if e.startswith("connection"):
        return "connection"
    if e.startswith("malformed"):
        return "malformed_reply"
    if e.startswith("oversized"):
        return "oversized_reply"
    return "other"


class JudgeItem(BaseModel):
    question: str
    answer: str
    reference: str = ""
    unanswerable: bool = False
    abstained: bool | None = None  # the answerer's flag; None -> detected from the text
    answer_error: str | None = None
    expected_facts: list[str] = []
    reference_verdict: ReferenceVerdict | None = None  # the case's (``Case.reference_verdict``, or its dict)


# ----------------------------------------------------------------- parsing
_KEYS = ("is_correct", "iscorrect", "correct", "is correct", "verdict", "answer_correct")


def parse_verdict(text: str) -> tuple[bool, str]:
    """``(is_correct, reason)`` from a judge reply; ``ValueError`` if there is no verdict.

    The first JSON object (:func:`ragsweep.llm.replies.json_objects`) with a verdict under one of
    the verdict keys (:func:`~ragsweep.llm.replies.as_verdict`: "incorrect" is False), else a bare
    ``is_correct: true|false`` in the text.
    """
    for obj in json_objects(text):
        for key in _KEYS:
            if key in obj:
                verdict = as_verdict(obj[key])
                if verdict is not None:
                    reason = obj.get("reason") or obj.get("explanation") or ""
                    return verdict, str(reason)
    m = re.search(r'"?is_correct"?\s*[:=]\s*"?(true|false)\b', text or "", re.I)
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


class _ChatKwargs(TypedDict, total=False):
    """What a judge passes to every chat call besides the messages."""

    json_mode: bool
    max_tokens: int
    temperature: float


def judge_messages(item: JudgeItem) -> Messages:
    return [
        {"role": "system", "content": JUDGE_SYSTEM_PROMPT},
        {
            "role": "user",
            "content": JUDGE_USER_TEMPLATE.format(
                question=item.question.strip(), prediction=item.answer.strip(), label=_label(item)
            ),
        },
    ]


def repair_messages(messages: Messages, reply: str, error: str) -> Messages:
    """The original request, the unreadable reply, and the parse error: asked once."""
    return [
        *messages,
        {"role": "assistant", "content": reply or ""},
        {"role": "user", "content": _REPAIR_TEMPLATE.format(error=error)},
    ]


def replicate_seed(replicate: int) -> int | None:
    """Replicate 0 is the plain request; replicate r >= 1 sends ``seed=r``."""
    return None if replicate == 0 else replicate


def _combine(reps: list[JudgeVerdict], asked: int) -> JudgeVerdict:
    """One case's verdict from its replicate judgements."""
    if asked == 1:
        v = reps[0]
        v.score = None if v.is_correct is None else float(v.is_correct)
        return v
    valid = [r.is_correct for r in reps if r.is_correct is not None]
    yes, no = sum(valid), len(valid) - sum(valid)
    majority = True if yes > no else False if no > yes else None
    first = next((r for r in reps if r.is_correct is not None and r.is_correct == majority), None)
    failed = next((r for r in reps if r.is_correct is None), None)
    out = JudgeVerdict(
        is_correct=majority,
        reason=(first.reason if first else ("replicates tie" if valid else "")),
        method="llm",
        error=None if valid else (failed.error if failed else None),
        failure=None if valid else (failed.failure if failed else None),
        repaired=any(r.repaired for r in reps),
        cached=all(r.cached for r in reps),
        prompt_tokens=sum(r.prompt_tokens for r in reps),
        completion_tokens=sum(r.completion_tokens for r in reps),
        raw=reps[0].raw,
        score=statistics.fmean(float(x) for x in valid) if valid else None,
        sd=statistics.stdev(float(x) for x in valid) if len(valid) >= 2 else None,
        n_replicates=asked,
        replicates=[
            ReplicateVerdict(
                is_correct=r.is_correct,
                reason=r.reason[:300],
                error=r.error,
                failure=r.failure,
                repaired=r.repaired,
                cached=r.cached,
                raw=r.raw[:300],
            )
            for r in reps
        ],
    )
    return out


class LLMJudge:
    """The answer-correctness judge.

    ``replicates``: judgements per LLM-judged case (see the module docstring);
    ``temperature``: the judge's own (None: the settings'); at temperature 0 replicates
    measure only the endpoint's nondeterminism; ``repair``: re-ask once after an
    unparsable reply.
    """

    def __init__(
        self,
        settings: LLMSettings,
        client: LLMClient | None = None,
        *,
        replicates: int = 1,
        temperature: float | None = None,
        repair: bool = True,
    ):
        if replicates < 1:
            raise ValueError(f"replicates must be >= 1, got {replicates}")
        self.settings = settings
        if client is None:
            from ragsweep.llm.client import LLMClient  # deferred: httpx, for a client only

            client = LLMClient(settings)
        self.client = client
        self.name = f"llm-judge:{settings.model}"
        self.replicates = replicates
        self.temperature = temperature
        self.repair = repair

    def __repr__(self) -> str:
        return f"LLMJudge({self.settings}, replicates={self.replicates})"

    @property
    def effective_temperature(self) -> float:
        return self.settings.temperature if self.temperature is None else self.temperature

    def _from_result(self, result: ChatResult) -> JudgeVerdict:
        base = dict(
            method="llm",
            cached=result.cached,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            raw=result.text[:1000],
        )
        if result.error:
            return JudgeVerdict(error=result.error, failure=failure_kind(result.error), **base)
        if result.refusal and not result.text.strip():
            error = f"the judge model refused: {result.refusal[:300]}"
            return JudgeVerdict(error=error, failure="refusal", **base)
        try:
            verdict, reason = parse_verdict(result.text)
        except ValueError as err:
            return JudgeVerdict(error=f"unparsable judge reply: {err}", failure="unparsable", **base)
        return JudgeVerdict(is_correct=verdict, reason=reason, **base)

    def _chat_kwargs(self) -> _ChatKwargs:
        kwargs: _ChatKwargs = {
            "json_mode": self.settings.json_mode,
            "max_tokens": min(self.settings.max_tokens, _JUDGE_MAX_TOKENS),
        }
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        return kwargs

    def _ask(self, batch: list[Messages], replicate: int) -> list[JudgeVerdict]:
        """One replicate of a batch of requests, each unparsable reply re-asked once."""
        seed = replicate_seed(replicate)
        results = self.client.chat_batch(batch, seed=seed, **self._chat_kwargs())
        verdicts = [self._from_result(r) for r in results]
        if not self.repair:
            return verdicts
        redo = [i for i, v in enumerate(verdicts) if v.failure == "unparsable"]
        if not redo:
            return verdicts
        again = self.client.chat_batch(
            [
                repair_messages(
                    batch[i], results[i].text, (verdicts[i].error or "").removeprefix("unparsable judge reply: ")
                )
                for i in redo
            ],
            seed=seed,
            **self._chat_kwargs(),
        )
        for i, result in zip(redo, again):
            second = self._from_result(result)
            first = verdicts[i]
            tokens = dict(
                prompt_tokens=first.prompt_tokens + second.prompt_tokens,
                completion_tokens=first.completion_tokens + second.completion_tokens,
            )
            if second.is_correct is not None:
                verdicts[i] = second.model_copy(
                    update={"repaired": True, "cached": first.cached and second.cached, **tokens}
                )
            else:
                why = second.error or ""
                verdicts[i] = first.model_copy(
                    update={
                        "error": f"{first.error} (asked again with the error: {why})",
                        "raw": (first.raw + "\n--- after repair ---\n" + second.raw)[:1000],
                        **tokens,
                    }
                )
        return verdicts

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
            question=question,
            answer=answer,
            reference=reference or "",
            unanswerable=unanswerable,
            abstained=abstained,
            answer_error=answer_error,
            expected_facts=list(expected_facts),
        )
        return self.judge_items([item])[0]

    def _judge_plain(self, items: Sequence[JudgeItem]) -> list[JudgeVerdict]:
        out: list[JudgeVerdict | None] = [rule_verdict(it) for it in items]
        for v in out:
            if v is not None:
                v.score = None if v.is_correct is None else float(v.is_correct)
        todo = [i for i, v in enumerate(out) if v is None]
        if todo:
            batch = [judge_messages(items[i]) for i in todo]
            per_replicate = [self._ask(batch, r) for r in range(self.replicates)]
            for j, i in enumerate(todo):
                out[i] = _combine([per_replicate[r][j] for r in range(self.replicates)], self.replicates)
        return [v for v in out if v is not None]

    def judge_items(self, items: Sequence[JudgeItem]) -> list[JudgeVerdict]:
        """Batch, bounded concurrency, verdicts in input order; each item with a reference
        verdict also gets ``reference_check`` (its labelled answer judged too, unless it is
        the answer just judged)."""
        extra: list[JudgeItem] = []
        where: dict[int, int] = {}
        for i, it in enumerate(items):
            ref = it.reference_verdict
            if not ref:
                continue
            labelled = ref.answer
            if labelled is None or (not it.answer_error and labelled.strip() == it.answer.strip()):
                continue
            where[i] = len(extra)
            extra.append(
                it.model_copy(
                    update={"answer": labelled, "abstained": None, "answer_error": None, "reference_verdict": None}
                )
            )
        verdicts = self._judge_plain([*items, *extra])
        out, labelled_verdicts = verdicts[: len(items)], verdicts[len(items) :]
        for i, it in enumerate(items):
            ref = it.reference_verdict
            if not ref:
                continue
            v = labelled_verdicts[where[i]] if i in where else out[i]
            out[i].reference_check = reference_check(ref, v, same_answer=i not in where)
        return out

    def judge_batch(self, items: Sequence[Mapping[str, object]]) -> list[JudgeVerdict]:
        """Same as :meth:`judge_items` with plain dicts of JudgeItem fields."""
        return self.judge_items([JudgeItem.model_validate(d) for d in items])


def reference_value(ref: ReferenceVerdict) -> float | None:
    """A reference verdict as a number: ``is_correct`` (1.0 / 0.0), else ``score``."""
    if ref.is_correct is not None:
        return float(ref.is_correct)
    if ref.score is not None:
        return float(ref.score)
    return None


def reference_check(ref: ReferenceVerdict, verdict: JudgeVerdict, same_answer: bool) -> ReferenceCheck:
    """What the report compares: the reference's verdict beside the judge's on the same answer."""
    return {
        "source": ref.source,
        "reference": reference_value(ref),
        "reference_is_correct": ref.is_correct,
        "judge": verdict.score,
        "judge_is_correct": verdict.is_correct,
        "judge_method": verdict.method,
        "judge_sd": verdict.sd,
        "judge_error": verdict.error,
        "answer_is_run_answer": same_answer,
        "answer": None if same_answer else (ref.answer or "")[:500],
    }


def estimate_judge_calls(
    items: Sequence[tuple[str, str, bool]],
    settings: LLMSettings,
    assumed_answer_tokens: int = 64,
    replicates: int = 1,
) -> CallEstimate:
    """Dry run for ``(question, reference, unanswerable)`` triples.

    Unanswerable cases are decided by rule (no call); answerable ones count one
    call each, ``replicates`` calls with replicates (an upper bound: refusals are also
    decided by rule; a re-ask after an unparsable reply is not counted). The answer is
    not known before the run, so it counts as ``assumed_answer_tokens``.
    """
    est = CallEstimate(what="judge", model=settings.model)
    filler = " ".join(["word"] * assumed_answer_tokens)
    for question, reference, unanswerable in items:
        if unanswerable:
            continue
        item = JudgeItem(question=question, answer=filler, reference=reference or "")
        prompt = count_message_tokens(judge_messages(item), settings.model)
        est.add(replicates, replicates * prompt, replicates * _JUDGE_COMPLETION_TOKENS)
    est.notes.append(
        f"answers assumed {assumed_answer_tokens} tokens, judge replies {_JUDGE_COMPLETION_TOKENS}; "
        "refusals on answerable cases need no call (upper bound)"
    )
    return est.priced(settings)


# the mean of a case's replicate verdicts, set by the case scorer
registry.register(registry.MetricSpec(registry.JUDGE_CORRECT, "judge", 210, headline=5))
