"""What a ``$prompt_template`` may hold: the answerer fills it, the configuration checks it on load."""

from __future__ import annotations


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
