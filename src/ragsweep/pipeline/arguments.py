"""The constructor arguments of an app's components that ragsweep reads, declared once.

A YAML component's arguments (Pathway's ``Value.kwargs``: each a YAML node, so a literal, a
``$variable`` or another component) and a built component's (Pathway's chat models and
embedders keep theirs in ``kwargs``) are read as :class:`ComponentArguments`. Every other
argument is the constructor's alone: ragsweep passes it through untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

K = TypeVar("K")  # an argument's name (a str), or a YAML component's local ``$variable``


class ComponentArguments(BaseModel):
    """What ragsweep reads of a component's arguments; one it was not given is None."""

    model_config = ConfigDict(frozen=True)  # the other arguments are left out

    search_topk: object = None  # a question answerer's depth
    n_starting_documents: object = None  # an adaptive answerer's first depth...
    factor: object = None  # ... multiplied by this at each new ask...
    max_iterations: object = None  # ... this many asks in all
    prompt_template: object = None  # a question answerer's prompt
    llm: object = None  # a question answerer's chat model
    retriever_factory: object = None  # a document store's index
    model: object = None  # a chat model's or an embedder's model name
    base_url: object = None  # where a client sends its requests (the openai client's name for it)
    api_base: object = None  # the same, under LiteLLM's name
    docs: object = None  # the connectors a document store reads
    path: object = None  # the folder a connector reads (``pw.io.fs.read``)
    capacity: object = None  # the calls a chat model keeps in flight
    dimensions: object = None  # the width an embedder is asked for

    @classmethod
    def of(cls, kwargs: Mapping[K, object]) -> ComponentArguments:
        """``kwargs``' arguments (a YAML component's may hold local ``$variables`` too: not arguments)."""
        return cls.model_validate(kwargs)
