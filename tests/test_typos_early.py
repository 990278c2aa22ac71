"""Typos are caught before any work: a floor on a metric no run computes, a depth the run does not
score, a knob the pipeline does not have, each named with what it may have meant, before a
document is parsed and without leaving a run folder."""

from __future__ import annotations

import pytest

from ragsweep.cli import main
from support import ROOT

ARGS = [
    "eval",
    "--pipeline",
    str(ROOT / "pipelines" / "default.yaml"),
    "--dataset",
    str(ROOT / "datasets" / "cuad-mini"),
]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--min", "recal@5=0.9"], "--min: recal@5 is not a metric ragsweep computes; did you mean recall@5"),
        (["--min", "recall@7=0.9"], "--min: recall@7 is not scored: the depths scored are 1, 3, 5, 10 (add 7 to --ks)"),
        (["--min", "token_f11=0.1"], "did you mean token_f1"),
        (["--set", "max_tokenz=400"], "no variable $max_tokenz to override (did you mean $max_tokens"),
    ],
)
def test_a_typo_is_named_before_any_work(extra, expected, tmp_path, capsys):
    code = main([*ARGS, "--out", str(tmp_path / "runs"), "--name", "typo", *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err
    assert "parse" not in err and "retrieve:" not in err, "work began before the typo was named"
    assert not (tmp_path / "runs" / "typo").exists()


def test_a_known_floor_at_an_asked_depth_passes_the_check(tmp_path, capsys):
    """The check refuses only what cannot be reported: recall@7 is fine once 7 is a scored depth."""
    from ragsweep.evaluation.loop import scored_ks
    from ragsweep.evaluation.run import check_floor_names
    from ragsweep.pipeline.config import PipelineConfig

    config = PipelineConfig.load(ROOT / "pipelines" / "default.yaml")
    check_floor_names({"recall@7": 0.5, "judge_correct": 0.5}, scored_ks([1, 7], config.top_k), [])
