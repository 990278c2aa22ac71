"""The light sweep folder (sweep layout 4): one chunk table for the whole sweep, each chunk's text
once; configs/<id>/cases.jsonl compact lines that expand back to exactly the lines a sweep of
layout 3 wrote. compare, report.html and MLflow read both layouts; --resume refuses the old one;
a sweep killed while appending to the chunk table resumes to the same result."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import ragsweep.evaluation.runfolder as runfolder_module
from ragsweep.commands.sweep import SweepOptions, run_sweep
from ragsweep.core.errors import RunError
from ragsweep.core.hits import chunk_id
from ragsweep.evaluation.runfolder import SWEEP_LAYOUT_VERSION, JsonlWriter
from ragsweep.evaluation.storage import expand_lines
from ragsweep.report.compare import compare_runs
from ragsweep.report.html import write_html_report
from ragsweep.report.runs import RunFolderError, read_cases, read_chunk_texts
from support import ROOT

GRID = (
    "grid:\n  top_k: [1, 3]\n  retriever_mode: [bm25]\nbaseline: {top_k: 3, retriever_mode: bm25}\n"
    "objectives: [recall@k, mrr@k]\nks: [1, 3]\n"
)


def _options(tmp: Path, **kw) -> SweepOptions:
    return SweepOptions(
        pipeline=str(ROOT / "pipelines" / "default.yaml"),
        dataset=str(ROOT / "datasets" / "cuad-mini"),
        grid=str(tmp / "grid.yaml"),
        split="dev",
        limit=12,  # the first contract's questions: at top_k 1 they do not reach every chunk their top 3 do
        progress=False,
        **kw,
    )


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """A sweep written by this code (``new``) and the same sweep as layout 3 wrote it (``old``: every
    line in full, no chunk table, layout 3 in sweep-state.json; the lines are the very records this
    run computed, since two runs of BM25 may differ in a score's last float bits); ``appended``:
    (table size before, lines written) of each configuration's appends to the new sweep's chunk table
    (one per case result), in order."""
    tmp = tmp_path_factory.mktemp("sweep-layout")
    (tmp / "grid.yaml").write_text(GRID)
    appended, full_lines, current, appends = [], {}, [], []
    real_append, real_compact, real_write_json = (
        runfolder_module.append_chunks,
        runfolder_module.compact,
        runfolder_module.write_json,
    )

    def recording_append(path, hits, known):
        before = path.stat().st_size if path.exists() else 0
        written = real_append(path, hits, known)
        appends.append((before, written))
        return written

    def recording_compact(line):  # the line the code before layout 4 wrote as it was
        current.append(json.loads(json.dumps(line)))
        return real_compact(line)

    def recording_write_json(path, data):
        if path.name == "result.json":  # a configuration is done: its lines are the ones compacted since
            full_lines[path.parent.name] = list(current)
            current.clear()
            appended.append((appends[0][0], sum(n for _, n in appends)))
            appends.clear()
        return real_write_json(path, data)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runfolder_module, "append_chunks", recording_append)
        mp.setattr(runfolder_module, "compact", recording_compact)  # where the case files call it
        mp.setattr(runfolder_module, "write_json", recording_write_json)
        new, _ = run_sweep(_options(tmp, out=str(tmp / "new"), name="s"))
    old = tmp / "old" / new.name
    shutil.copytree(new, old)
    (old / "chunks.jsonl").unlink()
    assert sorted(full_lines) == sorted(p.name for p in (old / "configs").iterdir())
    for cid, lines in full_lines.items():
        (old / "configs" / cid / "cases.jsonl").unlink()
        with JsonlWriter(old / "configs" / cid / "cases.jsonl") as writer:
            for line in lines:
                writer.write(line)
    state = json.loads((old / "sweep-state.json").read_text())
    (old / "sweep-state.json").write_text(json.dumps({**state, "layout": 3}))
    return tmp, new, old, appended


def test_each_chunk_text_is_stored_once_and_the_lines_expand_to_the_old_ones(sweeps):
    _, new, old, _ = sweeps
    assert json.loads((new / "sweep-state.json").read_text())["layout"] == SWEEP_LAYOUT_VERSION == 4
    assert json.loads((old / "sweep-state.json").read_text())["layout"] == 3 and not (old / "chunks.jsonl").exists()
    rows = _lines(new / "chunks.jsonl")
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))  # each chunk once, however many configurations served it
    assert all(r["id"] == chunk_id(r["doc_id"], r["start"], r["end"]) and r["text"] for r in rows)  # eval's ids
    table = read_chunk_texts(new / "configs" / "any")
    assert table == {r["id"]: r["text"] for r in rows}

    cids = sorted(p.name for p in (new / "configs").iterdir())
    assert cids == sorted(p.name for p in (old / "configs").iterdir()) and len(cids) == 2
    referenced: dict[str, set[str]] = {}
    for cid in cids:
        stored = _lines(new / "configs" / cid / "cases.jsonl")
        written_before = _lines(old / "configs" / cid / "cases.jsonl")
        assert stored and not any("text" in h for line in stored for h in line.get("hits") or [])
        referenced[cid] = {chunk_id(h["doc_id"], h["start"], h["end"]) for line in stored for h in line.get("hits", [])}
        # each compact line, expanded with the table, is exactly the line layout 3 wrote (hit texts included)
        assert [expand_lines([line], table)[0] for line in stored] == written_before
        # and every reader sees the same records in both layouts
        assert read_cases(new / "configs" / cid / "cases.jsonl") == read_cases(old / "configs" / cid / "cases.jsonl")
    assert set(ids) == set().union(*referenced.values())  # the table holds what the lines refer to, nothing else
    shared = set.intersection(*referenced.values())
    assert shared and len(ids) < sum(len(r) for r in referenced.values())  # a shared chunk is one line
    assert _size(new / "configs") + (new / "chunks.jsonl").stat().st_size < _size(old / "configs") / 2


def test_compare_and_report_html_read_both_layouts(sweeps, tmp_path):
    _, new, old, _ = sweeps
    a, b = sorted(p.name for p in (new / "configs").iterdir())
    got = compare_runs(new / "configs" / a, new / "configs" / b)
    want = compare_runs(old / "configs" / a, old / "configs" / b)
    assert got.n_common == want.n_common == 12
    assert [m.model_dump() for m in got.metrics] == [m.model_dump() for m in want.metrics]
    same = compare_runs(old / "configs" / a, new / "configs" / a / "cases.jsonl")  # across layouts
    assert all(m.delta in (0, None) for m in same.metrics)

    # report.html: the sweep and the same sweep with layout-3 lines give the same page
    pages = {}
    for folder in (new, old):
        write_html_report(folder)
        pages[folder] = (folder / "report.html").read_text(encoding="utf-8")
    assert pages[new] == pages[old]

    # a layout-4 configuration whose chunk table is gone: a clear error naming both places looked at
    broken = tmp_path / "broken" / new.name
    shutil.copytree(new, broken)
    (broken / "chunks.jsonl").unlink()
    with pytest.raises(
        RunFolderError,
        match=r"refers to chunks by id but chunks.jsonl is missing .*"
        r"configs/.*chunks.jsonl and .*broken/s/chunks.jsonl",
    ):
        read_cases(broken / "configs" / a / "cases.jsonl")


def test_mlflow_logs_a_light_sweep_readably(sweeps, tmp_path):
    from mlflow.tracking import MlflowClient

    from ragsweep.report.mlflow_log import log_to_mlflow

    _, new, _, _ = sweeps
    run_dir = tmp_path / "runs" / new.name
    shutil.copytree(new, run_dir)
    uri = (tmp_path / "store").as_uri()
    parent_id = log_to_mlflow(run_dir, tracking_uri=uri)
    client = MlflowClient(tracking_uri=uri)
    assert "run/chunks.jsonl" in {f.path for f in client.list_artifacts(parent_id, "run")}
    children = client.search_runs(
        [client.get_run(parent_id).info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'"
    )
    assert len(children) == 2
    for child in children:
        cid = child.data.tags["ragsweep.config_id"]
        assert {"run/cases.jsonl", "run/result.json", "run/chunks.jsonl"} <= {
            f.path for f in client.list_artifacts(child.info.run_id, "run")
        }
        # the child's run/ artifacts read like an eval run folder: its own chunks, the same records
        got = Path(client.download_artifacts(child.info.run_id, "run", str(tmp_path / "dl" / cid)))
        assert read_cases(got / "cases.jsonl") == read_cases(run_dir / "configs" / cid / "cases.jsonl")
        wanted = {
            chunk_id(h["doc_id"], h["start"], h["end"])
            for line in _lines(got / "cases.jsonl")
            for h in line.get("hits", [])
        }
        assert {r["id"] for r in _lines(got / "chunks.jsonl")} == wanted


def test_resume_refuses_an_old_layout_sweep(sweeps):
    tmp, _, old, _ = sweeps
    with pytest.raises(
        RunError,
        match=r"older ragsweep \(run-folder layout 3; this one writes layout 4\).*"
        r"start a new run \(compare and report.html still read it\)",
    ):
        run_sweep(_options(tmp, out=str(tmp / "old"), resume=str(old)))
    state = json.loads((old / "sweep-state.json").read_text())
    (old / "sweep-state.json").write_text(json.dumps({k: v for k, v in state.items() if k != "layout"}))
    try:
        with pytest.raises(RunError, match=r"run-folder layout 1;"):  # the first sweeps wrote no number
            run_sweep(_options(tmp, out=str(tmp / "old"), resume=str(old)))
    finally:
        (old / "sweep-state.json").write_text(json.dumps(state))


def test_a_sweep_killed_while_appending_chunks_resumes_to_the_same_result(sweeps, tmp_path, capsys):
    _, new, _, appended = sweeps
    last = max((new / "configs").iterdir(), key=lambda p: (p / "result.json").stat().st_mtime_ns).name
    before, written = appended[-1]
    assert written > 0  # the last configuration served chunks no earlier one had
    cut = tmp_path / "cut"
    shutil.copytree(new, cut)
    # killed in the middle of its first new chunk line: the line is torn, its cases and result never written
    table = (cut / "chunks.jsonl").read_bytes()
    end_of_first = table.index(b"\n", before) + 1
    (cut / "chunks.jsonl").write_bytes(table[: before + (end_of_first - before) // 2])
    (cut / "configs" / last / "result.json").unlink()
    (cut / "configs" / last / "cases.jsonl").unlink()
    (tmp_path / "grid.yaml").write_text(GRID)
    capsys.readouterr()
    _, report = run_sweep(_options(tmp_path, out=str(tmp_path), resume=str(cut)))
    err = capsys.readouterr().err
    assert "1 configuration(s) already done" in err and "unreadable line(s)" in err
    assert (cut / "chunks.jsonl.bad-lines").exists()
    ids = [r["id"] for r in _lines(cut / "chunks.jsonl")]
    assert len(ids) == len(set(ids)) and set(ids) == {r["id"] for r in _lines(new / "chunks.jsonl")}
    for cid in (p.name for p in (new / "configs").iterdir()):
        again, whole_cases = (read_cases(folder / "configs" / cid / "cases.jsonl") for folder in (cut, new))
        if cid == last:  # computed again: BM25 scores may differ in their last float bits, nothing else
            for case in (*again, *whole_cases):
                for hit in case["hits"]:
                    hit.pop("score")
        assert again == whole_cases
    whole = json.loads((new / "sweep.json").read_text())
    assert {c["id"]: c["metrics"] for c in whole["configs"]} == {c.id: c.metrics for c in report.configs}
