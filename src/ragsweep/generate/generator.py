"""`ragsweep generate`: passages -> proposals -> verification -> a dataset folder.

Rounds: round 1 proposes ``ceil(quota x oversample)`` candidates per kind from fresh
passages; each later round (up to ``max_rounds``) proposes again for what drops left
short. A candidate whose call failed at the endpoint after the client's retries (a timeout,
a 429, a 5xx, a lost connection) is no verdict on its passage: the next round asks it again
(once), before fresh passages are drawn for what is still missing. When more candidates pass
than a kind needs, the first ones in sampled order are kept, so the result depends only on
the seed, the corpus, the configuration and the model's replies (temperature 0 by default;
replies are cached on disk like every LLM call of ragsweep), not on which calls timed out.

Generation stops when every kind has its cases, and otherwise says why (``stopped``): no
unused passage left, ``max_rounds`` reached, or a round in which every call failed (an
endpoint that is down, not slow).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypedDict

import numpy as np
from pydantic import JsonValue

from ragsweep.datasets.loader import load_dataset
from ragsweep.evaluation.runfolder import now
from ragsweep.generate import failures as failures_mod
from ragsweep.generate import propose, verify
from ragsweep.generate.drawing import CandidateDraw
from ragsweep.generate.estimate import estimate_generation
from ragsweep.generate.propose import KINDS, Candidate
from ragsweep.generate.sampling import split_corpus, usable
from ragsweep.generate.settings import GenerateSettings
from ragsweep.generate.writer import (
    FailuresRun,
    LLMCallsSummary,
    Provenance,
    StepUsage,
    assign_splits,
    case_id,
    out_problem,
    to_case,
    write_dataset,
)
from ragsweep.llm.client import ChatResult, EndpointUnreachable, LLMClient, Messages, error_kind, transient
from ragsweep.llm.probe import check_llm_endpoint
from ragsweep.llm.settings import LLMSettings
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import parse_corpus
from ragsweep.pipeline.store import RagStore
from ragsweep.validate.parsed import validate_dataset

GENERATOR = "ragsweep's own generator (ragsweep.generate)"
MAX_ASKS = 2  # a candidate whose call failed at the endpoint goes through the steps at most this often


class GenerateError(Exception):
    pass


def quotas(n: int, types: Sequence[str]) -> dict[str, int]:
    """``n`` split evenly over the kinds, the remainder to the first ones named."""
    base, extra = divmod(n, len(types))
    return {t: base + (1 if i < extra else 0) for i, t in enumerate(types)}


Embed = Callable[[list[str]], np.ndarray]  # questions -> their vectors, one row each
Log = Callable[[str], None]


class DryRun(TypedDict):
    """What ``--dry-run`` prints: the corpus, the LLM and the estimated calls of each step."""

    dry_run: bool
    requested: dict[str, int]
    documents: int
    chunks: int
    usable_chunks: int
    llm: dict[str, JsonValue]
    propose: dict[str, JsonValue]  # CallEstimate, dumped
    support: dict[str, JsonValue]
    answerability: dict[str, JsonValue]
    total: dict[str, JsonValue]


class Generated(TypedDict):
    """What a generation did, for the command's summary."""

    out: str
    cases: int
    kept: dict[str, int]
    requested: dict[str, int]
    proposed: dict[str, int]
    dropped: dict[str, int]
    surplus: int
    short: dict[str, int]
    stopped: str
    rounds: int
    usage: StepUsage
    price_set: bool  # a price per 1,000 tokens is set: usage's cost_usd means something
    llm_calls: LLMCallsSummary | None
    problems: list[str]


class RunSummary(TypedDict):
    """How a generation's rounds went (:meth:`Generator.run`)."""

    surplus: int  # candidates that passed beyond the quota
    short: dict[str, int]  # cases missing, per kind
    requested: dict[str, int]
    rounds: int
    stopped: str  # why the rounds stopped


def _no_usage() -> StepUsage:
    return {"calls": 0, "cached": 0, "errors": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}


