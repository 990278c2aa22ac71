"""`--executor ray` on a real local Ray cluster (a head node and a second node on this machine, one worker
process each): the same CaseResults, report.json metrics and sweep.json as in one process; a worker
SIGKILLed mid-task is retried by Ray; a driver SIGKILLed mid-run resumes with ``--resume``.

Every run asks Pathway again (``fresh_retrieval``): the lists a Ray run scores are served by the
workers' own DocumentStores, not read from what the in-process run cached.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import ray
from ray.cluster_utils import Cluster

import ragsweep
from ragsweep.execution.ray_executor import worker_env
from ragsweep.tuning.records import TuneReport
from support import MINI, PIPELINE, ROOT
from usearch_pipeline import write_usearch_pipeline

TASK_TITLE = "ray::retrieve_shard"  # a worker's process title while it runs a shard task
GRID = """\
grid:
  chunking:
    - {min_tokens: 100, max_tokens: 200}
    - {min_tokens: 250, max_tokens: 600}
  retriever_mode: [bm25, hybrid]
baseline: {min_tokens: 250, max_tokens: 600, retriever_mode: hybrid}
objectives: [recall@k, mrr@k, ndcg@k]
ks: [1, 3, 5]
"""
# a tune of two configurations (bm25, knn): Ray runs both trials in one batch, one per worker
TUNE_SPACE = """\
grid:
  chunking: [{min_tokens: 250, max_tokens: 600}]
  retriever_mode: [bm25, knn]
  chunk_header: [title]
  top_k: [5]
baseline: {min_tokens: 250, max_tokens: 600, retriever_mode: bm25, chunk_header: title, top_k: 5}
objectives: [ndcg@5]
ks: [5]
"""
# what differs between any two runs: times, memory, how many texts this process embedded, where it ran
VOLATILE = {
    "seconds", "index_run_seconds", "latency_ms_per_query", "embedded_texts", "rss_mb", "rss_mb_before",
    "peak_rss_mb",
}  # fmt: skip


@pytest.fixture(scope="module")
def cluster():
    """Two Ray nodes on this machine, one CPU (one worker process) each; everything it started is stopped after."""
    temp = tempfile.mkdtemp(prefix="rsray-", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    # Ray writes the head's address to /tmp/ray/ray_current_cluster whatever temp_dir says, and does
    # not make that folder: on a fresh machine it is missing
    os.makedirs("/tmp/ray", exist_ok=True)
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "temp_dir": temp})
    try:
        nodes.add_node(num_cpus=1)
        nodes.wait_for_nodes()
        ray.init(address=nodes.address, runtime_env={"env_vars": worker_env()}, log_to_driver=False)
        yield nodes
    finally:
        ray.shutdown()
        nodes.shutdown()


def _cases(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines() if line.strip()]


def _metrics(run_dir: Path) -> dict[str, Any]:
    report = json.loads((run_dir / "report.json").read_text())
    return {"metrics": report["metrics"], "intervals": report["intervals"], "baselines": report["baselines"]}


def _split_scores(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[float]]:
    """The case lines without their hits' scores, and the scores."""
    scores = [h.pop("score") for row in rows for h in row["hits"]]
    return rows, scores


def _sweep(sweep_dir: Path) -> dict[str, Any]:
    data = json.loads((sweep_dir / "sweep.json").read_text())
    data.pop("manifest")
    data.pop("pareto")  # a front of recall against measured latency: timing, like the fields below
    data["configs"] = [{k: v for k, v in c.items() if k not in VOLATILE} for c in data["configs"]]
    return data


def _mini_with_more_documents(root: Path) -> Path:
    """cuad-mini with an HTML page (parsed by Docling) and a PDF that is not one (skipped with its reason)."""
    dataset = root / "cuad-mini"
    shutil.copytree(MINI, dataset)
    shutil.copy(ROOT / "tests" / "fixtures" / "corpus" / "jupiter.html", dataset / "docs")
    (dataset / "docs" / "broken.pdf").write_bytes(b"%PDF-1.4\n" + b"not a pdf body " * 40)
    return dataset


def _corpus_report(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "report.json").read_text())["manifest"]["corpus"]


def _parse_cache_at(monkeypatch, folder: Path) -> None:
    """The driver's parse cache alone in ``folder`` (cold); the other caches stay where they are."""
    import ragsweep.pipeline.corpus as corpus_module

    monkeypatch.setattr(corpus_module, "default_cache_dir", lambda: folder)


