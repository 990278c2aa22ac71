"""How a configuration's documents are parsed, as the parse stage and the reports need it, without
importing Pathway: which parser (the app's, or ragsweep's own parse), its identity in the parse cache's
keys, and how a worker builds it again. The parser itself runs in :mod:`ragsweep.pipeline.parsing`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Required, TypedDict

from ragsweep.pipeline.corpus import ParseFn, convert

if TYPE_CHECKING:
    from ragsweep.pipeline.scalars import Overrides

# the arguments of a parser that do not change what it returns (Pathway's UDF plumbing)
# how a skipped document's reason ends when the app's parser raised on it: Pathway's DocumentStore runs the
# parser in the graph, and pw.run's default (terminate_on_error) ends the whole run on the first such error
# (read back by ragsweep.evaluation.parse_failures from a run's manifest, with no Pathway imported)
SERVED_APP_ENDS = " (the app's own server ends its whole pw.run on this document: Pathway's default terminate_on_error)"
NOT_OUTPUT = frozenset({"cache_strategy", "async_mode", "capacity", "retry_strategy", "executor"})

# what a report says of the parse (``manifest.pipeline.parser``), in this key order; "class" is a keyword
ParserManifest = TypedDict(
    "ParserManifest",
    {"parser": Required[str], "by": Required[str], "class": str, "replaced": str, "note": str},
    total=False,
)


@dataclass(frozen=True)
class ParserSpec:
    """The parser of one configuration, as a process that has only its file can build it again.

    ``identity`` is the parser's class and the arguments that decide its output (the parse cache's key
    part); ``None`` for ragsweep's own parse, whose cache keys are its format's pipeline name.
    """

    label: str  # what reports name it by: "DoclingParser", "ragsweep native parse"
    identity: str | None
    path: str = ""
    overrides: Overrides = field(default_factory=dict)
    replaced: str | None = None  # the app's parser that ``--set parser=native`` replaced, if any
    class_path: str = ""
    # the app's parser on one document (:class:`ragsweep.pipeline.parsing.AppParse`: built from ``path`` and
    # ``overrides`` once per process); None for ragsweep's own parse
    app_parse: ParseFn | None = None

    @property
    def native(self) -> bool:
        return self.identity is None

    def parse_fn(self) -> ParseFn:
        """What :func:`ragsweep.pipeline.corpus.parse_corpus` calls per document."""
        if self.native:
            return convert
        assert self.app_parse is not None, "an app's parser spec names how it parses"
        return self.app_parse

    def manifest(self) -> ParserManifest:
        """What a report says of the parse: by the app's parser, or by ragsweep in its place."""
        out: ParserManifest = {"parser": self.label, "by": "ragsweep" if self.native else "app"}
        if self.class_path:
            out["class"] = self.class_path
        if self.replaced is not None:
            out["replaced"] = self.replaced
            out["note"] = f"parsed by ragsweep, not by the app's parser ({self.replaced}): --set parser=native"
        return out
