"""How many queries each Pathway run of a :class:`RagStore` is asked: a spy on its one serving call."""

from __future__ import annotations

import pytest

from ragsweep.pipeline.store import RagStore


def count_pathway_queries(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The list each Pathway run appends its number of queries to, for the rest of the test."""
    asked: list[int] = []
    serve = RagStore._serve

    def spy(self, queries, texts, progress):
        asked.append(len(queries))
        return serve(self, queries, texts, progress)

    monkeypatch.setattr(RagStore, "_serve", spy)
    return asked
