"""The app's parser, run as the app's DocumentStore runs it: file bytes -> elements (text, metadata).

A pipeline names its parser as an app does (``$parser``, or its ``document_store``'s ``parser``); the
object is built from the YAML with every argument it has and called as Pathway's DocumentStore calls it,
``parser.__wrapped__(contents)`` (awaited when it is async), one document at a time: Pathway's
``DoclingParser`` (``chunk``, ``table_parsing_strategy``, ``pdf_pipeline_options``...), ``Utf8Parser``,
``PypdfParser``, ``UnstructuredParser`` or any ``pw.UDF`` a user wrote. Each element it returns is split on
its own, with its metadata (:class:`ragsweep.pipeline.corpus.ParsedElement`); the elements are cached by
content in the parse cache, keyed by (the parser's class and the arguments that decide its output, the file's
bytes), so a re-run, ``--workers`` processes and Ray parse tasks parse nothing twice.

:class:`NativeParser` is ragsweep's own offline parse under the same interface (``.txt`` verbatim, PDF
through Docling's model-free native pipeline, DOCX/HTML/Markdown through Docling), named by
``pipelines/default.yaml``; a ragsweep pipeline that names no parser gets it. An app's ``document_store``
that names none gets Pathway's default, ``Utf8Parser``, as the app does.

Offline: the ``HybridChunker`` of ``DoclingParser`` loads the all-MiniLM-L6-v2 tokenizer; it is loaded
from the bundled MiniLM package (:func:`bundled_tokenizer`), never from the hub. Docling's PDF models
are looked up locally before any work (:func:`missing_models`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar

from ragsweep.core import environment
from ragsweep.core.errors import ConfigError, StageError
from ragsweep.core.offline import embedder_model_path, ensure_offline
from ragsweep.pipeline.corpus import Outline, convert, join_elements, layout_models_available
from ragsweep.pipeline.parser_spec import SERVED_APP_ENDS, ParserSpec

if TYPE_CHECKING:
    from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer

    from ragsweep.pipeline.scalars import Scalar

ensure_offline()

import pathway as pw  # noqa: E402

# the value of ``--set parser=native``: ragsweep's own parse in place of the app's
NATIVE = "native"


class AppParserFailure(ValueError):
    """The app's parser raised on one document: it is skipped, its reason says the served app would stop."""


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:300]}"


class NativeParser(pw.UDF):
    """ragsweep's offline parse as a Pathway parser: a text file verbatim (in NFKC), PDF through Docling's
    model-free native pipeline (the standard layout pipeline where its model is on this machine), DOCX, HTML
    and Markdown through Docling, one element per document with no metadata.

    ragsweep's parse stage calls :meth:`parse_file` with the format read from the file's name and bytes; an
    app serving this parser from raw bytes (``__wrapped__``) gets the format from the bytes alone (a PDF, a
    DOCX zip, HTML by its opening tag; anything else is text), so serve ``.md`` files with their own parser.
    """

    def __init__(self, **kwargs: Any) -> None:  # Pathway's UDF options (cache_strategy...), passed on as they are
        super().__init__(**kwargs)

    def parse_file(
        self, data: bytes, fmt: str, name: str, standard_pdf: bool
    ) -> tuple[str, list[str]] | tuple[str, list[str], Outline]:
        return convert(data, fmt, name, standard_pdf)

    def __wrapped__(self, contents: bytes) -> list[tuple[str, dict]]:
        fmt = _sniff(contents)
        return [(convert(contents, fmt, f"document.{fmt}", layout_models_available())[0], {})]


def _sniff(data: bytes) -> str:
    head = data[:1024].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "pdf"
    if head.startswith(b"pk\x03\x04"):
        return "docx"
    if head.startswith((b"<!doctype html", b"<html")):
        return "html"
    return "txt"


# ----------------------------------------------------------------- what parses, picklable

# (pipeline file, overrides) -> the parser
ParserBuilder: TypeAlias = "Callable[[str, tuple[tuple[str, Scalar], ...]], object]"
_T = TypeVar("_T")


