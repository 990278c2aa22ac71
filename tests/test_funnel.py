"""The funnel (ragsweep.funnel): each lost case attributed to the first stage that lost its evidence.

One tiny corpus written here, one real run (an app parser, Pathway's TokenCountSplitter, tantivy BM25,
``$route_docs``, a reranker, answers and verdicts from the fake OpenAI endpoint) under Pathway's word-overlap rule,
with one case built for each stage; then the totals of a run on cuad-mini.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragsweep
from fake_openai import FakeOpenAI
from ragsweep.evaluation.records import CaseResult, RunResult
from ragsweep.evaluation.storage import compact, expand_lines
from ragsweep.funnel.attribute import diagnose
from ragsweep.funnel.stages import STAGES
from ragsweep.funnel.terminal import funnel_lines
from ragsweep.pipeline.rerank import Reranker
from support import MINI, PIPELINE

TOP_K = 2
KS = [2, 6]
FILLER = " ".join(f"Note {i} of the clause file is kept for the record." for i in range(6))
LONG_SPAN = (
    "The indemnity covers losses from floods, fires, storms, riots, strikes, theft, vandalism, collapse, "
    "explosion, lightning, hail, frost, drought, landslides, earthquakes, volcanic eruptions, meteor strikes, "
    "power surges, pipe bursts, sewer backups, mould, termites, rodents, wildfire smoke, sinkholes, tsunamis, "
    "avalanches, chemical spills, radiation leaks, aircraft impacts, vehicle crashes, and falling trees."
)
DOCS = {
    "found.txt": "The orchard lease runs for seven years from the signing date. " + FILLER,
    # the app's parser keeps the first paragraph of a file: the second is never parsed
    "parse.txt": "The depot notice covers parking. Cars park in the north yard.\n\n"
    "The depot fee for late trucks is forty dollars per hour.",
    "chunking.txt": FILLER + " " + LONG_SPAN + " " + FILLER,
    "retrieval.txt": "Zebra invoice zebra invoice: the zebra invoice archive keeps every zebra invoice copy. "
    + FILLER
    + " Zebra invoice zebra invoice: the zebra invoice ledger names each zebra invoice clerk. "
    + FILLER
    + " Payment of the zebra invoice is made within ninety days of receipt. "
    + FILLER,
    "rerank.txt": "The quokka clause says the tenant feeds the quokka colony twice a week. " + FILLER,
    "answer.txt": "The harbour permit allows mooring at pier nine for small boats. " + FILLER,
    # routing ranks documents by title and first chunk: this one's name holds the question's words
    "walrus-deposit-penguin-lease.txt": " ".join(
        f"Clause {i}: penguins and walruses share the pool." for i in range(30)
    ),
    "annex.txt": FILLER + " The walrus deposit equals two months of rent under the penguin lease. " + FILLER,
}
EVIDENCE = {
    "found": ("found.txt", "The orchard lease runs for seven years from the signing date."),
    "parse": ("parse.txt", "The depot fee for late trucks is forty dollars per hour."),
    "chunking": ("chunking.txt", LONG_SPAN),
    "retrieval": ("retrieval.txt", "Payment of the zebra invoice is made within ninety days of receipt."),
    "rerank": ("rerank.txt", "The quokka clause says the tenant feeds the quokka colony twice a week."),
    "answer": ("answer.txt", "The harbour permit allows mooring at pier nine for small boats."),
    "routing": ("annex.txt", "The walrus deposit equals two months of rent under the penguin lease."),
}
QUESTIONS = {
    "found": ("How long does the orchard lease run?", "The orchard lease runs for seven years from the signing date."),
    "parse": ("What is the depot fee for late trucks?", "forty dollars per hour"),
    "chunking": ("What losses does the indemnity cover?", "floods, fires and storms"),
    "retrieval": ("Which zebra invoice rule applies?", "within ninety days"),
    "rerank": ("What does the quokka clause say?", "The tenant feeds the quokka colony twice a week."),
    # the fake endpoint answers with the permit's sentence: not the reference
    "answer": ("Where may small boats moor under the harbour permit?", "at the eastern slipway only"),
    "routing": ("What is the walrus deposit under the penguin lease?", "two months of rent"),
}


class DemotesQuokkas(Reranker):
    """A deterministic reranker: a chunk that names the quokka goes last, the others keep their order."""

    kind, model = "fixed", "quokka"

    def score_pairs(self, pairs):
        return [0.0 if "quokka" in text else 1.0 for _, text in pairs]


def _dataset(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text)
    (root / "README.md").write_text("A corpus written by tests/test_funnel.py, one case per stage of the funnel.\n")
    (root / "dataset.yaml").write_text("name: funnel\nrelevance: word_overlap\nword_overlap_threshold: 0.65\n")
    lines = []
    for case, (question, reference) in QUESTIONS.items():
        doc, span = EVIDENCE[case]
        scope = None if case == "routing" else [doc]
        row = {"id": case, "question": question, "reference_answer": reference, "doc_scope": scope,
               "evidence": [{"text": span, "doc_id": doc}]}  # fmt: skip
        lines.append(json.dumps({k: v for k, v in row.items() if v is not None}))
    (root / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _pipeline(root: Path) -> Path:
    """ragsweep's default pipeline with a parser that drops every paragraph after the first, small
    chunks, BM25, routing to one document and a reranker."""
    text = PIPELINE.read_text().replace(
        "$parser: !ragsweep.pipeline.parsing.NativeParser {}",
        "$parser: !counting_parser.CountingParser\n  first_only: true",
    )
    path = root / "pipeline.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> RunResult:
    root = tmp_path_factory.mktemp("funnel")
    server = FakeOpenAI().start()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("RAGSWEEP_TEST_PARSE_LOG", str(root / "parse.log"))
            mp.setenv("OPENAI_BASE_URL", server.base_url)
            mp.setenv("OPENAI_API_KEY", "sk-test")
            mp.setenv("RAGSWEEP_LLM_MODEL", "fake-model")
            mp.setattr("ragsweep.pipeline.rerank.build_reranker", lambda config, **_: DemotesQuokkas())
            overrides = {
                "retriever_mode": "bm25", "min_tokens": 5, "max_tokens": 40, "top_k": TOP_K, "route_docs": 1,
                "reranker": "encoder", "rerank_candidates": max(KS),
            }  # fmt: skip
            return ragsweep.evaluate(
                _pipeline(root), _dataset(root / "dataset"), overrides=overrides, ks=KS, llm=True, judge=True,
                judge_probe=0, out=root / "runs",
            )  # fmt: skip
    finally:
        server.stop()


def _case(run: RunResult, case_id: str) -> CaseResult:
    return next(c for c in run.cases if c.id == case_id)


@pytest.mark.parametrize("stage", [*STAGES, "found"])
def test_each_case_is_lost_at_its_stage(run, stage):
    case = _case(run, stage)
    assert case.lost_at_k[TOP_K] == stage, (case.lost_at_k, case.loss, [h.text[:40] for h in case.hits])
    assert case.lost_at == (None if stage == "found" else stage)
    assert [span.stage for span in case.loss] == ["found" if stage == "answer" else stage]


def test_what_each_stage_says_of_its_span(run):
    chunking = _case(run, "chunking").loss[0]
    assert chunking.span_tokens is not None and chunking.chunk_tokens is not None
    assert chunking.span_tokens > chunking.chunk_tokens <= 40 and chunking.chunks_split >= 2
    retrieval = _case(run, "retrieval")
    assert retrieval.loss[0].rank == TOP_K + 1  # served at the deeper k: found there
    assert retrieval.lost_at_k == {TOP_K: "retrieval", max(KS): "found"}
    rerank = _case(run, "rerank").loss[0]
    assert rerank.pre_rerank_rank is not None and rerank.pre_rerank_rank <= TOP_K
    assert rerank.rank is not None and rerank.rank > TOP_K
    assert _case(run, "found").loss[0].rank == 1
    # the parse case's evidence is named as unlocated, and it stays out of the retrieval metrics
    assert _case(run, "parse").evidence_unlocated and _case(run, "parse").metric(f"recall@{TOP_K}") is None


def test_the_diagnosis_adds_up_and_names_its_answer_rule(run):
    diagnosis = run.diagnosis
    assert diagnosis is not None and diagnosis.k == TOP_K
    assert diagnosis.cases == len(QUESTIONS) and diagnosis.found == 1
    assert diagnosis.lost == dict.fromkeys(STAGES, 1)
    assert diagnosis.found + sum(diagnosis.lost.values()) == diagnosis.cases
    for counts in diagnosis.by_k.values():
        assert counts.total == diagnosis.cases
    assert diagnosis.by_k[max(KS)].lost.get("retrieval", 0) == 0  # found at the deeper k
    assert diagnosis.answer_rule == "judge_correct>=0.5 (the LLM judge)"  # the judge's verdict, before token_f1
    assert diagnosis.answer_kinds == {"wrong": 1}
    line = funnel_lines(diagnosis)[0]
    assert line.startswith(
        f"lost at k={TOP_K}: parse 1 · chunking 1 · routing 1 · retrieval 1 · rerank 1 · answer 1 of 7"
    )


def test_report_json_and_the_stored_cases_carry_the_funnel(run):
    report = json.loads((Path(run.run_dir) / "report.json").read_text())
    assert report["diagnosis"]["lost"]["chunking"] == 1 and report["diagnosis"]["cases"] == len(QUESTIONS)
    stored = [json.loads(line) for line in (Path(run.run_dir) / "cases.jsonl").read_text().splitlines()]
    by_id = {line["id"]: line for line in stored}
    assert by_id["chunking"]["lost_at"] == "chunking" and "lost_at" not in by_id["found"]
    assert by_id["rerank"]["loss"] == [
        {"span": 0, "doc_id": "rerank.txt", "stage": "rerank", "rank": 3, "pre_rerank_rank": 1}
    ]
    expanded = expand_lines([compact(_case(run, "rerank").line(), settled=True)], {})
    back = CaseResult.model_validate(expanded[0])
    assert back.lost_at_k == _case(run, "rerank").lost_at_k and back.loss == _case(run, "rerank").loss


def test_totals_add_up_on_cuad_mini():
    report = ragsweep.evaluate(PIPELINE, MINI, overrides={"retriever_mode": "bm25"}, ks=[1, 5])
    diagnosis = report.diagnosis
    assert diagnosis is not None and diagnosis.k == 5
    inside = [c for c in report.cases if c.lost_at_k]
    assert diagnosis.found + sum(diagnosis.lost.values()) == diagnosis.cases == len(inside)
    assert diagnosis.cases + sum(diagnosis.excluded.values()) == len(report.cases)
    # a case is found when every item is served within k: recall@k = 1
    missed = [c for c in inside if (c.metric("recall@5") or 0) < 1]
    assert len(missed) == sum(diagnosis.lost.values()) - diagnosis.lost.get("answer", 0)
    assert all(c.lost_at is not None for c in missed)
    assert diagnose(report.cases) == diagnosis