class Usage:
    """Calls, cache hits, tokens and cost of each step."""

    def __init__(self) -> None:
        self.steps: dict[str, StepUsage] = {}

    def add(self, step: str, results: Sequence[ChatResult]) -> None:
        u = self.steps.setdefault(step, _no_usage())
        for r in results:
            u["calls"] += 1
            u["cached"] += int(bool(r.cached))
            u["errors"] += int(r.error is not None)
            u["prompt_tokens"] += r.prompt_tokens
            u["completion_tokens"] += r.completion_tokens
            u["cost_usd"] = round(u["cost_usd"] + r.cost_usd, 8)

    def table(self) -> dict[str, StepUsage]:
        total = _no_usage()
        for u in self.steps.values():
            total["calls"] += u["calls"]
            total["cached"] += u["cached"]
            total["errors"] += u["errors"]
            total["prompt_tokens"] += u["prompt_tokens"]
            total["completion_tokens"] += u["completion_tokens"]
            total["cost_usd"] += u["cost_usd"]
        total["cost_usd"] = round(total["cost_usd"], 8)
        return {**self.steps, "total": total}


class Generator:
    """One generation: the corpus, its chunks, the sampler, the LLM client and the store."""

    def __init__(
        self,
        settings: GenerateSettings,
        client: LLMClient | None = None,
        embed: Embed | None = None,
        log: Log | None = None,
    ):
        self.settings = settings
        self.log = log or (lambda msg: print(msg, file=sys.stderr))
        bad = [t for t in settings.types if t not in KINDS]
        if bad or not settings.types:
            raise GenerateError(f"--types: unknown kind(s) {bad}; expected some of {', '.join(KINDS)}")
        if settings.docs:  # before the endpoint is asked: a folder that cannot be written is the first thing to say
            self._check_out(Path(settings.docs))
        self.config = PipelineConfig.load(settings.pipeline, settings.overrides)
        self.llm = client.settings if client is not None else LLMSettings.from_mapping(self.config.scalars())
        self._client = client
        if client is None and not settings.dry_run:
            try:  # before the documents are parsed: a generation that can get no reply ends here
                check_llm_endpoint(self.llm)
            except EndpointUnreachable as err:
                raise GenerateError(str(err)) from None
        self.embed = embed or verify.default_embed
        self.check_k = settings.check_k or self.config.top_k
        self.seeds: list[failures_mod.Seed] = []
        self.existing: list[tuple[str, list[str] | None]] = []
        self.run_info: FailuresRun | None = None
        docs = settings.docs
        if settings.from_failures:
            docs = self._read_failures(settings.from_failures, docs)
        if not docs:
            raise GenerateError("give --docs DIR (or --from-failures RUN_DIR of a run whose documents folder exists)")
        self.docs_dir = Path(docs)
        self._check_out(self.docs_dir)
        self.corpus = parse_corpus(
            self.docs_dir,
            progress=settings.progress,
            workers=settings.parse.workers or None,
            follow_symlinks=settings.parse.follow_symlinks,
        )
        for skipped in self.corpus.skipped:
            self.log(f"skipped document {skipped.doc_id}: {skipped.reason}")
        if not self.corpus.documents:
            raise GenerateError(f"{self.docs_dir}: no document could be parsed")
        self.texts = {d.doc_id: d.text for d in self.corpus.documents}
        self.chunks = split_corpus(self.corpus, self.config)
        self._store: RagStore | None = None
        self.drawing = CandidateDraw(
            self.chunks, list(self.texts), settings.seed, settings.oversample, self.check_k, self.seeds,
            self.run_info, lambda: self.store,
        )  # fmt: skip
        self.usage = Usage()
        self.proposed: Counter = Counter()
        self.round_errors: Counter = Counter()  # this round's failed calls, by kind
        self.round_calls = 0

    # ------------------------------------------------------------------ inputs
    def _check_out(self, docs_dir: Path) -> None:
        if (problem := out_problem(Path(self.settings.out), docs_dir)) is not None:
            raise GenerateError(problem)

    def _read_failures(self, run_dir: str, docs: str | None) -> str | None:
        records, sources = failures_mod.read_run(run_dir)
        seeds = failures_mod.failed_seeds(records)
        wanted = set(self.settings.types)
        self.seeds = [s for s in seeds if s.kind in wanted]
        if not self.seeds:
            raise GenerateError(
                f"{run_dir}: no failed case of the kinds {sorted(wanted)} ({len(records)} cases, {len(seeds)} failed)"
            )
        self.run_info = {
            "run": str(run_dir),
            "cases": len(records),
            "failed": len(seeds),
            "failures": dict(Counter(s.failure for s in seeds)),
        }
        dataset = sources.dataset.path
        if dataset and Path(dataset).is_dir():
            try:
                self.existing = [(c.question, c.doc_scope) for c in load_dataset(dataset).cases]
            except Exception as err:  # noqa: BLE001 - dedupe against it is a courtesy, not a need
                self.log(f"warning: {dataset}: not loaded ({err}); new cases are not compared with its questions")
        return docs or sources.docs_dir()

    @property
    def client(self):
        if self._client is None:
            self._client = LLMClient(self.llm)
        return self._client

    @property
    def store(self):
        if self._store is None:
            self._store = RagStore(self.config, self.corpus)
        return self._store

    # ------------------------------------------------------------------ steps
    def _ask(self, step: str, batch: list[Messages]) -> list[ChatResult]:
        """One step's calls, counted for the usage table and the round's failures."""
        replies = self.client.chat_batch(batch, json_mode=True)
        self.usage.add(step, replies)
        self.round_calls += len(replies)
        failed = Counter(error_kind(r.error) for r in replies if r.error)
        self.round_errors.update(failed)
        if failed:  # said as it happens: a slow run shows why it is slow
            why = ", ".join(f"{n}x {kind}" for kind, n in failed.most_common())
            self.log(f"{step}: {sum(failed.values())} of {len(replies)} calls failed ({why})")
        return replies

    def verify_batch(self, batch: list[Candidate], accepted: list[Candidate]) -> None:
        o = self.settings
        for c in batch:
            if c.asks == 1:
                self.proposed[c.kind] += 1
        self.log(f"propose: {len(batch)} LLM calls ({dict(Counter(c.kind for c in batch))})")
        replies = self._ask("propose", [propose.messages(c) for c in batch])
        for c, r in zip(batch, replies):
            propose.read_reply(c, r)
        for c in batch:
            verify.locate_quotes(c, self.texts)
        kept = self.existing + [(c.question, c.doc_scope) for c in accepted]
        verify.drop_near_duplicates(batch, kept, o.dedupe_threshold, self.embed)
        answerable = [c for c in batch if c.alive and c.kind != "unanswerable"]
        if answerable:
            self.log(f"support check: {len(answerable)} LLM calls")
            replies = self._ask("support", [verify.support_messages(c) for c in answerable])
            for c, r in zip(answerable, replies):
                verify.read_support(c, r)
        unanswerable = [c for c in batch if c.alive and c.kind == "unanswerable"]
        if unanswerable:
            self.log(
                f"unanswerable check: retrieve top {self.check_k} for {len(unanswerable)} questions, "
                f"{len(unanswerable)} LLM calls"
            )
            hits = self.store.retrieve(
                [c.question for c in unanswerable], k=self.check_k, doc_scopes=[c.doc_scope for c in unanswerable]
            )
            replies = self._ask("answerability", [verify.answered_messages(c, h) for c, h in zip(unanswerable, hits)])
            for c, h, r in zip(unanswerable, hits, replies):
                verify.read_answered(c, h, r)

    # ------------------------------------------------------------------ run
    def llm_calls(self) -> LLMCallsSummary | None:
        """The client's calls, failure rate and what the endpoint did (None when no call was made)."""
        if self._client is None:
            return None
        calls = self._client.stats()
        return {
            "calls": calls.calls,
            "failed": calls.failed,
            "cached": calls.cached,
            "errors": dict(calls.errors),
            "endpoint": calls.endpoint.model_dump(),
            "failure_rate": round(calls.failure_rate, 4),
            "why": calls.why(),
            "endpoint_line": calls.endpoint.line(),
        }

    def requested(self) -> dict[str, int]:
        if self.seeds:
            kinds = Counter(self.seeds[i % len(self.seeds)].kind for i in range(self.settings.n))
            return {k: kinds[k] for k in self.settings.types}
        return quotas(self.settings.n, self.settings.types)

    def dry_run(self) -> DryRun:
        need = self.requested()
        batch = self.drawing.draw(need)
        est = estimate_generation(batch, self.llm, self.check_k, self.settings.max_rounds)
        return {
            "dry_run": True,
            "requested": need,
            "documents": len(self.corpus.documents),
            "chunks": len(self.chunks),
            "usable_chunks": sum(map(usable, self.chunks)),
            "llm": self.llm.public_dict(),
            "propose": est["propose"].model_dump(),
            "support": est["support"].model_dump(),
            "answerability": est["answerability"].model_dump(),
            "total": est["total"].model_dump(),
        }

    def _slot(self, c: Candidate) -> str:
        return "*" if self.seeds else c.kind  # from failures the kinds follow the seeds: one pool

    def _next_batch(self, quota: dict[str, int], have: Counter, waiting: list[Candidate]) -> list[Candidate]:
        """The candidates whose call failed, asked again, then fresh ones for what they do not cover."""
        pending = Counter(self._slot(c) for c in waiting)
        need = {k: q - have[k] - pending[k] for k, q in quota.items()}
        fresh = self.drawing.draw({k: v for k, v in need.items() if v > 0}) if any(v > 0 for v in need.values()) else []
        return [c.again() for c in waiting] + fresh

    def _round_failed(self, round_no: int) -> str | None:
        """Why to stop when every call of the round failed (the endpoint is down), else None."""
        if not self.round_calls or sum(self.round_errors.values()) < self.round_calls:
            return None
        why = ", ".join(f"{n}x {kind}" for kind, n in self.round_errors.most_common())
        return f"every one of the {self.round_calls} LLM calls of round {round_no} failed ({why})"

    def run(self) -> tuple[list[Candidate], list[Candidate], RunSummary]:
        """(kept, dropped, summary)."""
        need_total = self.requested()
        quota = {"*": self.settings.n} if self.seeds else dict(need_total)
        kept: list[Candidate] = []
        dropped: list[Candidate] = []
        waiting: list[Candidate] = []  # their call failed at the endpoint: asked again next round
        surplus, rounds, stopped = 0, 0, ""
        for round_no in range(1, self.settings.max_rounds + 1):
            have = Counter(self._slot(c) for c in kept)
            if all(have[k] >= q for k, q in quota.items()):
                break
            batch = self._next_batch(quota, have, waiting)
            if not batch:
                kinds = [k for k, q in quota.items() if have[k] < q and k != "*"]
                stopped = "no unused passage left" + (f" for {', '.join(kinds)}" if kinds else "")
                self.log(f"{stopped}: stopping")
                break
            rounds, waiting = round_no, []
            self.round_errors, self.round_calls = Counter(), 0
            self.log(f"round {round_no}: {len(batch)} candidates")
            self.verify_batch(batch, kept)
            for c in sorted(batch, key=lambda c: c.order):
                slot = self._slot(c)
                if not c.alive:
                    (waiting if transient(c.failed_call) and c.asks < MAX_ASKS else dropped).append(c)
                elif have[slot] < quota[slot]:
                    kept.append(c)
                    have[slot] += 1
                else:
                    surplus += 1
            stopped = self._round_failed(round_no) or ""
            if stopped:
                break
        dropped.extend(waiting)  # not asked again: the quota was met, or generation stopped
        short = {k: q - sum(1 for c in kept if self._slot(c) == k) for k, q in quota.items()}
        short = {k: v for k, v in short.items() if v > 0}
        if short and not stopped:
            stopped = f"--max-rounds {self.settings.max_rounds} reached"
        summary: RunSummary = {
            "surplus": surplus,
            "short": short,
            "requested": need_total,
            "rounds": rounds,
            "stopped": stopped or "every kind has its cases",
        }
        return kept, dropped, summary


