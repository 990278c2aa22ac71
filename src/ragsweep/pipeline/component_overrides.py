"""An override of one argument of a component: ``question_answerer.search_topk=3``, ``llm.model=gpt-4o``.

A plain override replaces a ``$variable``; an app often writes the knobs worth tuning as literal
arguments of its components (``search_topk: 8`` on its question answerer, ``model:`` on its
``OpenAIChat``, ``n_starting_documents`` / ``factor`` / ``max_iterations`` on an
``AdaptiveRAGQuestionAnswerer``). ``<component>.<argument>`` names one of them: ``<component>`` is a
top-level key (``question_answerer``) or a ``$variable`` holding a component (``llm`` or ``$llm``).
The node is copied with that one argument replaced; the file's other nodes stay as they are.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.scalars import Scalar


def is_argument_override(name: str) -> bool:
    return "." in name


def _component_key(raw: dict[Any, Any], component: str) -> Any:
    """The key of ``component``'s node in the file: a top-level key, else a ``$variable``."""
    from pathway.internals.yaml_loader import Variable

    plain = component.removeprefix("$")
    for key in (component, Variable(plain)) if not component.startswith("$") else (Variable(plain),):
        if key in raw:
            return key
    return None


def _components(raw: dict[Any, Any]) -> list[str]:
    from pathway.internals.yaml_loader import Value

    return sorted(str(k) for k, v in raw.items() if isinstance(v, Value) and v.constructor is not None)


def apply_argument(raw: dict[Any, Any], path: str, name: str, value: Scalar) -> None:
    """``raw`` (a copy of the file's nodes) with ``name`` = ``<component>.<argument>`` set to ``value``;
    a component or argument that is not there is one :class:`ConfigError` naming what is."""
    from pathway.internals.yaml_loader import Value

    component, _, argument = name.partition(".")
    key = _component_key(raw, component)
    node = raw.get(key) if key is not None else None
    if not isinstance(node, Value) or node.constructor is None or not argument or "." in argument:
        known = _components(raw)
        close = difflib.get_close_matches(component, known, n=2, cutoff=0.5)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise ConfigError(
            f"{path}: {name}: no component {component!r} with an argument to set{hint}; "
            f"a component argument is <component>.<argument>, components: {', '.join(known) or 'none'}"
        )
    if argument not in node.kwargs and not _takes(node.constructor, argument):
        raise ConfigError(f"{path}: {name}: {component} ({_name(node.constructor)}) takes no argument {argument!r}")
    replaced = copy.copy(node)
    replaced.kwargs = {**node.kwargs, argument: value}
    raw[key] = replaced


def component_argument(raw: dict[Any, Any], name: str) -> Any:
    """The value ``<component>.<argument>`` has in a file's nodes (None: not set there)."""
    from pathway.internals.yaml_loader import Value

    component, _, argument = name.partition(".")
    key = _component_key(raw, component)
    node = raw.get(key) if key is not None else None
    return node.kwargs.get(argument) if isinstance(node, Value) else None


def _takes(constructor: Any, argument: str) -> bool:
    """Whether ``constructor`` accepts ``argument`` (any keyword when it takes ``**kwargs``)."""
    import inspect

    try:
        params = inspect.signature(constructor).parameters
    except (TypeError, ValueError):
        return True  # not introspectable: the build says what is wrong
    return argument in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _name(constructor: Any) -> str:
    return str(getattr(constructor, "__name__", constructor))


def argument_hint(raw: dict[Any, Any], name: str) -> str:
    """``"the argument question_answerer.search_topk"`` when components of the file take ``name`` as a
    literal argument (an override of ``$name`` finds no such variable), else ``""``."""
    from pathway.internals.yaml_loader import Value

    owners = [
        str(k).removeprefix("$") for k, v in raw.items() if isinstance(v, Value) and v.constructor and name in v.kwargs
    ]
    return f"the argument {' or '.join(f'{o}.{name}' for o in sorted(owners))}" if owners else ""
