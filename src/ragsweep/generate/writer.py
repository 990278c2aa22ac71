"""The output folder: a dataset like any other, with its provenance.

::

    <out>/
        docs/            copy (or, with --link-docs, a symlink) of the documents folder
        cases.jsonl      one canonical Case per line
        dataset.yaml     name, relevance rule (evidence_offsets), how it was generated
        README.md        provenance: model, endpoint, prompts, seed, counts per type, drops and why
        generation.json  the same, machine-readable (with LLM usage per step)
        dropped.jsonl    every dropped candidate: its question, the step and the reason

Offsets: each case's ``evidence`` is the canonical ``{text, doc_id, start, end}``
(:class:`~ragsweep.datasets.schema.Evidence`): ``start``/``end`` are the located offsets into
the parsed text of :func:`ragsweep.pipeline.corpus.parse_corpus` and the text is the document's own
characters there (``ragsweep validate`` checks both). ``meta.evidence_methods`` says how each
quote was located (``exact`` or ``alnum``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import yaml
from pydantic import JsonValue

from ragsweep.core.keys import digest
from ragsweep.datasets.schema import Case, Evidence
from ragsweep.generate.failures import FROM_FAILURE
from ragsweep.generate.propose import Candidate, Span


class StepUsage(TypedDict):
    """Calls, cache hits, tokens and cost of one step of a generation (or of all: ``total``)."""

    calls: int
    cached: int
    errors: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


class FailuresRun(TypedDict):
    """The run whose failed cases seeded a generation (``--from-failures``)."""

    run: str
    cases: int
    failed: int
    failures: dict[str, int]


class SkippedPart(TypedDict):
    doc_id: str
    reason: str


class LLMCallsSummary(TypedDict):
    """The client's calls (``LLMCalls``), its failure rate and what the endpoint did."""

    calls: int
    failed: int
    cached: int
    errors: dict[str, int]
    endpoint: dict[str, JsonValue]  # EndpointStats, dumped
    failure_rate: float
    why: str
    endpoint_line: str


class CorpusPart(TypedDict):
    documents: int
    hash: str
    skipped: list[SkippedPart]
    pdf_pipeline: str


class PipelinePart(TypedDict):
    path: str
    hash: str
    overrides: dict[str, Any]  # the user's ``--set`` values


class Provenance(TypedDict):
    """What ``generation.json`` holds, and the README says, of one generation."""

    generator: str
    command: str
    started: str
    finished: str
    seconds: float
    docs_dir: str
    corpus: CorpusPart
    pipeline: PipelinePart
    chunks: dict[str, int]  # total, usable
    llm: dict[str, JsonValue]  # LLMSettings.public_dict()
    seed: int
    types: list[str]
    requested: dict[str, int]
    proposed: dict[str, int]
    kept: dict[str, int]
    dropped: dict[str, int]
    surplus: int
    short: dict[str, int]
    stopped: str
    rounds: int
    dedupe_threshold: float
    check_k: int
    test_fraction: float
    oversample: float
    max_rounds: int
    usage: dict[str, StepUsage]
    llm_calls: LLMCallsSummary | None
    prompts: dict[str, str]
    from_failures: FailuresRun | None
    docs: NotRequired[str]  # how ``docs/`` was made: set when the folder is written


RAGAS_NOTE = """ragas 0.4.3's TestsetGenerator can be pointed at an OpenAI-compatible endpoint and a local
embedder, but it was not used: (1) before the first question it builds a knowledge graph with
LLM transforms on every chunk (summary, themes, named entities, a quality filter: 4 calls per
chunk, plus headlines and summaries per long document), then personas and scenarios: thousands of
calls for the 40 CUAD contracts, hours on a local model; (2) its reference contexts are whole
chunks, not quotes with offsets, so nothing is located in the parsed text; (3) it has no check
that the reference answer follows from the evidence, no near-duplicate removal and no
unanswerable questions; (4) its sampling uses the global `random` module (no seed parameter);
(5) its prompts require pydantic-schema JSON that small models often break, and a failed
transform aborts the run."""


def case_id(candidate: Candidate, taken: set[str]) -> str:
    short = digest(f"{candidate.question}\0{'|'.join(candidate.doc_scope)}", 10, algorithm="sha1")
    base = f"gen-{candidate.kind.replace('_', '')}-{short}"
    cid, n = base, 1
    while cid in taken:
        n += 1
        cid = f"{base}-{n}"
    taken.add(cid)
    return cid


