"""``<component>.<argument>`` overrides (a grid axis or ``--set``) and grid values read from a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsweep.core.errors import ConfigError
from ragsweep.evaluation.sweep import SweepGrid, config_id
from ragsweep.pipeline.config import PipelineConfig

APPS = Path(__file__).resolve().parent / "fixtures" / "apps"


def test_an_argument_of_the_question_answerer_is_set_and_the_index_kept():
    base = PipelineConfig.load(APPS / "parity_base.yaml")
    changed = base.with_overrides({"question_answerer.search_topk": 2, "llm.model": "gpt-4.1-mini"})
    assert (base.top_k, changed.top_k) == (4, 2)
    assert changed.hash != base.hash and changed.index_key == base.index_key
    qa = changed.question_answerer_ref()
    assert qa is not None and qa[1].kwargs["search_topk"] == 2
    assert base.question_answerer_ref()[1].kwargs["search_topk"] == 4, "the loaded file's node is not changed"
    from pathway.internals.yaml_loader import Variable

    assert changed.raw[Variable("llm")].kwargs["model"] == "gpt-4.1-mini"


def test_the_adaptive_answerers_own_arguments():
    base = PipelineConfig.load(APPS / "parity_adaptive.yaml")
    params = {
        "question_answerer.n_starting_documents": 2,
        "question_answerer.factor": 3,
        "question_answerer.max_iterations": 2,
    }
    kwargs = base.with_overrides(params).question_answerer_ref()[1].kwargs
    assert {k: kwargs[k] for k in ("n_starting_documents", "factor", "max_iterations")} == {
        "n_starting_documents": 2, "factor": 3, "max_iterations": 2,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("question_answerr.search_topk", "did you mean question_answerer?"),
        ("question_answerer.search_top_k", "takes no argument 'search_top_k'"),
    ],
)
def test_a_bad_component_argument_is_one_message(name, said):
    with pytest.raises(ConfigError, match=r"parity_base\.yaml: ") as err:
        PipelineConfig.load(APPS / "parity_base.yaml").with_overrides({name: 3})
    assert said in str(err.value)


def test_a_grid_value_from_a_file_and_its_id(tmp_path):
    (tmp_path / "p.txt").write_text("Context: {context}\nQ: {query}\n")
    (tmp_path / "grid.yaml").write_text("grid:\n  prompt_template: [{file: p.txt}, 'short {context} {query}']\n")
    grid = SweepGrid.load(tmp_path / "grid.yaml")
    values = [c["prompt_template"] for c in grid.configurations()]
    assert values == ["Context: {context}\nQ: {query}\n", "short {context} {query}"]
    ids = [config_id(c) for c in grid.configurations()]
    assert "\n" not in ids[0] and ids[0].startswith("prompt_template=text")
    (tmp_path / "bad.yaml").write_text("grid:\n  prompt_template: [{file: nope.txt}]\n")
    with pytest.raises(ConfigError, match="prompt_template: {file: nope.txt}: no file"):
        SweepGrid.load(tmp_path / "bad.yaml")


def test_a_plain_name_that_is_a_components_argument_is_pointed_at_it():
    with pytest.raises(ConfigError, match=r"did you mean the argument question_answerer\.search_topk\?"):
        PipelineConfig.load(APPS / "parity_base.yaml").with_overrides({"search_topk": 2})
