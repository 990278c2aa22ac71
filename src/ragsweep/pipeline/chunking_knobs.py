"""The chunking stage's knobs (:mod:`ragsweep.pipeline.chunking`), Pathway-free: a spec reads them without
building anything."""

from __future__ import annotations

from ragsweep.core.knob import Knob

# what the splitter may prepend to each chunk (ragsweep.pipeline.chunking.header_of)
CHUNK_HEADERS = ("none", "title", "title+heading")

KNOBS = (
    Knob(
        name="min_tokens",
        kind="int",
        low=1,
        message="must be an integer >= 1 (and <= $max_tokens)",
        affects="chunks",
    ),
    Knob(
        name="max_tokens",
        kind="int",
        low=1,
        message="must be an integer >= 1 (and >= $min_tokens)",
        affects="chunks",
    ),
    Knob(
        name="chunk_header",
        kind="str",
        choices=CHUNK_HEADERS,
        default="none",
        message="must be none, title or title+heading (what is prepended to each chunk for embedding and BM25)",
        affects="chunks",
    ),
)
