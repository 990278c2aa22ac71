"""Where a generation's candidates come from: fresh passages, or the failed cases of a run.

Fresh: one sampler per kind, so a passage is the source of at most one question of each kind.
From failures (``--from-failures``): each failed case is a seed whose question is retrieved
against the *other* documents, so the new case asks the same of a passage it has not seen.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ragsweep.core.hits import Hit
from ragsweep.generate import failures as failures_mod
from ragsweep.generate.propose import KINDS, Candidate
from ragsweep.generate.sampling import ChunkSampler, SourceChunk, usable
from ragsweep.generate.writer import FailuresRun
from ragsweep.pipeline.store import RagStore


class CandidateDraw:
    """Numbers candidates in the order they are drawn (the order kept cases follow)."""

    def __init__(
        self,
        chunks: list[SourceChunk],
        doc_ids: list[str],
        seed: int | str,
        oversample: float,
        check_k: int,
        failed: list[failures_mod.Seed],
        run_info: FailuresRun | None,
        store: Callable[[], RagStore],
    ):
        self.samplers = {kind: ChunkSampler(chunks, f"{seed}:{kind}") for kind in KINDS}
        self.doc_ids = sorted(doc_ids)
        self.oversample = oversample
        self.check_k = check_k
        self.seeds = failed
        self.run_info = run_info
        self._store = store  # built on first use: a fresh draw retrieves nothing
        self._order = 0
        self._seed_cursor = 0

    def _candidate(self, kind: str, sources: list[SourceChunk], hint: failures_mod.Seed | None = None) -> Candidate:
        c = Candidate(
            order=self._order, kind=kind, type=(hint.type if hint else None) or kind, sources=sources, hint=hint
        )
        self._order += 1
        return c

    def draw(self, need: dict[str, int]) -> list[Candidate]:
        """Fresh candidates for what each kind still needs (x oversample)."""
        if self.seeds:
            return self._draw_from_failures(sum(need.values()))
        left = {kind: math.ceil(missing * self.oversample) for kind, missing in need.items() if missing > 0}
        batch: list[Candidate] = []
        while any(left.values()):
            for kind in list(left):
                if left[kind] <= 0:
                    continue
                sampler = self.samplers[kind]
                if kind == "multi_hop":
                    drawn = [list(pair) for pair in sampler.draw_pairs(1)]
                else:
                    drawn = [[c] for c in sampler.draw(1)]
                if not drawn:  # this kind has no unused passage left
                    left[kind] = 0
                    continue
                batch.append(self._candidate(kind, drawn[0]))
                left[kind] -= 1
        return batch

    def _draw_from_failures(self, missing: int) -> list[Candidate]:
        n = math.ceil(missing * self.oversample)
        picks = [self.seeds[(self._seed_cursor + i) % len(self.seeds)] for i in range(n)]
        self._seed_cursor += n
        all_docs = self.doc_ids
        other_docs = []
        for seed in picks:
            own = set(seed.doc_scope or seed.relevant_docs)
            other_docs.append([d for d in all_docs if d not in own] or all_docs)
        ask = [i for i, s in enumerate(picks) if s.kind != "unanswerable"]
        hits_of: list[list[Hit]] = [[] for _ in picks]  # an unanswerable seed retrieves nothing
        if ask:
            found = self._store().retrieve(
                [picks[i].question for i in ask],
                k=max(10, 2 * self.check_k),
                doc_scopes=[other_docs[i] for i in ask],
            )
            for i, hits in zip(ask, found):
                hits_of[i] = hits
        batch: list[Candidate] = []
        for i, seed in enumerate(picks):
            kind = seed.kind
            hint = seed.model_copy(update={"run": self.run_info["run"] if self.run_info else None})
            want = 2 if kind == "multi_hop" else 1
            ranked = [SourceChunk(h.doc_id, h.start, h.end, h.text) for h in hits_of[i]]
            sampler = self.samplers[kind]
            ranked = [c for c in ranked if usable(c) and c.key not in sampler.used]
            sources: list[SourceChunk] = ranked[:1]
            if want == 2 and sources:  # the second passage: of the same document if one was retrieved
                rest = ranked[1:]
                same = [c for c in rest if c.doc_id == sources[0].doc_id]
                sources += (same or rest)[:1]
            for chunk in sources:
                sampler.take(chunk)
            if len(sources) < want:  # nothing (more) retrieved: a drawn passage of another document
                own = set(all_docs) - set(other_docs[i])
                if sources:  # a second passage: the same document first
                    sources += sampler.draw_from([sources[0].doc_id], 1)
                if len(sources) < want:
                    sources += sampler.draw(want - len(sources), exclude_docs=own)
            if len(sources) < want:
                continue
            batch.append(self._candidate(kind, sorted(sources, key=lambda c: (c.doc_id, c.start)), hint))
        return batch