class ParserConfig(Protocol):
    """What :func:`check_parser` needs of a :class:`~ragsweep.pipeline.config.PipelineConfig` (which builds
    its parser with this module, so this module does not import it)."""

    path: str

    def parser_spec(self) -> ParserSpec: ...

    def build_parser(self) -> object: ...


def check_parser(config: ParserConfig, docs_dir: str | Path) -> ParserSpec:
    """The configuration's parser spec, once its parser is known to run here: it builds (a missing package is
    a :class:`StageError` naming it), and a Docling parser finds the models the folder's PDFs need."""
    spec = config.parser_spec()
    if spec.native:
        return spec
    try:
        parser = config.build_parser()
    except ConfigError as err:
        raise StageError(str(err)) from None
    folder = Path(docs_dir)
    pdfs = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.suffix.lower() == ".pdf")
    missing = missing_models(parser) if pdfs else []
    if missing:
        raise StageError(f"{config.path}: {pdf_refusal(spec.label, missing, pdfs)}")
    return spec


@dataclass(frozen=True)
class AppParse:
    """One document through the app's parser (a parse function of :mod:`ragsweep.pipeline.corpus`): the
    parser is built once per process from the pipeline file, so this travels to worker processes and Ray
    tasks as the file's path and overrides."""

    path: str
    overrides: tuple[tuple[str, Scalar], ...]
    build: ParserBuilder  # a module-level function (picklable by name), cached per process

    def __call__(
        self, data: bytes, fmt: str, name: str, standard_pdf: bool
    ) -> tuple[str, list[str], Outline, list[tuple[str, dict]]]:
        parser = self.build(self.path, self.overrides)
        try:
            raw = call_parser(parser, data)
        except Exception as err:  # the document is skipped here; the app's own server would stop on it
            raise AppParserFailure(f"{type(parser).__name__} raised {_one_line(err)}{SERVED_APP_ENDS}") from err
        text, _ = join_elements(raw)
        return text, [], Outline(), raw


def call_parser(parser: object, data: bytes) -> list[tuple[str, dict]]:
    """``parser`` on one document's bytes as Pathway's DocumentStore calls it (``__wrapped__``, awaited
    when it is a coroutine); its elements as (text, metadata) pairs, checked."""
    fn = getattr(parser, "__wrapped__", parser)
    if not callable(fn):
        raise ValueError(f"the parser ({type(parser).__name__}) is not callable")
    out = fn(data)
    if inspect.iscoroutine(out):  # what asyncio.run takes (any other awaitable it refuses)
        out = _run(out)
    if not isinstance(out, (list, tuple)):
        raise ValueError(f"the parser returned {type(out).__name__}, not a list of (text, metadata) pairs")
    elements: list[tuple[str, dict]] = []
    for n, item in enumerate(out):
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)):
            raise ValueError(f"the parser's element {n} is not a (text, metadata) pair")
        meta = item[1].as_dict() if isinstance(item[1], pw.Json) else dict(item[1] or {})
        elements.append((item[0], json.loads(json.dumps(meta, default=str))))  # as Pathway's Json carries it
    return elements


def _run(coro: Coroutine[object, object, _T]) -> _T:
    """A coroutine run to its end, from inside a running event loop too (on a thread of its own)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    values: list[_T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            values.append(asyncio.run(coro))
        except BaseException as err:  # noqa: BLE001 - re-raised on the caller's thread
            errors.append(err)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return values[0]


# ----------------------------------------------------------------- offline models


@functools.cache
def bundled_tokenizer() -> HuggingFaceTokenizer:
    """all-MiniLM-L6-v2's tokenizer from the bundled MiniLM package, as Docling's ``HybridChunker`` takes
    it (``sentence-transformers/all-MiniLM-L6-v2`` by default, from the hub), its max tokens from the
    package's ``sentence_bert_config.json``."""
    from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
    from transformers import AutoTokenizer

    folder = Path(embedder_model_path())
    max_tokens = int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
    return HuggingFaceTokenizer(tokenizer=AutoTokenizer.from_pretrained(str(folder)), max_tokens=max_tokens)


