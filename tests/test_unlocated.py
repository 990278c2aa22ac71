"""Evidence found in no parsed document is its own outcome: named, counted, and left out of the
retrieval means (``--unlocated zero`` scores it 0 as before); ``validate --parse`` shows the
closest passage of each such span."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragsweep
from ragsweep.cli import main
from ragsweep.core.hits import Hit
from ragsweep.datasets.schema import Case, RelevanceConfig
from ragsweep.evaluation.case_scoring import build_case_result
from ragsweep.evaluation.scoring import aggregate
from ragsweep.metrics.relevance import UNLOCATED, mark_hits, unlocated_evidence
from ragsweep.report.runs import read_sweep
from support import PIPELINE, ROOT

CONTRACT = (
    "DISTRIBUTION AGREEMENT. This agreement is made between Acme Corp. and Foo Inc. "
    "The governing law of this agreement is the law of the State of Nevada. "
    "Either party may terminate this agreement with sixty days written notice. "
)
MANUAL = "The pump must be primed before its first start. Replace the filter every six months. "
TEXTS = {"contract.txt": CONTRACT, "manual.txt": MANUAL}


def _case(case_id: str, *quotes: str, doc: str | None = "contract.txt", scope=("contract.txt",)) -> Case:
    return Case(
        id=case_id,
        question="What is the governing law?",
        doc_scope=list(scope) if scope else None,
        evidence=[{"text": q, "doc_id": doc} for q in quotes],
    )


def _hit(rank: int, doc: str, start: int, end: int) -> Hit:
    return Hit(rank=rank, score=1.0 / rank, text=TEXTS[doc][start:end], doc_id=doc, start=start, end=end)


HITS = [_hit(1, "contract.txt", 0, 80), _hit(2, "contract.txt", 80, 152)]
MISSING = "governed by the laws of the State of Delaware"  # a label of another contract


def test_a_span_in_no_parsed_text_is_named_with_its_document():
    case = _case("c1", "the State of Nevada", MISSING)
    spans = unlocated_evidence(case, RelevanceConfig(), TEXTS)
    assert [(s.index, s.text, s.doc_id, s.reason) for s in spans] == [
        (1, MISSING, "contract.txt", "not in the parsed text")
    ]
    assert spans[0].searched == ["contract.txt"]


def test_a_case_with_no_span_found_is_excluded_not_scored_zero():
    case = _case("c1", MISSING)
    judged = mark_hits(case, HITS, RelevanceConfig(), TEXTS)
    assert judged.excluded == UNLOCATED and not judged.scored
    assert judged.detail.none_located and judged.detail.unlocated[0].text == MISSING
    zero = mark_hits(case, HITS, RelevanceConfig(unlocated="zero"), TEXTS)
    assert zero.excluded is None and zero.scored and not any(h.relevant for h in zero.hits)


def test_a_case_with_some_spans_found_is_scored_and_names_the_others():
    case = _case("c1", "the State of Nevada", MISSING)
    judged = mark_hits(case, HITS, RelevanceConfig(), TEXTS)
    assert judged.scored and not judged.detail.none_located
    assert [s.index for s in judged.detail.unlocated] == [1]


def test_evidence_without_doc_id_is_searched_in_its_scope_or_the_corpus():
    scoped = _case("c1", "Replace the filter every six months", doc=None, scope=("contract.txt",))
    assert unlocated_evidence(scoped, RelevanceConfig(), TEXTS)[0].searched == ["contract.txt"]
    anywhere = _case("c2", "Replace the filter every six months", doc=None, scope=None)
    assert unlocated_evidence(anywhere, RelevanceConfig(), TEXTS) == []
    (nowhere,) = unlocated_evidence(_case("c3", MISSING, doc=None, scope=None), RelevanceConfig(), TEXTS)
    assert nowhere.reason == "not in the parsed text" and nowhere.searched == []  # every document, not listed


def test_a_document_that_was_not_parsed_is_the_reason():
    case = _case("c1", "anything at all", doc="scan.pdf", scope=("scan.pdf",))
    (span,) = unlocated_evidence(case, RelevanceConfig(), TEXTS)
    assert span.reason == "document not parsed" and span.searched == []


def test_word_overlap_locates_a_span_in_the_whole_document_and_its_joined_spans():
    rule = RelevanceConfig(rule="word_overlap", word_overlap_threshold=0.65)
    assert unlocated_evidence(_case("c1", "the law of the State of Nevada"), rule, TEXTS) == []
    (span,) = unlocated_evidence(_case("c2", MISSING), rule, TEXTS)
    assert span.text == MISSING
    # each span alone is below the threshold; joined, Pathway's rule can still match a chunk
    joined = _case("c3", "Acme Corp. zzz yyy", "Foo Inc. zzz yyy")  # 2 of 4 words each, 4 of 6 joined
    judged = mark_hits(joined, HITS, rule, TEXTS)
    assert len(judged.detail.unlocated) == 2 and not judged.detail.none_located and judged.excluded is None


def test_the_aggregate_counts_say_what_n_and_missing_leave_out():
    cases = [_case("found", "the State of Nevada"), _case("lost", MISSING)]
    for mode, n, unlocated, in_n in (("exclude", 1, 1, None), ("zero", 2, 0, 1)):
        rel = RelevanceConfig(unlocated=mode)
        results = [build_case_result(c, {5: HITS}, top_k=5, relevance=rel, texts=TEXTS) for c in cases]
        assert results[1].evidence_unlocated and results[1].unlocated[0].doc_id == "contract.txt"
        assert "unlocated evidence" in results[1].notes["retrieval"]
        agg = aggregate(results, with_intervals=False)
        count = agg.counts["hit_rate@5"]
        assert (count.n, count.unlocated, count.unlocated_in_n) == (n, unlocated, in_n)
        assert agg.metrics["hit_rate@5"] == (1.0 if mode == "exclude" else 0.5)


# ------------------------------------------------------------------ end to end: eval, report, validate


@pytest.fixture()
def dataset(tmp_path) -> Path:
    root = tmp_path / "ds"
    (root / "docs").mkdir(parents=True)
    for name, text in TEXTS.items():
        (root / "docs" / name).write_text(text)
    (root / "README.md").write_text("A test dataset made in the test.\n")
    (root / "dataset.yaml").write_text("name: unlocated\nrelevance: evidence_offsets\n")
    cases = [
        _case("found", "the law of the State of Nevada"),
        _case("lost", MISSING),
        _case("primed", "primed before its first start", doc="manual.txt", scope=("manual.txt",)),
        Case(id="none", question="Is there a non-compete?", doc_scope=["contract.txt"], unanswerable=True),
    ]
    (root / "cases.jsonl").write_text("".join(c.model_dump_json(exclude_defaults=True) + "\n" for c in cases))
    return root


def _eval(dataset: Path, out: Path, capsys, *extra: str) -> tuple[str, dict]:
    code = main(["eval", "--pipeline", str(PIPELINE), "--dataset", str(dataset), "--out", str(out), "--workers", "1",
                 "--name", "run", *extra])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out, json.loads((out / "run" / "report.json").read_text())


def test_eval_names_counts_and_excludes_the_unlocated_case(dataset, tmp_path, capsys):
    out, report = _eval(dataset, tmp_path / "runs", capsys)
    assert "unlocated evidence: 1 of 4 cases" in out and "lost: 'governed by the laws of the State of Delaware'" in out
    assert "unlocated" in out.splitlines()[1]  # the column beside n and missing
    assert report["unlocated"]["mode"] == "exclude"
    (lost,) = report["unlocated"]["cases"]
    assert lost["id"] == "lost" and lost["none_located"] and lost["spans"][0]["doc_id"] == "contract.txt"
    count = report["counts"]["hit_rate@5"]
    assert count == {"n": 2, "missing": 2, "unlocated": 1}  # the unanswerable case and the unlocated one
    assert report["metrics"]["hit_rate@5"] == 1.0
    html = (tmp_path / "runs" / "run" / "report.html").read_text()
    assert 'id="unlocated"' in html and "governed by the laws of the State of Delaware" in html
    assert "2 (1 unlocated)" in html


def test_unlocated_zero_keeps_the_old_scoring_and_says_so(dataset, tmp_path, capsys):
    out, report = _eval(dataset, tmp_path / "runs", capsys, "--unlocated", "zero")
    assert report["counts"]["hit_rate@5"] == {"n": 3, "missing": 1, "unlocated": 0, "unlocated_in_n": 1}
    assert report["metrics"]["hit_rate@5"] == pytest.approx(2 / 3)
    assert "scored 0 on the retrieval metrics" in " ".join(out.split()) and "1 in n" in out


def test_the_option_is_one_definition_for_the_command_line_and_the_api(dataset, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--dataset", str(dataset), "--unlocated", "drop"])
    assert "--unlocated" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unlocated"):
        ragsweep.evaluate(PIPELINE, dataset, unlocated="drop")
    report = ragsweep.evaluate(PIPELINE, dataset, unlocated="zero", workers=1)
    assert report.unlocated.mode == "zero" and report.counts["recall@5"].unlocated_in_n == 1


def test_validate_parse_shows_the_closest_passage(dataset, capsys):
    assert main(["validate", "--dataset", str(dataset), "--parse", "--workers", "1"]) == 1
    parsed = capsys.readouterr().out
    (line,) = [line for line in parsed.splitlines() if "'lost'" in line]
    assert "evidence[0]" in line and "is found in no parsed text of 'contract.txt'" in line
    assert "closest passage" in line and "law of the State of Nevada" in line
    # plain text needs no parse: validate without --parse reads it and says the same
    assert main(["validate", "--dataset", str(dataset)]) == 1
    plain = capsys.readouterr().out
    assert [x for x in plain.splitlines() if "'lost'" in x] == [line] and "only validate --parse" not in plain


def test_plain_validate_locates_what_it_can_read_and_counts_what_needs_a_parse(dataset, tmp_path, capsys, monkeypatch):
    import shutil

    from ragsweep.validate.command import main as validate_main

    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))  # no document parsed before
    (dataset / "dataset.yaml").write_text("name: unlocated\nrelevance: word_overlap\n")
    (dataset / "docs" / "contract.txt").write_text(CONTRACT + "The price is $350,000.00 in cash. ")
    shutil.copy(
        ROOT / "tests" / "fixtures" / "corpus" / "lucid-distributor-agreement.pdf", dataset / "docs" / "scan.pdf"
    )
    cases = [
        _case("price", "$350,000"),  # the document says $350,000.00: Pathway's word rule finds no such word
        _case("scanned", "zebra quantum marmalade", doc="scan.pdf", scope=("scan.pdf",)),  # in a PDF
        _case("anywhere", "zebra quantum marmalade", doc=None, scope=None),  # in any document, the PDF too
    ]
    (dataset / "cases.jsonl").write_text("".join(c.model_dump_json(exclude_defaults=True) + "\n" for c in cases))

    assert validate_main([str(dataset)]) == 1
    out = capsys.readouterr().out
    (price,) = [x for x in out.splitlines() if "'price'" in x]
    assert "evidence[0]" in price and "finds 0% of its words in the document, 65% needed" in price, out
    assert "'scanned'" not in out and "'anywhere'" not in out  # left to a parse, and counted
    assert "2 case(s) have evidence in documents that need parsing (not in the parse cache):" in out, out

    assert main(["validate", "--dataset", str(dataset), "--parse", "--workers", "1"]) == 1
    parsed = sorted(x for x in capsys.readouterr().out.splitlines() if "evidence[0]" in x)
    assert len(parsed) == 3
    # the PDF is in the parse cache now: plain validate reads it there and says what --parse says
    assert main(["validate", "--dataset", str(dataset)]) == 1
    plain = capsys.readouterr().out
    assert sorted(x for x in plain.splitlines() if "evidence[0]" in x) == parsed and "need parsing" not in plain


def test_a_sweeps_unserved_depth_counts_each_case_once():
    from ragsweep.evaluation.records import Aggregate
    from ragsweep.evaluation.sweep import with_own_k

    agg = Aggregate(counts={"recall@5": {"n": 2, "missing": 2, "unlocated": 1}})
    counts = with_own_k(agg, 5, [10]).counts
    assert counts["recall@10"].model_dump() == {"n": 0, "missing": 4} and counts["recall@k"].unlocated == 1


def test_validate_says_why_the_word_rule_misses_a_span_whose_text_is_there():
    from ragsweep.validate.dataset import closest_passage
    from ragsweep.validate.parsed import unlocated_problems

    rule = RelevanceConfig(rule="word_overlap")
    case = _case("c1", "ACME CORP. and FOO INC.")  # the text is there, in other case: Pathway's rule is case-sensitive
    (problem,) = unlocated_problems([case], "cases.jsonl", rule, TEXTS, {})
    assert "closest passage (100% alike, in 'contract.txt'): 'Acme Corp. and Foo Inc.'" in problem.message
    assert "finds 20% of its words in the document, 65% needed" in problem.message
    score, passage = closest_passage(CONTRACT, "the Stat of Nevad")  # cut inside words: widened to them
    assert passage == "the State of Nevada." and score < 100


# ------------------------------------------------------------------ doc_id: relevant documents with no parsed text


def test_a_doc_id_case_whose_relevant_documents_have_no_parsed_text_is_unlocated():
    rule = RelevanceConfig(rule="doc_id")
    lost = Case(id="scan", question="What does the scan say?", relevant_ids=["scan.pdf"])
    judged = mark_hits(lost, HITS, rule, TEXTS)
    assert judged.excluded == UNLOCATED and not judged.scored and judged.detail.none_located
    (doc,) = judged.detail.unlocated
    assert (doc.doc_id, doc.reason, doc.text, doc.shown()) == (
        "scan.pdf",
        "document not parsed",
        "",
        "relevant document",
    )
    zero = mark_hits(lost, HITS, RelevanceConfig(rule="doc_id", unlocated="zero"), TEXTS)
    assert zero.scored and zero.excluded is None
    # a relevant document that is parsed: scored, the other one named
    partly = Case(id="both", question="q", relevant_ids=["contract.txt", "scan.pdf"])
    judged = mark_hits(partly, HITS, rule, TEXTS)
    assert (
        judged.scored and not judged.detail.none_located and [d.doc_id for d in judged.detail.unlocated] == ["scan.pdf"]
    )
    # the documents of its evidence when it has no relevant_ids; a found one is never named
    by_evidence = _case("ev", "anything", doc="scan.pdf", scope=None)
    assert mark_hits(by_evidence, HITS, rule, TEXTS).excluded == UNLOCATED
    assert mark_hits(_case("ok", "anything"), HITS, rule, TEXTS).detail.unlocated == []
    result = build_case_result(lost, {5: HITS}, top_k=5, relevance=rule, texts=TEXTS)
    assert result.evidence_unlocated and result.metrics["hit_rate@5"] is None
    assert (
        "no relevant document has parsed text (relevant document in scan.pdf (document not parsed))"
        in (result.notes["retrieval"])
    )


def test_eval_names_a_doc_id_case_whose_document_failed_to_parse(tmp_path, capsys):
    root = tmp_path / "ds"
    (root / "docs").mkdir(parents=True)
    for name, text in TEXTS.items():
        (root / "docs" / name).write_text(text)
    (root / "docs" / "scan.txt").write_bytes(b"SCAN\x00\x01\x02 binary")  # skipped: binary behind .txt
    (root / "README.md").write_text("A test dataset made in the test.\n")
    (root / "dataset.yaml").write_text("name: by-document\nrelevance: doc_id\n")
    cases = [
        Case(id="law", question="What is the governing law?", relevant_ids=["contract.txt"]),
        Case(id="scan", question="What does the scanned page say?", relevant_ids=["scan.txt"]),
    ]
    (root / "cases.jsonl").write_text("".join(c.model_dump_json(exclude_defaults=True) + "\n" for c in cases))
    out, report = _eval(root, tmp_path / "runs", capsys)
    (scan,) = report["unlocated"]["cases"]
    assert scan["id"] == "scan" and scan["none_located"] and scan["spans"][0]["doc_id"] == "scan.txt"
    assert report["counts"]["hit_rate@5"] == {"n": 1, "missing": 1, "unlocated": 1}
    assert (
        "unlocated evidence: 1 of 2 cases" in out and "scan: relevant document in scan.txt: document not parsed" in out
    )
    page = (tmp_path / "runs" / "run" / "report.html").read_text()
    assert "(the relevant document itself)" in page and "scan.txt" in page


# ------------------------------------------------------------------ a sweep names them too


def test_a_sweep_names_the_unlocated_cases(dataset, tmp_path, capsys):
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  top_k: [3, 5]\nbaseline: {top_k: 5}\nobjectives: [recall@k]\nks: [1, 3, 5]\n")
    argv = ["sweep", "--pipeline", str(PIPELINE), "--dataset", str(dataset), "--grid", str(grid),
            "--set", "retriever_mode=bm25", "--out", str(tmp_path / "runs"), "--name", "sweep", "--workers", "1"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "unlocated evidence: 1 of 4 cases" in out and "in every configuration" in out
    assert "  lost: 'governed by the laws of the State of Delaware' in contract.txt: not in the parsed text" in out
    folder = tmp_path / "runs" / "sweep"
    sweep = json.loads((folder / "sweep.json").read_text())
    (lost,) = sweep["unlocated"]["cases"]
    assert lost["id"] == "lost" and lost["none_located"] and sweep["unlocated"]["mode"] == "exclude"
    assert read_sweep(folder).unlocated.none_located[0].id == "lost"
    page = (folder / "report.html").read_text()
    assert 'id="unlocated"' in page and "governed by the laws of the State of Delaware" in page
    assert "in each configuration&#x27;s counts" in page or "in each configuration's counts" in page
