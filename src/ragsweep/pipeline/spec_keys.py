"""The keys of a pipeline file, from its symbols: the config hash (its whole structure after overrides), the
chunking key (what decides the chunks) and the index key (what decides the index).

Each key is :func:`ragsweep.core.keys.cache_key` over a canonical form of nodes (components by their tag's
import path, ``$variables`` by name, values as JSON), the same in every process: ``--resume``, run folders
and every cache keyed by a configuration rely on that. Equal keys mean the same structure.
"""

from __future__ import annotations

import enum
import json
import re
from typing import NoReturn, TypeAlias

from pydantic import BaseModel

from ragsweep.core.errors import ConfigError
from ragsweep.core.keys import cache_key
from ragsweep.core.knob import Stage
from ragsweep.pipeline.knobs import PipelineVariables, knobs_affecting
from ragsweep.pipeline.yaml_symbolic import Ref, SymbolicTree, Tagged, yaml_nodes

# the JSON-able form of a node the keys are computed from
Canonical: TypeAlias = "str | int | float | bool | None | list[Canonical] | dict[str, Canonical]"
_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]{4,}")
HASH_LENGTH = 16  # a key is shown in run folders and reports


def knobs_changing(stage: Stage, variables: PipelineVariables) -> dict[str, object]:
    """The knobs ragsweep applies itself that change ``stage``'s output (``"chunks"``, ``"index"``), with their
    values: the one place a key adds knobs beyond the components' definitions (a knob a component takes is
    in its definition already: :func:`ragsweep.pipeline.knobs.knobs_affecting`)."""
    return {name: getattr(variables, name, None) for name in knobs_affecting(stage, applied_by="ragsweep")}


def canonical(obj: object) -> Canonical:
    """A JSON-able form of a node that is the same in every process."""
    if isinstance(obj, Ref):
        return f"${obj.name}"
    if isinstance(obj, Tagged):
        return {"!" + obj.path: None if obj.bare else canonical(obj.kwargs)}
    if isinstance(obj, dict):
        return {str(canonical(k)): canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    return canonical_object(obj)


def canonical_object(value: object, depth: int = 0) -> Canonical:
    """A Python value by what it is, never by ``repr`` with a memory address (a YAML timestamp, a value put
    in a tree by code): enum-like values (``pathway.engine`` ones included) by name, classes and functions
    by import path, other objects by class path and fields."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if isinstance(value, (list, tuple)):
        return [canonical_object(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(canonical_object(k, depth + 1)): canonical_object(v, depth + 1) for k, v in value.items()}
    if isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
        return {"!callable": _callable_path(value)}
    t = type(value)
    for name in dir(t):  # a class attribute holding this very value: an enum member of a pyo3 class
        if not name.startswith("_"):
            try:
                if getattr(t, name) is value:
                    return f"{t.__qualname__}.{name}"
            except Exception:  # noqa: BLE001 - descriptors may raise
                continue
    if depth > 8:
        return {"!object": _type_path(t)}
    return {"!object": _type_path(t), **_object_fields(value, depth)}


def _object_fields(value: object, depth: int) -> dict[str, Canonical]:
    if isinstance(value, BaseModel):
        fields = value.model_dump(mode="python")
    elif hasattr(value, "__dataclass_fields__"):
        fields = {f: getattr(value, f) for f in value.__dataclass_fields__}
    elif hasattr(value, "__dict__"):
        fields = dict(vars(value))
    else:
        text = repr(value)
        return {} if _ADDRESS.search(text) else {"repr": text}
    return {"fields": canonical_object(fields, depth + 1)}


def _callable_path(c: object) -> str:
    module, qualname = getattr(c, "__module__", None), getattr(c, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else _type_path(type(c))


def _type_path(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def _not_canonical(obj: object) -> NoReturn:
    raise TypeError(f"{type(obj).__qualname__} left in a canonical form")


def canonical_text(path: str, obj: object) -> str:
    """``obj``'s canonical form as JSON text; one holding a memory address is refused (its key would differ
    in every process)."""
    text = json.dumps(canonical(obj), sort_keys=True, default=_not_canonical)
    found = _ADDRESS.search(text)
    if found:
        raise ConfigError(
            f"{path}: cannot hash this config stably: its canonical form contains {found.group(0)!r} (a memory address)"
        )
    return text


def config_hash(path: str, raw: SymbolicTree) -> str:
    """The key of a file's whole structure after overrides."""
    return cache_key("pipeline-config", canonical_text(path, raw), length=HASH_LENGTH)


def sub_hash(path: str, raw: SymbolicTree, root: object) -> str:
    """The key of one definition with every variable it references, recursively."""
    seen: dict[str, object] = {"": root}
    for node in yaml_nodes(root, raw):
        if isinstance(node, Ref) and node in raw:
            seen[node.name] = raw[node]
    return cache_key("pipeline-definition", canonical_text(path, seen), length=HASH_LENGTH)