def prompts_text() -> dict[str, str]:
    return {
        "system (proposals)": propose.SYSTEM,
        "single_hop proposal": propose.SINGLE_HOP_PROMPT,
        "multi_hop proposal": propose.MULTI_HOP_PROMPT,
        "unanswerable proposal": propose.UNANSWERABLE_PROMPT,
        "hint (--from-failures)": propose.HINT,
        "system (checks)": verify.CHECK_SYSTEM,
        "support check": verify.SUPPORT_PROMPT,
        "answerability check": verify.ANSWERED_PROMPT,
    }


def generate(
    settings: GenerateSettings, client: LLMClient | None = None, embed: Embed | None = None, log: Log | None = None
) -> Generated | DryRun:
    """Generate and write a dataset folder (or, for a dry run, return the estimate)."""
    if settings.dry_run:
        return estimate(settings, client, embed, log)
    return generate_dataset(settings, client, embed, log)


def estimate(
    settings: GenerateSettings, client: LLMClient | None = None, embed: Embed | None = None, log: Log | None = None
) -> DryRun:
    """The calls and tokens a generation would take, nothing sent."""
    return Generator(settings, client=client, embed=embed, log=log).dry_run()


def generate_dataset(
    settings: GenerateSettings, client: LLMClient | None = None, embed: Embed | None = None, log: Log | None = None
) -> Generated:
    """Generate and write a dataset folder."""
    out = Path(settings.out)
    if out.exists() and any(out.iterdir()) and not settings.force:
        raise GenerateError(f"{out} exists and is not empty (use --force to replace it)")
    started = now()
    t0 = time.perf_counter()
    gen = Generator(settings, client=client, embed=embed, log=log)
    kept, dropped, summary = gen.run()
    splits = assign_splits(kept, settings.seed, settings.test_fraction)
    taken: set[str] = set()
    cases = [to_case(c, case_id(c, taken), splits[c.order], gen.llm.model) for c in sorted(kept, key=lambda c: c.order)]
    provenance = _provenance(gen, kept, dropped, summary, started, t0)
    write_dataset(out, cases, dropped, gen.docs_dir, settings.link_docs, provenance)
    problems = validate_dataset(out)
    return {
        "out": str(out),
        "cases": len(cases),
        "kept": provenance["kept"],
        "requested": summary["requested"],
        "proposed": provenance["proposed"],
        "dropped": provenance["dropped"],
        "surplus": summary["surplus"],
        "short": summary["short"],
        "stopped": summary["stopped"],
        "rounds": summary["rounds"],
        "usage": provenance["usage"]["total"],
        "price_set": gen.llm.priced,
        "llm_calls": provenance["llm_calls"],
        "problems": [str(p) for p in problems],
    }


