"""Every script in benchmarks/ runs: ``python benchmarks/<script> --smoke`` in a subprocess.

A smoke run is the script's own code path (real Pathway, real Docling, the real embedder) on
tiny inputs shipped in the repository (``datasets/cuad-mini``, ``tests/fixtures/...``), with no
LLM and nothing from outside the repository. Its timings are not measurements and nothing here
asserts on them: each test checks the exit status, the script's result lines and its final
``JSON {...}`` line, so a benchmark that no longer runs against the code fails here instead of
rotting unseen. A new script in benchmarks/ needs an entry in ``EXPECTED``.

The subprocesses inherit this session's environment (tests/conftest.py): its private
``RAGSWEEP_CACHE_DIR``, shared by the scripts that do not make their own cold cache (the first
one parses and embeds cuad-mini, the later ones reuse it), and ``RAGSWEEP_SERVED_CACHE=0``, so
every query is asked of Pathway.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from support import ROOT

BENCHMARKS = ROOT / "benchmarks"
TIMEOUT_S = 300

# script -> lines its smoke output must hold (stdout); the order is the order the tests run in:
# api_speed.py first fills the session's cache with cuad-mini's parse and embeddings
EXPECTED: dict[str, list[str]] = {
    "api_speed.py": ["SMOKE RUN", "first call, warm caches", "call 2", "RESULT later calls: mean"],
    "score_profile.py": [
        "SMOKE RUN",
        "RESULT set-up",
        "RESULT answer+score, first pass:",
        "RESULT answer+score, second pass:",
    ],
    "scoped_queries.py": [
        "SMOKE RUN",
        "RESULT bm25      2 documents",
        "RESULT knn       3 documents",
        "RESULT knn: per-query",
    ],
    "generated_vs_labelled.py": ["SMOKE RUN", "human-labelled cases on them:", "Kendall tau-b (recall@k):"],
    "eval_speed.py": ["SMOKE RUN", "RESULT after cold:", "RESULT after warm:", "RESULT after: warm / cold wall"],
    "parse_parallel.py": [
        "SMOKE RUN",
        "RESULT serial (1 process):",
        "RESULT parallel (2 workers):",
        "same texts and skips: True",
    ],
    "scale.py": [
        "SMOKE RUN",
        "RESULT full dataset: 3 contracts",
        "RESULT point 1 contracts:",
        "RESULT point 3 contracts:",
        "RESULT peak RSS:",
        "RESULT linearity (1 -> 3 contracts):",
    ],
    "pathway_workers.py": [
        "SMOKE RUN",
        "RESULT threads-1: 80 queries",
        "RESULT threads-2: 80 queries",
        "RESULT spawn-2: 80 queries",
        "same lists as threads-1: True",
    ],
    "ray_scale.py": [
        "SMOKE RUN",
        "RESULT eval: one process",
        "RESULT eval: same case lines: True; same report.json metrics: True",
        "RESULT eval parse tasks: 3",
        "RESULT eval retrieve tasks: 2",
        "RESULT eval projection  4 machine(s):",
    ],
    "quality_levers.py": [
        "SMOKE RUN",
        "| cuad-mini test | recall@k [95% CI] | chance | recall@1500tok [95% CI] |",
        "RESULT cuad-mini: chosen on dev",
        "RESULT cuad-mini: 2 configurations on test",
    ],
    "same_numbers.py": [
        "SMOKE RUN",
        "RESULT metrics: 46 of 46 equal",
        "RESULT cases.jsonl: 8 lines, byte-identical: True",
        "RESULT base HEAD vs this checkout on datasets/cuad-mini: the same numbers",
    ],
    "same_lists.py": [
        "SMOKE RUN",
        "RESULT runs:",
        "RESULT hybrid: 120 of 120 lists identical (0 case(s) differ)",
        "RESULT datasets/cuad-mini (hybrid): the same lists",
    ],
    "sweep_vs_server.py": [
        "SMOKE RUN",
        "(a) ragsweep sweep, cold cache [s]",
        "(b) [1/1]",
        "RESULT ratio (b)/(a cold)",
        "RESULT ratio (a cold)/unavoidable",
        "RESULT ratio warm/cold",
    ],
    "warm_start.py": [
        "SMOKE RUN",
        "RESULT pytest cold",
        "RESULT pytest warm, result cache: median",
        "RESULT pytest warm, evaluated again (--ragsweep-fresh): median",
        "RESULT imports, pytest warm, result cache:",
        "RESULT evaluate() warm, this checkout: median",
        "RESULT evaluate() warm, base HEAD: median",
        "RESULT   stages [s]:",
    ],
    "pdf_reword.py": ["SMOKE RUN", "RESULT reworded"],
    "unreachable_endpoint.py": ["SMOKE RUN", "RESULT llm: rc 2 after", "RESULT app embedder: rc 2 after"],
    "watch_updates.py": [
        "SMOKE RUN",
        "RESULT warm full eval (a process, the same dataset):",
        "RESULT update modify: evaluation median",
        "RESULT update delete: evaluation median",
        "RESULT update add: evaluation median",
    ],
    "tune_vs_grid.py": [
        "SMOKE RUN",
        "RESULT cuad-mini grid: 4 configurations, best recall@5",
        "RESULT cuad-mini tune seed 0: within the CI after",
    ],
    "app_parse.py": [
        "SMOKE RUN",
        "RESULT documents: 3 contracts as DOCX and HTML",
        "RESULT native docx: 3 parsed, 0 skipped",
        "RESULT docling docx: 3 parsed, 0 skipped",
        "RESULT native html: 3 parsed, 0 skipped",
        "RESULT docling html:",
        "RESULT paired docling docx - native docx (12 cases):",
    ],
}


def _json_line(stdout: str) -> dict:
    lines = [x for x in stdout.splitlines() if x.startswith("JSON {")]
    assert lines, "no final JSON {...} line"
    return json.loads(lines[-1][len("JSON ") :])


def test_every_benchmark_has_a_smoke_test():
    scripts = sorted(p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))
    assert scripts == sorted(EXPECTED), "a script in benchmarks/ without an entry in EXPECTED (or the reverse)"


@pytest.mark.parametrize("script", list(EXPECTED))
def test_benchmark_smoke(script):
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--smoke"],
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    seconds = time.perf_counter() - started
    shown = f"benchmarks/{script} --smoke: exit {done.returncode} after {seconds:.0f} s\n--- stdout (end)\n{done.stdout[-4000:]}\n--- stderr (end)\n{done.stderr[-4000:]}"
    assert done.returncode == 0, shown
    missing = [want for want in EXPECTED[script] if want not in done.stdout]
    assert not missing, f"lines missing: {missing}\n{shown}"
    summary = _json_line(done.stdout)
    assert summary.get("smoke") is True, shown
    try:
        CHECKS[script](summary)
    except (AssertionError, KeyError, TypeError) as err:
        raise AssertionError(f"its JSON line: {err!r}\n{shown}") from err


def _api_speed(s: dict) -> None:
    assert [c["cases"] for c in s["calls"]] == [10, 10]


def _score_profile(s: dict) -> None:
    assert s["cases"] == 20 and list(s["passes"]) == ["first pass", "second pass"]


def _scoped_queries(s: dict) -> None:
    assert [(r["mode"], r["documents"]) for r in s["rows"]] == [("bm25", 2), ("bm25", 3), ("knn", 2), ("knn", 3)]


def _generated_vs_labelled(s: dict) -> None:
    assert len(s["configs"]) == 3 and s["generated_cases"] > 0 and s["labelled_cases"] == 41
    assert all(r["labelled"]["recall@k"] is not None for r in s["configs"])


def _eval_speed(s: dict) -> None:
    assert s["after"]["cold"]["cases"] == 10 and s["after"]["warm"]["cases"] == 10
    assert s["after"]["cold"]["metrics"] == s["after"]["warm"]["metrics"]


def _parse_parallel(s: dict) -> None:
    assert s["same_result"] and s["serial"]["parsed"] == s["parallel"]["parsed"] == 5


def _scale(s: dict) -> None:
    assert [p["contracts"] for p in s["points"]] == [1, 3]
    for point in s["points"]:
        assert point["cases"] == 41 * point["contracts"]
        assert not point["wrap_points_missing"] and not point["wrap_points_uncalled"]


def _sweep_vs_server(s: dict) -> None:
    assert s["configurations"] == 1 and s["cases"] == 3 and s["documents"] == 2
    assert s["a_embedded_texts_cold"] > 0 and s["a_embedded_texts_warm"] == 0
    assert s["b_s"] > 0 and s["unavoidable_s"] > 0


def _quality_levers(s: dict) -> None:
    (result,) = s["results"]
    assert result["dataset"] == "cuad-mini" and len(result["rows"]) == 2
    assert all(r["recall@k"] is not None and r["recall@1500tok"] is not None for r in result["rows"])


def _same_numbers(s: dict) -> None:
    assert s["differ"] == [] and s["base"] == "HEAD"


def _warm_start(s: dict) -> None:
    assert s["runs"] == 1 and s["base"] == "HEAD"
    hit, evaluated = s["pytest"]["result_cache"], s["pytest"]["evaluated"]
    # a warm run imports neither ragas, torch nor Pathway (every list from the served-list cache, the pipeline
    # from its remembered facts); the result cache's not even scipy
    for row in (hit, evaluated, s["evaluate"]):
        heavy = {"ragas", "torch", "docling", "mlflow", "pathway"} & set(row["imports"]["by_package"])
        assert not heavy, row["imports"]
    assert "scipy" not in hit["imports"]["by_package"] and s["evaluate"]["imports"]["stages"]["aggregate"] >= 0


def _same_lists(s: dict) -> None:
    assert s["modes"] == ["hybrid"] and s["lists"] == 30 * 4 and s["differ"] == []


def _app_parse(s: dict) -> None:
    assert s["contracts"] == 3 and s["cases"] == 12
    rows = {r["variant"]: r for r in s["variants"]}
    assert list(rows) == ["native docx", "docling docx", "native html", "docling html"]
    for name in ("native docx", "docling docx", "native html"):
        assert rows[name]["parsed"] == 3 and rows[name]["chunks"] > 0 and rows[name]["metrics"]["recall@5"] is not None
    assert rows["docling docx"]["elements"] > 3  # chunk: true, one element per structure chunk
    # Pathway's DoclingParser names every stream document.pdf: this Docling fails on HTML (each one skipped)
    assert rows["docling html"]["parsed"] + rows["docling html"]["skipped"] == 3
    assert [(d["a"], d["b"]) for d in s["paired"]] == [("native docx", "docling docx"), ("native docx", "native html")]


def _tune_vs_grid(s: dict) -> None:
    result = s["results"]["cuad-mini"]
    grid, (seed,) = result["grid"], result["tune"]
    assert grid["configurations"] == 4 and grid["cases_evaluated"] == 4 * grid["dev_cases"] == 4 * 82
    assert grid["ci"][0] <= grid["best_value"] <= grid["ci"][1] and grid["embedding_passes"] == 0
    assert seed["possible"] == 2 * 82 and 0 < seed["evaluated"] <= seed["possible"]
    assert seed["trials"] in (1, 2) and seed["cases"] <= seed["evaluated"]


# script -> checks of its final JSON line
def _pathway_workers(s: dict) -> None:
    assert list(s["modes"]) == ["threads-1", "threads-2", "spawn-2"] and all(m["same"] for m in s["modes"].values())


def _ray_scale(s: dict) -> None:
    run = s["eval"]
    assert run["same"] and s["cases"] == 20
    stages = [t["stage"] for t in run["tasks"]]
    assert stages.count("parse") == 3 and "embed" in stages
    assert sum(t["cases"] for t in run["tasks"] if t["stage"] == "retrieve") == 20
    assert [r["machines"] for r in run["projection"]] == [1, 2, 4, 8, 16]
    one_process, on_ray = run["memory"]
    assert one_process["eval process"]["peak_mb"][0] > 100 and on_ray["eval process"]["processes"] == 1
    assert on_ray["ray worker"]["processes"] >= 2 and on_ray["raylet"]["processes"] == 2


def _pdf_reword(s: dict) -> None:
    assert s["pdfs"] == 2 and s["reworded"] >= 1 and s["one_line_changed"] == s["reworded"]


def _unreachable_endpoint(s: dict) -> None:
    for name in ("llm", "app embedder"):
        assert s[name]["rc"] == 2 and "Connection refused" in s[name]["message"], s[name]
        assert "Traceback" not in s[name]["message"]


def _watch_updates(s: dict) -> None:
    assert s["warm_eval_s"] > 0
    for kind in ("modify", "delete", "add"):
        assert len(s[kind]["evaluation_s"]) == 1 and len(s[kind]["seen_s"]) == 1
        assert s[kind]["seen_s"][0] >= s[kind]["evaluation_s"][0] > 0  # seen includes the evaluation
        assert {"parse", "retrieve", "answer_and_score"} <= set(s[kind]["stage_median_s"])


CHECKS = {
    "pathway_workers.py": _pathway_workers,
    "ray_scale.py": _ray_scale,
    "warm_start.py": _warm_start,
    "same_numbers.py": _same_numbers,
    "quality_levers.py": _quality_levers,
    "same_lists.py": _same_lists,
    "api_speed.py": _api_speed,
    "score_profile.py": _score_profile,
    "scoped_queries.py": _scoped_queries,
    "generated_vs_labelled.py": _generated_vs_labelled,
    "eval_speed.py": _eval_speed,
    "parse_parallel.py": _parse_parallel,
    "scale.py": _scale,
    "sweep_vs_server.py": _sweep_vs_server,
    "app_parse.py": _app_parse,
    "tune_vs_grid.py": _tune_vs_grid,
    "watch_updates.py": _watch_updates,
    "unreachable_endpoint.py": _unreachable_endpoint,
    "pdf_reword.py": _pdf_reword,
}
