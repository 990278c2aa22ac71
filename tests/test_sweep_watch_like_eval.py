"""`sweep` and `watch` report what `eval` reports: an adaptive answerer at the depths it asks (unless
``ks`` says otherwise), and a corpus in a script the pipeline cannot search said once per run."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

import ragsweep
from ragsweep.report.terminal import sweep_table
from support import PIPELINE as DEFAULT
from support import ZH
from test_component_arguments import ADAPTIVE_APP, _dataset, _write

WARNED = "pipelines/chinese.yaml can"  # the language warning's remedy, in eval's line and in a sweep's


@pytest.fixture(scope="module")
def adaptive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """llm-app's adaptive template in miniature (asks 2, 4, 8, 16 chunks) and a three-document dataset."""
    folder = tmp_path_factory.mktemp("adaptive")
    return _write(folder, ADAPTIVE_APP.format(max_tokens=400, factor=2)), _dataset(folder)


def _history(folder: Path) -> list[dict]:
    path = folder / "history.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_watch_reports_an_adaptive_answerer_at_its_depths(adaptive, tmp_path):
    app, dataset = adaptive
    assert ragsweep.watch(app, dataset, out=tmp_path, name="w", max_updates=0) == 0
    report = json.loads((tmp_path / "w" / "current" / "report.json").read_text())
    assert report["ks"] == [2, 4, 8, 16] and report["top_k"] == 2  # before: 1, 2, 3, 5, 10 (eval's default ks)
    assert ragsweep.watch(app, dataset, out=tmp_path, name="ks", max_updates=0, ks=[1, 3]) == 0
    assert json.loads((tmp_path / "ks" / "current" / "report.json").read_text())["ks"] == [1, 2, 3]


def test_a_sweep_reports_an_adaptive_answerer_at_its_depths(adaptive, tmp_path):
    app, dataset = adaptive
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  question_answerer.max_iterations: [3, 4]\n")
    result = ragsweep.sweep(app, dataset, grid)
    assert result.ks == [2, 4, 8, 16]  # before: the grid's default 1, 3, 5, 10
    by_asks = {c.params["question_answerer.max_iterations"]: c for c in result.configs}
    # each configuration served to its own deepest ask (8 or 16), and missing only beyond it
    assert by_asks[4].served_ks == [2, 4, 8, 16] and by_asks[4].unserved_ks == []
    assert by_asks[3].served_ks == [2, 4, 8] and by_asks[3].unserved_ks == [16]
    assert by_asks[4].metrics["recall@16"] is not None and by_asks[3].metrics["recall@16"] is None
    assert by_asks[4].metrics["recall@8"] == by_asks[3].metrics["recall@8"]
    table = " ".join(sweep_table(result).split())
    assert "deeper than a configuration serves (its top_k; an adaptive answerer: its deepest ask) is missing" in table
    assert ragsweep.sweep(app, dataset, grid, ks=[1, 3]).ks == [1, 3]
    grid.write_text("grid:\n  question_answerer.max_iterations: [4]\nks: [1, 5]\n")
    assert ragsweep.sweep(app, dataset, grid).ks == [1, 5]  # the grid's own ks, when it names them


def test_a_sweep_names_once_the_configurations_that_cannot_search_chinese(tmp_path, capsys):
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  retriever_mode: [bm25]\n  language: [en, zh]\n")
    result = ragsweep.sweep(DEFAULT, ZH, grid, limit=3)
    err = capsys.readouterr().err
    assert len(result.configs) == 2 and err.count(WARNED) == 1, err
    (line,) = [line for line in err.splitlines() if WARNED in line]
    assert "most questions are Chinese or Japanese, which 1 of 2 configurations cannot search" in line
    assert "language=en" in line and "language=zh" not in line and "TantivyBM25Factory" in line


def test_a_watch_says_it_once_not_at_each_update(tmp_path, capsys):
    data = tmp_path / "zh"
    shutil.copytree(ZH, data)
    out = tmp_path / "runs"
    doc = sorted((data / "docs").iterdir())[0]

    def edit_after_the_first_evaluation() -> None:
        deadline = time.monotonic() + 120
        while not _history(out / "w") and time.monotonic() < deadline:
            time.sleep(0.05)
        doc.write_text(doc.read_text(encoding="utf-8") + "\n补充一句。\n", encoding="utf-8")

    editor = threading.Thread(target=edit_after_the_first_evaluation)
    editor.start()
    code = ragsweep.watch(DEFAULT, data, out=out, name="w", max_updates=1, limit=3, poll=0.1,
                          overrides={"retriever_mode": "bm25"})  # fmt: skip
    editor.join()
    err = capsys.readouterr().err
    assert code == 0 and len(_history(out / "w")) == 2
    assert err.count(WARNED) == 1 and "most questions are Chinese or Japanese" in err, err
