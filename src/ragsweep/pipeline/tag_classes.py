"""What a tag's class answers that its name does not: a parameter's default, whether it takes an argument,
whether it builds a retriever factory.

Each question imports the class (and so, for ``!pw.*`` tags, Pathway): the spec asks one only where the
file leaves the answer to the class (an argument it does not set), never to hash or key a file.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from typing import cast

from ragsweep.pipeline.yaml_symbolic import Ref, SymbolicTree, Tagged

# the code whose retriever-factory classes are told by name (tests/test_pipeline_spec.py checks every class
# of theirs): a class ending in ``Factory`` is one, any other class is not
_KNOWN_CODE = ("pathway.", "ragsweep.")


@cache
def imported(path: str) -> object:
    """The object a tag names, imported as Pathway's loader imports it."""
    # deferred: Pathway's import rules are the build's; importing them imports Pathway (~1 s)
    from pathway.internals.yaml_loader import import_object

    return import_object(path)


def _signature(path: str) -> inspect.Signature | None:
    try:
        return inspect.signature(cast("Callable[..., object]", imported(path)))
    except (TypeError, ValueError):
        return None


def parameter_default(path: str, name: str) -> object:
    """The default of ``path``'s parameter ``name`` (None: it has none, or takes no such parameter)."""
    signature = _signature(path)
    param = signature.parameters.get(name) if signature is not None else None
    if param is None or param.default is inspect.Parameter.empty:
        return None
    return param.default


def takes(path: str, argument: str) -> bool:
    """Whether ``path``'s constructor accepts ``argument`` (any keyword when it takes ``**kwargs``)."""
    signature = _signature(path)
    if signature is None:
        return True  # not introspectable: the build says what is wrong
    params = signature.parameters
    return argument in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def is_retriever_factory(node: object, raw: SymbolicTree, depth: int = 0) -> bool:
    """Whether a node builds a retriever factory (a callable that is not a class: maybe)."""
    if isinstance(node, Ref) and depth < 10:
        return is_retriever_factory(raw.get(node), raw, depth + 1)
    if not isinstance(node, Tagged):
        return False
    if node.path.startswith(_KNOWN_CODE):
        return node.name[:1].islower() or node.name.endswith("Factory")  # a function cannot tell before its call
    found = imported(node.path)
    if not isinstance(found, type):
        return callable(found)
    # deferred: a class of the user's is asked what it is; Pathway's base class says
    from pathway.stdlib.indexing import AbstractRetrieverFactory

    return issubclass(found, AbstractRetrieverFactory)
