"""A user's own Pathway parser (a ``pw.UDF``) that raises on a document holding ``#broken``, for
tests/test_parser_failures.py; any other document is one element per paragraph."""

from __future__ import annotations

import pathway as pw

APP = """
$parser: !raising_parser.RaisingParser {}
$splitter: !ragsweep.pipeline.chunking.OffsetTokenCountSplitter
  min_tokens: 5
  max_tokens: 40
$retriever_mode: bm25
$bm25: !pw.stdlib.indexing.TantivyBM25Factory {}
"""


class RaisingParser(pw.UDF):
    def __wrapped__(self, contents: bytes) -> list[tuple[str, dict]]:
        if b"#broken" in contents:
            raise ValueError("this document breaks the parser")
        text = contents.decode("utf-8")
        return [(p, {"paragraph": n}) for n, p in enumerate(q for q in text.split("\n\n") if q.strip())]
