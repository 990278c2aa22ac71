"""A user's own Pathway parser (a ``pw.UDF``), for tests/test_parse_cache_app.py: each call appends a line to
the file ``$RAGSWEEP_TEST_PARSE_LOG`` names, so a test counts the documents it really parsed, in any process."""

from __future__ import annotations

import os

import pathway as pw

# an app whose parser is CountingParser, its arguments after ``$parser`` (``{args}``), BM25 over small chunks
APP = """
$parser: !counting_parser.CountingParser
{args}
$splitter: !ragsweep.pipeline.chunking.OffsetTokenCountSplitter
  min_tokens: 5
  max_tokens: 40
$retriever_mode: bm25
$bm25: !pw.stdlib.indexing.TantivyBM25Factory {{}}
"""


def app_yaml(*args: str, extra: str = "") -> str:
    """:data:`APP` with ``args`` (``"name: value"`` lines) as the parser's arguments, then ``extra``."""
    return APP.format(args="\n".join(f"  {a}" for a in args)) + extra


class CountingParser(pw.UDF):
    """Paragraphs of a UTF-8 file as elements, each with its number; ``upper`` changes what it returns,
    ``first_only`` keeps the first paragraph alone."""

    def __init__(self, upper: bool = False, first_only: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.upper = upper
        self.first_only = first_only

    def __wrapped__(self, contents: bytes) -> list[tuple[str, dict]]:
        with open(os.environ["RAGSWEEP_TEST_PARSE_LOG"], "a") as log:
            log.write(f"{len(contents)}\n")
        text = contents.decode("utf-8")
        parts = [p for p in text.split("\n\n") if p.strip()][: 1 if self.first_only else None]
        return [(p.upper() if self.upper else p, {"paragraph": n}) for n, p in enumerate(parts)]