def test_eval_on_ray_equals_one_process(cluster, tmp_path, monkeypatch):
    dataset = _mini_with_more_documents(tmp_path)
    _parse_cache_at(monkeypatch, tmp_path / "parse-local")
    local = ragsweep.evaluate(PIPELINE, dataset, out=tmp_path, name="local", fresh_retrieval=True, validate=False)
    _parse_cache_at(monkeypatch, tmp_path / "parse-ray")
    on_ray = ragsweep.evaluate(
        PIPELINE, dataset, out=tmp_path, name="ray", fresh_retrieval=True, validate=False, executor="ray"
    )
    assert len(local.cases) == 123
    assert [c.model_dump() for c in on_ray.cases] == [c.model_dump() for c in local.cases]
    assert _cases(tmp_path / "ray") == _cases(tmp_path / "local")
    assert _metrics(tmp_path / "ray") == _metrics(tmp_path / "local")
    report = _corpus_report(tmp_path / "ray")
    assert report == _corpus_report(tmp_path / "local")
    assert report["documents"] == 4 and [s["doc_id"] for s in report["skipped"]] == ["broken.pdf"]
    manifest = json.loads((tmp_path / "ray" / "report.json").read_text())["manifest"]
    assert manifest["retrieval"]["asked_pathway"] > 0
    parsed = [t for t in manifest["executor"]["tasks"] if t["stage"] == "parse"]
    assert sorted(t["doc_id"] for t in parsed) == sorted(p.name for p in (dataset / "docs").iterdir())
    assert os.getpid() not in {t["pid"] for t in parsed}  # parsed on the workers, not here


def test_parse_tasks_give_the_corpus_of_one_process_and_fill_the_parse_cache(cluster, tmp_path):
    from ragsweep.execution.ray_executor import RayExecutor
    from ragsweep.pipeline.corpus import parse_corpus

    docs = _mini_with_more_documents(tmp_path) / "docs"
    local = parse_corpus(docs, cache_dir=tmp_path / "local")
    executor = RayExecutor(owns_connection=False)
    on_ray = parse_corpus(docs, cache_dir=tmp_path / "ray", dispatch=executor.dispatch)

    def content(corpus: Any) -> dict[str, Any]:
        return corpus.model_dump(exclude={"documents": {"__all__": {"seconds"}}})

    assert content(on_ray) == content(local)
    assert [s.doc_id for s in on_ray.skipped] == ["broken.pdf"] and "parse failed" in on_ray.skipped[0].reason
    assert len(executor.tasks) == 5 and {t["stage"] for t in executor.tasks} == {"parse"}
    again = parse_corpus(docs, cache_dir=tmp_path / "ray", dispatch=executor.dispatch)
    assert all(d.cached for d in again.documents) and len(executor.tasks) == 6  # only the broken one again
    assert content(again) == content(parse_corpus(docs, cache_dir=tmp_path / "local"))


def test_sweep_of_four_configurations_on_ray_equals_one_process(cluster, tmp_path, capfd):
    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID)
    common: dict[str, Any] = {"limit": 40, "fresh_retrieval": True}
    local = ragsweep.sweep(PIPELINE, MINI, grid, out=tmp_path / "local", name="s", **common)
    capfd.readouterr()
    on_ray = ragsweep.sweep(PIPELINE, MINI, grid, out=tmp_path / "ray", name="s", executor="ray", **common)
    said = capfd.readouterr().err.splitlines()
    # every index group's tasks are on the cluster before the driver waits for the first group's lists
    first_group = next(i for i, line in enumerate(said) if line.startswith("[1/4] index"))
    assert sum(line == "ray: 40 case(s) in 2 task(s)" for line in said[:first_group]) == 4
    assert len(local.configs) == 4 and len({c.index_key for c in local.configs}) == 4
    assert _sweep(tmp_path / "ray" / "s") == _sweep(tmp_path / "local" / "s")
    for config in local.configs:
        path = Path("configs") / config.id / "cases.jsonl"
        ray_rows, ray_scores = _split_scores(_cases(tmp_path / "ray" / "s" / path.parent))
        local_rows, local_scores = _split_scores(_cases(tmp_path / "local" / "s" / path.parent))
        assert ray_rows == local_rows  # every list, rank, relevance judgement and metric
        # a BM25 score is tantivy's float32: in one process it can move by one unit in the last place
        # after other indexes were built there (a fresh process gives the Ray worker's value)
        assert ray_scores == pytest.approx(local_scores, rel=1e-6)
    assert on_ray.best == local.best


# a tune's options both ways: the grid sampler's seed fixes which trial gets which configuration
TUNE: dict[str, Any] = {"trials": 2, "sampler": "grid", "seed": 0, "limit": 40, "fresh_retrieval": True}


