"""Retrieval metrics with their chance levels (one over the candidate chunks, one by a closed form over
the candidates grouped by chunk type), and an answer metric, added from this file alone: each is one
record registered with the metric registry, and a real evaluation scores it, levels it, and shows it
in report.json and report.html."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragsweep
from ragsweep.metrics import registry
from ragsweep.metrics.answer import AnsweredCase
from ragsweep.metrics.levels import Candidates, Estimate, first_marked
from ragsweep.metrics.retrieval import Judgement
from support import MINI, PIPELINE


def relevant_share(j: Judgement, k: int) -> float:
    """The share of the top k chunks that are relevant (over the chunks served, not over k)."""
    top = j.hits[:k] if k else j.hits
    return sum(h.relevant for h in top) / len(top) if top else 0.0


def relevant_share_chance(candidates: Judgement, k: int) -> float:
    """Any random prefix holds relevant chunks in the pool's proportion."""
    return sum(h.relevant for h in candidates.hits) / len(candidates.hits) if candidates.hits else 0.0


def relevant_share_oracle(candidates: Judgement, k: int) -> float:
    depth = min(k, len(candidates.hits)) if k else len(candidates.hits)
    return min(depth, sum(h.relevant for h in candidates.hits)) / depth if depth else 0.0


def relevant_in_top(j: Judgement, k: int) -> float:
    """1 when a relevant chunk is in the top k."""
    return 1.0 if any(h.relevant for h in (j.hits[:k] if k else j.hits)) else 0.0


def relevant_in_top_chance(candidates: Candidates, k: int) -> Estimate:
    """Closed form: the first of the m relevant candidates among N lands in the top K (hypergeometric)."""
    depth = candidates.depth(k)
    return Estimate(first_marked(candidates.n, candidates.m, depth)[0], "closed_form")


def relevant_in_top_oracle(candidates: Candidates, k: int) -> Estimate:
    return Estimate(1.0 if candidates.m and candidates.depth(k) else 0.0, "exact")


def answer_words(case: AnsweredCase) -> float | None:
    """The scored answer's length in words (none for an unanswerable question)."""
    return None if case.unanswerable else float(len(case.text.split()))


@pytest.fixture
def added_metrics():
    registry.register(
        registry.MetricSpec(
            "relevant_share",
            "at_k",
            order=65,
            compute=relevant_share,
            chance=relevant_share_chance,
            oracle=relevant_share_oracle,
        )
    )
    registry.register(
        registry.MetricSpec(
            "relevant_in_top",
            "at_k",
            order=66,
            compute=relevant_in_top,
            chance=registry.PooledLevel(relevant_in_top_chance),
            oracle=registry.PooledLevel(relevant_in_top_oracle),
            reads="relevance",
        )
    )
    registry.register(registry.MetricSpec("answer_words", "answer", order=145, compute=answer_words))
    yield
    registry.unregister("relevant_share")
    registry.unregister("relevant_in_top")
    registry.unregister("answer_words")


def test_a_registered_retrieval_and_answer_metric_reach_every_report(added_metrics, tmp_path):
    report = ragsweep.evaluate(PIPELINE, MINI, limit=6, out=tmp_path)
    k = report.top_k
    name = f"relevant_share@{k}"
    value = report.metrics[name]
    assert value is not None and 0.0 <= value <= 1.0
    assert report.metrics["answer_words"] is not None and report.metrics["answer_words"] > 0
    chance, oracle = report.baselines[name]["chance"], report.baselines[name]["oracle"]
    assert chance is not None and oracle is not None and 0.0 <= chance <= oracle <= 1.0
    assert report.chance(name) == chance

    stored = json.loads((Path(report.run_dir) / "report.json").read_text())
    assert stored["metrics"][name] == value and stored["baselines"][name]["chance"] == chance
    assert stored["metrics"]["answer_words"] == report.metrics["answer_words"]
    page = (Path(report.run_dir) / "report.html").read_text()
    assert f"<td>{name}</td>" in page  # its row against chance and oracle
    assert "<td>relevant_share</td>" in page and "answer_words" in page  # the family x k matrix, the metrics table
    # the closed form is hit_rate's, computed by the registered function over the grouped candidates
    top = f"relevant_in_top@{k}"
    assert report.metrics[top] == report.metrics[f"hit_rate@{k}"]
    assert report.baselines[top]["chance"] == pytest.approx(report.baselines[f"hit_rate@{k}"]["chance"], abs=1e-12)
    assert report.baselines[top]["oracle"] == report.baselines[f"hit_rate@{k}"]["oracle"]
    assert stored["baselines"][top]["chance"] == report.baselines[top]["chance"] and f"<td>{top}</td>" in page
    # the registry places them: after map in the depth families, before abstained among the answers
    assert registry.at_k_families()[-2:] == ("relevant_share", "relevant_in_top")
    assert registry.answer_order().index("answer_words") == registry.answer_order().index("abstained") - 1


def test_unregistered_metrics_are_gone(tmp_path):
    assert "relevant_share" not in registry.at_k_families() and "answer_words" not in registry.answer_order()
    assert "relevant_in_top" not in registry.at_k_families()
