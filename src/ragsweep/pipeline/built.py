"""A pipeline built by Pathway: the file's text read by Pathway's own loader (as the app reads it), the
spec's overrides applied to what it gives, the components constructed by Pathway's resolver; and what the
built components answer about the pipeline (does a question reach Tantivy? is the index's top k a prefix of
a deeper answer?).

The spec (:class:`ragsweep.pipeline.config.PipelineConfig`) says where each component is in the file; the
node at that place in Pathway's tree is the one built (:func:`loaded_node`).
"""

from __future__ import annotations

import copy
import inspect
import sys
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, partial
from importlib.machinery import EXTENSION_SUFFIXES
from typing import TYPE_CHECKING, Any, NoReturn, cast

import yaml

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.knobs import PipelineVariables
from ragsweep.pipeline.scalars import Overrides, Scalar
from ragsweep.pipeline.spec_keys import sub_hash
from ragsweep.pipeline.spec_tree import SpecTree
from ragsweep.pipeline.yaml_symbolic import PYTHON_TAG, Ref, Tagged

if TYPE_CHECKING:
    from pathway.stdlib.indexing import AbstractRetrieverFactory
    from pathway.xpacks.llm.embedders import BaseEmbedder
    from pathway.xpacks.llm.question_answering import BaseQuestionAnswerer
    from pathway.xpacks.llm.splitters import BaseSplitter

    from ragsweep.pipeline.serving import DocumentStore

# a pipeline file as Pathway's loader gives it: ``$variables`` and top-level keys, each a YAML node (a
# Value, a Variable, a constant, or a dict / list of nodes)
LoadedTree = dict[object, object]

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a type made at run time (every class statement makes one)


@dataclass
class BuiltPipeline:
    """The live objects of one configuration, and what they answer about the pipeline."""

    splitter: BaseSplitter
    retriever_factory: AbstractRetrieverFactory
    embedder: BaseEmbedder | None
    params: dict[str, Scalar]
    route_docs: int | None = None  # $route_docs: a first stage ranks documents (ragsweep.pipeline.routing)
    # the folder the app reads its documents from, as it names it (``data``): None serves the dataset's folder
    served_folder: str | None = None

    def uses_tantivy(self) -> bool:
        """Whether a question reaches Tantivy's query parser (a BM25 index, alone or fused)."""
        # deferred: serving imports pathway (~1 s); importing this module must not
        from ragsweep.pipeline.serving import uses_tantivy

        return uses_tantivy(self.retriever_factory)

    def prefix_exact(self) -> bool:
        """Whether the index's top k is the first k of a deeper answer (:func:`ragsweep.pipeline.store.prefix_exact`)."""
        # deferred: stable_order imports pathway (~1 s)
        from ragsweep.pipeline.stable_order import exact_index

        return exact_index(self.retriever_factory)

    def fused_from_parts(self) -> bool:
        """Whether a hybrid index's lists are fused from one ask of each exact sub-retriever
        (:func:`ragsweep.pipeline.fused_depths.exact_parts`)."""
        # deferred: fused_depths imports pathway (~1 s)
        from ragsweep.pipeline.fused_depths import exact_parts

        return exact_parts(self.retriever_factory) is not None

    def keeps_app_embedder(self) -> bool:
        """Whether the embedder is an app's (``OpenAIEmbedder``...), behind ragsweep's vector cache."""
        # deferred: app_components pulls numpy and httpx (~170 ms)
        from ragsweep.pipeline.app_components import is_kept

        return is_kept(self.embedder)


# ----------------------------------------------------------------- Pathway's tree
@cache
def _loader_class() -> type:
    """Pathway's loader without PyYAML's ``!!python/...`` tags: no Pathway app needs them, and they run
    arbitrary calls at load time. ``!pw.*`` and importable-class tags are Pathway's own and still load."""
    # deferred: Pathway's loader imports Pathway (~1 s); a spec is read without it
    from pathway.internals.yaml_loader import PathwayYamlLoader

    class Loader(PathwayYamlLoader):
        def refuse_python_tag(self, suffix: str, node: yaml.Node) -> NoReturn:
            raise yaml.MarkedYAMLError(
                problem=f"the tag !!python/{suffix} is refused: PyYAML's python tags run code while loading; "
                "a pipeline uses !pw.* and importable-class tags",
                problem_mark=node.start_mark,
            )

    Loader.yaml_constructors = {
        tag: f for tag, f in PathwayYamlLoader.yaml_constructors.items() if not str(tag).startswith(PYTHON_TAG)
    }
    Loader.yaml_multi_constructors = {
        tag: f for tag, f in PathwayYamlLoader.yaml_multi_constructors.items() if not str(tag).startswith(PYTHON_TAG)
    }
    Loader.add_multi_constructor(PYTHON_TAG, Loader.refuse_python_tag)
    return Loader