@pytest.fixture(scope="module")
def tune_space(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("space") / "space.yaml"
    path.write_text(TUNE_SPACE)
    return path


@pytest.fixture(scope="module")
def local_tune(tune_space: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[TuneReport, Path]:
    """The tune in one process, one trial at a time (Optuna's optimize()): what the Ray runs must equal."""
    out = tmp_path_factory.mktemp("tune-local")
    return ragsweep.tune(PIPELINE, MINI, tune_space, out=out, name="t", **TUNE), out / "t"


def _counted_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of each batch of trials evaluated side by side from now on (none in a one-process run)."""
    from ragsweep.tuning import parallel

    batches: list[int] = []
    run_batch = parallel.run_batch

    def counted(trials: Any, batch: Any) -> Any:
        batches.append(len(batch))
        return run_batch(trials, batch)

    monkeypatch.setattr(parallel, "run_batch", counted)
    return batches


def _trials(report: TuneReport) -> list[tuple[Any, ...]]:
    return [(t.number, t.config_id, t.params, t.state, t.values) for t in report.trials]


def _tune(run_dir: Path) -> dict[str, Any]:
    """tune.json without what differs between any two runs: each trial's seconds (a Ray trial's are its batch's)."""
    data = json.loads((run_dir / "tune.json").read_text())
    for trial in data["trials"]:
        trial.pop("seconds")
    return data


def test_tune_on_ray_has_the_trials_of_one_process(cluster, tune_space, local_tune, tmp_path, capfd, monkeypatch):
    local, local_dir = local_tune
    batches = _counted_batches(monkeypatch)
    capfd.readouterr()
    on_ray = ragsweep.tune(PIPELINE, MINI, tune_space, out=tmp_path, name="t", executor="ray", **TUNE)
    said = capfd.readouterr().err.splitlines()
    # both trials in one batch (one per worker), each index's cases sharded across the two workers
    assert batches == [2]
    assert sum(line == "ray: 40 case(s) in 2 task(s)" for line in said) == 2, said
    assert len({t.config_id for t in local.trials}) == 2 and {t.state for t in local.trials} == {"complete"}
    assert _trials(on_ray) == _trials(local)  # config ids, parameters, states, objective values
    assert on_ray.best == local.best and local.best is not None
    assert _tune(tmp_path / "t") == _tune(local_dir)
    for trial in local.trials:
        folder = Path("configs") / trial.config_id
        ray_rows, ray_scores = _split_scores(_cases(tmp_path / "t" / folder))
        local_rows, local_scores = _split_scores(_cases(local_dir / folder))
        assert ray_rows and ray_rows == local_rows
        assert ray_scores == pytest.approx(local_scores, rel=1e-6)  # tantivy's float32: see the sweep test
        ray_result = json.loads((tmp_path / "t" / folder / "result.json").read_text())
        local_result = json.loads((local_dir / folder / "result.json").read_text())
        assert ray_result["metrics"] == local_result["metrics"]
        assert ray_result["intervals"] == local_result["intervals"]


def test_tune_on_ray_stopped_after_a_trial_resumes_its_study(cluster, tune_space, local_tune, tmp_path, monkeypatch):
    local, local_dir = local_tune
    batches = _counted_batches(monkeypatch)
    first = ragsweep.tune(PIPELINE, MINI, tune_space, out=tmp_path, name="t", executor="ray", **{**TUNE, "trials": 1})
    assert _trials(first) == _trials(local)[:1]
    resume = str(tmp_path / "t")
    resumed = ragsweep.tune(PIPELINE, MINI, tune_space, out=tmp_path, resume=resume, executor="ray", **TUNE)
    assert batches == [1, 1]  # a batch is never larger than the trials left: the stored trial is not run again
    assert _trials(resumed) == _trials(local)
    assert resumed.best == local.best
    assert _tune(tmp_path / "t") == _tune(local_dir)


def test_a_document_that_kills_its_parse_worker_every_try_is_skipped_alone(cluster, tmp_path):
    from ragsweep.execution.ray_executor import RayExecutor
    from ragsweep.pipeline.corpus import CRASHED, convert, parse_corpus

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("A document that parses.\n")
    (docs / "b.txt").write_text("A document whose parser process dies.\n")

    def parse(data: bytes, fmt: str, doc_id: str, standard_pdf: bool) -> Any:
        if doc_id == "b.txt":
            os._exit(1)  # the worker process dies, as on a crash in native code
        return convert(data, fmt, doc_id, standard_pdf)

    dispatch = RayExecutor(owns_connection=False).dispatch
    corpus = parse_corpus(docs, cache_dir=tmp_path / "cache", parse_fn=parse, dispatch=dispatch)
    assert [d.doc_id for d in corpus.documents] == ["a.txt"]
    assert [(s.doc_id, s.reason) for s in corpus.skipped] == [("b.txt", CRASHED)]


def _task_pids() -> list[int]:
    """Worker processes running a shard task now (Ray titles a busy worker ``ray::<task>``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(TASK_TITLE.encode()):
                pids.append(int(entry.name))
        except OSError:
            continue  # ended while listed
    return pids


def test_worker_killed_mid_task_is_retried_and_results_are_unchanged(cluster, tmp_path):
    local = ragsweep.evaluate(PIPELINE, MINI, limit=60, fresh_retrieval=True)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["report"] = ragsweep.evaluate(PIPELINE, MINI, limit=60, fresh_retrieval=True, executor="ray")
        except BaseException as err:  # the main thread reports it
            outcome["error"] = err

    thread = threading.Thread(target=run)
    thread.start()
    killed = None
    deadline = time.monotonic() + 300
    while killed is None and thread.is_alive() and time.monotonic() < deadline:
        pids = _task_pids()
        if pids:
            killed = pids[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.01)
    thread.join(timeout=600)
    assert killed is not None, "no worker was seen running a shard task"
    assert "error" not in outcome, outcome.get("error")
    assert [c.model_dump() for c in outcome["report"].cases] == [c.model_dump() for c in local.cases]


def _cli(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "ragsweep.cli", *args]


def test_driver_killed_mid_run_resumes_on_ray(cluster, tmp_path, monkeypatch):
    from ragsweep.cli import main

    common = ["eval", "--dataset", str(MINI), "--out", str(tmp_path), "--fresh-retrieval"]
    on_ray = ["--executor", "ray", "--ray-address", cluster.address]
    monkeypatch.chdir(ROOT)  # the one-process run to compare with: the command's code path, here, as the driver's
    started = time.monotonic()
    assert main([*common, "--name", "whole"]) == 0
    assert time.monotonic() - started < 600, "the one-process run took over 600 s"
    proc = subprocess.Popen(_cli([*common, "--name", "cut", *on_ray]), cwd=ROOT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline and not _task_pids():
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before its driver could be killed mid-task"
    proc.send_signal(signal.SIGKILL)  # the driver, while its shard tasks run on the cluster
    proc.wait(timeout=60)
    cut = tmp_path / "cut"
    assert not (cut / "report.json").exists()
    resumed = subprocess.run(
        _cli([*common, "--resume", str(cut), *on_ray]), cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "ray: 123 case(s) in 2 task(s)" in resumed.stderr
    assert _cases(cut) == _cases(tmp_path / "whole")
    assert _metrics(cut) == _metrics(tmp_path / "whole")


def test_embedding_tasks_ask_for_a_gpu_only_when_the_embedder_may_use_one_and_the_cluster_has_one():
    from ragsweep.execution.ray_executor import wants_gpu
    from ragsweep.pipeline.config import PipelineConfig

    def config(device: str) -> PipelineConfig:
        return PipelineConfig.load(PIPELINE, {"embedder_device": device})

    assert wants_gpu(config("auto"), 1) and wants_gpu(config("cuda"), 1) and wants_gpu(config("cuda:1"), 2)
    assert not wants_gpu(config("cpu"), 1) and not wants_gpu(config("auto"), 0) and not wants_gpu(config("cuda"), 0)


def test_a_ray_address_without_the_ray_executor_is_refused_before_any_work(tmp_path):
    from ragsweep.execution.base import ExecutorError

    with pytest.raises(ExecutorError, match="--ray-address: only with --executor ray"):
        ragsweep.evaluate(PIPELINE, MINI, limit=1, ray_address="127.0.0.1:6379")


def test_a_configuration_whose_index_fails_in_a_task_is_listed_failed_and_the_rest_ranked(cluster, tmp_path):
    """A USearch index sized 768 over MiniLM's 384-wide vectors fails inside a Ray task: the driver gets the
    component's own one-line error, the sweep lists that configuration failed (never ranked) and scores the
    other, as in one process."""
    pipeline = write_usearch_pipeline(tmp_path / "usearch.yaml", 768)
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  knn.dimensions: [768, 384]\nbaseline: {knn.dimensions: 384}\nks: [1, 3]\n")
    common: dict[str, Any] = {"limit": 4, "fresh_retrieval": True, "overrides": {"retriever_mode": "knn"}}
    on_ray = ragsweep.sweep(pipeline, MINI, grid, out=tmp_path / "ray", name="s", executor="ray", **common)
    (failed,) = on_ray.failed
    assert failed.params == {"knn.dimensions": 768}
    assert "returns vectors 384 wide, but its UsearchKnnFactory expects 768" in failed.reason, failed.reason
    assert [c.params for c in on_ray.configs] == [{"knn.dimensions": 384}]
    local = ragsweep.sweep(pipeline, MINI, grid, out=tmp_path / "local", name="s", **common)
    assert [f.reason for f in local.failed] == [failed.reason]
    assert on_ray.best == local.best
