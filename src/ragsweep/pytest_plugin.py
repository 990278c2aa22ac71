"""ragsweep's pytest plugin: a quality test in your own project, with your own files.

Installed with ragsweep (entry point ``pytest11``: ``ragsweep.pytest_plugin``), so any pytest
in that environment has it; ``-p no:ragsweep.pytest_plugin`` turns it off. Configure in ``pytest.ini``,
``pyproject.toml`` (``[tool.pytest.ini_options]``) or on the command line:

=========================  ==========================  ===================================================
ini option                 command line                meaning
=========================  ==========================  ===================================================
``ragsweep_pipeline``      ``--ragsweep-pipeline``     the pipeline YAML (ragsweep's or a Pathway app.yaml)
``ragsweep_dataset``       ``--ragsweep-dataset``      the dataset folder
``ragsweep_min``           ``--ragsweep-min M=F``      floors, one ``metric=floor`` a line (CLI: repeated)
``ragsweep_cache_dir``     ``RAGSWEEP_CACHE_DIR`` env  the caches; default ``.cache/ragsweep`` in the rootdir
``ragsweep_result_cache``  ``--ragsweep-fresh``        reuse an evaluation whose inputs are unchanged (true)
=========================  ==========================  ===================================================

A path in the ini file is relative to the ini file's folder, one on the command line to the
folder pytest was started in, one given in a test to the rootdir. Then::

    from ragsweep.metrics.registry import HIT_FAMILY

    def test_rag_quality(ragsweep_eval):
        ragsweep_eval.assert_quality(min={f"{HIT_FAMILY}@5": 0.9})  # the hit rate at depth 5

Floors are merged per metric: ``ragsweep_min``, then the test's ``min=``, then ``--ragsweep-min``
(so a CI job can raise one floor). A failure names each metric below its floor with its 95% CI,
chance level and n, then its worst cases (:func:`ragsweep.testing.check_quality`). One session
evaluates each (pipeline, dataset, options) once. Between sessions, an evaluation whose inputs
are all unchanged (files, code, environment: :mod:`ragsweep.pytest_results`) comes back from the
result cache; any other is evaluated, with the parse, embedding and served-list caches.

This module imports only pytest, pydantic and ragsweep's lightest modules: pytest loads it in every
session of the environment, and the rest of ragsweep is imported only when a test asks for ``ragsweep_eval``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ragsweep.core import environment
from ragsweep.core.cache_files import default_cache_dir
from ragsweep.core.errors import RunError
from ragsweep.core.quiet import filterwarnings_lines
from ragsweep.pytest_results import ResultCache, entry_key, env_hash, module_stats

if TYPE_CHECKING:
    from ragsweep.evaluation.records import RunResult

CACHE_ENV = environment.CACHE_DIR


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragsweep", "ragsweep RAG quality tests (the ragsweep_eval fixture)")
    group.addoption("--ragsweep-pipeline", metavar="PATH", help="pipeline YAML (overrides ragsweep_pipeline)")
    group.addoption("--ragsweep-dataset", metavar="PATH", help="dataset folder (overrides ragsweep_dataset)")
    group.addoption(
        "--ragsweep-min",
        metavar="METRIC=FLOOR",
        action="append",
        default=[],
        help="a floor that overrides the ini file's and the test's for that metric; repeatable",
    )
    group.addoption(
        "--ragsweep-fresh",
        action="store_true",
        help="evaluate again even when the result cache holds this evaluation with unchanged inputs",
    )
    parser.addini("ragsweep_pipeline", "pipeline YAML, relative to the ini file", default="")
    parser.addini("ragsweep_dataset", "dataset folder, relative to the ini file", default="")
    parser.addini("ragsweep_min", "floors, one METRIC=FLOOR a line", type="linelist", default=[])
    parser.addini("ragsweep_cache_dir", "ragsweep's cache folder, relative to the ini file", default="")
    parser.addini("ragsweep_result_cache", "reuse an evaluation whose inputs are unchanged", type="bool", default=True)


def parse_floors(lines: list[str], where: str) -> dict[str, float]:
    """``METRIC=FLOOR`` lines -> ``{METRIC: FLOOR}``; a malformed line is a usage error naming ``where``."""
    floors: dict[str, float] = {}
    for line in lines:
        metric, sep, value = line.partition("=")
        try:
            if not sep or not metric.strip():
                raise ValueError
            floors[metric.strip()] = float(value)
        except ValueError:
            raise pytest.UsageError(f"{where}: {line!r}: expected METRIC=FLOOR, e.g. recall@5=0.9") from None
    return floors


@dataclass(frozen=True)
class Setting:
    """A path as the user gave it, where they gave it, and what it resolves to."""

    given: str
    source: str  # "ragsweep_pipeline (pytest.ini)", "--ragsweep-dataset", "the test's dataset=" ...
    path: Path


def _setting(config: pytest.Config, name: str) -> Setting | None:
    """The command line's value (relative to the invocation folder), else the ini file's (relative to it)."""
    cli = config.getoption(f"--ragsweep-{name}")
    if cli:
        return Setting(cli, f"--ragsweep-{name}", config.invocation_params.dir / cli)
    ini = config.getini(f"ragsweep_{name}")
    if ini:
        base = config.inipath.parent if config.inipath else config.rootpath
        where = config.inipath.name if config.inipath else "ini"
        return Setting(ini, f"ragsweep_{name} ({where})", base / ini)
    return None


def pytest_configure(config: pytest.Config) -> None:
    for line in filterwarnings_lines():  # a dependency's warnings about itself: not the user's to fix
        config.addinivalue_line("filterwarnings", line)
    # the floors are checked now: a typo is a usage error before any test runs
    config.stash[_FLOORS] = (
        parse_floors(config.getini("ragsweep_min"), "ragsweep_min"),
        parse_floors(config.getoption("--ragsweep-min"), "--ragsweep-min"),
    )
    config.stash[_EVALUATIONS] = []


def _use_cache_dir(config: pytest.Config) -> None:
    """Point ragsweep's caches at the rootdir (not wherever pytest is started, so a run from a
    sub-folder hits them too) for this session, once a test asks for an evaluation: a session that
    never does is left as it was. RAGSWEEP_CACHE_DIR, when set, wins, as for the ragsweep command."""
    if _OLD_CACHE_ENV in config.stash:
        return
    old = environment.cache_dir_setting()
    config.stash[_OLD_CACHE_ENV] = old
    if old is None:
        ini = config.getini("ragsweep_cache_dir")
        base = config.inipath.parent if (ini and config.inipath) else config.rootpath
        os.environ[CACHE_ENV] = str(base / (ini or environment.DEFAULT_CACHE_DIR))


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OLD_CACHE_ENV not in config.stash:
        return
    old = config.stash[_OLD_CACHE_ENV]
    if old is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = old


@dataclass
class Evaluation:
    """One evaluation of the session, for the terminal summary."""

    pipeline: Setting
    dataset: Setting
    report: RunResult
    seconds: float
    cached: bool = False  # from the result cache (ragsweep.pytest_results)


@dataclass
class RagsweepEval:
    """The ``ragsweep_eval`` fixture: evaluate the configured (or given) pipeline on the configured
    (or given) dataset once per session and check floors against it."""

    config: pytest.Config
    pipeline: Setting | None
    dataset: Setting | None
    reports: dict[str, RunResult] = field(default_factory=dict)

    def _resolve(self, name: str, given: str | Path | None) -> Setting:
        setting = self.pipeline if name == "pipeline" else self.dataset
        if given is not None:
            path = Path(given) if Path(given).is_absolute() else self.config.rootpath / given
            setting = Setting(str(given), f"the test's {name}=", path)
        if setting is None:
            pytest.fail(
                f"ragsweep: no {name}: set ragsweep_{name} in your pytest ini file, pass --ragsweep-{name} PATH,"
                f" or give {name}= to ragsweep_eval",
                pytrace=False,
            )
        exists = setting.path.is_file() if name == "pipeline" else setting.path.exists()
        if not exists:
            what = "no such file" if name == "pipeline" else "no such dataset folder or cases file"
            pytest.fail(f"ragsweep: {setting.source}: {setting.given}: {what} ({setting.path})", pytrace=False)
        return setting

    def report(
        self, *, pipeline: str | Path | None = None, dataset: str | Path | None = None, **options: Any
    ) -> RunResult:
        """The :class:`ragsweep.Report` of the pipeline on the dataset (``options``: those of
        :func:`ragsweep.evaluate`), evaluated at most once per session for the same arguments."""
        pipe, data = self._resolve("pipeline", pipeline), self._resolve("dataset", dataset)
        key = repr((str(pipe.path.resolve()), str(data.path.resolve()), sorted(options.items())))
        if key not in self.reports:
            self.reports[key] = self._evaluate(pipe, data, options)
        return self.reports[key]

    def _evaluate(self, pipe: Setting, data: Setting, options: dict[str, Any]) -> RunResult:
        _use_cache_dir(self.config)
        started = time.perf_counter()
        results = self._result_cache()
        key = entry_key(pipe.path, data.path, options)
        env = env_hash(pipe.path.read_text(encoding="utf-8"))
        stored = results.load(key) if results is not None and not self.config.getoption("--ragsweep-fresh") else None
        if stored is not None:
            self._done(Evaluation(pipe, data, stored, time.perf_counter() - started, cached=True))
            return stored
        # deferred: imports the pipeline's config (yaml); a session served from the result cache must not
        from ragsweep.execution.base import ExecutorError

        try:  # ragsweep's own messages (caught below) name the file or option
            report = self._evaluate_now(pipe, data, options)
        except (RunError, ExecutorError, ValueError, FileNotFoundError) as err:
            error = f"ragsweep: {pipe.given} on {data.given}: {err}"
        else:
            if results is not None and report.no_llm:  # an LLM's answers are not the inputs' alone
                results.store(key, pipe.path, env, _roots(pipe, data, options, report), self._module_stats(), report)
            self._done(Evaluation(pipe, data, report, time.perf_counter() - started))
            return report
        pytest.fail(error, pytrace=False)  # outside the except: no chained traceback under the message

    @staticmethod
    def _evaluate_now(pipe: Setting, data: Setting, options: dict[str, Any]) -> RunResult:
        # deferred: ragsweep.api imports the run machinery (numpy, yaml); a session served from the result cache must not
        from ragsweep.api import evaluate

        return evaluate(pipe.path, data.path, **options)

    def _done(self, evaluation: Evaluation) -> None:
        self.config.stash[_EVALUATIONS].append(evaluation)

    def _result_cache(self) -> ResultCache | None:
        """The result cache, or None when it is off (ini, or the served-list cache turned off)."""
        if not self.config.getini("ragsweep_result_cache") or not environment.served_cache_enabled():
            return None
        return ResultCache(default_cache_dir() / "pytest-results")

    def _module_stats(self) -> dict[str, list[int]]:
        # the session's test files and conftest.py: editing a test's floors must not discard the entry
        return module_stats([*self.config.getini("python_files"), "conftest.py"])

    def floors(self, min: dict[str, float] | None = None) -> dict[str, float]:  # noqa: A002
        """The floors a check uses: ``ragsweep_min``, then ``min``, then ``--ragsweep-min``."""
        ini, cli = self.config.stash[_FLOORS]
        return {**ini, **(min or {}), **cli}

    def assert_quality(
        self,
        min: dict[str, float] | None = None,  # noqa: A002
        *,
        pipeline: str | Path | None = None,
        dataset: str | Path | None = None,
        max_failure_rate: float | None = None,
        **options: Any,
    ) -> RunResult:
        """Fail the test when a metric is below its floor (see :meth:`floors`), or an LLM metric failed
        on more than ``max_failure_rate`` of its cases; returns the report."""
        # deferred: the quality check imports the scoring (numpy); a session that never checks must not
        from ragsweep.testing import QualityError, check_quality

        floors = self.floors(min)
        if not floors:
            pytest.fail("ragsweep: no floors: give min={...}, set ragsweep_min or pass --ragsweep-min", pytrace=False)
        if max_failure_rate is not None:  # an option of the evaluation too
            options["max_failure_rate"] = max_failure_rate
        report = self.report(pipeline=pipeline, dataset=dataset, **options)
        try:
            return check_quality(report, min=floors, max_failure_rate=max_failure_rate)
        except QualityError as err:
            failed = str(err)
        pipe, data = self._resolve("pipeline", pipeline), self._resolve("dataset", dataset)
        pytest.fail(f"ragsweep: {pipe.given} on {data.given}: {failed}", pytrace=False)


def _roots(pipe: Setting, data: Setting, options: Mapping[str, object], report: RunResult) -> list[Path]:
    """The files an evaluation read: the pipeline, the dataset, the documents folder it parsed."""
    roots = [pipe.path, data.path]
    corpus = report.manifest.corpus
    for docs in (corpus.docs_dir if corpus is not None else None, options.get("docs")):
        if isinstance(docs, (str, Path)) and docs and Path(docs).exists():
            roots.append(Path(docs))
    return roots


_FLOORS = pytest.StashKey[tuple[dict[str, float], dict[str, float]]]()
_EVALUATIONS = pytest.StashKey[list[Evaluation]]()
_OLD_CACHE_ENV = pytest.StashKey[str | None]()


@pytest.fixture(scope="session")
def ragsweep_eval(pytestconfig: pytest.Config) -> RagsweepEval:
    """Evaluates your pipeline on your dataset (once per session) and checks floors: see the module doc."""
    return RagsweepEval(pytestconfig, _setting(pytestconfig, "pipeline"), _setting(pytestconfig, "dataset"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for done in config.stash.get(_EVALUATIONS, []):
        head = f"ragsweep: {done.pipeline.given} on {done.dataset.given}: {len(done.report.cases)} cases"
        manifest = done.report.manifest
        if done.cached:
            finished = manifest.timestamps.finished
            terminalreporter.write_line(
                f"{head} from the result cache in {done.seconds:.2f} s (inputs unchanged since the evaluation of"
                f" {finished}; --ragsweep-fresh evaluates again)"
            )
            continue
        retrieval = manifest.retrieval
        served, queries = (retrieval.from_served_cache, retrieval.queries) if retrieval is not None else (0, 0)
        terminalreporter.write_line(
            f"{head} in {done.seconds:.1f} s ({served} of {queries}"
            f" served lists from the cache in {environment.cache_dir_setting()})"
        )