def loaded_tree(path: str, text: str, overrides: Overrides) -> LoadedTree:
    """``text`` through Pathway's loader (its classes imported, none built), with the overrides the spec
    checked: a ``$variable`` replaced, or one argument of a component (``llm.model``) in a copy of its node."""
    from pathway.internals.yaml_loader import Value, Variable

    try:
        raw = yaml.load(text, _loader_class())  # noqa: S506 - Pathway's loader, python tags refused
    except (yaml.YAMLError, ImportError, AttributeError) as err:
        raise ConfigError(f"{path}: {yaml_error_line(err)}") from err
    for name, value in overrides.items():
        component, _, argument = name.partition(".")
        if not argument:
            raw[Variable(name)] = value
            continue
        plain = component.removeprefix("$")
        key = next(k for k in (component, Variable(plain)) if k in raw and isinstance(raw[k], Value))
        replaced = copy.copy(raw[key])
        replaced.kwargs = {**replaced.kwargs, argument: value}
        raw[key] = replaced
    return cast(LoadedTree, raw)


def yaml_error_line(err: BaseException) -> str:
    """A loader error as one line: where (line, column) and what, without PyYAML's quoted snippet."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None)
    if not isinstance(err, yaml.MarkedYAMLError) or mark is None or not problem:
        return " ".join(str(err).split())
    context = f"{err.context}: " if err.context else ""
    return f"line {mark.line + 1}, column {mark.column + 1}: {context}{problem}"


def loaded_node(symbols: Mapping[Any, object], loaded: LoadedTree, target: object) -> object:
    """The node of Pathway's tree at the place ``target`` (a node of the symbolic tree) has; a ``$name``
    reference is Pathway's ``Variable``."""
    from pathway.internals.yaml_loader import Variable

    if isinstance(target, Ref):
        return Variable(target.name)
    if not isinstance(target, Tagged):
        return target  # a scalar reads the same in both trees
    found = _counterpart(dict(symbols), loaded, target)
    if found is None:
        raise ConfigError(f"a component (!{getattr(target, 'path', target)}) is not where Pathway's loader put it")
    return found


def _counterpart(symbolic: object, loaded: object, target: Tagged) -> object:
    if symbolic is target:
        return loaded
    if isinstance(symbolic, Tagged):
        symbolic, loaded = symbolic.kwargs, getattr(loaded, "kwargs", None)
    if isinstance(symbolic, dict) and isinstance(loaded, dict):
        pairs = [(v, loaded.get(_loaded_key(k))) for k, v in symbolic.items()]
    elif isinstance(symbolic, list) and isinstance(loaded, list):
        pairs = list(zip(symbolic, loaded))
    else:
        return None
    for inner, there in pairs:
        found = _counterpart(inner, there, target)
        if found is not None:
            return found
    return None


def _loaded_key(key: object) -> object:
    from pathway.internals.yaml_loader import Variable

    return Variable(key.name) if isinstance(key, Ref) else key


def fresh_variables(raw: LoadedTree) -> dict[object, object]:
    """The ``$variables`` of a loaded tree, copied fresh for one build (:func:`fresh_copy`)."""
    from pathway.internals.yaml_loader import Variable

    return {k: fresh_copy(v) for k, v in raw.items() if isinstance(k, Variable)}


