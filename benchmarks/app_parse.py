"""What the app's parse changes on a real corpus: the same pipeline, ragsweep's parse vs. Pathway's DoclingParser.

The pipeline is ``pipelines/default.yaml`` (its splitter, embedder, hybrid index, top_k 5) with only its
``$parser:`` line replaced; the corpus is CUAD's contracts written as DOCX and as HTML from their plain
texts (``--cuad``: the folder holding CUAD's ``txt/``; the contracts and cases are ``datasets/cuad``'s,
their doc ids rewritten from ``.pdf`` to ``.docx`` / ``.html``). In one process, each variant is one
``ragsweep.evaluate()`` with its own empty ``RAGSWEEP_CACHE_DIR`` (cold: parse and embeddings paid):

- ``native docx``: ``$parser: !ragsweep.pipeline.parsing.NativeParser {}`` (the default) on the DOCX;
- ``docling docx``: ``$parser: !pw.xpacks.llm.parsers.DoclingParser {}`` (Pathway's, default
  arguments, ``chunk: true``: one element per Docling structure chunk, each split on its own);
- ``docling-nochunk docx`` (``--nochunk``): the same with ``chunk: false``;
- ``native html``: NativeParser on the HTML;
- ``docling html``: DoclingParser on the HTML (Pathway names every stream ``document.pdf``; what
  happens is printed: the documents skipped, with the parser's error).

How the documents are made from a contract's text: blocks are cut at blank lines and at runs of 3 or
more spaces (CUAD's texts mark paragraph breaks with either); a block of at most 10 words and 80
characters whose letters are all capitals, or that starts with a clause number ("1.", "2.3", "ARTICLE
IV", "Section 5") and does not end in ``,`` or ``;``, is a heading (level 1 all-caps, level 2 numbered),
every other block a paragraph (its inner white space collapsed). DOCX by python-docx, HTML as
``<h1>/<h2>/<p>`` in one ``<body>``.

Printed per variant: documents parsed / skipped (the first reasons), the parser's elements, chunks and
their tokens (cl100k_base, min / median / max, from the run's chunk table), recall@5, mrr@5, hit_rate@5
and recall@1500tok (the evidence within the first 1,500 context tokens of the 20-deep list: small and large
chunks compared at the same context size) with 95% CIs, cases whose evidence was not located, parse seconds
(the run's parse stage, serial: ``workers=1``) and the run's wall; then the paired differences
(``ragsweep.compare``) of each DoclingParser variant minus native, and of native HTML minus native DOCX, on
the same cases. ``RESULT`` lines and a final ``JSON`` line.

    .venv/bin/python benchmarks/app_parse.py --cuad ../shared/data/cuad [--split test] [--sample 400 --seed 0] [--nochunk]
    .venv/bin/python benchmarks/app_parse.py --smoke     # cuad-mini's 3 contracts (their .txt), 12 cases
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUDGET = 1500  # context tokens: recall@1500tok, scored on the 20-deep list (chunks of every size fill it)
METRICS = ("recall@5", "mrr@5", "hit_rate@5", f"recall@{BUDGET}tok")
KS = [5, 20]
NATIVE = "$parser: !ragsweep.pipeline.parsing.NativeParser {}"
DOCLING = "$parser: !pw.xpacks.llm.parsers.DoclingParser {}"
DOCLING_NOCHUNK = "$parser: !pw.xpacks.llm.parsers.DoclingParser\n  chunk: false"
SMOKE_CASES = 12

# ----------------------------------------------------------------- documents from a contract's text

BLOCK_BREAK = re.compile(r"\n[ \t]*\n|[ \t]{3,}")
NUMBERED = re.compile(
    r"^(?:\d+(?:\.\d+)*\.?|ARTICLE\s+[IVXLC\d]+\.?|Article\s+[IVXLC\d]+\.?|SECTION\s+\d+(?:\.\d+)*\.?|Section\s+\d+(?:\.\d+)*\.?)\s+\S"
)


def blocks(text: str) -> list[tuple[str, str]]:
    """The contract's blocks as (kind, text): kind h1 (all-caps heading), h2 (numbered heading) or p."""
    out = []
    for raw in BLOCK_BREAK.split(text):
        block = " ".join(raw.split())
        if not block:
            continue
        short = len(block) <= 80 and len(block.split()) <= 10
        letters = [c for c in block if c.isalpha()]
        if short and len(letters) >= 3 and all(c.isupper() for c in letters):
            out.append(("h2" if NUMBERED.match(block) else "h1", block))
        elif short and NUMBERED.match(block) and not block.endswith((",", ";")):
            out.append(("h2", block))
        else:
            out.append(("p", block))
    return out


