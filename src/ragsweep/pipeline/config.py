"""Pipeline configs in Pathway's YAML syntax: load, override by variable name, hash, build.

A pipeline file is an llm-app ``app.yaml``: ``$variables`` and ``!pw.`` tags,
read with Pathway's own loader. ragsweep needs from it a splitter and a retriever
factory, found in this order:

- ``$retriever_mode`` names the variable holding the factory (``bm25``, ``knn``,
  ``hybrid`` in ``pipelines/default.yaml``);
- else ``$retriever_factory``;
- else the ``retriever_factory`` of ``$document_store`` (or of a top-level
  ``document_store:``, as in llm-app's indexing template): an existing app config
  evaluated as is; its ``$sources`` are replaced by the dataset's documents.

The splitter is ``$splitter`` or the one of the document store. Any plain scalar
variable can be overridden by name (``max_tokens=400``); the hash covers the
file's structure after overrides, so two runs with equal hashes ran one pipeline.
The hash is computed from a canonical form (classes by their import path, engine
enum values by name, never a ``repr`` with a memory address), so it is the same
in every process: ``--resume`` and run-folder names rely on that.

The knobs ragsweep reads (``$top_k``, ``$min_tokens``, ``$retriever_mode``,
``$llm_timeout``...) are checked on load and after every override by
:class:`PipelineVariables`; a bad value is a :class:`ConfigError` naming the
file, the knob, the value and what is allowed. Other variables are free.

An llm-app ``app.yaml`` works as is:

- its parser (``$parser``, or its document store's: ``DoclingParser``, ``Utf8Parser``, a ``pw.UDF``
  of the user's) is built from the YAML and run as the app runs it (:mod:`ragsweep.pipeline.parsing`;
  :meth:`PipelineConfig.build_parser`); ``--set parser=native`` puts ragsweep's own parse in its place,
  and every report says so;
- its embedder (``OpenAIEmbedder``...) is built and used as is, behind ragsweep's vector cache
  (:mod:`ragsweep.pipeline.app_components`);
- its ``question_answerer`` is built only for ``--llm`` answers
  (:meth:`PipelineConfig.build_question_answerer`, :mod:`ragsweep.answer.app`), over
  ragsweep's DocumentStore; ``host``, ``port`` and other server settings are not used;
- without ``$top_k``, the top-k is ``$search_topk``, else the ``search_topk`` of
  the question answerer (Pathway's default when it sets none); an adaptive answerer's is the depth
  of its first ask, and a run reports every depth it asks (:meth:`PipelineConfig.answerer_depths`);
- its documents are served under the folder its ``pw.io.fs.read`` names, as the app would serve them
  (:meth:`PipelineConfig.served_folder`): a prompt showing a document's ``path`` is the app's;
- the arguments of its components that decide what is scored (:data:`ARGUMENT_RULES`: a splitter's
  ``max_tokens``...) are checked as the knobs are, and a Hugging Face model that is not on the machine
  is named before any work (:data:`HUB_MODEL_ARGUMENTS`).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import enum
import functools
import hashlib
import inspect
import json
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias, TypedDict, TypeGuard, TypeVar, cast

import yaml
from pydantic import (
    BaseModel,
    ValidationError,
)

from ragsweep.core import environment
from ragsweep.core.errors import ConfigError
from ragsweep.core.offline import ensure_offline
from ragsweep.core.starter import pipeline_path
from ragsweep.pipeline.arguments import ComponentArguments
from ragsweep.pipeline.component_overrides import apply_argument, argument_hint, is_argument_override
from ragsweep.pipeline.config_facts import ConfigFacts, facts_key
from ragsweep.pipeline.hub_models import HUB_MODEL_ARGUMENTS, missing_hub_model
from ragsweep.pipeline.knobs import ARGUMENT_RULES, KNOB_RULES, KnobContext, PipelineVariables
from ragsweep.pipeline.parser_spec import NOT_OUTPUT, ParserSpec
from ragsweep.pipeline.scalars import Overrides, Scalar
from ragsweep.pipeline.served_paths import FOLDER_READER, pathway_folder

if TYPE_CHECKING:
    from pathway.internals.yaml_loader import Value, Variable
    from pathway.stdlib.indexing import AbstractRetrieverFactory
    from pathway.xpacks.llm.embedders import BaseEmbedder
    from pathway.xpacks.llm.question_answering import BaseQuestionAnswerer
    from pathway.xpacks.llm.splitters import BaseSplitter
    from pydantic_core import CoreSchema

    from ragsweep.pipeline.parser_spec import ParserManifest
    from ragsweep.pipeline.serving import DocumentStore

_T = TypeVar("_T")
RETRIEVER_MODES = ("bm25", "knn", "hybrid")
DEFAULT_TOP_K = 5
# the parser of a ragsweep pipeline that names none: ragsweep's own offline parse
NATIVE_PARSER = "ragsweep.pipeline.parsing.NativeParser"
# what an app's DocumentStore parses with when it names no parser (Pathway's default)
PATHWAY_DEFAULT_PARSER = "pathway.xpacks.llm.parsers.Utf8Parser"
# an adaptive question answerer's arguments, in the order its depths are computed from
ADAPTIVE_ARGUMENTS = ("n_starting_documents", "factor", "max_iterations")


# a pipeline file as Pathway's loader gives it: ``$variables`` and top-level keys, each a YAML node
# (a Value, a Variable, a constant, or a dict / list of nodes); Pathway types the nodes as ``object``
RawConfig: TypeAlias = "dict[str | Variable, object]"
# the JSON-able form of a YAML node the hashes are computed from
Canonical: TypeAlias = "str | int | float | bool | None | list[Canonical] | dict[str, Canonical]"


@dataclass
class BuiltPipeline:
    """The live objects of one configuration."""

    splitter: BaseSplitter
    retriever_factory: AbstractRetrieverFactory
    embedder: BaseEmbedder | None
    params: dict[str, Scalar]
    route_docs: int | None = None  # $route_docs: a first stage ranks documents (ragsweep.pipeline.routing)
    # the folder the app reads its documents from, as it names it (``data``): None serves the dataset's folder
    served_folder: str | None = None


# where a top-k that is not ``$top_k`` comes from (``question_answerer.search_topk``...); "from" is
# a keyword, hence the functional form
TopKSource = TypedDict("TopKSource", {"value": int, "from": str})


class PipelineManifest(TypedDict, total=False):
    """What a report records of a pipeline (``report.json``'s ``manifest.pipeline``), in this key order."""

    path: str
    hash: str
    overrides: dict[str, Scalar]
    variables: dict[str, Scalar]
    retriever_mode: str | None
    top_k: TopKSource  # only when the top-k is not ``$top_k``
    served_metadata: str  # only when the app reads a connector with no folder: what its metadata lacks
    parser: ParserManifest


_NOT_READ = object()  # an argument's value that is not checked here (a component, an environment variable)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _allowed(value: object, least: int, default: object) -> bool:
    """Whether an argument's value passes its rule (null where the constructor's default is null)."""
    if value is None:
        return default is None
    return _is_int(value) and cast(int, value) >= least


def labelled_components(raw: RawConfig) -> Iterator[tuple[str, Value]]:
    """Every component a pipeline file builds, with the name it goes by (``$splitter``,
    ``$document_store.retriever_factory``, ``$hybrid.retriever_factories[1]``); a ``$variable`` a
    component references is named where it is defined."""
    from pathway.internals.yaml_loader import Value, Variable

    def walk(obj: object, label: str) -> Iterator[tuple[str, Value]]:
        if isinstance(obj, Value):
            if obj.constructor is not None and not obj.constructed:
                yield label, obj
                for key, value in obj.kwargs.items():
                    if not isinstance(key, Variable):
                        yield from walk(value, f"{label}.{key}")
        elif isinstance(obj, dict):
            for key, value in obj.items():
                yield from walk(value, f"{label}.{key}")
        elif isinstance(obj, (list, tuple)):
            for n, value in enumerate(obj):
                yield from walk(value, f"{label}[{n}]")

    for key, value in raw.items():
        yield from walk(value, f"${key.name}" if isinstance(key, Variable) else str(key))


def _show(name: str, value: object) -> str:
    """A knob's value for an error message (never a secret)."""
    from pathway.internals.yaml_loader import Value

    if _SECRET_NAME.search(name) and value not in (None, ""):
        return "***"
    if isinstance(value, Value):
        return "a component (!" + _callable_path(value.constructor) + ")" if value.constructor else "a constant"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _knob_errors(path: str, values: dict[str, object], err: ValidationError) -> list[str]:
    messages = []
    for e in err.errors():
        if not e["loc"]:  # the model validator: both bounds are set, the lower one above the upper one
            messages.append(
                f"{path}: $min_tokens = {_show('min_tokens', values['min_tokens'])} > "
                f"$max_tokens = {_show('max_tokens', values['max_tokens'])}: "
                "$min_tokens must be <= $max_tokens"
            )
            continue
        name = str(e["loc"][0])
        rule = e["msg"].removeprefix("Value error, ") if e["type"] == "value_error" else KNOB_RULES[name]
        messages.append(f"{path}: ${name} = {_show(name, values.get(name))}: {rule}")
    return list(dict.fromkeys(messages))


def _remembered(method: Callable[[PipelineConfig], _T]) -> Callable[[PipelineConfig], _T]:
    """A fact of the config, computed once: kept with its file's facts (:mod:`ragsweep.pipeline.config_facts`)
    for a later load of the same file to read back without Pathway, else with the object. Its value goes
    through JSON either way, so a first run and a later one read the same value."""
    name = method.__name__

    @functools.wraps(method)
    def remembered(self: PipelineConfig) -> _T:
        known = self.facts.values if self.facts is not None else self.__dict__.setdefault("_facts_here", {})
        if name not in known:
            value = json.loads(json.dumps(method(self)))
            if self.facts is not None:
                self.facts.remember(name, value)
            else:
                known[name] = value
        found = known[name]
        return cast(_T, copy.deepcopy(found) if isinstance(found, (dict, list)) else found)

    return remembered


@dataclass
class PipelineConfig:
    path: str
    # the file as Pathway's loader gives it, overrides applied (None until needed: a config loaded from
    # its remembered facts reads it only to build components or compute a fact not kept yet)
    tree: RawConfig | None = field(default=None, repr=False)
    overrides: Overrides = field(default_factory=dict)
    # the knobs ragsweep reads, typed and checked once (set by with_overrides, which load calls)
    variables: PipelineVariables = field(default_factory=PipelineVariables, repr=False)
    # the app's parser node that ``--set parser=native`` replaced (what reports name)
    replaced_parser: object = field(default=None, repr=False)
    facts: ConfigFacts | None = field(default=None, repr=False, compare=False)
    source: str = field(default="", repr=False, compare=False)  # the file's text as loaded

    @classmethod
    def __get_pydantic_core_schema__(cls, source: object, handler: object) -> CoreSchema:
        """In a pydantic model (a sweep's configurations) an instance passes as is: the Pathway
        types of its fields are not imported to be resolved."""
        from pydantic_core import core_schema

        return core_schema.is_instance_schema(cls)

    # ------------------------------------------------------------- loading
    @classmethod
    def load(cls, path: str | Path, overrides: Overrides | None = None) -> "PipelineConfig":
        ensure_offline()
        p = pipeline_path(path)
        if not p.is_file():
            raise ConfigError(
                f"pipeline config {str(p)!r} does not exist (`ragsweep init DIR` writes one: DIR/pipeline.yaml)"
            )
        text = p.read_text()
        overrides = dict(overrides or {})
        key = facts_key(text, p, overrides) if environment.config_facts_enabled() else None
        facts = ConfigFacts.open(key) if key is not None else None
        if facts is not None and isinstance(known := facts.values.get("variables"), dict):
            variables = PipelineVariables.model_construct(**cast("dict[str, Any]", known))  # checked when remembered
            return cls(path=str(p), overrides=overrides, variables=variables, facts=facts, source=text)
        config = cls._read(str(p), text).with_overrides(overrides)
        if facts is not None:
            config.facts, config.source = facts, text
            facts.remember("variables", config.variables.model_dump(mode="json", exclude_unset=True))
        return config

    @classmethod
    def _read(cls, path: str, text: str) -> PipelineConfig:
        """The file through Pathway's loader: its classes imported, none built."""
        try:
            raw = yaml.load(text, _loader_class())
        except (yaml.YAMLError, ImportError, AttributeError) as err:
            raise ConfigError(f"{path}: {_yaml_error_line(err)}") from err
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: expected a mapping of $variables at the top level")
        return cls(path=path, tree=raw, source=text)

    @property
    def raw(self) -> RawConfig:
        """The file as Pathway's loader gives it, overrides applied."""
        if self.tree is None:  # loaded from its facts: Pathway's loader runs now, on the text read then
            loaded = self._read(self.path, self.source).with_overrides(self.overrides)
            self.tree, self.replaced_parser = loaded.tree, loaded.replaced_parser
        return cast("RawConfig", self.tree)

    def with_overrides(self, overrides: Overrides) -> "PipelineConfig":
        """A new config with some scalar variables replaced, checked (:meth:`validate`).

        ``top_k`` and ``route_docs`` may be set on a file that has neither (an app config whose
        top-k comes from ``search_topk``): ragsweep reads them, no component does.
        ``<component>.<argument>`` sets one argument of a component
        (:mod:`ragsweep.pipeline.component_overrides`).
        """
        from pathway.internals.yaml_loader import Variable

        raw = copy.copy(self.raw)
        replaced = self.replaced_parser
        for name, value in overrides.items():
            var = Variable(name)
            if not _is_scalar(value):
                raise ConfigError(f"{self.path}: ${name} = {_show(name, value)}: an override is a scalar")
            if is_argument_override(name):  # <component>.<argument>: one argument of a component
                apply_argument(raw, self.path, name, value)
                continue
            if name == "parser":  # the one component an override may replace: by ragsweep's own parse
                if value != "native":
                    raise ConfigError(
                        f"{self.path}: --set parser={value}: the only parser override is parser=native "
                        "(ragsweep's own offline parse in place of the app's parser; reports say so)"
                    )
                node = self._parser_node()
                replaced = node if node != "native" else replaced
                raw[var] = value
                continue
            if var not in raw and name not in ("top_k", "route_docs"):
                scalars = sorted(v.name for v in raw if isinstance(v, Variable) and _is_scalar(raw[v]))
                close = difflib.get_close_matches(name, scalars, n=3, cutoff=0.6)
                meant = [*("$" + c for c in close), *filter(None, [argument_hint(raw, name)])]
                hint = f"did you mean {' or '.join(meant)}? " if meant else ""
                raise ConfigError(f"{self.path}: no variable ${name} to override ({hint}scalars: {', '.join(scalars)})")
            if var in raw and not _is_scalar(raw[var]):
                raise ConfigError(f"{self.path}: ${name} is a component, not a scalar: it cannot be overridden")
            raw[var] = value
        config = PipelineConfig(
            path=self.path,
            tree=raw,
            overrides={**self.overrides, **overrides},
            replaced_parser=replaced,
            source=self.source,
        )
        config.variables = config.validate()
        return config

    def validate(self) -> PipelineVariables:
        """Check every knob ragsweep reads; a :class:`ConfigError` lists each bad one."""
        from pathway.internals.yaml_loader import Variable

        values = {k.name: v for k, v in self.raw.items() if isinstance(k, Variable) and k.name in KNOB_RULES}
        context = KnobContext(retriever_factories=self._retriever_factory_variables())
        try:
            checked = PipelineVariables.model_validate(values, context=context)
        except ValidationError as err:
            raise ConfigError("\n".join(_knob_errors(self.path, values, err))) from None
        if bad := self._argument_errors():
            raise ConfigError("\n".join(bad))
        self._check_hub_models()
        label, value = self._top_k_source()
        if label is not None and label.removeprefix("$") not in values:  # search_topk: literal or other variable
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{self.path}: {label} = {_show(label, value)}: must be an integer >= 1")
        return checked

    def _argument_errors(self) -> list[str]:
        """The components' arguments ragsweep reads (:data:`ARGUMENT_RULES`), literal or ``$variable``, each
        checked as its knob is: one line per bad value naming the component, the argument and the value."""
        messages = []
        for label, node in labelled_components(self.raw):
            found: dict[str, object] = {}
            for name, rule in ARGUMENT_RULES.items():
                if name not in node.kwargs:
                    continue
                shown, value = self._argument_value(name, node.kwargs[name])
                if value is _NOT_READ:
                    continue
                found[name] = value
                if not _allowed(value, rule[0], _parameter_default(node.constructor, name)):
                    messages.append(f"{self.path}: {label}.{name} = {shown}: {rule[1]}")
            low, high = found.get("min_tokens"), found.get("max_tokens")
            if _allowed(low, 0, 0) and _allowed(high, 1, 0) and cast(int, low) > cast(int, high):
                messages.append(
                    f"{self.path}: {label}.min_tokens = {low} > {label}.max_tokens = {high}: "
                    "min_tokens must be <= max_tokens"
                )
        return list(dict.fromkeys(messages))

    def _check_hub_models(self) -> None:
        """A component that loads a Hugging Face model (Pathway's ``SentenceTransformerEmbedder``, its
        rerankers...) whose model is neither a local folder nor in the hub's cache is one line, before any
        work: offline, its constructor would fail deep in the build."""
        for label, node in labelled_components(self.raw):
            argument = HUB_MODEL_ARGUMENTS.get(_callable_path(node.constructor))
            if argument is None:
                continue
            given = node.kwargs.get(argument, _parameter_default(node.constructor, argument))  # HFPipelineChat: gpt2
            _, model = self._argument_value(argument, given, knobs_checked=False)
            if isinstance(model, str) and (where := missing_hub_model(model, argument)) is not None:
                kind = _callable_path(node.constructor).rsplit(".", 1)[-1]
                raise ConfigError(f"{self.path}: {label} ({kind}) {argument}: {model!r} {where}")

    def _argument_value(self, name: str, node: object, knobs_checked: bool = True) -> tuple[str, object]:
        """An argument's value as a message shows it and the value itself: a ``$variable`` followed to its
        definition; :data:`_NOT_READ` for one read from the environment, a component, or (``knobs_checked``)
        a knob checked already."""
        from pathway.internals.yaml_loader import Value, Variable

        if isinstance(node, Variable):
            if knobs_checked and node.name in KNOB_RULES or node not in self.raw:
                return "", _NOT_READ
            value = self.raw[node]
            return f"${node.name} = {_show(name, value)}", _NOT_READ if isinstance(value, Value) else value
        return _show(name, node), _NOT_READ if isinstance(node, Value) else node

    # ------------------------------------------------------------- reading
    @_remembered
    def scalars(self) -> dict[str, Scalar]:
        """Every plain ``$variable`` with its value after overrides."""
        from pathway.internals.yaml_loader import Variable

        return {k.name: v for k, v in self.raw.items() if isinstance(k, Variable) and _is_scalar(v)}

    def _variable(self, name: str) -> object:
        """``$name``'s YAML node after overrides (None when the file has no such variable)."""
        from pathway.internals.yaml_loader import Variable

        return self.raw.get(Variable(name))

    def _follow(self, ref: object, label: str) -> tuple[str, object]:
        """A node and the name it goes by: a ``$variable`` reference as ``$name`` and its definition,
        any other node as ``label`` and itself."""
        from pathway.internals.yaml_loader import Variable

        if isinstance(ref, Variable):
            return f"${ref.name}", self.raw.get(ref)
        return label, ref

    def get(self, name: str, default: Scalar = None) -> Scalar:
        value = self.scalars().get(name, default)
        return default if value is None else value

    @property
    @_remembered
    def top_k(self) -> int:
        """``$top_k``, else ``$search_topk``, else the question answerer's ``search_topk``, else 5."""
        _, value = self._top_k_source()
        if value is None:
            return DEFAULT_TOP_K
        if not isinstance(value, (int, float, str)):  # validate() lets only integers through
            raise ConfigError(f"{self.path}: the top-k is {_show('top_k', value)}, not an integer")
        return int(value)

    @property
    @_remembered
    def top_k_origin(self) -> str | None:
        """Where the top-k comes from: ``"$top_k"``, ``"question_answerer.search_topk"``... (None: the default)."""
        return self._top_k_source()[0]

    def _top_k_source(self) -> tuple[str | None, object]:
        """Where the top-k comes from (``"$top_k"``, ``"question_answerer.search_topk"``...) and its value."""
        from pathway.internals.yaml_loader import Value, Variable

        for name in ("top_k", "search_topk"):
            if self._variable(name) is not None:
                return f"${name}", self.raw[Variable(name)]
        components = [
            (str(k), v)
            for k, v in self.raw.items()
            if isinstance(v, Value) and v.constructor is not None and not v.constructed
        ]
        for key, node in components:  # a question answerer's search_topk: ...
            ref = ComponentArguments.of(node.kwargs).search_topk
            if ref is not None:
                return self._follow(ref, f"{key}.search_topk")
        for key, node in components:  # ... else its default, what the app would use
            default = _parameter_default(node.constructor, "search_topk")
            if default is not None:
                return f"{key}.search_topk (Pathway's default)", default
        adaptive = self._adaptive_arguments()  # an adaptive answerer: the depth of its first ask
        if adaptive is not None:
            return adaptive["n_starting_documents"]
        return None, None

    def _adaptive_arguments(self) -> dict[str, tuple[str, object]] | None:
        """An adaptive question answerer's ``n_starting_documents``, ``factor`` and ``max_iterations``, each
        with the name it goes by (``question_answerer.factor``, ``$factor``, ``... (Pathway's default)``);
        None when the file has no such answerer."""
        found = self.question_answerer_ref()
        if found is None:
            return None
        label, node = found
        given = ComponentArguments.of(node.kwargs)
        out: dict[str, tuple[str, object]] = {}
        for name in ADAPTIVE_ARGUMENTS:
            ref = getattr(given, name)
            default = _parameter_default(node.constructor, name)
            if ref is None and default is None:
                return None  # not an adaptive answerer: it takes no such argument
            out[name] = (
                self._follow(ref, f"{label}.{name}")
                if ref is not None
                else (f"{label}.{name} (Pathway's default)", default)
            )
        return out

    @_remembered
    def answerer_depths(self) -> list[int] | None:
        """The depths an adaptive answerer asks, one after the other: ``n_starting_documents × factor^i``
        for each of its ``max_iterations`` asks (2, 4, 8, 16); None for any other."""
        found = self._adaptive_arguments()
        if found is None:
            return None
        n, factor, asks = (found[name][1] for name in ADAPTIVE_ARGUMENTS)
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (n, factor, asks)):
            return None  # validate() refuses such a file; a factory function's own values are not read
        return sorted({cast(int, n) * cast(int, factor) ** i for i in range(cast(int, asks))})

    def _widens(self) -> str:
        """How an adaptive answerer widens its context, for the manifest's top-k (``""`` for any other)."""
        depths = self.answerer_depths()
        if not depths or len(depths) < 2:
            return ""
        return f"; the answerer widens its context when it finds no answer: {', '.join(map(str, depths))} chunks"

    def report_depths(self, ks: list[int], asked: bool) -> list[int]:
        """The depths a run reports: ``ks`` when they were asked for (``--ks``), else an adaptive
        answerer's own depths (:meth:`answerer_depths`), else ``ks``."""
        return list(ks) if asked else self.answerer_depths() or list(ks)

    @property
    def retriever_mode(self) -> str | None:
        return self.variables.retriever_mode

    @property
    @_remembered
    def hash(self) -> str:
        return hashlib.sha256(self._canonical_text(self.raw).encode()).hexdigest()[:16]

    @property
    @_remembered
    def chunking_key(self) -> str:
        """Hash of what decides the chunks: equal keys mean equal chunk texts."""
        _, splitter_ref = self._component_refs()
        return self._sub_hash(splitter_ref)

    @property
    def index_key(self) -> str:
        """Hash of what decides the index (chunks + retriever, and ``$route_docs`` when it is set:
        the document stage), not top-k; and the folder the documents are served under (each served
        item's metadata path starts with it)."""
        folder = self.served_folder()
        if folder is None:
            return self._index_key()
        return hashlib.sha256(f"{self._index_key()}\0sources={folder}".encode()).hexdigest()[:16]

    @_remembered
    def _index_key(self) -> str:
        factory_ref, _ = self._component_refs()
        routing = "" if self.variables.route_docs is None else f"\0route_docs={self.variables.route_docs}"
        identity = self.parser_spec().identity  # an app's parser: its configuration decides the chunks too
        parsing = "" if identity is None else f"\0parser={identity}"
        key = self.chunking_key + self._sub_hash(factory_ref) + routing + parsing
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    def _canonical_text(self, obj: object) -> str:
        text = json.dumps(_canonical(obj), sort_keys=True, default=_not_canonical)
        found = _ADDRESS.search(text)
        if found:  # a repr with a memory address: the hash would differ in every process
            raise ConfigError(
                f"{self.path}: cannot hash this config stably: its canonical form contains "
                f"{found.group(0)!r} (a memory address)"
            )
        return text

    def _sub_hash(self, root: object) -> str:
        """Hash of one definition with every variable it references, recursively."""
        from pathway.internals.yaml_loader import Variable

        raw = self.raw
        seen: dict[str, Canonical] = {"": _canonical(root)}
        for node in yaml_nodes(root, raw):
            if isinstance(node, Variable) and node in raw:
                seen[node.name] = _canonical(raw[node])
        return hashlib.sha256(self._canonical_text(seen).encode()).hexdigest()[:16]

    def text(self) -> str:
        return Path(self.path).read_text()

    # ------------------------------------------------------------- building
    def _retriever_factory_variables(self) -> list[str]:
        """The variables ``$retriever_mode`` may name: those holding a retriever factory."""
        from pathway.internals.yaml_loader import Variable

        return [k.name for k, v in self.raw.items() if isinstance(k, Variable) and _is_retriever_factory(v, self.raw)]

    def _document_store(self) -> object:
        """``$document_store``, else a top-level ``document_store:`` (llm-app's indexing template)."""
        from pathway.internals.yaml_loader import Variable

        if Variable("document_store") in self.raw:
            return self.raw[Variable("document_store")]
        return self.raw.get("document_store")

    def _retriever_variable(self) -> str:
        from pathway.internals.yaml_loader import Variable

        mode = self.retriever_mode
        if mode is not None:
            if Variable(mode) not in self.raw:
                raise ConfigError(f"{self.path}: $retriever_mode is {mode!r} but there is no ${mode}")
            return mode
        if Variable("retriever_factory") in self.raw:
            return "retriever_factory"
        if self._document_store() is not None:
            return "document_store"
        raise ConfigError(f"{self.path}: needs $retriever_mode, $retriever_factory or $document_store")

    def _component_refs(self) -> tuple[object, object]:
        """The YAML nodes of the retriever factory and of the splitter (None: ragsweep's default)."""
        from pathway.internals.yaml_loader import Value, Variable

        target = self._retriever_variable()
        if target == "document_store":
            store = self._document_store()
            if not isinstance(store, Value) or store.constructor is None:
                raise ConfigError(f"{self.path}: $document_store is not a component")
            factory_ref = ComponentArguments.of(store.kwargs).retriever_factory
            if factory_ref is None:
                raise ConfigError(f"{self.path}: $document_store has no retriever_factory")
            splitter_ref = store.kwargs.get("splitter", self._variable("splitter"))
        else:
            factory_ref = Variable(target)
            splitter_ref = Variable("splitter") if Variable("splitter") in self.raw else None
        return factory_ref, splitter_ref

    def build(self) -> BuiltPipeline:
        """Construct the splitter and the retriever factory (fresh objects each call).

        Only these two and what they reference are built: the document store, its
        sources and parser, the question answerer and server settings of an app
        config are not (ragsweep feeds the documents and answers itself).
        """
        from pathway.internals.yaml_loader import Resolver

        factory_ref, splitter_ref = self._component_refs()
        doc = _fresh_variables(self.raw)
        doc["retriever_factory"] = _fresh_copy(factory_ref)
        if splitter_ref is not None:
            doc["splitter"] = _fresh_copy(splitter_ref)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unused variables (the other retriever modes)
            try:
                with Resolver() as resolver:
                    resolved = resolver.resolve(doc)
            except Exception as err:  # a component's constructor: missing credentials, a bad argument...
                failure = self._build_failure(err, self.embedder_ref(), "the splitter and retriever factory")
                raise ConfigError(f"{self.path}: {failure}") from err
        # the resolver keeps the document's keys: "splitter" is there when a splitter is declared
        splitter = cast("BaseSplitter | None", resolved["splitter"] if splitter_ref is not None else None)
        if splitter is None:
            # deferred: chunking imports pathway (~1 s); importing config (the API, the CLI) must not
            from ragsweep.pipeline.chunking import OffsetTokenCountSplitter

            splitter = OffsetTokenCountSplitter()
        self._check_chunk_header(splitter)
        # what DocumentStore takes (a factory function's result is not checked: Pathway does not either)
        factory = cast("AbstractRetrieverFactory", resolved["retriever_factory"])
        embedder = _find_embedder(factory)
        self._keep_app_embedder(embedder)
        return BuiltPipeline(
            splitter=splitter,
            retriever_factory=factory,
            embedder=embedder,
            params=self.scalars(),
            route_docs=self.variables.route_docs,
            served_folder=self.served_folder(),
        )

    def _check_chunk_header(self, splitter: object) -> None:
        """``$chunk_header`` is the splitter's: one that does not make it would ignore the knob."""
        wanted = self.variables.chunk_header
        made = getattr(splitter, "chunk_header", "none")
        if wanted is not None and wanted != made:
            raise ConfigError(
                f"{self.path}: $chunk_header = {wanted}, but the splitter ({_type_path(type(splitter))}) "
                f"makes chunk_header = {made}: give ragsweep.pipeline.chunking.OffsetTokenCountSplitter "
                "chunk_header: $chunk_header"
            )

    def _build_failure(self, err: Exception, found: tuple[str, object] | None, what: str) -> str:
        """What failed while building: the app's component named when it is the one (no API key...)."""
        # deferred: app_components pulls numpy and httpx (~170 ms); the pytest plugin's warm path imports config
        from ragsweep.pipeline.app_components import describe_failure

        node = found[1] if found is not None else None
        constructor = getattr(node, "constructor", None)
        if found is not None and constructor is not None and "openai" in type(err).__module__:
            return describe_failure(found[0], _callable_path(constructor).rsplit(".", 1)[-1], None, err)
        return f"building {what} failed: {type(err).__name__}: {err}"

    def question_answerer_ref(self) -> tuple[str, Value] | None:
        """The app's question answerer (a top-level ``question_answerer:``, or ``$question_answerer``)."""
        from pathway.internals.yaml_loader import Value, Variable

        for key, label in (
            (Variable("question_answerer"), "$question_answerer"),
            ("question_answerer", "question_answerer"),
        ):
            node = self.raw.get(key)
            if isinstance(node, Value) and node.constructor is not None:
                return label, node
        return None

    def _llm_ref(self, label: str, node: Value) -> tuple[str, object]:
        """The question answerer's LLM: the name it goes by (``$llm``) and its YAML node."""
        return self._follow(ComponentArguments.of(node.kwargs).llm, f"{label}.llm")

    def question_answerer_llm(self) -> tuple[str, str]:
        """``("$llm", "OpenAIChat")``: how the app's question answerer's LLM is known, for messages."""
        found = self.question_answerer_ref()
        if found is None:
            return "llm", "LLM"
        label, node = self._llm_ref(*found)
        constructor = getattr(node, "constructor", None)
        return label, _callable_path(constructor).rsplit(".", 1)[-1] if constructor is not None else "LLM"

    def build_question_answerer(self, indexer: DocumentStore) -> BaseQuestionAnswerer:
        """The app's question answerer built from its YAML (its class and every argument it takes:
        ``llm``, ``prompt_template``, ``search_topk``, ``reranker``...), ``indexer`` in place of the
        app's document store: the DocumentStore ragsweep built over the dataset's documents."""
        from pathway.internals.yaml_loader import Resolver
        from pathway.xpacks.llm.question_answering import BaseQuestionAnswerer

        found = self.question_answerer_ref()
        if found is None:
            raise ConfigError(f"{self.path}: declares no question_answerer")
        label, node = found
        doc = _fresh_variables(self.raw)
        doc["arguments"] = {k: _fresh_copy(v) for k, v in node.kwargs.items() if k != "indexer"}
        llm_found = self._llm_ref(label, node)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                with Resolver() as resolver:
                    arguments = resolver.resolve(doc)["arguments"]
                assert isinstance(arguments, dict) and node.constructor is not None  # question_answerer_ref's
                built = node.constructor(indexer=indexer, **arguments)
            except Exception as err:  # its LLM's constructor (no API key), a bad argument...
                raise ConfigError(f"{self.path}: {self._build_failure(err, llm_found, label)}") from err
        if not isinstance(built, BaseQuestionAnswerer):  # what ragsweep asks it: answer_query, its schema
            raise ConfigError(
                f"{self.path}: {label} builds a {_type_path(type(built))}, not a Pathway question answerer"
            )
        return built

    def embedder_ref(self) -> tuple[str, object] | None:
        """The YAML node of the embedder the retriever uses and the name it goes by (``$embedder``)."""
        from pathway.internals.yaml_loader import Value

        factory_ref, _ = self._component_refs()
        for node in yaml_nodes(factory_ref, self.raw):
            if isinstance(node, Value) and node.constructor is not None and "embedder" in node.kwargs:
                label = f"{_callable_path(node.constructor).rsplit('.', 1)[-1]}.embedder"
                return self._follow(node.kwargs["embedder"], label)
        return None

    @_remembered
    def embedder_description(self) -> str | None:
        """``$embedder: OpenAIEmbedder(text-embedding-3-small)``: the embedder the YAML declares."""
        from pathway.internals.yaml_loader import Value

        found = self.embedder_ref()
        if found is None or not isinstance(found[1], Value) or found[1].constructor is None:
            return None
        model = ComponentArguments.of(found[1].kwargs).model
        name = _callable_path(found[1].constructor).rsplit(".", 1)[-1]
        return f"{found[0]}: {name}" + (f"({model})" if isinstance(model, str) else "")

    def _keep_app_embedder(self, embedder: BaseEmbedder | None) -> None:
        """An embedder of the app's (a Pathway one, say ``OpenAIEmbedder``) is used as is, behind
        ragsweep's vector cache keyed by what decides its vectors: its class and arguments."""
        from pathway.internals.yaml_loader import Value

        # deferred: app_components pulls numpy and httpx (~170 ms); the pytest plugin's warm path imports config
        from ragsweep.pipeline.app_components import NOT_IDENTITY, is_app_embedder, keep_and_cache

        found = self.embedder_ref()
        if not is_app_embedder(embedder) or found is None:
            return
        label, node = found
        if isinstance(node, Value) and node.constructor is not None:
            kept = {k: v for k, v in node.kwargs.items() if k not in NOT_IDENTITY}
            identity = self._sub_hash(Value(node.constructor, kept))
        else:
            identity = _type_path(type(embedder))
        keep_and_cache(embedder, label, f"{_type_path(type(embedder))}:{identity}")

    def _parser_node(self) -> object:
        """The YAML node of the parser the app's DocumentStore parses with (its ``parser``, else ``$parser``),
        ``"native"`` after ``--set parser=native``, or None when the file names none."""
        from pathway.internals.yaml_loader import Value

        if self._variable("parser") == "native":
            return "native"
        store = self._document_store()
        if isinstance(store, Value) and store.constructor is not None and "parser" in store.kwargs:
            return self._follow(store.kwargs["parser"], "parser")[1]
        return self._variable("parser")

    @_remembered
    def configured_parser(self) -> str:
        """The import path of the parser the app's DocumentStore runs: the one the file names, else
        Pathway's default (``Utf8Parser``) for a file with a document store, else ragsweep's own parse."""
        from pathway.internals.yaml_loader import Value

        node = self._original_parser_node()
        if isinstance(node, Value) and node.constructor is not None:
            return _callable_path(node.constructor)
        return PATHWAY_DEFAULT_PARSER if self._document_store() is not None else NATIVE_PARSER

    def _original_parser_node(self) -> object:
        """The parser node before ``--set parser=native``."""
        node = self._parser_node()
        return self.replaced_parser if node == "native" else node

    def build_parser(self) -> object:
        """The parser object, built from the YAML with every argument it has (a fresh object each call),
        Docling's chunker tokenizer from the bundled MiniLM package (:mod:`ragsweep.pipeline.parsing`)."""
        from pathway.internals.yaml_loader import Resolver, Value

        # deferred: parsing imports pathway (~1 s); importing config (the API, the CLI) must not
        from ragsweep.pipeline.parsing import NativeParser, offline_parser_models

        node = self._parser_node()
        if node == "native" or (node is None and self._document_store() is None):
            return NativeParser()
        if node is None:
            from pathway.xpacks.llm.parsers import Utf8Parser

            return Utf8Parser()
        doc = _fresh_variables(self.raw)
        doc["parser"] = _fresh_copy(node)
        with warnings.catch_warnings(), offline_parser_models():
            warnings.simplefilter("ignore")
            try:
                with Resolver() as resolver:
                    return resolver.resolve(doc)["parser"]
            except Exception as err:  # a missing package (tree_sitter), a bad argument, a model not here
                name = _callable_path(node.constructor) if isinstance(node, Value) and node.constructor else "parser"
                raise ConfigError(f"{self.path}: building the app's parser ({name}) failed: {_why(err)}") from err

    def parser_spec(self) -> ParserSpec:
        """The parser as the parse stage needs it (:class:`ragsweep.pipeline.parser_spec.ParserSpec`): its
        label, its identity (class + the arguments that decide its output: the parse cache's key part;
        None for ragsweep's own parse) and how another process builds it again."""
        found = self._parser_spec_fields()
        spec = ParserSpec(**found)  # type: ignore[arg-type]
        if spec.native:
            return spec
        # deferred: parsing imports pathway (~1 s); an app's parser runs through it
        from ragsweep.pipeline.parsing import AppParse

        return dataclasses.replace(
            spec, app_parse=AppParse(spec.path, tuple(sorted(spec.overrides.items())), built_parser)
        )

    @_remembered
    def _parser_spec_fields(self) -> dict[str, object]:
        from pathway.internals.yaml_loader import Value

        node = self._parser_node()
        configured = self.configured_parser()
        if node == "native" or configured == NATIVE_PARSER:
            replaced = configured.rsplit(".", 1)[-1] if node == "native" and configured != NATIVE_PARSER else None
            return {
                "label": "ragsweep native parse",
                "identity": None,
                "replaced": replaced,
                "class_path": NATIVE_PARSER,
            }
        if isinstance(node, Value) and node.constructor is not None:
            kept = Value(node.constructor, {k: v for k, v in node.kwargs.items() if k not in NOT_OUTPUT})
            identity = f"{configured}#{self._sub_hash(kept)}"
        else:
            identity = configured
        return {
            "label": configured.rsplit(".", 1)[-1],
            "identity": identity,
            "path": str(Path(self.path).resolve()),
            "overrides": dict(self.overrides),
            "class_path": configured,
        }

    # ------------------------------------------------------------- what the index is
    @_remembered
    def has_embedder(self) -> bool:
        """Whether the retriever embeds (it names an embedder)."""
        return self.embedder_ref() is not None

    @_remembered
    def keeps_app_embedder(self) -> bool:
        """Whether the embedder is an app's (``OpenAIEmbedder``...), behind ragsweep's vector cache."""
        # deferred: app_components pulls numpy and httpx (~170 ms); a remembered answer needs neither
        from ragsweep.pipeline.app_components import is_kept

        return self.has_embedder() and is_kept(self.build().embedder)

    @_remembered
    def uses_tantivy(self) -> bool:
        """Whether a question reaches Tantivy's query parser (a BM25 index, alone or fused)."""
        # deferred: serving imports pathway (~1 s); a remembered answer does not need it
        from ragsweep.pipeline.serving import uses_tantivy

        return uses_tantivy(self.build().retriever_factory)

    @_remembered
    def prefix_exact(self) -> bool:
        """Whether the index's top k is the first k of a deeper answer (:func:`ragsweep.pipeline.store.prefix_exact`)."""
        # deferred: stable_order imports pathway (~1 s); a remembered answer does not need it
        from ragsweep.pipeline.stable_order import exact_index

        return exact_index(self.build().retriever_factory)

    @_remembered
    def fused_from_parts(self) -> bool:
        """Whether a hybrid index's lists are fused from one ask of each exact sub-retriever
        (:func:`ragsweep.pipeline.fused_depths.exact_parts`)."""
        # deferred: fused_depths imports pathway (~1 s); a remembered answer does not need it
        from ragsweep.pipeline.fused_depths import exact_parts

        return exact_parts(self.build().retriever_factory) is not None

    @_remembered
    def component_sources(self) -> dict[str, str]:
        """The source file of every constructor the YAML names, by module name (a builtin or an extension
        type has none: its package's version stands for it)."""
        from pathway.internals.yaml_loader import Value

        sources: dict[str, str] = {}
        for node in yaml_nodes(self.raw):
            if isinstance(node, Value) and node.constructor is not None:
                try:
                    path = inspect.getsourcefile(node.constructor)
                except TypeError:
                    continue
                if path:
                    sources[getattr(node.constructor, "__module__", None) or path] = path
        return dict(sorted(sources.items()))

    def _source_readers(self) -> list[Value]:
        """The connectors the app's document store reads (its ``docs``, else ``$sources``)."""
        from pathway.internals.yaml_loader import Value

        store = self._document_store()
        docs = store.kwargs.get("docs") if isinstance(store, Value) else None
        root = docs if docs is not None else self._variable("sources")
        return [n for n in yaml_nodes(root, self.raw) if isinstance(n, Value) and n.constructor is not None]

    def served_folder(self) -> str | None:
        """The folder the app reads its documents from as its ``pw.io.fs.read`` names it (``data``), written
        as Pathway writes it in each document's ``path`` (``data/X.docx``): a document is served under it
        joined with its path under the dataset's ``docs/``. None (the dataset's own folder): ragsweep's own
        pipelines, an app reading no folder or several, a folder named by an unset environment variable."""
        import os

        written = self._folder_as_written()
        if written is None:
            return None
        kind, text = written
        path = os.environ.get(text) if kind == "environment" else text  # read now: not part of the file's facts
        return pathway_folder(path) if path is not None else None

    @_remembered
    def _folder_as_written(self) -> tuple[str, str] | None:
        """``("path", "data")``, or ``("environment", "DOCS")`` for a folder Pathway's loader reads from the
        environment (an upper-case ``$DOCS`` the file does not define); None: no single folder is read."""
        from pathway.internals.yaml_loader import Variable

        readers = self._source_readers()
        folders = [n for n in readers if _callable_path(n.constructor) == FOLDER_READER]
        if len(folders) != 1 or len(readers) != 1:
            return None
        node, seen = folders[0].kwargs.get("path"), 0
        while isinstance(node, Variable) and node in self.raw and seen < 10:
            node, seen = self.raw[node], seen + 1
        if isinstance(node, Variable):
            return "environment", node.name
        return ("path", node) if isinstance(node, str) else None

    @_remembered
    def served_path_note(self) -> str | None:
        """What differs in the documents' metadata where the app reads them from no folder (SharePoint,
        Google Drive...): their ``path`` and the connector's own fields."""
        readers = [_callable_path(n.constructor) for n in self._source_readers()]
        others = sorted({r for r in readers if r != FOLDER_READER})
        if not others:
            return None
        return (
            f"the app reads its documents with {', '.join(others)}: ragsweep serves each document's metadata "
            "path as the file's path in the dataset's docs folder on this machine (and no other field), where "
            "the connector gives its own path and fields (ids, URLs, times): a prompt showing them differs"
        )

    @_remembered
    def manifest(self) -> PipelineManifest:
        """What a report records of this config; secrets are masked."""
        out = PipelineManifest(
            path=self.path,
            hash=self.hash,
            overrides=redact(self.overrides),
            variables=redact(self.scalars()),
            retriever_mode=self.retriever_mode,
        )
        label, _ = self._top_k_source()
        if label is not None and label != "$top_k":
            out["top_k"] = {"value": self.top_k, "from": label + self._widens()}
        out["parser"] = self.parser_spec().manifest()
        if (note := self.served_path_note()) is not None:
            out["served_metadata"] = note
        return out

    def public_text(self) -> str:
        """The config file with the values of secret-looking keys masked."""
        return _SECRET_LINE.sub(lambda m: m.group(1) + "***", self.text())


