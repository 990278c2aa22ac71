"""What a pipeline file says, read from its symbols (:mod:`ragsweep.pipeline.yaml_symbolic`): where its
retriever factory, splitter, parser, embedder and question answerer are, where its top-k comes from, the
folder it reads its documents from. Nothing here imports a component's class, except to read a default the
file leaves to the class (:mod:`ragsweep.pipeline.tag_classes`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard, cast

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.arguments import ComponentArguments
from ragsweep.pipeline.parser_spec import NOT_OUTPUT
from ragsweep.pipeline.scalars import Overrides, Scalar
from ragsweep.pipeline.served_paths import FOLDER_READER, pathway_folder
from ragsweep.pipeline.spec_keys import sub_hash
from ragsweep.pipeline.tag_classes import is_retriever_factory, parameter_default
from ragsweep.pipeline.yaml_symbolic import Ref, SymbolicTree, Tagged, yaml_nodes

# the parser of a ragsweep pipeline that names none: ragsweep's own offline parse
NATIVE_PARSER = "ragsweep.pipeline.parsing.NativeParser"
# what an app's DocumentStore parses with when it names no parser (Pathway's default)
PATHWAY_DEFAULT_PARSER = "pathway.xpacks.llm.parsers.Utf8Parser"
# an adaptive question answerer's arguments, in the order its depths are computed from
ADAPTIVE_ARGUMENTS = ("n_starting_documents", "factor", "max_iterations")
DEFAULT = " (Pathway's default)"  # what a label ends with where the value is the constructor's default


def is_scalar(value: object) -> TypeGuard[Scalar]:
    return value is None or isinstance(value, (str, int, float, bool))


@dataclass(frozen=True)
class SpecTree:
    """One pipeline file's symbols after overrides, and the file's name for messages."""

    path: str
    raw: SymbolicTree

    def variable(self, name: str) -> object:
        """``$name``'s node (None when the file has no such variable)."""
        return self.raw.get(Ref(name))

    def follow(self, ref: object, label: str) -> tuple[str, object]:
        """A node and the name it goes by: a ``$variable`` reference as ``$name`` and its definition,
        any other node as ``label`` and itself."""
        if isinstance(ref, Ref):
            return f"${ref.name}", self.variable(ref.name)
        return label, ref

    def scalars(self) -> dict[str, Scalar]:
        """Every plain ``$variable`` with its value."""
        return {k.name: v for k, v in self.raw.items() if isinstance(k, Ref) and is_scalar(v)}

    def components(self) -> list[tuple[str, Tagged]]:
        """The top-level components with the name each goes by (``$llm``, ``question_answerer``)."""
        return [(str(k), v) for k, v in self.raw.items() if isinstance(v, Tagged)]

    def retriever_factory_variables(self) -> list[str]:
        """The variables ``$retriever_mode`` may name: those holding a retriever factory."""
        return [k.name for k, v in self.raw.items() if isinstance(k, Ref) and is_retriever_factory(v, self.raw)]

    # ------------------------------------------------------------- the components
    def document_store(self) -> object:
        """``$document_store``, else a top-level ``document_store:`` (llm-app's indexing template)."""
        if Ref("document_store") in self.raw:
            return self.raw[Ref("document_store")]
        return self.raw.get("document_store")

    def retriever_variable(self, mode: str | None) -> str:
        if mode is not None:
            if Ref(mode) not in self.raw:
                raise ConfigError(f"{self.path}: $retriever_mode is {mode!r} but there is no ${mode}")
            return mode
        if Ref("retriever_factory") in self.raw:
            return "retriever_factory"
        if self.document_store() is not None:
            return "document_store"
        raise ConfigError(f"{self.path}: needs $retriever_mode, $retriever_factory or $document_store")

    def component_refs(self, mode: str | None) -> tuple[object, object]:
        """The nodes of the retriever factory and of the splitter (None: ragsweep's default)."""
        target = self.retriever_variable(mode)
        if target != "document_store":
            return Ref(target), Ref("splitter") if Ref("splitter") in self.raw else None
        store = self.document_store()
        if not isinstance(store, Tagged):
            raise ConfigError(f"{self.path}: $document_store is not a component")
        factory_ref = ComponentArguments.of(store.kwargs).retriever_factory
        if factory_ref is None:
            raise ConfigError(f"{self.path}: $document_store has no retriever_factory")
        return factory_ref, store.kwargs["splitter"] if "splitter" in store.kwargs else self.variable("splitter")

    def embedder_ref(self, mode: str | None) -> tuple[str, object] | None:
        """The node of the embedder the retriever uses and the name it goes by (``$embedder``)."""
        factory_ref, _ = self.component_refs(mode)
        for node in yaml_nodes(factory_ref, self.raw):
            if isinstance(node, Tagged) and "embedder" in node.kwargs:
                return self.follow(node.kwargs["embedder"], f"{node.name}.embedder")
        return None

    def question_answerer_ref(self) -> tuple[str, Tagged] | None:
        """The app's question answerer (a top-level ``question_answerer:``, or ``$question_answerer``)."""
        for key, label in (
            (Ref("question_answerer"), "$question_answerer"),
            ("question_answerer", "question_answerer"),
        ):
            node = self.raw.get(key)
            if isinstance(node, Tagged):
                return label, node
        return None

    def llm_ref(self, label: str, node: Tagged) -> tuple[str, object]:
        """The question answerer's LLM: the name it goes by (``$llm``) and its node."""
        return self.follow(ComponentArguments.of(node.kwargs).llm, f"{label}.llm")

    def question_answerer_llm(self) -> tuple[str, str]:
        """``("$llm", "OpenAIChat")``: how the app's question answerer's LLM is known, for messages."""
        found = self.question_answerer_ref()
        if found is None:
            return "llm", "LLM"
        label, node = self.llm_ref(*found)
        return label, node.name if isinstance(node, Tagged) else "LLM"

    def embedder_description(self, mode: str | None) -> str | None:
        """``$embedder: OpenAIEmbedder(text-embedding-3-small)``: the embedder the YAML declares."""
        found = self.embedder_ref(mode)
        if found is None or not isinstance(found[1], Tagged):
            return None
        model = ComponentArguments.of(found[1].kwargs).model
        return f"{found[0]}: {found[1].name}" + (f"({model})" if isinstance(model, str) else "")

    def parser_node(self) -> object:
        """The node of the parser the app's DocumentStore parses with (its ``parser``, else ``$parser``),
        ``"native"`` after ``--set parser=native``, or None when the file names none."""
        if self.variable("parser") == "native":
            return "native"
        store = self.document_store()
        if isinstance(store, Tagged) and "parser" in store.kwargs:
            return self.follow(store.kwargs["parser"], "parser")[1]
        return self.variable("parser")

    def configured_parser(self, replaced: object) -> str:
        """The import path of the parser the app's DocumentStore runs: the one the file names (``replaced``:
        the one ``--set parser=native`` replaced), else Pathway's default (``Utf8Parser``) for a file with a
        document store, else ragsweep's own parse."""
        node = self.parser_node()
        node = replaced if node == "native" else node
        if isinstance(node, Tagged):
            return node.path
        return PATHWAY_DEFAULT_PARSER if self.document_store() is not None else NATIVE_PARSER

    def parser_spec_fields(self, configured: str, overrides: Overrides) -> dict[str, object]:
        """The fields of the parser's :class:`ragsweep.pipeline.parser_spec.ParserSpec`: its identity is its
        class and the arguments that decide its output, every variable they reference included."""
        node = self.parser_node()
        if node == "native" or configured == NATIVE_PARSER:
            replaced = configured.rsplit(".", 1)[-1] if node == "native" and configured != NATIVE_PARSER else None
            return {
                "label": "ragsweep native parse",
                "identity": None,
                "replaced": replaced,
                "class_path": NATIVE_PARSER,
            }
        identity = configured
        if isinstance(node, Tagged):
            kept = Tagged(node.path, {k: v for k, v in node.kwargs.items() if k not in NOT_OUTPUT}, node.bare)
            identity = f"{configured}#{sub_hash(self.path, self.raw, kept)}"
        return {
            "label": configured.rsplit(".", 1)[-1],
            "identity": identity,
            "path": str(Path(self.path).resolve()),
            "overrides": dict(overrides),
            "class_path": configured,
        }

    # ------------------------------------------------------------- the top-k
    def top_k_source(self, defaults: bool = True) -> tuple[str | None, object]:
        """Where the top-k comes from (``"$top_k"``, ``"question_answerer.search_topk"``...) and its value;
        without ``defaults``, only a value the file writes (no constructor's default is read)."""
        for name in ("top_k", "search_topk"):
            if self.variable(name) is not None:
                return f"${name}", self.raw[Ref(name)]
        components = self.components()
        for key, node in components:  # a question answerer's search_topk: ...
            ref = ComponentArguments.of(node.kwargs).search_topk
            if ref is not None:
                return self.follow(ref, f"{key}.search_topk")
        if not defaults:
            return None, None
        for key, node in components:  # ... else its default, what the app would use
            default = parameter_default(node.path, "search_topk")
            if default is not None:
                return f"{key}.search_topk{DEFAULT}", default
        adaptive = self.adaptive_arguments()  # an adaptive answerer: the depth of its first ask
        if adaptive is not None:
            return adaptive["n_starting_documents"]
        return None, None

    def written_top_k(self) -> tuple[str | None, object]:
        """The top-k's source where the file writes it, for the checks of :meth:`PipelineConfig.validate`: a
        constructor's default is valid, so one is read only where an adaptive answerer's written first depth
        may be the top-k."""
        label, value = self.top_k_source(defaults=False)
        if label is None and any("n_starting_documents" in node.kwargs for _, node in self.components()):
            label, value = self.top_k_source()
        return (None, None) if label is not None and label.endswith(DEFAULT) else (label, value)

    def adaptive_arguments(self) -> dict[str, tuple[str, object]] | None:
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
            default = parameter_default(node.path, name) if ref is None else None
            if ref is None and default is None:
                return None  # not an adaptive answerer: it takes no such argument
            out[name] = (
                self.follow(ref, f"{label}.{name}") if ref is not None else (f"{label}.{name}{DEFAULT}", default)
            )
        return out

    def answerer_depths(self) -> list[int] | None:
        """The depths an adaptive answerer asks, one after the other: ``n_starting_documents × factor^i``
        for each of its ``max_iterations`` asks (2, 4, 8, 16); None for any other."""
        found = self.adaptive_arguments()
        if found is None:
            return None
        n, factor, asks = (found[name][1] for name in ADAPTIVE_ARGUMENTS)
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (n, factor, asks)):
            return None  # validate() refuses such a file; a factory function's own values are not read
        return sorted({cast(int, n) * cast(int, factor) ** i for i in range(cast(int, asks))})

    # ------------------------------------------------------------- the documents
    def served_folder(self) -> str | None:
        """The folder the app reads its documents from as its ``pw.io.fs.read`` names it (``data``), written
        as Pathway writes it in each document's ``path`` (``data/X.docx``): a document is served under it
        joined with its path under the dataset's ``docs/``. None (the dataset's own folder): ragsweep's own
        pipelines, an app reading no folder or several, a folder named by an unset environment variable."""
        written = self.folder_as_written()
        if written is None:
            return None
        kind, text = written
        path = os.environ.get(text) if kind == "environment" else text  # read now: not a fact of the file
        return pathway_folder(path) if path is not None else None

    def source_readers(self) -> list[Tagged]:
        """The connectors the app's document store reads (its ``docs``, else ``$sources``)."""
        store = self.document_store()
        docs = ComponentArguments.of(store.kwargs).docs if isinstance(store, Tagged) else None
        root = docs if docs is not None else self.variable("sources")
        return [n for n in yaml_nodes(root, self.raw) if isinstance(n, Tagged)]

    def folder_as_written(self) -> tuple[str, str] | None:
        """``("path", "data")``, or ``("environment", "DOCS")`` for a folder Pathway's loader reads from the
        environment (an upper-case ``$DOCS`` the file does not define); None: no single folder is read."""
        readers = self.source_readers()
        folders = [n for n in readers if n.path == FOLDER_READER]
        if len(folders) != 1 or len(readers) != 1:
            return None
        node, seen = ComponentArguments.of(folders[0].kwargs).path, 0
        while isinstance(node, Ref) and node in self.raw and seen < 10:
            node, seen = self.raw[node], seen + 1
        if isinstance(node, Ref):
            return "environment", node.name
        return ("path", node) if isinstance(node, str) else None

    def served_path_note(self) -> str | None:
        """What differs in the documents' metadata where the app reads them from no folder (SharePoint,
        Google Drive...): their ``path`` and the connector's own fields."""
        others = sorted({n.path for n in self.source_readers() if n.path != FOLDER_READER})
        if not others:
            return None
        return (
            f"the app reads its documents with {', '.join(others)}: ragsweep serves each document's metadata "
            "path as the file's path in the dataset's docs folder on this machine (and no other field), where "
            "the connector gives its own path and fields (ids, URLs, times): a prompt showing them differs"
        )