def assign_splits(candidates: list[Candidate], seed: int, test_fraction: float) -> dict[int, str]:
    """dev/test per kind: a seeded shuffle, the first round(fraction * n) of each kind are test."""
    rng = random.Random(f"split:{seed}")
    by_kind: dict[str, list[Candidate]] = defaultdict(list)
    for c in sorted(candidates, key=lambda c: c.order):
        by_kind[c.kind].append(c)
    out: dict[int, str] = {}
    for kind in sorted(by_kind):
        group = list(by_kind[kind])
        rng.shuffle(group)
        n_test = int(round(test_fraction * len(group)))
        for i, c in enumerate(group):
            out[c.order] = "test" if i < n_test else "dev"
    return out


def to_evidence(span: Span) -> Evidence:
    """A located span (:func:`ragsweep.generate.verify.merge_spans`) as the canonical evidence record."""
    return Evidence(text=span["text"], doc_id=span["doc_id"], start=span["start"], end=span["end"])


def to_case(candidate: Candidate, cid: str, split: str, model: str) -> Case:
    meta: dict[str, Any] = {
        "generated_by": "ragsweep generate",
        "model": model,
        "kind": candidate.kind,
        "source_chunks": [{"doc_id": s.doc_id, "start": s.start, "end": s.end} for s in candidate.sources],
    }
    if candidate.evidence:
        meta["evidence_methods"] = [e["method"] for e in candidate.evidence]
    if candidate.why_unanswerable:
        meta["why_unanswerable"] = candidate.why_unanswerable
    if candidate.checks:
        meta["checks"] = candidate.checks
    if candidate.hint:
        meta["from_failure"] = candidate.hint.model_dump(include=FROM_FAILURE)
    unanswerable = candidate.kind == "unanswerable"
    return Case(
        id=cid,
        question=candidate.question,
        type=candidate.type,
        doc_scope=candidate.doc_scope,
        evidence=[] if unanswerable else [to_evidence(e) for e in candidate.evidence],
        reference_answer=None if unanswerable else candidate.answer,
        unanswerable=unanswerable,
        split=split,
        meta=meta,
    )


def out_problem(out: Path, docs_dir: Path) -> str | None:
    """Why the dataset cannot be written to ``out`` from ``docs_dir``: inside the documents folder it would be
    copied into itself (a copy of a copy, without end); its ``docs/`` is replaced by the copy, so it must not
    be the documents folder or hold it."""
    out, docs, target = out.resolve(), docs_dir.resolve(), (out / "docs").resolve()
    if out.is_relative_to(docs):
        return f"--out {out}: is inside the documents folder {docs}: write the dataset elsewhere"
    if docs.is_relative_to(target):
        return f"--out {out}: its docs/ would replace the documents folder {docs}: write the dataset elsewhere"
    return None


def copy_docs(docs_dir: Path, target: Path, link: bool) -> str:
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    if link:
        os.symlink(docs_dir.resolve(), target, target_is_directory=True)
        return f"symlink to {docs_dir.resolve()}"
    shutil.copytree(docs_dir, target, symlinks=False, ignore=partial(_not_copied, docs_dir.resolve()))
    return f"copy of {docs_dir}"


def _not_copied(docs: Path, folder: str, names: list[str]) -> list[str]:
    """What the copy leaves out, as parsing does: a FIFO, socket or device (a read would block or never end), a
    symlink loop, and a symlinked folder inside the documents (its files are copied under their own path) or
    above them (the copy would hold itself without end)."""
    left_out = []
    for name in names:
        path = Path(folder, name)
        if path.is_symlink() and path.is_dir() and _related(path.resolve(), docs):
            left_out.append(name)
        elif not (path.is_file() or path.is_dir()):
            left_out.append(name)
    return left_out


def _related(target: Path, docs: Path) -> bool:
    return target.is_relative_to(docs) or docs.is_relative_to(target)


