"""A pipeline file read as symbols: what it says, with no class imported and nothing built.

Pathway's loader imports the class every ``!tag`` names while it reads (and so Pathway itself); the
keys, the knob checks and the questions about a file's structure need only the names. This loader reads
the same YAML into the same shape as Pathway's (``$name`` keys and values, tags with their arguments):

- ``$name`` (a key or a value) is a :class:`Ref`;
- ``!pw.x.Y {args}`` is a :class:`Tagged` node: the import path (``pw.`` written ``pathway.``) and its
  arguments; ``!pw.x.Y`` with no value is a bare one (a constant such as an enum member, or a call with
  no arguments: only the import, at build time, tells which);
- PyYAML's ``!!python/...`` tags are refused, as the build's loader refuses them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NoReturn, TypeAlias

import yaml

_VARIABLE_TAG = "tag:pathway.com,2024:variable"  # Pathway's own tag for a ``$name``
PYTHON_TAG = "tag:yaml.org,2002:python/"


@dataclass(frozen=True)
class Ref:
    """A ``$variable``: a key that defines it, or a value that references it."""

    name: str

    def __str__(self) -> str:
        return f"${self.name}"


@dataclass(eq=False)
class Tagged:
    """A ``!tag`` node: a component (or constant) by its import path, with the arguments the file gives."""

    path: str  # ``pathway.stdlib.indexing.BruteForceKnnFactory``
    kwargs: dict[str | Ref, object] = field(default_factory=dict)
    bare: bool = False  # written with no value (``!pw.engine.X.COS``): a constant, or a call with no arguments

    @property
    def name(self) -> str:
        """The class or function name alone (``BruteForceKnnFactory``)."""
        return self.path.replace(":", ".").rsplit(".", 1)[-1]


# a pipeline file read symbolically: ``$variables`` and top-level keys, each a node (a Tagged, a Ref, a
# scalar, or a dict / list of nodes)
SymbolicTree: TypeAlias = "dict[str | Ref, object]"


def import_path(tag: str) -> str:
    """A tag's import path as Pathway reads it: ``pw.`` (or ``pw:``) stands for ``pathway``; ``a.b:C`` names
    attribute ``C`` of module ``a.b``, written here ``a.b.C``."""
    if tag.startswith(("pw.", "pw:")):
        tag = "pathway" + tag.removeprefix("pw")
    return tag.replace(":", ".")


class SymbolicLoader(yaml.SafeLoader):
    """PyYAML's safe loader with Pathway's ``$variables`` and ``!tags`` read as :class:`Ref` and
    :class:`Tagged` nodes."""

    def construct_ref(self, node: yaml.Node) -> Ref:
        name = self.construct_yaml_str(node)
        if not name.startswith("$"):
            raise yaml.MarkedYAMLError(
                problem=f"variable name {name!r} does not start with '$'", problem_mark=node.start_mark
            )
        if not name[1:].isidentifier():
            raise yaml.MarkedYAMLError(
                problem=f"variable name {name[1:]!r} is not a valid identifier", problem_mark=node.start_mark
            )
        return Ref(name[1:])

    def construct_tagged(self, tag: str, node: yaml.Node) -> Tagged:
        path = import_path(tag)
        if isinstance(node, yaml.ScalarNode) and node.value == "":
            return Tagged(path, {}, bare=True)
        if isinstance(node, yaml.MappingNode):
            kwargs = self.construct_mapping(node)
            for key in kwargs:
                if not isinstance(key, (str, Ref)):
                    raise yaml.MarkedYAMLError(
                        problem=f"expected string key, got {type(key)}", problem_mark=node.start_mark
                    )
            return Tagged(path, kwargs)
        raise yaml.MarkedYAMLError(problem="expected a mapping or empty node", problem_mark=node.start_mark)

    def refuse_python_tag(self, suffix: str, node: yaml.Node) -> NoReturn:
        raise yaml.MarkedYAMLError(
            problem=f"the tag !!python/{suffix} is refused: PyYAML's python tags run code while loading; "
            "a pipeline uses !pw.* and importable-class tags",
            problem_mark=node.start_mark,
        )


SymbolicLoader.add_implicit_resolver(_VARIABLE_TAG, re.compile(r"\$.*"), list("$"))
SymbolicLoader.add_constructor(_VARIABLE_TAG, SymbolicLoader.construct_ref)
SymbolicLoader.add_multi_constructor(PYTHON_TAG, SymbolicLoader.refuse_python_tag)
SymbolicLoader.add_multi_constructor("!", SymbolicLoader.construct_tagged)


def load_symbolic(text: str) -> object:
    """``text`` read with :class:`SymbolicLoader`."""
    return yaml.load(text, SymbolicLoader)  # noqa: S506 - a safe loader with two constructors of its own


def yaml_nodes(obj: object, raw: SymbolicTree | None = None, _followed: set[str] | None = None) -> Iterator[object]:
    """Every node under ``obj``, depth first: ``obj``, then a Tagged node's arguments, a dict's values, a
    list's items. With ``raw`` (a file's variables), a Ref is followed into its definition, once per name."""
    followed = set() if _followed is None else _followed
    yield obj
    if isinstance(obj, Ref):
        if raw is not None and obj.name not in followed and obj in raw:
            followed.add(obj.name)
            yield from yaml_nodes(raw[obj], raw, followed)
    elif isinstance(obj, Tagged):
        yield from yaml_nodes(obj.kwargs, raw, followed)
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from yaml_nodes(value, raw, followed)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from yaml_nodes(value, raw, followed)


def labelled_components(raw: SymbolicTree) -> Iterator[tuple[str, Tagged]]:
    """Every component a pipeline file builds, with the name it goes by (``$splitter``,
    ``$document_store.retriever_factory``, ``$hybrid.retriever_factories[1]``); a ``$variable`` a
    component references is named where it is defined."""

    def walk(obj: object, label: str) -> Iterator[tuple[str, Tagged]]:
        if isinstance(obj, Tagged):
            yield label, obj
            for key, value in obj.kwargs.items():
                if not isinstance(key, Ref):
                    yield from walk(value, f"{label}.{key}")
        elif isinstance(obj, dict):
            for key, value in obj.items():
                yield from walk(value, f"{label}.{key}")
        elif isinstance(obj, (list, tuple)):
            for n, value in enumerate(obj):
                yield from walk(value, f"{label}[{n}]")

    for key, value in raw.items():
        yield from walk(value, str(key))