_SECRET_NAME = re.compile(r"(api_?key|secret|password|passwd|bearer|credential)", re.IGNORECASE)
_SECRET_LINE = re.compile(
    r"^(\s*\$?[\w.-]*(?:api_?key|secret|password|passwd|bearer|credential)[\w.-]*\s*:\s*).+$",
    re.IGNORECASE | re.MULTILINE,
)
_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]{4,}")


def redact(values: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """Mask the values of keys that name a secret (``llm_api_key``, ``secret``...)."""
    return {k: ("***" if _SECRET_NAME.search(k) and v not in (None, "") else v) for k, v in values.items()}


# ----------------------------------------------------------------- loading
_PYTHON_TAG = "tag:yaml.org,2002:python/"


@functools.cache
def _loader_class() -> type:
    """Pathway's loader without PyYAML's ``!!python/...`` tags: no Pathway app needs them, and they run
    arbitrary calls at load time. ``!pw.*`` and importable-class tags are Pathway's own and still load."""
    from pathway.internals.yaml_loader import PathwayYamlLoader

    class Loader(PathwayYamlLoader):
        def refuse_python_tag(self, suffix: str, node: yaml.Node) -> NoReturn:
            raise yaml.MarkedYAMLError(
                problem=f"the tag !!python/{suffix} is refused: PyYAML's python tags run code while loading; "
                "a pipeline uses !pw.* and importable-class tags",
                problem_mark=node.start_mark,
            )

    Loader.yaml_constructors = {
        tag: f for tag, f in PathwayYamlLoader.yaml_constructors.items() if not str(tag).startswith(_PYTHON_TAG)
    }
    Loader.yaml_multi_constructors = {
        tag: f for tag, f in PathwayYamlLoader.yaml_multi_constructors.items() if not str(tag).startswith(_PYTHON_TAG)
    }
    Loader.add_multi_constructor(_PYTHON_TAG, Loader.refuse_python_tag)
    return Loader


def _yaml_error_line(err: BaseException) -> str:
    """A loader error as one line: where (line, column) and what, without PyYAML's quoted snippet."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None)
    if not isinstance(err, yaml.MarkedYAMLError) or mark is None or not problem:
        return " ".join(str(err).split())
    context = f"{err.context}: " if err.context else ""
    return f"line {mark.line + 1}, column {mark.column + 1}: {context}{problem}"


def _why(err: BaseException) -> str:
    """An exception as one line: its type and first line (Pathway's optional imports name the extra)."""
    first = (str(err).strip().splitlines() or [""])[0]
    return f"{type(err).__name__}: {first[:300]}"


def _fresh_variables(raw: RawConfig) -> RawConfig:
    """The ``$variables`` of a config, copied fresh for one build (:func:`_fresh_copy`)."""
    from pathway.internals.yaml_loader import Variable

    return {k: _fresh_copy(v) for k, v in raw.items() if isinstance(k, Variable)}


def _fresh_copy(obj: object) -> object:
    """Copy the loaded YAML so each build constructs new objects (Pathway's
    resolver marks Values as constructed in place); constants stay shared."""
    from pathway.internals.yaml_loader import Value

    if isinstance(obj, Value):
        if obj.constructor is None or obj.constructed:
            return obj
        return Value(constructor=obj.constructor, kwargs={k: _fresh_copy(v) for k, v in obj.kwargs.items()})
    if isinstance(obj, dict):
        return {k: _fresh_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_fresh_copy(v) for v in obj]
    return obj


def _is_scalar(value: object) -> TypeGuard[Scalar]:
    return value is None or isinstance(value, (str, int, float, bool))


def _parameter_default(constructor: Callable[..., object] | None, name: str) -> object:
    import inspect

    if constructor is None:
        return None
    try:
        param = inspect.signature(constructor).parameters.get(name)
    except (TypeError, ValueError):
        return None
    if param is None or param.default is inspect.Parameter.empty:
        return None
    return param.default


def _is_retriever_factory(node: object, raw: RawConfig, depth: int = 0) -> bool:
    """Whether a YAML node builds a retriever factory (a callable that is not a class: maybe)."""
    from pathway.internals.yaml_loader import Value, Variable

    if isinstance(node, Variable) and depth < 10:
        return _is_retriever_factory(raw.get(node), raw, depth + 1)
    if not isinstance(node, Value):
        return False
    if node.constructor is None or node.constructed:
        return False
    constructor = node.constructor
    if not isinstance(constructor, type):
        return True  # a factory function: cannot tell before calling it
    from pathway.stdlib.indexing import AbstractRetrieverFactory

    return issubclass(constructor, AbstractRetrieverFactory)


# ----------------------------------------------------------------- hashing
def _callable_path(c: object) -> str:
    module, qualname = getattr(c, "__module__", None), getattr(c, "__qualname__", None)
    if module and qualname:
        return f"{module}.{qualname}"
    return _type_path(type(c))


def _type_path(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def yaml_nodes(obj: object, raw: RawConfig | None = None, _followed: set[str] | None = None) -> Iterator[object]:
    """Every node of a pipeline YAML as Pathway's loader gives it, depth first: ``obj``, then a
    Value's kwargs, a dict's values, a list's items. With ``raw`` (a config's variables), a
    Variable is followed into its definition, once per name."""
    from pathway.internals.yaml_loader import Value, Variable

    followed = set() if _followed is None else _followed
    yield obj
    if isinstance(obj, Variable):
        if raw is not None and obj.name not in followed and obj in raw:
            followed.add(obj.name)
            yield from yaml_nodes(raw[obj], raw, followed)
    elif isinstance(obj, Value):
        yield from yaml_nodes(obj.kwargs, raw, followed)
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from yaml_nodes(value, raw, followed)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from yaml_nodes(value, raw, followed)


def _canonical(obj: object) -> Canonical:
    """A JSON-able form of loaded YAML that is the same in every process."""
    from pathway.internals.yaml_loader import Value, Variable

    if isinstance(obj, Variable):
        return f"${obj.name}"
    if isinstance(obj, Value):
        if obj.constructor is None or obj.constructed:
            return {"!value": _canonical_object(obj.value)}
        return {"!" + _callable_path(obj.constructor): _canonical(obj.kwargs)}
    if isinstance(obj, dict):
        return {str(_canonical(k)): _canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    return _canonical_object(obj)


def _canonical_object(value: object, depth: int = 0) -> Canonical:
    """A Python value by what it is, never by ``repr`` with a memory address:
    enum-like values (``pathway.engine`` ones included) by name, classes and
    functions by import path, other objects by class path and fields."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if isinstance(value, (list, tuple)):
        return [_canonical_object(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(_canonical_object(k, depth + 1)): _canonical_object(v, depth + 1) for k, v in value.items()}
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
    if isinstance(value, BaseModel):
        fields = value.model_dump(mode="python")
    elif hasattr(value, "__dataclass_fields__"):
        fields = {f: getattr(value, f) for f in value.__dataclass_fields__}
    elif hasattr(value, "__dict__"):
        fields = dict(vars(value))
    else:
        text = repr(value)
        return {"!object": _type_path(t), **({} if _ADDRESS.search(text) else {"repr": text})}
    return {"!object": _type_path(t), "fields": _canonical_object(fields, depth + 1)}


def _not_canonical(obj: object) -> NoReturn:
    raise TypeError(f"{type(obj).__qualname__} left in a canonical form")


def _find_embedder(factory: object) -> BaseEmbedder | None:
    embedder: BaseEmbedder | None = getattr(factory, "embedder", None)  # a retriever factory's, if it has one
    if embedder is not None:
        return embedder
    for inner in getattr(factory, "retriever_factories", []) or []:
        found = _find_embedder(inner)
        if found is not None:
            return found
    return None


def parse_overrides(items: list[str] | None) -> Overrides:
    """``["max_tokens=400", "retriever_mode=bm25"]`` -> typed dict (YAML scalars)."""
    out: Overrides = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not NAME=VALUE")
        name, text = item.split("=", 1)
        value = _override_value(item, text)
        if not _is_scalar(value):
            raise ConfigError(f"override {item!r}: the value is not a scalar (a string, number, boolean or null)")
        out[name.strip().lstrip("$")] = value
    return out


def _override_value(item: str, text: str) -> object:
    """One ``--set`` value read as a YAML scalar; empty or unreadable text is refused in one line."""
    if not text.strip():  # `top_k=` is a slip, not a null: null must be written
        raise ConfigError(f"override {item!r}: the value is empty (write null for no value, '' for an empty string)")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        why = str(getattr(err, "problem", None) or err).strip().splitlines()[0]
        raise ConfigError(
            f"override {item!r}: the value is not a YAML scalar ({why}); quote it, e.g. "
            f"{item.split('=', 1)[0]}={_quoted(text)}"
        ) from err


def _quoted(text: str) -> str:
    """``text`` as a single-quoted YAML string (quotes doubled), for the message of a bad override."""
    return "'" + text.replace("'", "''") + "'"


@functools.lru_cache(maxsize=8)
def built_parser(path: str, overrides: tuple[tuple[str, Scalar], ...]) -> object:
    """The app's parser of a pipeline file, built once per process: what a parse task in another process
    (:class:`ragsweep.pipeline.parsing.AppParse`) calls."""
    return PipelineConfig.load(path, dict(overrides)).build_parser()