def write_docx(parts: list[tuple[str, str]], path: Path) -> None:
    import docx

    document = docx.Document()
    for kind, text in parts:
        if kind == "p":
            document.add_paragraph(text)
        else:
            document.add_heading(text, level=1 if kind == "h1" else 2)
    document.save(str(path))


def write_html(parts: list[tuple[str, str]], path: Path, title: str) -> None:
    body = "\n".join(f"<{kind}>{html.escape(text, quote=False)}</{kind}>" for kind, text in parts)
    path.write_text(
        f'<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>{html.escape(title)}</title></head>\n'
        f"<body>\n{body}\n</body>\n</html>\n",
        encoding="utf-8",
    )


def make_dataset(texts: dict[str, Path], source: Path, cases: list[dict], fmt: str, out: Path) -> dict[str, int]:
    """``out``: a dataset folder (docs/ in ``fmt``, cases.jsonl with the doc ids renamed, dataset.yaml, README.md)."""
    docs = out / "docs"
    docs.mkdir(parents=True)
    headings = paragraphs = 0
    for stem, txt in sorted(texts.items()):
        parts = blocks(txt.read_text(encoding="utf-8"))
        headings += sum(kind != "p" for kind, _ in parts)
        paragraphs += sum(kind == "p" for kind, _ in parts)
        if fmt == "docx":
            write_docx(parts, docs / f"{stem}.docx")
        else:
            write_html(parts, docs / f"{stem}.html", stem)

    def rename(doc_id: str) -> str:
        return f"{Path(doc_id).stem}.{fmt}"

    with (out / "cases.jsonl").open("w", encoding="utf-8") as f:
        for case in cases:
            case = json.loads(json.dumps(case))
            case["doc_scope"] = [rename(d) for d in case.get("doc_scope") or []] or case.get("doc_scope")
            for ev in case.get("evidence") or []:
                if ev.get("doc_id"):
                    ev["doc_id"] = rename(ev["doc_id"])
            f.write(json.dumps(case, ensure_ascii=False) + "\n")
    yaml_text = (source / "dataset.yaml").read_text(encoding="utf-8")
    (out / "dataset.yaml").write_text(re.sub(r"(?m)^name:.*$", f"name: {out.name}", yaml_text), encoding="utf-8")
    (out / "README.md").write_text(
        f"# {out.name}: {len(texts)} CUAD contracts as {fmt.upper()}, written by benchmarks/app_parse.py\n\n"
        f"From the contracts' CUAD plain texts (CC BY 4.0, see {source}/README.md); cases: {source.name}'s, "
        f"doc ids renamed to .{fmt}.\n",
        encoding="utf-8",
    )
    return {"documents": len(texts), "headings": headings, "paragraphs": paragraphs}


def pipeline_file(parser_line: str, path: Path) -> Path:
    text = (ROOT / "pipelines/default.yaml").read_text(encoding="utf-8")
    lines = text.splitlines()
    (index,) = [i for i, line in enumerate(lines) if line.startswith("$parser:")]
    lines[index] = parser_line
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------- one variant


