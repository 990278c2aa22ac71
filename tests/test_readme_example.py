"""The README's quick start and pytest examples, run as written in an empty folder from the files of the
built wheel (not from this checkout): the wheel is built with the build backend, unpacked, and put first on
PYTHONPATH of this environment's interpreter; its console script, pytest's and that interpreter are the
commands on PATH before the system's. And every ``ragsweep`` command line the README and docs/ show names a subcommand and
options that exist."""

from __future__ import annotations

import configparser
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support import ROOT

README = (ROOT / "README.md").read_text()


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _blocks(text: str) -> list[tuple[str, str]]:
    """The fenced code blocks of ``text``, in order: (language, code)."""
    return re.findall(r"```(\w+)\n(.*?)```", text, re.S)


def _build_wheel(tmp: Path) -> Path:
    """The wheel of this checkout, built by the build backend from a copy of its sources (nothing written
    into the checkout, no index asked)."""
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    built = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", "from setuptools import build_meta; print(build_meta.build_wheel('dist'))"],
        cwd=source, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return source / "dist" / built.stdout.strip().splitlines()[-1]


def _install(wheel: Path, tmp: Path) -> dict[str, str]:
    """The wheel unpacked, its console scripts, pytest's and python on PATH: what a user's active venv gives."""
    site, bin_dir = tmp / "site", tmp / "bin"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    entry_points = configparser.ConfigParser()
    entry_points.read(next(site.glob("ragsweep-*.dist-info")) / "entry_points.txt")
    scripts = dict(entry_points["console_scripts"])
    scripts["pytest"] = "pytest:console_main"
    bin_dir.mkdir()
    for name, target in scripts.items():
        module, function = target.split(":")
        script = bin_dir / name
        script.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n")
        script.chmod(0o755)
    python = bin_dir / "python"  # an active venv's python: this environment's interpreter
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSWEEP_") and k != "PYTHONPATH"}
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "PYTHONPATH": str(site)}


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def _shown(done: subprocess.CompletedProcess) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-3000:]}"


def _run_quick_start(project: Path, env: dict[str, str]) -> Path:
    """Each block of the README's quick start in order: shell blocks run line by line, a Python block written
    to the file its first comment names. Returns that test file."""
    test_file = None
    for language, code in _blocks(_section(README, "Quick start")):
        if language == "python":
            name = re.match(r"# ([\w/.-]+\.py):", code)
            assert name, "the quick start's Python block starts with a comment naming its file"
            test_file = project / name.group(1)
            test_file.parent.mkdir(parents=True, exist_ok=True)
            test_file.write_text(code)
            continue
        assert language == "bash", language
        for line in code.splitlines():
            command = line.split("#")[0].strip()
            if command:
                done = _run(command, project, env)
                assert done.returncode == 0, f"{command}\n{_shown(done)}"
                if command.startswith("pytest"):
                    assert "1 passed" in done.stdout, _shown(done)
    assert test_file is not None and test_file.is_file(), "the quick start runs a test file it shows"
    return test_file


