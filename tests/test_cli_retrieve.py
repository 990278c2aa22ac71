"""`ragsweep retrieve --scope`: every hit comes from the scoped documents."""

import json

from ragsweep.cli import main


def _retrieve(capsys, pipeline, docs, *args):
    code = main(["retrieve", "--pipeline", str(pipeline), "--docs", str(docs), "--workers", "1", "--json", *args])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def test_retrieve_with_one_scope_returns_only_that_document(capsys, default_pipeline, fixture_corpus_dir):
    # the question is about Jupiter's moons: unscoped, jupiter.html would win
    hits = _retrieve(
        capsys,
        default_pipeline,
        fixture_corpus_dir,
        "-k",
        "3",
        "--scope",
        "lucid-distributor-agreement.pdf",
        "What is the largest moon of Jupiter?",
    )
    assert len(hits) == 1 and hits[0]
    assert {h["doc_id"] for h in hits[0]} == {"lucid-distributor-agreement.pdf"}


def test_retrieve_with_repeated_scope_returns_only_those_documents(capsys, default_pipeline, fixture_corpus_dir):
    scopes = ["jupiter.html", "notes/borrow-checker.md"]
    hits = _retrieve(
        capsys,
        default_pipeline,
        fixture_corpus_dir,
        "-k",
        "10",
        "--scope",
        scopes[0],
        "--scope",
        scopes[1],
        "Which state's law governs the agreement?",
        "How do you fold the dough?",
    )
    assert len(hits) == 2
    for per_question in hits:
        assert per_question, "a scoped question must still get hits"
        assert {h["doc_id"] for h in per_question} <= set(scopes)
    # one chunk each, k=10: both scoped documents come back, nothing else
    assert {h["doc_id"] for h in hits[0]} == set(scopes)
