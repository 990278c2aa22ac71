"""The scored-case cache: a warm run scores nothing again and writes the same files; after a document
changes, only the cases that read it (or whose lists moved) are scored again, with a fresh run's numbers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragsweep.commands.eval import EvalOptions, run_eval
from ragsweep.evaluation import loop
from support import ROOT

PIPELINE = str(ROOT / "pipelines" / "default.yaml")
LIMIT = 60  # the first two contracts' cases and some of the third's


@pytest.fixture
def scored(monkeypatch, tmp_path) -> list[str]:
    """The cache on, in its own folder; the ids of the cases really scored, run after run."""
    monkeypatch.setenv("RAGSWEEP_SCORED_CACHE", "1")
    monkeypatch.setenv("RAGSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    ids: list[str] = []
    build = loop.build_case_result

    def spy(case, *args, **kwargs):
        ids.append(case.id)
        return build(case, *args, **kwargs)

    monkeypatch.setattr(loop, "build_case_result", spy)
    return ids


def _eval(data: Path, out: Path, name: str) -> Path:
    options = EvalOptions(
        pipeline=PIPELINE, dataset=str(data), out=str(out), name=name, limit=LIMIT, progress=False,
        validate_dataset=False,
    )  # fmt: skip
    run_dir, result = run_eval(options, html=False)
    assert run_dir is not None and result is not None
    return Path(run_dir)


def _same(a: Path, b: Path) -> None:
    x, y = json.loads((a / "report.json").read_text()), json.loads((b / "report.json").read_text())
    for section in ("metrics", "counts", "intervals", "baselines"):
        assert x[section] == y[section], section
    assert (a / "cases.jsonl").read_text() == (b / "cases.jsonl").read_text()


def test_a_warm_run_scores_nothing_and_writes_the_same_cases(scored, tmp_path, monkeypatch):
    data = tmp_path / "ds"
    shutil.copytree(ROOT / "datasets" / "cuad-mini", data)
    first = _eval(data, tmp_path / "runs", "first")
    assert len(scored) == LIMIT
    scored.clear()
    second = _eval(data, tmp_path / "runs", "second")
    assert scored == []
    _same(first, second)

    # one clause of the first contract reworded: the cases that read it are scored again, no other
    doc = sorted((data / "docs").iterdir())[0]
    doc.write_text(doc.read_text(encoding="utf-8").replace("Agreement", "Contract", 3), encoding="utf-8")
    scored.clear()
    changed = _eval(data, tmp_path / "runs", "changed")
    cases = [json.loads(line) for line in (first / "cases.jsonl").read_text().splitlines()]
    reading = {c["id"] for c in cases if c["doc_scope"] == [doc.name]}
    assert reading and reading <= set(scored) and len(scored) < LIMIT
    monkeypatch.setenv("RAGSWEEP_SCORED_CACHE", "0")
    _same(changed, _eval(data, tmp_path / "runs", "fresh"))


def test_a_damaged_entry_is_a_miss_not_a_failure(scored, tmp_path):
    import sqlite3

    data = ROOT / "datasets" / "cuad-mini"
    first = _eval(data, tmp_path / "runs", "first")
    with sqlite3.connect(tmp_path / "cache" / "scored.sqlite") as conn:
        conn.execute("UPDATE scored SET value = x'00ff'")
    scored.clear()
    again = _eval(data, tmp_path / "runs", "again")
    assert len(scored) == LIMIT
    _same(first, again)


def test_a_case_is_scored_again_when_a_text_it_read_changed_though_its_lists_did_not(scored):
    from ragsweep.core.hits import Hit
    from ragsweep.datasets.schema import Case, Evidence, RelevanceConfig
    from ragsweep.evaluation.scored_cache import CaseCache

    clause = "governed by the laws of the State of New York"
    case = Case(id="c1", question="Which law governs?", evidence=[Evidence(text=clause, doc_id="a.txt")])
    other = Case(id="c2", question="Who?", evidence=[Evidence(text="the Distributor", doc_id="b.txt")])
    hit = Hit(rank=1, score=1.0, text="This Agreement is governed by the laws", doc_id="a.txt", start=0, end=38)
    served = {"c1": {1: [hit]}, "c2": {1: [hit]}}
    texts = {"a.txt": f"This Agreement is {clause}.", "b.txt": "the Distributor shall sell"}

    def run(texts: dict[str, str]) -> list:
        cache = CaseCache.open(texts)
        return loop.score([case, other], served, top_k=1, relevance=RelevanceConfig(), texts=texts, cache=cache)

    first = run(texts)
    assert scored == ["c1", "c2"] and not first[0].evidence_unlocated
    scored.clear()
    assert run(dict(texts)) == first and scored == []
    # the clause is gone from a.txt: c1 (which read it) is scored again and its evidence is unlocated now;
    # c2 read only b.txt and comes from the cache
    changed = run({**texts, "a.txt": "This Agreement is governed by the laws of Delaware."})
    assert scored == ["c1"] and changed[0].evidence_unlocated and changed[1] == first[1]


def test_a_warm_aggregate_computes_no_interval_and_gives_the_same_ones(scored, tmp_path, monkeypatch):
    from ragsweep.metrics import stats

    data = ROOT / "datasets" / "cuad-mini"
    first = _eval(data, tmp_path / "runs", "first")
    computed: list[int] = []
    bootstrap = stats.bootstrap_ci

    def spy(values, *args, **kwargs):
        computed.append(len(values))
        return bootstrap(values, *args, **kwargs)

    monkeypatch.setattr(stats, "bootstrap_ci", spy)
    again = _eval(data, tmp_path / "runs", "again")
    assert computed == []  # every interval of report.json from the cache
    _same(first, again)
    monkeypatch.setenv("RAGSWEEP_SCORED_CACHE", "0")  # off: computed again, the same bounds
    fresh = _eval(data, tmp_path / "runs", "fresh")
    assert (
        computed
        and json.loads((fresh / "report.json").read_text())["intervals"]
        == json.loads((first / "report.json").read_text())["intervals"]
    )
