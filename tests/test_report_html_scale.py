"""report.html at 20,000 cases: at most 5 MB, opened in headless Chromium, the cases that are not
embedded loaded from the page's compressed data on demand; a loaded case reads exactly as an
embedded one; the LLM judge section of a run on the fake endpoint.

The cases are synthetic CaseResults shaped like the whole CUAD release (500 contracts x 40
question types, one question text per type, about 20 chunks of ~2,500 characters per contract,
a third of the questions answerable, 5 hits each, extractive-length answers). Chunk texts,
answers and references are word sequences drawn from cuad-mini's contracts with their word
frequencies, which gzip a little worse than the real texts (checked below).
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ragsweep.answer.base import Answer
from ragsweep.core.hits import chunk_id
from ragsweep.evaluation.records import CaseResult, JudgedHit
from ragsweep.evaluation.storage import compact
from ragsweep.judge.metric import JudgeVerdict
from ragsweep.report import drilldown
from ragsweep.report.html import write_html_report
from ragsweep.report.runs import case_failures
from support import ROOT
from test_report_html import _Dom, chromium, dump_dom  # noqa: F401 - chromium: pytest fixture

KS = (1, 3, 5, 10)
FAMILIES = ("hit_rate", "recall", "precision", "mrr", "ndcg", "map")


class Corpus:
    """Synthetic contracts: each document's chunks, as text drawn from cuad-mini's words."""

    def __init__(self, n_docs: int, chunks_per_doc: int, seed: int = 13):
        self.rng = random.Random(seed)
        text = " ".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "datasets/cuad-mini/docs").glob("*.txt")))
        self.words = text.split()
        self.docs = [
            f"Company{d:03d}Inc_2011{d % 12 + 1:02d}15_10-K_EX-10.{d % 40}_License Agreement.pdf" for d in range(n_docs)
        ]
        self.chunks = {doc: self._chunks(doc, chunks_per_doc) for doc in self.docs}

    def _chunks(self, doc: str, n: int) -> list[tuple[int, int, str]]:
        out, start = [], 0
        for _ in range(n):
            text = self.sentence(int(self.rng.gauss(2500, 500)))
            out.append((start, start + len(text), text))
            start += len(text)
        return out

    def sentence(self, chars: int) -> str:
        words, size = [], 0
        while size < chars:
            words.append(self.rng.choice(self.words))
            size += len(words[-1]) + 1
        return " ".join(words)


def _metrics(rank: int | None, rng: random.Random, answerable: bool, abstained: bool) -> dict[str, float | None]:
    m: dict[str, float | None] = {}
    for k in KS:
        hit = rank is not None and rank <= k
        values = (
            float(hit),
            float(hit),
            hit / k,
            1 / rank if hit else 0.0,
            1 / math.log2(rank + 1) if hit else 0.0,
            1 / rank if hit else 0.0,
        )
        m.update({f"{f}@{k}": (v if answerable else None) for f, v in zip(FAMILIES, values)})
    m.update(
        r_precision=float(rank == 1) if answerable else None,
        first_relevant_rank=rank if answerable else None,
        citation_precision=rng.choice([0.0, 0.5, 1.0]) if answerable else None,
        ragas_id_context_precision=(0.2 if rank else 0.0) if answerable else None,
        ragas_id_context_recall=float(rank is not None) if answerable else None,
        abstained=float(abstained),
        abstention_correct=float(abstained != answerable),
        exact_match=0.0,
        token_f1=rng.random() / 3,
        fact_coverage=None,
        pathway_strsim=rng.random(),
        answer_error=0.0,
        ragas_string_similarity=rng.random() / 5,
        ragas_bleu=rng.random() / 20,
        ragas_rouge=rng.random() / 4,
    )
    return m


def synthetic_cases(corpus: Corpus, types: int, judged: bool = False) -> list[CaseResult]:
    rng = corpus.rng
    questions = [f"{corpus.sentence(80)} (question type {t})?" for t in range(types)]  # one per type, as in CUAD
    out = []
    for doc in corpus.docs:
        chunks = corpus.chunks[doc]
        for t in range(types):
            answerable = rng.random() < 1 / 3
            relevant = rng.randrange(len(chunks))
            served = rng.sample([i for i in range(len(chunks)) if i != relevant], 5)
            rank = None
            if answerable and rng.random() < 0.85:
                rank = rng.randint(1, 5)
                served[rank - 1] = relevant
            hits = [
                JudgedHit(
                    rank=r,
                    score=1 / (60 + r) + rng.random() / 1000,
                    text=chunks[i][2],
                    doc_id=doc,
                    start=chunks[i][0],
                    end=chunks[i][1],
                    relevant=i == relevant and answerable,
                    grade=(2 if rng.random() < 0.1 else 1) if i == relevant and answerable else 0,
                )
                for r, i in enumerate(served, start=1)
            ]
            abstained = rng.random() < (0.3 if answerable else 0.8)
            error = "timeout: no reply in 60 s" if rng.random() < 0.01 else None
            answer = Answer(
                text="I don't know." if abstained else corpus.sentence(rng.randint(60, 200)) + " [2]",
                abstained=abstained,
                cited=[] if abstained else [2],
                answerer="extractive",
                error=error,
            )
            judge = (
                JudgeVerdict(is_correct=rng.random() < 0.6, reason=corpus.sentence(60), method="llm")
                if judged
                else None
            )
            out.append(
                CaseResult(
                    id=f"cuad-{doc[7:10]}-type-{t:02d}",
                    question=questions[t],
                    type=f"Type {t}",
                    doc_scope=[doc],
                    unanswerable=not answerable,
                    reference_answer=corpus.sentence(70) if answerable else None,
                    split="test",
                    top_k=5,
                    hits=hits,
                    answer=answer,
                    judge=judge,
                    metrics=_metrics(rank, rng, answerable, abstained),
                    relevance_rule="evidence_offsets",
                )
            )
    return out


def write_run(folder: Path, cases: list[CaseResult], corpus: Corpus) -> None:
    """A run folder as `ragsweep eval` leaves it (layout 3, settled), with a minimal report.json."""
    folder.mkdir(parents=True)
    lines = [c.line() for c in cases]
    (folder / "cases.jsonl").write_text("".join(json.dumps(compact(line, settled=True)) + "\n" for line in lines))
    (folder / "chunks.jsonl").write_text(
        "".join(
            json.dumps({"id": chunk_id(doc, s, e), "doc_id": doc, "start": s, "end": e, "text": text}) + "\n"
            for doc, chunks in corpus.chunks.items()
            for s, e, text in chunks
        )
    )
    names = list(lines[0]["metrics"])
    metrics = {
        n: (
            sum(vs) / len(vs)
            if (vs := [line["metrics"][n] for line in lines if line["metrics"][n] is not None])
            else None
        )
        for n in names
    }
    (folder / "report.json").write_text(
        json.dumps(
            {
                "metrics": metrics,
                "case_metrics": names,
                "ks": list(KS),
                "top_k": 5,
                "relevance_rule": "evidence_offsets",
            }
        )
    )


def test_synthetic_chunk_text_compresses_like_real_contract_text():
    real = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "datasets/cuad-mini/docs").glob("*.txt")))
    corpus = Corpus(2, 20)
    synthetic = "\n".join(text for chunks in corpus.chunks.values() for _, _, text in chunks)[: len(real)]
    ratio = [len(s.encode()) / len(gzip.compress(s.encode(), 9)) for s in (real, synthetic)]
    print(f"\ngzip ratio: real {ratio[0]:.2f}, synthetic {ratio[1]:.2f}")
    assert ratio[1] <= ratio[0] * 1.1, "the synthetic text must not compress much better than the real one"


def _timed_dump(chromium, tmp_path, page: Path, fragment: str = "") -> tuple[_Dom, str, float]:  # noqa: F811
    t = time.perf_counter()
    text = dump_dom(chromium, tmp_path, page, fragment)
    return _Dom(text), text, time.perf_counter() - t


def test_report_html_for_20000_cases(chromium, tmp_path):  # noqa: F811
    corpus = Corpus(500, 20)
    cases = synthetic_cases(corpus, 40)
    assert len(cases) == 20_000
    run = tmp_path / "run"
    write_run(run, cases, corpus)
    t = time.perf_counter()
    page = write_html_report(run)
    written = time.perf_counter() - t
    size = page.stat().st_size
    print(
        f"\n20,000 cases: cases.jsonl {(run / 'cases.jsonl').stat().st_size / 1e6:.2f} MB, chunks.jsonl "
        f"{(run / 'chunks.jsonl').stat().st_size / 1e6:.2f} MB, report.html {size / 1e6:.2f} MB "
        f"(written in {written:.1f} s)"
    )
    assert size <= 5_000_000

    lines = [c.line() for c in cases]
    failing = {c.id for c in cases if case_failures(c)}
    embedded = min(len(failing), drilldown.MAX_EMBEDDED_FAILURES) + drilldown.EMBEDDED_SAMPLE
    dom, _, seconds = _timed_dump(chromium, tmp_path, page)
    print(f"opened in {seconds:.1f} s (Chromium start included)")
    assert dom.body.get("data-js") == "ready" and int(dom.body["data-plots-drawn"]) >= 3
    assert len(dom.cases) == embedded and dom.count_text == f"{embedded} of 20000 cases shown"
    assert "data-loaded" not in dom.boxes  # nothing decompressed until it is asked for

    # a link to a case that is not embedded loads every case, then opens that one
    target = next(c for c in lines if c["id"] not in {d["data-id"] for d in dom.cases} and not c["unanswerable"])
    dom, text, seconds = _timed_dump(chromium, tmp_path, page, f"#case={target['id']}")
    print(f"opened at #case=... (every case loaded) in {seconds:.1f} s")
    assert dom.boxes.get("data-loaded") == "20000" and len(dom.cases) == 20000
    assert dom.count_text == "20000 of 20000 cases shown"
    opened = [c for c in dom.cases if "open" in c]
    assert [c["data-id"] for c in opened] == [target["id"]]
    body = _details_text(text, target["id"])
    first = target["hits"][0]
    assert target["question"] in body and first["doc_id"] in body and first["text"][:200] in body

    # a filter is over every case
    dom, _, _ = _timed_dump(chromium, tmp_path, page, "#failures")
    assert {c["data-id"] for c in dom.cases if "hidden" not in c} == failing
    assert dom.count_text == f"{len(failing)} of 20000 cases shown"


class _DetailsText(HTMLParser):
    """The text and attributes of each <details class="case">, by case id."""

    def __init__(self, html: str):
        super().__init__()
        self.texts: dict[str, str] = {}
        self.attrs: dict[str, dict] = {}
        self._id: str | None = None
        self._depth = 0
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "details" and "case" in (a.get("class") or ""):
            self._id, self._depth = a["data-id"], 0
            self.attrs[self._id] = {k: v for k, v in a.items() if k not in ("open", "hidden", "data-i")}
            self.texts[self._id] = ""
        elif tag == "details" and self._id:
            self._depth += 1

    def handle_endtag(self, tag):
        if tag == "details" and self._id:
            if self._depth == 0:
                self._id = None
            else:
                self._depth -= 1

    def handle_data(self, data):
        if self._id:
            self.texts[self._id] += data


def _details_text(html: str, case_id: str) -> str:
    return _DetailsText(html).texts[case_id]


def test_a_loaded_case_reads_as_an_embedded_one(chromium, tmp_path, monkeypatch):  # noqa: F811
    corpus = Corpus(2, 20, seed=5)
    cases = synthetic_cases(corpus, 12, judged=True)
    for c in cases[:3]:  # an answer error, a judge without a verdict, a question longer than the summary shows
        c.answer.error = "http_500: the endpoint failed"
    cases[3].judge = JudgeVerdict(is_correct=None, reason="", method="llm", failure="unparsable")
    cases[4].question = "Why " + "x" * 200 + " <b>&'\"?"
    run = tmp_path / "run"
    write_run(run, cases, corpus)
    monkeypatch.setattr(drilldown, "EMBEDDED_SAMPLE", len(cases))
    full = write_html_report(run, tmp_path / "all.html")  # every case embedded
    assert 'id="case-data"' not in full.read_text()
    python = _DetailsText(full.read_text())
    monkeypatch.setattr(drilldown, "MAX_EMBEDDED_FAILURES", 0)
    monkeypatch.setattr(drilldown, "EMBEDDED_SAMPLE", 0)
    lazy = write_html_report(run, tmp_path / "none.html")  # none embedded: every case from the data
    for case in [cases[0], cases[3], cases[4], *cases[5:24:6]]:
        text = dump_dom(chromium, tmp_path, lazy, f"#case={case.id}")
        js = _DetailsText(text)
        assert len(js.texts) == len(cases)
        assert js.attrs[case.id] == python.attrs[case.id]
        assert js.texts[case.id] == python.texts[case.id], case.id


def test_judge_section_renders(chromium, tmp_path, monkeypatch, fake_server):  # noqa: F811
    from ragsweep.cli import main
    from test_judge_trust import _dataset

    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "fake-model")
    main(
        [
            "eval",
            "--dataset",
            str(_dataset(tmp_path)),
            "--llm",
            "--judge",
            "--judge-replicates",
            "3",
            "--out",
            str(tmp_path / "runs"),
            "--name",
            "j",
        ]
    )
    page = tmp_path / "runs" / "j" / "report.html"
    text = dump_dom(chromium, tmp_path, page)
    assert _Dom(text).body.get("data-js") == "ready"
    section = re.search(r'<section id="judge">(.*?)</section>', text, re.S)
    assert section, "no LLM judge section"
    judge = re.sub(r"<[^>]+>", " ", section.group(1))
    judge = " ".join(judge.split())
    # failures, self-agreement (alpha 0.6, Fleiss 0.55, c1 flips), noise, reference verdicts with PPI, probes
    assert "judge_correct 4 1 25.0% 1× unparsable" in judge
    assert "judge_correct 3 3 0.778 0.600 0.550 33.3% flip: c1" in judge
    assert "Judge noise in the confidence interval" in judge and "11.1%" in judge
    assert "Cohen’s κ 0.000" in judge and "prediction-powered 0.083 [0.000, 1.000]" in judge
    assert "probes right" in judge and "says yes to everything" in judge
    assert text.index('class="warning"') < text.index('<section id="baselines"')  # warnings at the top
    # a run without a judge has no such section
    main(["eval", "--dataset", str(_dataset(tmp_path / "other")), "--out", str(tmp_path / "runs"), "--name", "plain"])
    assert 'id="judge"' not in (tmp_path / "runs" / "plain" / "report.html").read_text()