def test_quick_start_and_pytest_examples_run_from_the_wheel_in_an_empty_folder(tmp_path):
    env = _install(_build_wheel(tmp_path), tmp_path)
    project = tmp_path / "my-project"
    project.mkdir()
    # two one-line checks that read nothing the quick start writes, run beside it (each its own process)
    pool = ThreadPoolExecutor(2)
    where_run = pool.submit(_run, "python -c 'import ragsweep; print(ragsweep.__file__)'", project, env)
    # the default --pipeline in a project without pipelines/default.yaml: the one the wheel ships
    default_run = pool.submit(
        _run,
        "python -c 'from ragsweep.pipeline.config import PipelineConfig; print(PipelineConfig.load(\"pipelines/default.yaml\").path)'",
        project, env,
    )  # fmt: skip
    pool.shutdown(wait=False)
    where = where_run.result()
    assert where.stdout.strip().startswith(str(tmp_path / "site")), _shown(where)  # the wheel's files, not src/

    test_file = _run_quick_start(project, env)
    assert (project / "runs").is_dir() and (project / "rag" / "eval-set" / "README.md").is_file()

    # the plugin's example: its ini block and its test file, beside the quick start's, by the wheel's entry point
    ini = [c for lang, c in _blocks(README) if lang == "ini" and "ragsweep_pipeline" in c]
    plugin_test = [c for lang, c in _blocks(README) if lang == "python" and "ragsweep_eval" in c and "def test_" in c]
    assert len(ini) == 1 and len(plugin_test) == 1
    (project / "pytest.ini").write_text(ini[0])
    (project / "tests" / "test_rag_plugin.py").write_text(plugin_test[0])
    both = _run("pytest -q", project, env)
    assert both.returncode == 0 and "2 passed" in both.stdout, _shown(both)

    # a floor out of reach, and a pipeline file that is not there: each fails its test with one clear line
    code = test_file.read_text()
    (project / "tests" / "test_floor.py").write_text(code.replace('"recall@5": 0.9', '"recall@5": 1.01'))
    (project / "tests" / "test_missing.py").write_text(code.replace("rag/pipeline.yaml", "rag/missing.yaml"))
    failed = _run("pytest -q tests/test_floor.py tests/test_missing.py", project, env)
    assert failed.returncode == 1 and "2 failed" in failed.stdout, _shown(failed)
    assert re.search(r"recall@5 = 0\.\d{3} < floor 1\.01 \(95% CI .*chance 0\.\d{3}", failed.stdout), _shown(failed)
    assert "ragsweep: pipeline config 'rag/missing.yaml' does not exist" in failed.stdout, _shown(failed)
    assert "Traceback" not in failed.stdout and "RunError" not in failed.stdout, _shown(failed)

    default = default_run.result()
    assert default.returncode == 0, _shown(default)
    assert Path(default.stdout.strip()) == tmp_path / "site" / "ragsweep" / "starter" / "pipeline.yaml"


def _command_lines(text: str) -> list[str]:
    """Every ``ragsweep ...`` command of ``text``'s shell blocks and inline code, continuation lines joined."""
    lines = []
    for language, code in _blocks(text):
        if language == "bash":
            lines += [line.split(" #")[0] for line in code.replace("\\\n", " ").splitlines()]
    lines += re.findall(r"`(ragsweep [^`]+)`", text)
    return [re.sub(r"^(\.venv/bin/)", "", line.strip()) for line in lines if re.match(r"(\.venv/bin/)?ragsweep ", line)]


SHOWN = [
    (path.relative_to(ROOT).as_posix(), line)
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for line in _command_lines(path.read_text())
]


@pytest.mark.parametrize("where,line", SHOWN)
def test_every_command_the_docs_show_exists(where, line):
    from ragsweep.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    words = shlex.split(line.replace("[", " ").replace("]", " ").replace("|", " "))
    if words[1].startswith("--"):  # an option of ragsweep itself (--version)
        assert words[1] in {flag for action in parser._actions for flag in action.option_strings}, line
        return
    assert words[1] in commands, f"{where}: {line}: no command {words[1]!r}"
    known = {flag for action in commands[words[1]]._actions for flag in action.option_strings}
    flags = {w.split("=")[0] for w in words[2:] if w.startswith("--")}
    assert flags <= known, f"{where}: {line}: no such option(s) {sorted(flags - known)}"


HISTORY = re.compile(r"\bsession\b|\bissue \d|\bthis work\b|work's start|started from", re.I)


@pytest.mark.parametrize("name", ["README.md", "benchmarks/README.md"])
def test_the_readmes_speak_of_the_project_only(name):
    text = (ROOT / name).read_text()
    found = [f"{name}:{n}: {line}" for n, line in enumerate(text.splitlines(), 1) if HISTORY.search(line)]
    assert not found, "development history in a README:\n" + "\n".join(found)
    assert len(text.splitlines()) <= 400, f"{name} stays short: {SHORT_BECAUSE[name]}"


# why each README stays under 400 lines: where the rest lives
SHORT_BECAUSE = {
    "README.md": "the reference lives in docs/",
    "benchmarks/README.md": "today's figures only, the earlier measurements in its git history",
}
