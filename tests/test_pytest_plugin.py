"""ragsweep's pytest plugin in a user's own project: a separate folder holding only the user's
files (a pipeline YAML, a dataset, and the README's plugin example: its pytest.ini and its test
file, which uses the ``ragsweep_eval`` fixture), run by pytest in its own process, as the user runs it.

The plugin comes by its ``pytest11`` entry point where this environment's metadata has it (an
install of this checkout); otherwise (an editable install made before the entry point existed)
``-p ragsweep.pytest_plugin`` loads the same module. The wheel's entry point itself is checked
in a fresh venv by ``make user-venv``.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import entry_points
from pathlib import Path

from support import ROOT

PLUGIN = "ragsweep.pytest_plugin"


def _readme_blocks() -> tuple[str, str]:
    """The README's plugin example: its ini block and its test file."""
    readme = (ROOT / "README.md").read_text()
    ini = [b for b in re.findall(r"```ini\n(.*?)```", readme, re.S) if "ragsweep_pipeline" in b]
    tests = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "ragsweep_eval" in b and "def test_" in b]
    assert len(ini) == 1 and len(tests) == 1, "the README shows one plugin example: an ini block and a test file"
    return ini[0], tests[0]


INI, TEST_FILE = _readme_blocks()
_PARSED = configparser.ConfigParser()
_PARSED.read_string(INI)
PIPELINE, DATASET = _PARSED["pytest"]["ragsweep_pipeline"], _PARSED["pytest"]["ragsweep_dataset"]


def _plugin_args() -> list[str]:
    if any(ep.value == PLUGIN for ep in entry_points(group="pytest11")):
        return []
    return ["-p", PLUGIN]


def _user_project(tmp_path: Path) -> Path:
    """The user's own folder: their pipeline and dataset at the paths their ini names, no ragsweep folder."""
    project = tmp_path / "my-project"
    (project / "tests").mkdir(parents=True)
    (project / PIPELINE).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "pipelines" / "default.yaml", project / PIPELINE)
    shutil.copytree(ROOT / "datasets" / "cuad-mini", project / DATASET)
    (project / "pytest.ini").write_text(INI)
    (project / "tests" / "test_rag_quality.py").write_text(TEST_FILE)
    return project


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    # a user's environment: no cache folder chosen, the served-list cache on (the suite turns it off)
    env = {k: v for k, v in os.environ.items() if k not in ("RAGSWEEP_CACHE_DIR", "RAGSWEEP_SERVED_CACHE")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", *_plugin_args(), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _sessions(*runs: tuple) -> list[subprocess.CompletedProcess]:
    """Several pytest sessions (each ``(cwd, *args)``) run at once: what one session checks does not
    depend on another running beside it."""
    with ThreadPoolExecutor(len(runs)) as pool:
        return list(pool.map(lambda run: _pytest(*run), runs))


def _shown(done: subprocess.CompletedProcess) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-3000:]}"


def _listed(lines: list[str]) -> list[str]:
    """The names of a wrapped list: each line but the last ends with a comma."""
    names = []
    for line in lines:
        names += [n.strip() for n in line.split(",") if n.strip()]
        if not line.rstrip().endswith(","):
            return names
    return names


def test_user_project_passes_caches_between_runs_and_fails_naming_the_metric(tmp_path):
    project = _user_project(tmp_path)
    cold = _pytest(project)
    assert cold.returncode == 0 and "1 passed" in cold.stdout, _shown(cold)
    cache = project / ".cache" / "ragsweep"  # in the rootdir, where pytest.ini is
    served = rf"123 cases in [\d.]+ s \(0 of 492 served lists from the cache in {re.escape(str(cache))}\)"
    assert re.search(served, cold.stdout), _shown(cold)
    assert (cache / "served.sqlite").is_file() and len(list((cache / "pytest-results").glob("*.json"))) == 1

    # three sessions over the warm caches, side by side (each its own process, none writes what another reads):
    # a second session, started from a sub-folder: the same rootdir; nothing changed, so the result cache answers
    warm, failed, typo = _sessions(
        (project / "tests",), (project, "--ragsweep-min", "recall@5=1.01"), (project, "--ragsweep-min", "recal@5=0.9")
    )
    assert warm.returncode == 0 and "1 passed" in warm.stdout, _shown(warm)
    assert f"ragsweep: {PIPELINE} on {DATASET}: 123 cases from the result cache in " in warm.stdout, _shown(warm)

    # a floor out of reach from the command line: the test fails naming the metric, CI, chance, n, worst cases
    assert failed.returncode == 1 and "1 failed" in failed.stdout, _shown(failed)
    out = failed.stdout
    assert f"ragsweep: {PIPELINE} on {DATASET}: 1 quality check(s) failed on 123 cases:" in out, _shown(failed)
    assert re.search(
        r"recall@5 = 0\.\d{3} < floor 1\.01 \(95% CI \[0\.\d{3}, [01]\.\d{3}\], chance 0\.\d{3}, n=39\)", out
    )
    assert re.search(r"cuadmini-\w+-[\w-]+: recall@5=0\.\d{3}, ", out), _shown(failed)  # a worst case, under its floor
    assert "mrr@5" not in out.split("short test summary")[0].split("quality check(s) failed")[1]  # mrr@5 met its floor
    assert "Traceback" not in out and "During handling" not in out

    # a misspelt metric: the close names, then every metric the run has (the last of them in order too)
    assert typo.returncode == 1, _shown(typo)
    assert "recal@5 is not a metric ragsweep computes; did you mean recall@5" in typo.stdout, _shown(typo)
    listed = _listed(typo.stdout.split("this run's metrics: ")[1].splitlines())
    assert "mrr@5" in listed and "recall@5" in listed and len(listed) > 20 and listed == sorted(listed), listed
    assert "Pydantic" not in cold.stdout + warm.stdout + typo.stdout  # Pathway's warnings about itself

    # the user's dataset changes: evaluated again, the served lists of the unchanged questions from the cache
    cases = project / DATASET / "cases.jsonl"
    cases.write_text("".join(cases.read_text().splitlines(keepends=True)[:-1]))
    edited = _pytest(project)
    assert edited.returncode == 0 and "122 cases in " in edited.stdout, _shown(edited)
    assert "(488 of 488 served lists from the cache" in edited.stdout, _shown(edited)
    again = _pytest(project, "--ragsweep-fresh")
    assert again.returncode == 0 and "122 cases in " in again.stdout and "result cache" not in again.stdout