def _provenance(
    gen: Generator,
    kept: list[Candidate],
    dropped: list[Candidate],
    summary: RunSummary,
    started: str,
    t0: float,
) -> Provenance:
    """What generation.json and the README say about a generation (finished: now)."""
    settings = gen.settings
    kinds = list(settings.types)
    return {
        "generator": GENERATOR,
        "command": settings.command,
        "started": started,
        "finished": now(),
        "seconds": round(time.perf_counter() - t0, 1),
        "docs_dir": str(gen.docs_dir),
        "corpus": {
            "documents": len(gen.corpus.documents),
            "hash": gen.corpus.content_hash,
            "skipped": [{"doc_id": s.doc_id, "reason": s.reason} for s in gen.corpus.skipped],
            "pdf_pipeline": gen.corpus.pdf_pipeline,
        },
        "pipeline": {"path": settings.pipeline, "hash": gen.config.hash, "overrides": settings.overrides},
        "chunks": {"total": len(gen.chunks), "usable": sum(map(usable, gen.chunks))},
        "llm": gen.llm.public_dict(),
        "seed": settings.seed,
        "types": kinds,
        "requested": summary["requested"],
        "proposed": {k: gen.proposed[k] for k in kinds},
        "kept": {k: sum(1 for c in kept if c.kind == k) for k in kinds},
        "dropped": {r: n for r, n in sorted(Counter(c.drop[0] for c in dropped if c.drop).items())},
        "surplus": summary["surplus"],
        "short": summary["short"],
        "stopped": summary["stopped"],
        "rounds": summary["rounds"],
        "dedupe_threshold": settings.dedupe_threshold,
        "check_k": gen.check_k,
        "test_fraction": settings.test_fraction,
        "oversample": settings.oversample,
        "max_rounds": settings.max_rounds,
        "usage": gen.usage.table(),
        "llm_calls": gen.llm_calls(),
        "prompts": prompts_text(),
        "from_failures": gen.run_info,
    }
