"""The ``$variables`` ragsweep itself reads (the knobs), typed, with what is allowed for each.

Each stage declares its knobs next to its code (:class:`ragsweep.core.knob.Knob`: type, domain, message,
what it changes); :class:`PipelineVariables` is composed from them, in the order of :data:`KNOBS` (a check
may read the knobs before it). A bad value is one line naming the knob and its message (:data:`KNOB_RULES`);
:func:`declare` adds a knob (a stage of a plugin, a test). The arguments of components that decide what is
scored are checked by :data:`ARGUMENT_RULES`.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from ragsweep.answer import prompt
from ragsweep.core.knob import Knob, Stage
from ragsweep.llm import settings
from ragsweep.pipeline import (
    chunking_knobs,
    embedding_knobs,
    language_knobs,
    rerank_knobs,
    retrieval_knobs,
    routing_knobs,
)
from ragsweep.pipeline.retrieval_knobs import KnobContext

__all__ = ["ARGUMENT_RULES", "KNOBS", "KNOB_RULES", "KnobContext", "PipelineVariables", "declare", "knobs_affecting"]

# every knob, stage by stage; $rerank_candidates' check reads $reranker and $top_k, declared before it
KNOBS: list[Knob] = [
    *chunking_knobs.KNOBS,
    *retrieval_knobs.KNOBS,
    *language_knobs.KNOBS,
    *embedding_knobs.KNOBS,
    *prompt.KNOBS,
    *routing_knobs.KNOBS,
    *settings.KNOBS,
    *rerank_knobs.KNOBS,
]

# the message of a failed type or bound check, per knob (kept by declare())
KNOB_RULES: dict[str, str] = {knob.name: knob.message for knob in KNOBS}


class _Variables(BaseModel):
    """What every composition shares: free variables, and the checks across knobs."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        low, high = getattr(self, "min_tokens", None), getattr(self, "max_tokens", None)
        if low is not None and high is not None and low > high:
            raise ValueError("min_tokens must be <= max_tokens")
        return self


def _compose(knobs: list[Knob], base: type[BaseModel]) -> Any:
    # a default of None is "absent" (defaults are not validated): an explicit null is rejected unless nullable
    fields: dict[str, Any] = {
        k.name: (k.annotation(), Field(default=None, validate_default=True) if k.checked_when_absent else None)
        for k in knobs
    }
    checks = {f"_check_{k.name}": field_validator(k.name)(k.check) for k in knobs if k.check is not None}
    return create_model("PipelineVariables", __base__=base, __validators__=checks, **fields)


class PipelineVariables(_compose(KNOBS, _Variables)):  # type: ignore[misc]
    """The ``$variables`` ragsweep itself reads, typed; any other variable is free.

    An absent knob is not checked (the component's own default applies); ``null``
    is allowed where ragsweep has a fallback (``$top_k``, ``$retriever_mode``,
    ``$prompt_template``, the ``llm_*`` ones), not for values a component takes.
    The ``llm_*`` knobs are :class:`ragsweep.llm.settings.LLMSettings`' fields.
    Validating checks the knobs :func:`declare` added too.
    """

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        model = _declared if cls is PipelineVariables else cls
        return super(PipelineVariables, model).model_validate(obj, *args, **kwargs)  # type: ignore[return-value]


_declared: type[PipelineVariables] = PipelineVariables


def declare(*knobs: Knob) -> None:
    """Add knobs: :class:`PipelineVariables` checks them, ``--set`` names their messages, and
    :func:`knobs_affecting` lists them. A name already declared is refused."""
    global _declared
    taken = [k.name for k in knobs if k.name in KNOB_RULES]
    if taken:
        raise ValueError(f"knobs declared already: {', '.join(taken)}")
    KNOBS.extend(knobs)
    KNOB_RULES.update({k.name: k.message for k in knobs})
    _declared = _compose(KNOBS[len(PipelineVariables.model_fields) :], PipelineVariables)


def withdraw(*names: str) -> None:
    """Take back knobs :func:`declare` added (a test's, when it ends)."""
    global _declared
    builtin = set(PipelineVariables.model_fields)
    KNOBS[:] = [k for k in KNOBS if k.name not in names or k.name in builtin]
    for name in set(names) - builtin:
        KNOB_RULES.pop(name, None)
    added = KNOBS[len(builtin) :]
    _declared = _compose(added, PipelineVariables) if added else PipelineVariables


def knobs_affecting(stage: Stage, applied_by: Literal["component", "ragsweep"] | None = None) -> tuple[str, ...]:
    """The knobs whose value changes ``stage``'s output (``"chunks"``, ``"index"``...), in declaration order.

    A change of an earlier stage changes every later one too (:data:`ragsweep.core.knob.STAGES`): a key
    of a stage holds the key of the one before it, and adds the values of its own knobs.
    ``applied_by="ragsweep"`` keeps the knobs ragsweep applies itself (``$route_docs``): a key computed
    over the stage's components (the splitter's definition holds ``$chunk_header``) must add those by
    value; a knob a component takes is in that definition already.
    """
    return tuple(k.name for k in KNOBS if k.affects == stage and applied_by in (None, k.applied_by))


# the arguments of components that ragsweep reads or that decide what it scores, literal or ``$variable``:
# (the least value allowed, what is allowed); null passes where the constructor's own default is null
ARGUMENT_RULES: dict[str, tuple[int, str]] = {
    "max_tokens": (1, "must be an integer >= 1 (and >= min_tokens)"),
    "min_tokens": (0, "must be an integer >= 0 (and <= max_tokens)"),
    "dimensions": (1, "must be an integer >= 1 (the width of the vectors)"),
    "search_topk": (1, "must be an integer >= 1"),
    "rerank_topk": (1, "must be an integer >= 1, or null"),
    "n_starting_documents": (1, "must be an integer >= 1 (the depth of the answerer's first ask)"),
    "factor": (1, "must be an integer >= 1 (how much the answerer widens at each new ask)"),
    "max_iterations": (1, "must be an integer >= 1 (how many times the answerer asks)"),
}