def test_bad_settings_are_named_without_a_traceback(tmp_path):
    project = _user_project(tmp_path)
    (project / "pytest.ini").write_text(INI.replace(PIPELINE, "rag/missing.yaml"))
    missing, nope, no_floor = _sessions(
        (project,),
        (project, "--ragsweep-pipeline", str(project / PIPELINE), "--ragsweep-dataset", "nope"),
        (project, "--ragsweep-min", "recall@5"),  # no floor: a usage error before any test runs
    )
    done = missing
    assert done.returncode == 1, _shown(done)
    assert "ragsweep: ragsweep_pipeline (pytest.ini): rag/missing.yaml: no such file (" in done.stdout, _shown(done)
    assert "Traceback" not in done.stdout

    done = nope
    assert done.returncode == 1, _shown(done)
    assert "ragsweep: --ragsweep-dataset: nope: no such dataset folder or cases file" in done.stdout, _shown(done)

    done = no_floor
    assert done.returncode == 4, _shown(done)
    assert "--ragsweep-min: 'recall@5': expected METRIC=FLOOR" in done.stderr, _shown(done)

    (project / "pytest.ini").write_text("[pytest]\n")  # nothing configured, nothing given
    done = _pytest(project)
    assert done.returncode == 1, _shown(done)
    assert (
        "ragsweep: no pipeline: set ragsweep_pipeline in your pytest ini file, pass --ragsweep-pipeline" in done.stdout
    )


def test_result_cache_entry_is_used_only_while_every_input_is_unchanged(tmp_path, monkeypatch):
    from ragsweep.evaluation.records import RunResult
    from ragsweep.pytest_results import ResultCache, entry_key, env_hash, module_stats

    pipeline = tmp_path / "rag.yaml"
    pipeline.write_text("$top_k: 5\n$llm_model: $MY_MODEL\n")
    dataset = tmp_path / "data"
    (dataset / "docs").mkdir(parents=True)
    (dataset / "cases.jsonl").write_text('{"id": "q1"}\n')
    (dataset / "docs" / "a.txt").write_text("a document")
    component = tmp_path / "my_component.py"  # a module the evaluation imported (a user's own splitter, say)
    component.write_text("X = 1\n")
    (tmp_path / "test_mine.py").write_text("Y = 2\n")  # a test file: left out
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("MY_MODEL", raising=False)
    import my_component  # noqa: F401
    import test_mine  # noqa: F401

    modules = module_stats(["test_*.py", "conftest.py"])
    assert str(component) in modules and str(tmp_path / "test_mine.py") not in modules
    cache, key = ResultCache(tmp_path / "results"), entry_key(pipeline, dataset, {"limit": 3})
    assert key != entry_key(pipeline, dataset, {"limit": 4})
    report = RunResult(n_cases=7, metrics={"recall@5": 0.75}, manifest={"timestamps": {"finished": "then"}})
    cache.store(key, pipeline, env_hash(pipeline.read_text()), [pipeline, dataset], modules, report)
    hit = cache.load(key)
    assert hit is not None and hit.model_dump() == report.model_dump() and hit.cases == report.cases

    def changed(edit, undo) -> bool:
        edit()
        missed = cache.load(key) is None
        undo()
        assert cache.load(key) is not None  # back as it was: a hit again
        return missed

    stat = component.stat()
    assert changed(
        lambda: os.utime(component, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9)),
        lambda: os.utime(component, ns=(stat.st_atime_ns, stat.st_mtime_ns)),
    )
    extra = dataset / "docs" / "b.txt"
    assert changed(lambda: extra.write_text("another"), extra.unlink)
    text = (dataset / "cases.jsonl").read_text()
    assert changed(
        lambda: (dataset / "cases.jsonl").write_text(text + '{"id": "q2"}\n'),
        lambda: (dataset / "cases.jsonl").write_text(text),
    )
    assert changed(lambda: monkeypatch.setenv("MY_MODEL", "gpt"), lambda: monkeypatch.delenv("MY_MODEL"))
    assert changed(
        lambda: monkeypatch.setenv("RAGSWEEP_LLM_MODEL", "x"), lambda: monkeypatch.delenv("RAGSWEEP_LLM_MODEL")
    )
    assert not changed(lambda: (tmp_path / "test_mine.py").write_text("Y = 3\n"), lambda: None)  # a test's edit

    entry = next((tmp_path / "results").glob("*.json"))
    entry.write_text(entry.read_text()[:1000])  # torn: a miss, not an error
    assert cache.load(key) is None