def _tokens() -> Any:
    """cl100k_base, as the splitter counts (offline: the copy ragsweep points tiktoken at)."""
    from ragsweep.core.offline import ensure_offline

    ensure_offline()
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def parse_only(pipeline: Path, docs: Path) -> dict[str, Any]:
    """The folder parsed as the variant's parse stage parses it (no cache): what was parsed, skipped and why."""
    from ragsweep.pipeline.config import PipelineConfig
    from ragsweep.pipeline.corpus import parse_corpus
    from ragsweep.pipeline.parsing import check_parser

    config = PipelineConfig.load(str(pipeline))
    spec = check_parser(config, docs)
    started = time.perf_counter()
    kwargs = {} if spec.native else {"parse_fn": spec.parse_fn(), "parser_id": spec.identity}
    corpus = parse_corpus(docs, use_cache=False, workers=1, **kwargs)
    return {"corpus": corpus, "seconds": time.perf_counter() - started}


def run_variant(name: str, pipeline: Path, dataset: Path, cache_root: Path, extra: dict[str, Any]) -> dict[str, Any]:
    import ragsweep
    from ragsweep.evaluation.manifest import CorpusManifest

    cache = cache_root / f"cache-{name.replace(' ', '-')}"
    cache.mkdir()
    os.environ["RAGSWEEP_CACHE_DIR"] = str(cache)
    out = cache_root / f"run-{name.replace(' ', '-')}"
    row: dict[str, Any] = {"variant": name, "pipeline": pipeline.name}
    started = time.perf_counter()
    try:
        report = ragsweep.evaluate(pipeline, dataset, out=out, ks=KS, budgets=[BUDGET], workers=1, **extra)
    except Exception as err:  # noqa: BLE001 - a variant that cannot run is a result: say what stopped it
        row["wall_s"] = time.perf_counter() - started
        row["error"] = f"{type(err).__name__}: {err}"
        try:  # what the parse stage made of each document, reasons included
            parsed = parse_only(pipeline, dataset / "docs")
            corpus = parsed["corpus"]
            row.update(
                parsed=len(corpus.documents),
                skipped=len(corpus.skipped),
                skip_reasons=[f"{s.doc_id}: {s.reason}" for s in corpus.skipped],
                parse_s=parsed["seconds"],
            )
        except Exception as err2:  # noqa: BLE001
            row["parse_error"] = f"{type(err2).__name__}: {err2}"
        return row
    row["wall_s"] = time.perf_counter() - started
    corpus_info = report.manifest.corpus or CorpusManifest()
    row["parsed"] = corpus_info.documents
    row["skipped"] = len(corpus_info.skipped or [])
    row["skip_reasons"] = [f"{s.get('doc_id')}: {s.get('reason')}" for s in corpus_info.skipped or []]
    row["parse_s"] = report.manifest.stage_seconds.get("parse")
    row["parser"] = report.manifest.pipeline.get("parser", {}).get("parser")
    row["elements"] = _elements(pipeline, dataset / "docs")
    enc = _tokens()
    chunks = [json.loads(line) for line in (Path(report.run_dir or out) / "chunks.jsonl").read_text().splitlines()]
    lengths = sorted(len(enc.encode_ordinary(c["text"])) for c in chunks)
    row["chunks"] = len(chunks)
    row["chunk_tokens"] = [lengths[0], statistics.median(lengths), lengths[-1]] if lengths else None
    row["cases"] = report.n_cases
    row["unlocated_none"] = len(report.unlocated.none_located)
    row["unlocated_partly"] = len(report.unlocated.partly)
    row["metrics"] = {m: report.metrics.get(m) for m in METRICS}
    row["intervals"] = {m: list(report.interval(m)) for m in METRICS}
    row["n"] = {m: report.counts[m].n if m in report.counts else None for m in METRICS}
    row["report"] = report
    return row


def _elements(pipeline: Path, docs: Path) -> int | None:
    """The parser's elements over the corpus, from the variant's (now warm) parse cache."""
    from ragsweep.pipeline.config import PipelineConfig
    from ragsweep.pipeline.corpus import parse_corpus

    spec = PipelineConfig.load(str(pipeline)).parser_spec()
    if spec.native:
        return None  # one element per document
    corpus = parse_corpus(docs, workers=1, parse_fn=spec.parse_fn(), parser_id=spec.identity)
    return sum(len(d.elements) or 1 for d in corpus.documents)


# ----------------------------------------------------------------- printing


