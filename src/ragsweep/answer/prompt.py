"""What a ``$prompt_template`` may hold: the answerer fills it, the configuration checks it on load."""

from __future__ import annotations

from ragsweep.core.knob import Knob


def validate_template(template: str) -> str:
    """``$prompt_template`` as Pathway's ``RAGPromptTemplate`` takes it: ``{context}`` and ``{query}``, no other field."""
    if "{context}" not in template or "{query}" not in template:
        raise ValueError("prompt template must contain the {context} and {query} placeholders")
    try:
        template.format(context=" ", query=" ")
    except (KeyError, IndexError, ValueError) as err:
        raise ValueError(
            f"prompt template may use only {{context}} and {{query}} (escape other braces as {{{{ }}}}): {err}"
        ) from err
    return template


def _check_template(value: str | None) -> str | None:
    if value is not None:
        try:
            validate_template(value)
        except ValueError as err:
            raise ValueError(f"must be null (Pathway's RAG prompt) or a template: {err}") from None
    return value


KNOBS = (
    Knob(
        name="prompt_template",
        kind="str",
        nullable=True,
        message="must be null or a string with the {context} and {query} placeholders",
        affects="answer",
        applied_by="ragsweep",
        check=_check_template,
    ),
)