def write_dataset(
    out: Path, cases: list[Case], dropped: list[Candidate], docs_dir: Path, link_docs: bool, provenance: Provenance
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    provenance["docs"] = copy_docs(docs_dir, out / "docs", link_docs)
    with (out / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False) + "\n")
    with (out / "dropped.jsonl").open("w", encoding="utf-8") as fh:
        for c in dropped:
            fh.write(
                json.dumps(
                    {
                        "kind": c.kind,
                        "type": c.type,
                        "question": c.question,
                        "answer": c.answer or None,
                        "reason": c.drop[0] if c.drop else None,
                        "detail": c.drop[1] if c.drop else None,
                        "sources": [{"doc_id": s.doc_id, "start": s.start, "end": s.end} for s in c.sources],
                        "quotes": c.quotes or None,
                        "checks": c.checks or None,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    settings = {
        "name": out.name,
        "relevance": "evidence_offsets",
        "description": f"generated by `ragsweep generate` from {docs_dir} (model {provenance['llm']['model']}, "
        f"seed {provenance['seed']}); see README.md",
        "generated": {
            "generator": provenance["generator"],
            "seed": provenance["seed"],
            "types": provenance["types"],
            "requested": provenance["requested"],
            "kept": provenance["kept"],
        },
    }
    (out / "dataset.yaml").write_text(yaml.safe_dump(settings, sort_keys=False, allow_unicode=True), encoding="utf-8")
    (out / "generation.json").write_text(json.dumps(provenance, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "README.md").write_text(readme(out.name, cases, dropped, provenance), encoding="utf-8")


def readme(name: str, cases: list[Case], dropped: list[Candidate], p: Provenance) -> str:
    lines = _provenance_lines(name, p) + _count_lines(cases, p) + _dropped_lines(dropped, p["types"])
    lines += _usage_lines(p)
    lines += ["", "## How a case is made and checked", "", VERIFICATION_TEXT, "", "## Prompts", ""]
    for title, text in p["prompts"].items():
        lines += [f"### {title}", "", "```text", text, "```", ""]
    lines += ["## Fields", "", FIELDS_TEXT, "", "## Why not ragas' test-set generation", "", RAGAS_NOTE, ""]
    return "\n".join(lines)


def _provenance_lines(name: str, p: Provenance) -> list[str]:
    """The README's title and its Provenance section."""
    lines = [
        f"# {name}: a generated test set",
        "",
        f"Generated by `{p['command']}` ({p['generator']}) on {p['finished']}.",
        "Every case passed the checks below; what did not pass is counted here and listed in `dropped.jsonl`.",
        "",
        "## Provenance",
        "",
        f"- documents: `{p['docs_dir']}` ({p['corpus']['documents']} parsed, {len(p['corpus']['skipped'])} skipped; "
        f"PDF pipeline {p['corpus']['pdf_pipeline']}); `docs/` is a {p['docs']}. The documents keep the licence of "
        "their source: see that folder's own README.",
        f"- passages: the pipeline `{p['pipeline']['path']}` (hash {p['pipeline']['hash']}): its splitter's chunks "
        f"({p['chunks']['usable']} usable of {p['chunks']['total']}), drawn stratified over documents with seed "
        f"{p['seed']}",
        f"- model: `{p['llm']['model']}` at `{p['llm']['base_url']}`, temperature {p['llm']['temperature']}, "
        f"max_tokens {p['llm']['max_tokens']}",
        f"- seed: {p['seed']}; split: {p['test_fraction']:.0%} of each kind in `test`, the rest in `dev`",
        f"- near-duplicate threshold: cosine >= {p['dedupe_threshold']} (all-MiniLM-L6-v2), between questions about "
        "overlapping documents",
        f"- unanswerable check: top {p['check_k']} chunks of the pipeline's store, scoped to the case's documents",
    ]
    ff = p["from_failures"]
    if ff:
        lines.append(
            f"- grown from the failed cases of the run `{ff['run']}` ({ff['failed']} failed cases used as "
            "seeds: same question type, other documents)"
        )
    return lines


def _count_lines(cases: list[Case], p: Provenance) -> list[str]:
    """The Counts section: requested, proposed, kept and per split, by kind (``p``'s are over every kind)."""
    kinds = p["types"]
    kept = Counter(c.meta["kind"] for c in cases)
    proposed = p["proposed"]
    splits = Counter((c.meta["kind"], c.split) for c in cases)
    lines = [
        "",
        "## Counts",
        "",
        "| kind | requested | proposed | kept | dev | test |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind in kinds:
        lines.append(
            f"| {kind} | {p['requested'][kind]} | {proposed[kind]} | {kept[kind]} | "
            f"{splits[kind, 'dev']} | {splits[kind, 'test']} |"
        )
    lines.append(
        f"| total | {sum(p['requested'].values())} | {sum(proposed.values())} | {len(cases)} | "
        f"{sum(v for (k, s), v in splits.items() if s == 'dev')} | "
        f"{sum(v for (k, s), v in splits.items() if s == 'test')} |"
    )
    if p["surplus"]:
        lines.append(f"\n{p['surplus']} more candidates passed every check than were requested; they were not kept.")
    if p["short"]:
        lines.append("\nFewer cases than requested: " + "; ".join(f"{k}: {v}" for k, v in p["short"].items()))
    return lines


def _dropped_lines(dropped: list[Candidate], kinds: list[str]) -> list[str]:
    """The Dropped section: candidates per reason and kind."""
    reasons: dict[str, Counter] = defaultdict(Counter)
    for c in dropped:
        reasons[c.drop[0] if c.drop else "?"][c.kind] += 1
    lines = ["", "## Dropped, and why", ""]
    if reasons:
        lines += ["| reason | " + " | ".join(kinds) + " | what it means |", "|---|" + "---:|" * len(kinds) + "---|"]
        for reason in sorted(reasons):
            lines.append(
                f"| {reason} | "
                + " | ".join(str(reasons[reason][k]) for k in kinds)
                + f" | {DROP_REASONS.get(reason, '')} |"
            )
    else:
        lines.append("Nothing was dropped.")
    return lines


def _usage_lines(p: Provenance) -> list[str]:
    """The LLM usage section: calls, cache hits, tokens and cost per step."""
    lines = [
        "",
        "## LLM usage",
        "",
        "| step | calls | from cache | prompt tokens | completion tokens | cost (USD) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    llm = p["llm"]
    # public_dict() holds every LLMSettings field, a price left unset as None
    priced = llm["price_per_1k_prompt"] is not None or llm["price_per_1k_completion"] is not None
    for step, u in p["usage"].items():
        cost = f"{u['cost_usd']:.4f}" if priced else "no price set"
        lines.append(
            f"| {step} | {u['calls']} | {u['cached']} | {u['prompt_tokens']} | {u['completion_tokens']} | {cost} |"
        )
    return lines


DROP_REASONS = {
    "llm_error": "the proposal call failed after retries",
    "llm_refused": "the model declined",
    "unparsable_reply": "the proposal was not the JSON asked for",
    "no_question": "the proposal had no usable question",
    "no_answer": "the proposal had no answer",
    "refers_to_passage": "the question speaks of 'the passage' instead of the document",
    "no_quote": "no quote (for multi-hop: none from one of the two passages)",
    "quote_too_short": "a quote too short to locate meaningfully",
    "quote_not_found": "a quote is not in the document verbatim (after normalisation)",
    "near_duplicate": "too similar to a kept question about the same documents",
    "answer_not_supported": "the second call found the answer does not follow from the evidence alone",
    "answerable": "an 'unanswerable' question that a retrieved chunk answers",
    "check_unreadable": "a check's reply had no verdict (a check that did not happen is not a pass)",
    "check_failed": "a check's call failed after retries",
}

VERIFICATION_TEXT = """1. **Passages**: chunks of the pipeline's own parse and split, sampled round robin over the
   documents in a seeded order (single-hop and unanswerable: one chunk; multi-hop: two chunks of one
   document, or of two documents when one has a single chunk left).
2. **Proposal** (1 LLM call): question, answer and verbatim quotes (unanswerable: a question the
   document should not answer).
3. **Quotes located** (no LLM): each quote is searched in the parsed text of its document with
   `ragsweep.metrics.relevance.locate_spans`, fuzzy matching off: found verbatim after normalisation
   (`exact`) or on letters and digits only with the same numbers (`alnum`). One quote not found drops
   the case. The evidence text is the document's own text at the located offsets.
4. **Near-duplicates** (no LLM): questions embedded with all-MiniLM-L6-v2; one too close to an earlier
   question about overlapping documents is dropped.
5. **Answer follows from the evidence** (1 LLM call): the checker sees only the located evidence, the
   question and the answer; anything but a clear "supported" drops the case.
6. **Unanswerable checked against the corpus** (retrieval + 1 LLM call): the question is asked of the
   pipeline's store within the case's documents; the checker sees the retrieved chunks; "answered", or
   no readable verdict, drops the case."""

FIELDS_TEXT = """- `type`: `single_hop`, `multi_hop` or `unanswerable` (with `--from-failures`: the failed case's type;
  `meta.kind` always holds the kind)
- `evidence`: `{text, doc_id, start, end}`: `[start, end)` are character offsets into the parsed text of
  the document and `text` is that text (`ragsweep validate` checks it); `meta.evidence_methods`: how each
  quote was located (`exact` or `alnum`)
- `doc_scope`: the documents the question is about (retrieval is restricted to them)
- `meta.source_chunks`: the passages the question was written from (splitter offsets)
- `meta.checks`: what the support / answerability checks replied"""
