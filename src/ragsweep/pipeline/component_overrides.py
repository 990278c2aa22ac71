"""An override of one argument of a component: ``question_answerer.search_topk=3``, ``llm.model=gpt-4o``.

A plain override replaces a ``$variable``; an app often writes the knobs worth tuning as literal
arguments of its components (``search_topk: 8`` on its question answerer, ``model:`` on its
``OpenAIChat``, ``n_starting_documents`` / ``factor`` / ``max_iterations`` on an
``AdaptiveRAGQuestionAnswerer``). ``<component>.<argument>`` names one of them: ``<component>`` is a
top-level key (``question_answerer``) or a ``$variable`` holding a component (``llm`` or ``$llm``).
The node is copied with that one argument replaced; the file's other nodes stay as they are.

Each works on a file's symbols (:mod:`ragsweep.pipeline.yaml_symbolic`); the build applies the same
overrides to Pathway's tree of the file (:func:`ragsweep.pipeline.built.loaded_tree`).
"""

from __future__ import annotations

import copy
import difflib

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.scalars import Scalar
from ragsweep.pipeline.spec_tree import is_scalar
from ragsweep.pipeline.tag_classes import takes
from ragsweep.pipeline.yaml_symbolic import Ref, SymbolicTree, Tagged


def is_argument_override(name: str) -> bool:
    return "." in name


def _component_key(raw: SymbolicTree, component: str) -> tuple[str | Ref, object] | None:
    """The key of ``component``'s node in the file (a top-level key, else a ``$variable``) and the node."""
    plain = component.removeprefix("$")
    for key in (component, Ref(plain)) if not component.startswith("$") else (Ref(plain),):
        if key in raw:
            return key, raw[key]
    return None


def _components(raw: SymbolicTree) -> list[str]:
    return sorted(str(k) for k, v in raw.items() if isinstance(v, Tagged))


def apply_argument(raw: SymbolicTree, path: str, name: str, value: Scalar) -> None:
    """``raw`` (a copy of the file's nodes) with ``name`` = ``<component>.<argument>`` set to ``value``;
    a component or argument that is not there is one :class:`ConfigError` naming what is."""
    component, _, argument = name.partition(".")
    key, node = _component_key(raw, component) or ("", None)
    if not isinstance(node, Tagged) or not argument or "." in argument:
        known = _components(raw)
        close = difflib.get_close_matches(component, known, n=2, cutoff=0.5)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise ConfigError(
            f"{path}: {name}: no component {component!r} with an argument to set{hint}; "
            f"a component argument is <component>.<argument>, components: {', '.join(known) or 'none'}"
        )
    if argument not in node.kwargs and not takes(node.path, argument):
        raise ConfigError(f"{path}: {name}: {component} ({node.name}) takes no argument {argument!r}")
    replaced = copy.copy(node)
    replaced.kwargs = {**node.kwargs, argument: value}
    raw[key] = replaced


def component_argument(raw: SymbolicTree, name: str) -> object:
    """The value ``<component>.<argument>`` has in a file's nodes (None: not set there)."""
    component, _, argument = name.partition(".")
    _, node = _component_key(raw, component) or ("", None)
    return node.kwargs.get(argument) if isinstance(node, Tagged) else None


def check_variable_override(raw: SymbolicTree, path: str, name: str) -> None:
    """``$name`` is a plain variable of the file: one that is not there, or holds a component, is one
    :class:`ConfigError` (with the variables or component arguments it may have meant)."""
    var = Ref(name)
    if var not in raw:
        scalars = sorted(k.name for k, v in raw.items() if isinstance(k, Ref) and is_scalar(v))
        close = difflib.get_close_matches(name, scalars, n=3, cutoff=0.6)
        meant = [*("$" + c for c in close), *filter(None, [argument_hint(raw, name)])]
        hint = f"did you mean {' or '.join(meant)}? " if meant else ""
        raise ConfigError(f"{path}: no variable ${name} to override ({hint}scalars: {', '.join(scalars)})")
    if not is_scalar(raw[var]):
        raise ConfigError(f"{path}: ${name} is a component, not a scalar: it cannot be overridden")


def argument_hint(raw: SymbolicTree, name: str) -> str:
    """``"the argument question_answerer.search_topk"`` when components of the file take ``name`` as a
    literal argument (an override of ``$name`` finds no such variable), else ``""``."""
    owners = [str(k).removeprefix("$") for k, v in raw.items() if isinstance(v, Tagged) and name in v.kwargs]
    return f"the argument {' or '.join(f'{o}.{name}' for o in sorted(owners))}" if owners else ""