def test_a_module_from_an_archive_or_whose_file_is_gone_still_decides_the_entry(tmp_path, monkeypatch):
    """A module imported from a zip is covered by the archive's size and mtime (a rebuilt archive is a miss); a
    module whose file is gone by the time the entry is stored makes an entry that never matches; a relative
    ``__file__`` (torch.ops sets ``_ops.py``) names no file."""
    import types
    import zipfile

    from ragsweep.pytest_results import GONE, _stats_unchanged, module_stats

    archive = tmp_path / "components.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zipped_component.py", "X = 1\n")
    gone = tmp_path / "gone_component.py"
    gone.write_text("Y = 1\n")
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.syspath_prepend(str(tmp_path))
    relative = types.ModuleType("relative_file_module")
    relative.__file__ = "_relative.py"
    monkeypatch.setitem(sys.modules, "relative_file_module", relative)
    try:
        import gone_component  # noqa: F401
        import zipped_component  # noqa: F401

        gone.unlink()
        modules = module_stats()
    finally:
        sys.modules.pop("gone_component", None)
        sys.modules.pop("zipped_component", None)
    assert modules[str(gone)] == GONE and not _stats_unchanged({str(gone): GONE})
    assert "_relative.py" not in modules and not any(GONE == v for k, v in modules.items() if k != str(gone))
    entry = {str(archive): modules[str(archive)]}
    assert entry[str(archive)] == [archive.stat().st_size, archive.stat().st_mtime_ns] and _stats_unchanged(entry)
    with zipfile.ZipFile(archive, "w") as zf:  # the component rebuilt: X = 2
        zf.writestr("zipped_component.py", "X = 2\n")
    os.utime(archive, ns=(0, entry[str(archive)][1] + 10**9))
    assert not _stats_unchanged(entry)


def test_a_module_imported_by_a_relative_path_is_covered(tmp_path, monkeypatch):
    """``sys.path.insert(0, "src")`` gives a module a relative ``__file__``: it still decides the entry."""
    import types

    from ragsweep.pytest_results import module_stats

    source = tmp_path / "relative_component.py"
    source.write_text("Z = 1\n")
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType("relative_component")
    module.__file__ = "relative_component.py"
    monkeypatch.setitem(sys.modules, "relative_component", module)
    assert module_stats()[str(source)] == [source.stat().st_size, source.stat().st_mtime_ns]


def test_only_pathways_own_pydantic_warnings_are_silenced(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_imports.py").write_text(
        "import warnings\n\n\ndef test_imports():\n"
        "    import pathway.xpacks.llm.question_answering  # noqa: F401  (its prompts warn on import)\n"
        "    warnings.warn('a warning of the user', DeprecationWarning)\n"
    )
    done = _pytest(tmp_path, "-p", "no:cacheprovider")
    assert done.returncode == 0, _shown(done)
    assert "a warning of the user" in done.stdout and "1 warning" in done.stdout, _shown(done)
    assert "PydanticDeprecat" not in done.stdout, _shown(done)


def test_the_command_silences_the_same_warnings_and_no_others():
    import warnings

    from pydantic.warnings import PydanticDeprecatedSince20

    from ragsweep.core.quiet import silence_dependency_warnings

    def raised(category: type[Warning], module: str) -> int:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            silence_dependency_warnings()
            warnings.warn_explicit("class-based config", category, f"{module.replace('.', '/')}.py", 12, module)
        return len(seen)

    assert raised(PydanticDeprecatedSince20, "pathway.xpacks.llm.prompts") == 0
    assert raised(PydanticDeprecatedSince20, "my_app.models") == 1  # the user's own code: shown
    assert raised(DeprecationWarning, "pathway.xpacks.llm.prompts") == 1  # another category: shown
