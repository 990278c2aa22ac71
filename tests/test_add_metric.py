"""A retrieval metric with its chance level, and an answer metric, added from this file alone: each is
one record registered with the metric registry, and a real evaluation scores it, levels it, and
shows it in report.json and report.html."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragsweep
from ragsweep.metrics import registry
from ragsweep.metrics.answer import AnsweredCase
from ragsweep.metrics.retrieval import Judgement

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "datasets" / "cuad-mini"
PIPELINE = ROOT / "pipelines" / "default.yaml"


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
    registry.register(registry.MetricSpec("answer_words", "answer", order=145, compute=answer_words))
    yield
    registry.unregister("relevant_share")
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
    # the registry places them: after map in the depth families, before abstained among the answers
    assert registry.at_k_families()[-1] == "relevant_share"
    assert registry.answer_order().index("answer_words") == registry.answer_order().index("abstained") - 1


def test_unregistered_metrics_are_gone(tmp_path):
    assert "relevant_share" not in registry.at_k_families() and "answer_words" not in registry.answer_order()