@contextlib.contextmanager
def offline_parser_models() -> Iterator[None]:
    """While a parser is built: Docling's default chunker tokenizer is the bundled one."""
    try:
        from docling_core.transforms.chunker.tokenizer import huggingface
    except ImportError:  # no docling_core: no Docling parser to build
        yield
        return
    original = huggingface.get_default_tokenizer
    huggingface.get_default_tokenizer = bundled_tokenizer
    try:
        yield
    finally:
        huggingface.get_default_tokenizer = original


def docling_pdf_needs(parser: object) -> list[str]:
    """The Docling models an app's ``DoclingParser`` needs for a PDF: the layout model always (Docling's
    standard PDF pipeline), TableFormer when it parses tables (``do_table_structure``)."""
    needs = ["the layout model (docling-project/docling-layout-heron)"]
    options = _pdf_options(parser)
    if options is not None and getattr(options, "do_table_structure", False):
        needs.append("TableFormer (docling-project/docling-models, with the docling-ibm-models package)")
    return needs


def _pdf_options(parser: object) -> object:
    """A Docling parser's PDF pipeline options (None for any other parser), read by attribute: Docling's
    option classes differ between its versions."""
    converter = getattr(parser, "converter", None)
    for option in (getattr(converter, "format_to_options", None) or {}).values():
        options = getattr(option, "pipeline_options", None)
        if options is not None and hasattr(options, "do_table_structure"):
            return options
    return None


def missing_models(parser: object) -> list[str]:
    """What the parser lacks on this machine to parse a PDF (``[]``: nothing, or not a Docling parser)."""
    if type(parser).__name__ != "DoclingParser":
        return []
    options = _pdf_options(parser)
    artifacts = getattr(options, "artifacts_path", None) or environment.docling_artifacts_path()
    needs = docling_pdf_needs(parser)
    missing = [] if _layout_available(artifacts) else needs[:1]
    if len(needs) > 1 and not _tableformer_available(artifacts):
        missing.append(needs[1])
    return missing


def _layout_available(artifacts: object) -> bool:
    """Docling's layout model in the artifacts folder (``docling-project--docling-layout-heron``) or the HF cache."""
    if artifacts and (Path(str(artifacts)) / "docling-project--docling-layout-heron" / "model.safetensors").is_file():
        return True
    return layout_models_available()


def _tableformer_available(artifacts: object) -> bool:
    """TableFormer's weights where Docling looks for them, and the package that runs them (docling-ibm-models)."""
    import importlib.util

    if importlib.util.find_spec("docling_ibm_models") is None:
        return False
    if artifacts:
        folder = Path(str(artifacts)) / "docling-project--docling-models" / "model_artifacts" / "tableformer"
        if any(folder.glob("*/tableformer_*.safetensors")):
            return True
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(
            "docling-project/docling-models",
            "model_artifacts/tableformer/accurate/tableformer_accurate.safetensors",
            revision="v2.3.0",
        )
        return isinstance(found, str)
    except Exception:  # noqa: BLE001 - no hub package, a damaged cache: not available
        return False


def pdf_refusal(label: str, missing: Sequence[str], pdfs: Sequence[str]) -> str:
    """The one message that stops a run whose app parser cannot parse its PDFs here."""
    first = ", ".join(pdfs[:3]) + (f" and {len(pdfs) - 3} more" if len(pdfs) > 3 else "")
    return (
        f"the app's parser ({label}) parses PDFs with Docling's standard pipeline, which needs "
        f"{' and '.join(missing)}; not found on this machine (HF cache, DOCLING_ARTIFACTS_PATH or "
        f"pdf_pipeline_options.artifacts_path) for {len(pdfs)} PDF(s): {first}. Get them on a connected "
        "machine with `docling-tools models download layout tableformer` and point DOCLING_ARTIFACTS_PATH at "
        "the folder, or evaluate with ragsweep's own parse in its place: --set parser=native (every report "
        "then says the parse is ragsweep's, not the app's)"
    )