def fresh_copy(obj: object) -> object:
    """Copy the loaded YAML so each build constructs new objects (Pathway's
    resolver marks Values as constructed in place); constants stay shared."""
    from pathway.internals.yaml_loader import Value

    if isinstance(obj, Value):
        if obj.constructor is None or obj.constructed:
            return obj
        return Value(constructor=obj.constructor, kwargs={k: fresh_copy(v) for k, v in obj.kwargs.items()})
    if isinstance(obj, dict):
        return {k: fresh_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [fresh_copy(v) for v in obj]
    return obj


def resolve(doc: dict[object, object]) -> dict[str, object]:
    """``doc`` built by Pathway's resolver (it raises what a component's constructor raises)."""
    from pathway.internals.yaml_loader import Resolver

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unused variables (the other retriever modes)
        with Resolver() as resolver:
            return cast("dict[str, object]", resolver.resolve(doc))


def component_sources(raw: LoadedTree) -> dict[str, dict[str, str]]:
    """Where the code of every constructor a loaded tree names is: by module, then by component
    (``module.qualname``), its source file, or "" for Python code that has none (a module with no file,
    code built by ``exec``). A builtin or an extension type is left out: its package's version stands
    for it."""
    from pathway.internals.yaml_loader import Value

    sources: dict[str, dict[str, str]] = {}
    for node in _loaded_nodes(raw):
        if not isinstance(node, Value) or node.constructor is None:
            continue
        code = _code_of(node.constructor)
        path = _source_file(code)
        if path or not _compiled(code):
            module = getattr(code, "__module__", None) or path or "?"
            sources.setdefault(module, {})[_component_name(code)] = path or ""
    return dict(sorted(sources.items()))


def _code_of(constructor: object) -> object:
    """The class or function whose code a constructor runs: a partial's function, a bound method's function,
    a decorated function's own (not its wrapper's, whose file is the decorator's), an instance's class."""
    code = constructor
    while isinstance(code, partial):  # a C type: taken as compiled, its function would go unseen
        code = code.func
    code = getattr(code, "__func__", code)
    if inspect.isroutine(code):  # a class's ``__wrapped__`` may be anything it inherits: only routines are unwrapped
        code = inspect.unwrap(code)
    return code if inspect.isclass(code) or inspect.isroutine(code) else type(code)


def _source_file(code: object) -> str | None:
    try:
        return inspect.getsourcefile(code)  # type: ignore[arg-type]
    except (TypeError, OSError):  # a builtin; a class of ``__main__``
        return None


def _component_name(code: object) -> str:
    return f"{getattr(code, '__module__', None) or '?'}.{getattr(code, '__qualname__', '?')}"


def _compiled(code: object) -> bool:
    """Whether code without a source file is compiled (a builtin, an extension type), not Python."""
    if isinstance(code, types.FunctionType):  # Python bytecode, whatever file it claims
        return False
    if inspect.isbuiltin(code) or inspect.ismethoddescriptor(code):
        return True
    cls = code if isinstance(code, type) else type(code)  # a method descriptor of C, a wrapper...
    if not cls.__flags__ & _HEAP_TYPE:  # a static type is C; a class statement makes a heap type
        return True
    module = sys.modules.get(cls.__module__)
    if module is None:  # its module is nowhere: nothing tells that it is not Python (the safe side: not)
        return False
    spec = getattr(module, "__spec__", None)
    if module.__name__ in sys.builtin_module_names or getattr(spec, "origin", None) in ("built-in", "frozen"):
        return True  # part of the interpreter: Python's version stands for it
    # an extension module (.so / .pyd): the installed version of its package stands for it
    return str(getattr(module, "__file__", "") or "").endswith(tuple(EXTENSION_SUFFIXES))


def _loaded_nodes(obj: object) -> list[object]:
    from pathway.internals.yaml_loader import Value

    out = [obj]
    children: Iterable[object] = ()
    if isinstance(obj, Value):
        children = obj.kwargs.values()
    elif isinstance(obj, dict):
        children = obj.values()
    elif isinstance(obj, (list, tuple)):
        children = obj
    for child in children:
        out.extend(_loaded_nodes(child))
    return out


def _why(err: BaseException) -> str:
    """An exception as one line: its type and first line (Pathway's optional imports name the extra)."""
    first = (str(err).strip().splitlines() or [""])[0]
    return f"{type(err).__name__}: {first[:300]}"


def _type_path(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def _find_embedder(factory: object) -> BaseEmbedder | None:
    embedder: BaseEmbedder | None = getattr(factory, "embedder", None)  # a retriever factory's, if it has one
    if embedder is not None:
        return embedder
    for inner in getattr(factory, "retriever_factories", []) or []:
        found = _find_embedder(inner)
        if found is not None:
            return found
    return None


@dataclass
class PipelineBuilder:
    """One configuration's components built from Pathway's tree, at the places its spec names."""

    spec: SpecTree
    loaded: LoadedTree  # Pathway's tree of the same text, the same overrides applied
    variables: PipelineVariables

    def node(self, target: object) -> object:
        return loaded_node(self.spec.raw, self.loaded, target)

    def _failure(self, err: Exception, found: tuple[str, object] | None, what: str) -> ConfigError:
        """What failed while building: the app's component named when it is the one (no API key...)."""
        # deferred: app_components pulls numpy and httpx (~170 ms); the pytest plugin's warm path imports config
        from ragsweep.pipeline.app_components import describe_failure

        node = found[1] if found is not None else None
        if found is not None and isinstance(node, Tagged) and "openai" in type(err).__module__:
            return ConfigError(f"{self.spec.path}: {describe_failure(found[0], node.name, None, err)}")
        return ConfigError(f"{self.spec.path}: building {what} failed: {type(err).__name__}: {err}")

    def pipeline(self, served_folder: str | None) -> BuiltPipeline:
        """Construct the splitter and the retriever factory (fresh objects each call).

        Only these two and what they reference are built: the document store, its sources and parser, the
        question answerer and server settings of an app config are not (ragsweep feeds the documents and
        answers itself)."""
        mode = self.variables.retriever_mode
        factory_ref, splitter_ref = self.spec.component_refs(mode)
        doc = fresh_variables(self.loaded)
        doc["retriever_factory"] = fresh_copy(self.node(factory_ref))
        if splitter_ref is not None:
            doc["splitter"] = fresh_copy(self.node(splitter_ref))
        try:
            resolved = resolve(doc)
        except Exception as err:  # a component's constructor: missing credentials, a bad argument...
            raise self._failure(err, self.spec.embedder_ref(mode), "the splitter and retriever factory") from err
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
            params=self.spec.scalars(),
            route_docs=self.variables.route_docs,
            served_folder=served_folder,
        )

    def _check_chunk_header(self, splitter: object) -> None:
        """``$chunk_header`` is the splitter's: one that does not make it would ignore the knob."""
        wanted = self.variables.chunk_header
        made = getattr(splitter, "chunk_header", "none")
        if wanted is not None and wanted != made:
            raise ConfigError(
                f"{self.spec.path}: $chunk_header = {wanted}, but the splitter ({_type_path(type(splitter))}) "
                f"makes chunk_header = {made}: give ragsweep.pipeline.chunking.OffsetTokenCountSplitter "
                "chunk_header: $chunk_header"
            )

    def _keep_app_embedder(self, embedder: BaseEmbedder | None) -> None:
        """An embedder of the app's (a Pathway one, say ``OpenAIEmbedder``) is used as is, behind
        ragsweep's vector cache keyed by what decides its vectors: its class and arguments."""
        # deferred: app_components pulls numpy and httpx (~170 ms); the pytest plugin's warm path imports config
        from ragsweep.pipeline.app_components import NOT_IDENTITY, is_app_embedder, keep_and_cache

        found = self.spec.embedder_ref(self.variables.retriever_mode)
        if not is_app_embedder(embedder) or found is None:
            return
        label, node = found
        if isinstance(node, Tagged):
            kept = Tagged(node.path, {k: v for k, v in node.kwargs.items() if k not in NOT_IDENTITY}, node.bare)
            identity = sub_hash(self.spec.path, self.spec.raw, kept)
        else:
            identity = _type_path(type(embedder))
        keep_and_cache(embedder, label, f"{_type_path(type(embedder))}:{identity}")

    def parser(self) -> object:
        """The parser object, built from the YAML with every argument it has (a fresh object each call),
        Docling's chunker tokenizer from the bundled MiniLM package (:mod:`ragsweep.pipeline.parsing`)."""
        # deferred: parsing imports pathway (~1 s); importing config (the API, the CLI) must not
        from ragsweep.pipeline.parsing import NativeParser, offline_parser_models

        node = self.spec.parser_node()
        if node == "native" or (node is None and self.spec.document_store() is None):
            return NativeParser()
        if node is None:
            from pathway.xpacks.llm.parsers import Utf8Parser

            return Utf8Parser()
        doc = fresh_variables(self.loaded)
        doc["parser"] = fresh_copy(self.node(node))
        with offline_parser_models():
            try:
                return resolve(doc)["parser"]
            except Exception as err:  # a missing package (tree_sitter), a bad argument, a model not here
                name = node.path if isinstance(node, Tagged) else "parser"
                raise ConfigError(f"{self.spec.path}: building the app's parser ({name}) failed: {_why(err)}") from err

    def question_answerer(self, indexer: DocumentStore) -> BaseQuestionAnswerer:
        """The app's question answerer built from its YAML (its class and every argument it takes:
        ``llm``, ``prompt_template``, ``search_topk``, ``reranker``...), ``indexer`` in place of the
        app's document store: the DocumentStore ragsweep built over the dataset's documents."""
        from pathway.xpacks.llm.question_answering import BaseQuestionAnswerer

        found = self.spec.question_answerer_ref()
        if found is None:
            raise ConfigError(f"{self.spec.path}: declares no question_answerer")
        label, node = found
        loaded = self.node(node)
        kwargs = cast("dict[object, object]", getattr(loaded, "kwargs"))
        doc = fresh_variables(self.loaded)
        doc["arguments"] = {k: fresh_copy(v) for k, v in kwargs.items() if k != "indexer"}
        try:
            arguments = resolve(doc)["arguments"]
            assert isinstance(arguments, dict)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                built = cast("Callable[..., object]", getattr(loaded, "constructor"))(indexer=indexer, **arguments)
        except Exception as err:  # its LLM's constructor (no API key), a bad argument...
            raise self._failure(err, self.spec.llm_ref(label, node), label) from err
        if not isinstance(built, BaseQuestionAnswerer):  # what ragsweep asks it: answer_query, its schema
            raise ConfigError(
                f"{self.spec.path}: {label} builds a {_type_path(type(built))}, not a Pathway question answerer"
            )
        return built