def _f(value: Any, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(pair: Any) -> str:
    return "" if not pair or pair[0] is None else f" [{pair[0]:.3f}, {pair[1]:.3f}]"


def print_variant(row: dict[str, Any]) -> None:
    name = row["variant"]
    if "error" in row:
        print(f"RESULT {name}: did not run: {row['error'][:600]}")
        if "parsed" in row:
            print(
                f"RESULT {name}: parse stage alone: {row['parsed']} parsed, {row['skipped']} skipped in {row['parse_s']:.1f} s"
            )
            for reason in row["skip_reasons"][:3]:
                print(f"RESULT {name}:   skipped {reason[:500]}")
            if len(row["skip_reasons"]) > 3:
                print(f"RESULT {name}:   ... and {len(row['skip_reasons']) - 3} more")
        if "parse_error" in row:
            print(f"RESULT {name}: parse stage alone failed: {row['parse_error'][:600]}")
        return
    tokens = row["chunk_tokens"] or [None, None, None]
    elements = "1 per document" if row["elements"] is None else str(row["elements"])
    print(
        f"RESULT {name}: {row['parsed']} parsed, {row['skipped']} skipped; elements {elements}; chunks {row['chunks']} "
        f"(tokens min/median/max {tokens[0]}/{tokens[1]:g}/{tokens[2]}); parse {row['parse_s']:.1f} s; wall {row['wall_s']:.0f} s"
    )
    for reason in row["skip_reasons"][:3]:
        print(f"RESULT {name}:   skipped {reason[:500]}")
    shown = "; ".join(f"{m} {_f(row['metrics'][m])}{_ci(row['intervals'][m])}" for m in METRICS)
    print(
        f"RESULT {name}: {row['cases']} cases: {shown}; evidence unlocated: {row['unlocated_none']} case(s) none, "
        f"{row['unlocated_partly']} partly (n for recall@5: {row['n']['recall@5']})"
    )


def paired(rows: dict[str, dict[str, Any]], a: str, b: str) -> dict[str, Any] | None:
    import ragsweep

    if "report" not in rows.get(a, {}) or "report" not in rows.get(b, {}):
        return None
    comparison = ragsweep.compare(rows[a]["report"], rows[b]["report"])
    out: dict[str, Any] = {"a": a, "b": b, "paired_cases": comparison.n_common}
    shown = []
    for metric in METRICS:
        m = next((x for x in comparison.metrics if x.metric == metric), None)
        if m is None or m.delta is None:
            shown.append(f"{metric} —")
            continue
        p = m.p_value
        out[metric] = {"delta": m.delta, "ci": [m.ci_low, m.ci_high], "p": p, "p_holm": m.p_adjusted, "n": m.n}
        shown.append(
            f"{metric} {m.delta:+.3f} [{m.ci_low:+.3f}, {m.ci_high:+.3f}]" + (f" p={p:.3g}" if p is not None else "")
        )
    print(f"RESULT paired {b} - {a} ({comparison.n_common} cases): " + "; ".join(shown))
    return out


def preload() -> float:
    """Docling's, Pathway's and the splitter's imports, before any variant is timed (each variant's parse time
    still holds building its parser's converter, cold: the first DOCX converted by each)."""
    started = time.perf_counter()
    import docling.backend.html_backend  # noqa: F401
    import docling.backend.msword_backend  # noqa: F401
    import docling.document_converter  # noqa: F401
    import pathway.xpacks.llm.parsers  # noqa: F401

    import ragsweep  # noqa: F401

    _tokens()
    return time.perf_counter() - started


# ----------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuad", type=Path, help="CUAD's data folder, holding txt/ (e.g. ../shared/data/cuad)")
    parser.add_argument("--split", default=None, help="evaluate only this split of the cases (dev | test)")
    parser.add_argument("--sample", type=int, default=None, help="a stratified sample of this many cases")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nochunk", action="store_true", help="also DoclingParser with chunk: false on the DOCX")
    parser.add_argument("--keep", type=Path, default=None, help="build everything here and keep it")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    if not args.smoke and args.cuad is None:
        parser.error("--cuad is needed (or --smoke)")

    os.environ.setdefault("RAGSWEEP_SERVED_CACHE", "0")  # every query asked of Pathway
    tmp = tempfile.TemporaryDirectory(prefix="ragsweep-app-parse-")
    work = args.keep or Path(tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    extra: dict[str, Any] = {}
    if args.smoke:
        print(
            f"SMOKE RUN: cuad-mini's 3 contracts (.txt) as DOCX and HTML, {SMOKE_CASES} cases; native vs DoclingParser; "
            "not a measurement"
        )
        source = ROOT / "datasets/cuad-mini"
        texts = {p.stem: p for p in sorted((source / "docs").glob("*.txt"))}
        all_cases = [
            json.loads(x) for x in (source / "cases.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()
        ]
        # a handful of answerable cases, spread over the 3 contracts
        answerable = [c for c in all_cases if c.get("evidence")]
        cases = [answerable[i * len(answerable) // SMOKE_CASES] for i in range(SMOKE_CASES)]
    else:
        source = ROOT / "datasets/cuad"
        stems = [p.stem for p in sorted((source / "docs").iterdir()) if p.suffix.lower() == ".pdf"]
        texts = {s: args.cuad / "txt" / f"{s}.txt" for s in stems}
        missing = [s for s, p in texts.items() if not p.is_file()]
        if missing:
            print(f"missing texts in {args.cuad / 'txt'}: {missing[:3]}", file=sys.stderr)
            return 2
        cases = [json.loads(x) for x in (source / "cases.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
        if args.split:
            extra["split"] = args.split
        if args.sample:
            extra.update(sample=args.sample, seed=args.seed)

    t0 = time.perf_counter()
    made = {fmt: make_dataset(texts, source, cases, fmt, work / f"{source.name}-{fmt}") for fmt in ("docx", "html")}
    print(
        f"RESULT documents: {len(texts)} contracts as DOCX and HTML, {made['docx']['headings']} headings and "
        f"{made['docx']['paragraphs']} paragraphs, {len(cases)} cases ({time.perf_counter() - t0:.1f} s)"
    )
    print(f"RESULT imports before timing (Docling, Pathway, ragsweep, tiktoken): {preload():.1f} s")
    pipes = {
        "native": pipeline_file(NATIVE, work / "native.yaml"),
        "docling": pipeline_file(DOCLING, work / "docling.yaml"),
        "docling-nochunk": pipeline_file(DOCLING_NOCHUNK, work / "docling-nochunk.yaml"),
    }
    variants = [("native docx", "native", "docx"), ("docling docx", "docling", "docx")]
    if args.nochunk:
        variants.append(("docling-nochunk docx", "docling-nochunk", "docx"))
    variants += [("native html", "native", "html"), ("docling html", "docling", "html")]

    rows: dict[str, dict[str, Any]] = {}
    for name, pipe, fmt in variants:
        print(f"variant {name}: {pipes[pipe].name} on {fmt}...", file=sys.stderr, flush=True)
        try:
            rows[name] = run_variant(name, pipes[pipe], work / f"{source.name}-{fmt}", work, extra)
        except Exception:  # noqa: BLE001 - one broken variant must not hide the others
            rows[name] = {"variant": name, "error": traceback.format_exc(limit=3)}
        print_variant(rows[name])

    diffs = [paired(rows, "native docx", "docling docx")]
    if args.nochunk:
        diffs.append(paired(rows, "native docx", "docling-nochunk docx"))
    diffs.append(paired(rows, "native docx", "native html"))

    summary = {
        "smoke": args.smoke,
        "contracts": len(texts),
        "cases": len(cases),
        "split": args.split,
        "sample": args.sample,
        "documents": made,
        "variants": [
            {k: (v[:3] if k == "skip_reasons" else v) for k, v in r.items() if k != "report"} for r in rows.values()
        ],
        "paired": [d for d in diffs if d],
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(f"RESULT total {summary['seconds']:.0f} s")
    print("JSON " + json.dumps(summary, default=str))
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from lib.process_exit import exit_now

    exit_now(main())
