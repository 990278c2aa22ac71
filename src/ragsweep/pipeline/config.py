"""Pipeline configs in Pathway's YAML syntax: load, override by variable name, hash, build.

A pipeline file is an llm-app ``app.yaml``: ``$variables`` and ``!pw.`` tags. :class:`PipelineConfig` is
its spec: the file read symbolically (:mod:`ragsweep.pipeline.yaml_symbolic`: tags as import paths with
their arguments, no class imported), overrides, knob checks (:mod:`ragsweep.pipeline.spec_checks`) and
keys (:mod:`ragsweep.pipeline.spec_keys`), none of which imports Pathway. :meth:`PipelineConfig.build`
hands the same text and overrides to Pathway's own loader and resolver (:mod:`ragsweep.pipeline.built`),
as the app builds it. ragsweep needs from it a splitter and a retriever factory, found in this order:

- ``$retriever_mode`` names the variable holding the factory (``bm25``, ``knn``,
  ``hybrid`` in ``pipelines/default.yaml``);
- else ``$retriever_factory``;
- else the ``retriever_factory`` of ``$document_store`` (or of a top-level
  ``document_store:``, as in llm-app's indexing template): an existing app config
  evaluated as is; its ``$sources`` are replaced by the dataset's documents.

The splitter is ``$splitter`` or the one of the document store. Any plain scalar
variable can be overridden by name (``max_tokens=400``); the hash covers the
file's structure after overrides, so two runs with equal hashes ran one pipeline.
The hash is computed from a canonical form (components by their tag's import path,
values as JSON), so it is the same in every process: ``--resume`` and run-folder
names rely on that.

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
import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, TypeVar, cast

import yaml

from ragsweep.core import environment
from ragsweep.core.errors import ConfigError
from ragsweep.core.keys import cache_key
from ragsweep.core.offline import ensure_offline
from ragsweep.core.starter import pipeline_path
from ragsweep.pipeline.built import BuiltPipeline, LoadedTree, PipelineBuilder, component_sources, loaded_tree
from ragsweep.pipeline.built import yaml_error_line as _yaml_error_line
from ragsweep.pipeline.component_overrides import apply_argument, check_variable_override, is_argument_override
from ragsweep.pipeline.config_facts import ConfigFacts, facts_key
from ragsweep.pipeline.knobs import KNOB_RULES, PipelineVariables
from ragsweep.pipeline.parser_spec import ParserSpec
from ragsweep.pipeline.retrieval_knobs import DEFAULT_TOP_K
from ragsweep.pipeline.scalars import Overrides, Scalar
from ragsweep.pipeline.spec_checks import SECRET_NAME, checked_variables, show
from ragsweep.pipeline.spec_keys import HASH_LENGTH, canonical_text, config_hash, knobs_changing, sub_hash
from ragsweep.pipeline.spec_tree import SpecTree, is_scalar
from ragsweep.pipeline.yaml_symbolic import Ref, SymbolicTree, Tagged, load_symbolic

if TYPE_CHECKING:
    from pathway.xpacks.llm.question_answering import BaseQuestionAnswerer
    from pydantic_core import CoreSchema

    from ragsweep.pipeline.parser_spec import ParserManifest
    from ragsweep.pipeline.serving import DocumentStore

__all__ = ["KNOB_RULES", "BuiltPipeline", "PipelineConfig", "PipelineVariables", "parse_overrides", "redact"]

_T = TypeVar("_T")

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


def _remembered(method: Callable[[PipelineConfig], _T]) -> Callable[[PipelineConfig], _T]:
    """A fact of the config, computed once: kept with its file's facts (:mod:`ragsweep.pipeline.config_facts`)
    for a later load of the same file to read back without building, else with the object. Its value goes
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
    # the file read symbolically, overrides applied: what every check, key and question reads
    symbols: SymbolicTree = field(default_factory=dict, repr=False)
    overrides: Overrides = field(default_factory=dict)
    # the knobs ragsweep reads, typed and checked once (set by with_overrides, which load calls)
    variables: PipelineVariables = field(default_factory=PipelineVariables, repr=False)
    # the app's parser node that ``--set parser=native`` replaced (what reports name)
    replaced_parser: object = field(default=None, repr=False)
    facts: ConfigFacts | None = field(default=None, repr=False, compare=False)
    source: str = field(default="", repr=False, compare=False)  # the file's text as loaded
    # the file as Pathway's loader gives it, overrides applied: read only to build (None until then)
    tree: LoadedTree | None = field(default=None, repr=False, compare=False)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: object, handler: object) -> CoreSchema:
        """In a pydantic model (a sweep's configurations) an instance passes as is."""
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
        config = cls._read(str(p), text).with_overrides(overrides)
        key = facts_key(text, p, overrides) if environment.config_facts_enabled() else None
        config.facts = ConfigFacts.open(key) if key is not None else None
        return config

    @classmethod
    def _read(cls, path: str, text: str) -> PipelineConfig:
        """The file read symbolically: no class imported, none built."""
        try:
            raw = load_symbolic(text)
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: {_yaml_error_line(err)}") from err
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: expected a mapping of $variables at the top level")
        return cls(path=path, symbols=raw, source=text)

    @property
    def spec(self) -> SpecTree:
        """What the file says (:class:`ragsweep.pipeline.spec_tree.SpecTree`), overrides applied."""
        return SpecTree(self.path, self.symbols)

    @property
    def raw(self) -> LoadedTree:
        """The file as Pathway's loader gives it, overrides applied (loaded on first use: Pathway is imported)."""
        if self.tree is None:
            self.tree = loaded_tree(self.path, self.source or self.text(), self.overrides)
        return self.tree

    def with_overrides(self, overrides: Overrides) -> "PipelineConfig":
        """A new config with some scalar variables replaced, checked (:meth:`validate`).

        ``top_k`` and ``route_docs`` may be set on a file that has neither (an app config whose
        top-k comes from ``search_topk``): ragsweep reads them, no component does.
        ``<component>.<argument>`` sets one argument of a component
        (:mod:`ragsweep.pipeline.component_overrides`).
        """
        raw = copy.copy(self.symbols)
        replaced = self.replaced_parser
        for name, value in overrides.items():
            if not is_scalar(value):
                raise ConfigError(f"{self.path}: ${name} = {show(name, value)}: an override is a scalar")
            if is_argument_override(name):  # <component>.<argument>: one argument of a component
                apply_argument(raw, self.path, name, value)
                continue
            if name == "parser":  # the one component an override may replace: by ragsweep's own parse
                if value != "native":
                    raise ConfigError(
                        f"{self.path}: --set parser={value}: the only parser override is parser=native "
                        "(ragsweep's own offline parse in place of the app's parser; reports say so)"
                    )
                node = self.spec.parser_node()
                replaced = node if node != "native" else replaced
            elif name not in ("top_k", "route_docs"):
                check_variable_override(raw, self.path, name)
            raw[Ref(name)] = value
        config = PipelineConfig(
            path=self.path,
            symbols=raw,
            overrides={**self.overrides, **overrides},
            replaced_parser=replaced,
            source=self.source,
        )
        config.variables = config.validate()
        return config

    def validate(self) -> PipelineVariables:
        """Check every knob ragsweep reads; a :class:`ConfigError` lists each bad one
        (:func:`ragsweep.pipeline.spec_checks.checked_variables`)."""
        return checked_variables(self.spec)

    # ------------------------------------------------------------- reading
    def scalars(self) -> dict[str, Scalar]:
        """Every plain ``$variable`` with its value after overrides."""
        return self.spec.scalars()

    def get(self, name: str, default: Scalar = None) -> Scalar:
        value = self.scalars().get(name, default)
        return default if value is None else value

    @property
    @_remembered
    def top_k(self) -> int:
        """``$top_k``, else ``$search_topk``, else the question answerer's ``search_topk``, else 5."""
        _, value = self.spec.top_k_source()
        if value is None:
            return DEFAULT_TOP_K
        if not isinstance(value, (int, float, str)):  # validate() lets only integers through
            raise ConfigError(f"{self.path}: the top-k is {show('top_k', value)}, not an integer")
        return int(value)

    @property
    @_remembered
    def top_k_origin(self) -> str | None:
        """Where the top-k comes from: ``"$top_k"``, ``"question_answerer.search_topk"``... (None: the default)."""
        return self.spec.top_k_source()[0]

    @_remembered
    def answerer_depths(self) -> list[int] | None:
        """The depths an adaptive answerer asks, one after the other (:meth:`SpecTree.answerer_depths`)."""
        return self.spec.answerer_depths()

    def report_depths(self, ks: list[int], asked: bool) -> list[int]:
        """The depths a run reports: ``ks`` when they were asked for (``--ks``), else an adaptive
        answerer's own depths (:meth:`answerer_depths`), else ``ks``."""
        return list(ks) if asked else self.answerer_depths() or list(ks)

    @property
    def retriever_mode(self) -> str | None:
        return cast("str | None", self.variables.retriever_mode)

    # ------------------------------------------------------------- keys
    @property
    def hash(self) -> str:
        """The key of the file's whole structure after overrides: equal hashes ran one pipeline."""
        return config_hash(self.path, self.symbols)

    @property
    def chunking_key(self) -> str:
        """What decides the chunks (the parser, the splitter with every variable it references, the knobs
        marked as changing the chunks): equal keys mean equal chunk texts."""
        _, splitter_ref = self.spec.component_refs(self.retriever_mode)
        parser = self._parser_spec_fields()["identity"]  # an app's parser: its configuration decides the chunks
        chunks = knobs_changing("chunks", self.variables)
        return cache_key("pipeline-chunks", self._sub_hash(splitter_ref), parser, chunks, length=HASH_LENGTH)

    @property
    def index_key(self) -> str:
        """What decides the index: the chunks, the retriever, the knobs marked as changing the index
        (``$route_docs``: the document stage), not top-k; and the folder the documents are served under
        (each served item's metadata path starts with it)."""
        factory_ref, _ = self.spec.component_refs(self.retriever_mode)
        parts = (self.chunking_key, self._sub_hash(factory_ref), knobs_changing("index", self.variables))
        return cache_key("pipeline-index", *parts, self.served_folder(), length=HASH_LENGTH)

    def _canonical_text(self, obj: object) -> str:
        return canonical_text(self.path, obj)

    def _sub_hash(self, root: object) -> str:
        """The key of one definition with every variable it references, recursively."""
        return sub_hash(self.path, self.symbols, root)

    def text(self) -> str:
        return Path(self.path).read_text()

    # ------------------------------------------------------------- components
    def question_answerer_ref(self) -> tuple[str, Tagged] | None:
        """The app's question answerer (a top-level ``question_answerer:``, or ``$question_answerer``)."""
        return self.spec.question_answerer_ref()

    def question_answerer_llm(self) -> tuple[str, str]:
        """``("$llm", "OpenAIChat")``: how the app's question answerer's LLM is known, for messages."""
        return self.spec.question_answerer_llm()

    def embedder_ref(self) -> tuple[str, object] | None:
        """The node of the embedder the retriever uses and the name it goes by (``$embedder``)."""
        return self.spec.embedder_ref(self.retriever_mode)

    @_remembered
    def embedder_description(self) -> str | None:
        """``$embedder: OpenAIEmbedder(text-embedding-3-small)``: the embedder the YAML declares."""
        return self.spec.embedder_description(self.retriever_mode)

    @_remembered
    def configured_parser(self) -> str:
        """The import path of the parser the app's DocumentStore runs (:meth:`SpecTree.configured_parser`)."""
        return self.spec.configured_parser(self.replaced_parser)

    def parser_spec(self) -> ParserSpec:
        """The parser as the parse stage needs it (:class:`ragsweep.pipeline.parser_spec.ParserSpec`): its
        label, its identity (class + the arguments that decide its output: the parse cache's key part;
        None for ragsweep's own parse) and how another process builds it again."""
        spec = ParserSpec(**self._parser_spec_fields())  # type: ignore[arg-type]
        if spec.native:
            return spec
        # deferred: parsing imports pathway (~1 s); an app's parser runs through it
        from ragsweep.pipeline.parsing import AppParse

        return dataclasses.replace(
            spec, app_parse=AppParse(spec.path, tuple(sorted(spec.overrides.items())), built_parser)
        )

    def _parser_spec_fields(self) -> dict[str, object]:
        return self.spec.parser_spec_fields(self.configured_parser(), self.overrides)

    # ------------------------------------------------------------- building
    def _builder(self) -> PipelineBuilder:
        return PipelineBuilder(self.spec, self.raw, self.variables)

    def build(self) -> BuiltPipeline:
        """Construct the splitter and the retriever factory (fresh objects each call): only these two and what
        they reference, as Pathway's loader reads the file (:class:`ragsweep.pipeline.built.PipelineBuilder`)."""
        return self._builder().pipeline(self.served_folder())

    def build_parser(self) -> object:
        """The parser object, built from the YAML with every argument it has (a fresh object each call)."""
        return self._builder().parser()

    def build_question_answerer(self, indexer: DocumentStore) -> BaseQuestionAnswerer:
        """The app's question answerer built from its YAML, ``indexer`` in place of the app's document store."""
        return self._builder().question_answerer(indexer)

    # ------------------------------------------------------------- what the built pipeline answers
    @_remembered
    def has_embedder(self) -> bool:
        """Whether the retriever embeds (it names an embedder)."""
        return self.embedder_ref() is not None

    @_remembered
    def keeps_app_embedder(self) -> bool:
        """Whether the embedder is an app's (``OpenAIEmbedder``...), behind ragsweep's vector cache."""
        return self.has_embedder() and self.build().keeps_app_embedder()

    @_remembered
    def uses_tantivy(self) -> bool:
        """Whether a question reaches Tantivy's query parser (:meth:`BuiltPipeline.uses_tantivy`)."""
        return self.build().uses_tantivy()

    @_remembered
    def prefix_exact(self) -> bool:
        """Whether the index's top k is the first k of a deeper answer (:meth:`BuiltPipeline.prefix_exact`)."""
        return self.build().prefix_exact()

    @_remembered
    def fused_from_parts(self) -> bool:
        """Whether a hybrid index is fused from one ask of each sub-retriever (:meth:`BuiltPipeline.fused_from_parts`)."""
        return self.build().fused_from_parts()

    @_remembered
    def component_sources(self) -> dict[str, dict[str, str]]:
        """The source file of every constructor the YAML names, by module, then by component ("": none)."""
        return component_sources(self.raw)

    # ------------------------------------------------------------- what a report records
    def served_folder(self) -> str | None:
        """The folder the app reads its documents from, as Pathway writes it in each document's ``path``
        (:meth:`SpecTree.served_folder`; None: the dataset's own folder)."""
        return self.spec.served_folder()

    def served_path_note(self) -> str | None:
        """What differs in the documents' metadata where the app reads them from no folder."""
        return self.spec.served_path_note()

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
        label = self.top_k_origin
        if label is not None and label != "$top_k":
            out["top_k"] = {"value": self.top_k, "from": label + _widens(self.answerer_depths())}
        out["parser"] = self.parser_spec().manifest()
        if (note := self.served_path_note()) is not None:
            out["served_metadata"] = note
        return out

    def public_text(self) -> str:
        """The config file with the values of secret-looking keys masked."""
        return _SECRET_LINE.sub(lambda m: m.group(1) + "***", self.text())


def _widens(depths: list[int] | None) -> str:
    """How an adaptive answerer widens its context, for the manifest's top-k (``""`` for any other)."""
    if not depths or len(depths) < 2:
        return ""
    return f"; the answerer widens its context when it finds no answer: {', '.join(map(str, depths))} chunks"


_SECRET_LINE = re.compile(
    r"^(\s*\$?[\w.-]*(?:api_?key|secret|password|passwd|bearer|credential)[\w.-]*\s*:\s*).+$",
    re.IGNORECASE | re.MULTILINE,
)


def redact(values: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """Mask the values of keys that name a secret (``llm_api_key``, ``secret``...)."""
    return {k: ("***" if SECRET_NAME.search(k) and v not in (None, "") else v) for k, v in values.items()}


def parse_overrides(items: list[str] | None) -> Overrides:
    """``["max_tokens=400", "retriever_mode=bm25"]`` -> typed dict (YAML scalars)."""
    out: Overrides = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not NAME=VALUE")
        name, text = item.split("=", 1)
        value = _override_value(item, text)
        if not is_scalar(value):
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
