"""A sweep, from objects: a grid of pipeline variables over one dataset's cases -> one scored
configuration each (:class:`~ragsweep.evaluation.records.SweepResult`).

Each configuration is scored on exactly what it serves:

- every configuration walks the one evaluation loop
  (:func:`ragsweep.evaluation.loop.evaluate_configuration`), as ``ragsweep eval`` does: the
  same CaseResults for the same configuration; every depth k is asked of its DocumentStore as
  its own query (a hybrid top-3 is not the prefix of a hybrid top-10); in the configuration's
  aggregate a depth deeper than its top_k is reported as missing, since it does not serve it;
- MRR, MAP, R-precision and the first relevant rank are over its own top_k
  (``mrr@k`` etc. name the metrics at the configuration's own top_k);
- "best" and the Pareto set respect each objective's direction (the registry's).

No work is done twice: every document is parsed once for the whole sweep (and
cached on disk by content); every distinct chunk text is embedded once per
embedder (the SQLite cache of :mod:`ragsweep.pipeline.embedding`); one Pathway index per
(chunking, retriever) answers every configuration's depths in one graph run; with ``--answers --llm``
its configurations' app question answerers are asked in one Pathway run too, a request two of them
send alike sent once (:func:`ragsweep.answer.app.answer_together`), and each
configuration's answer cost is kept (:mod:`ragsweep.cost.configuration`).

Each configuration's per-case results are written as soon as it is done, so an
interrupted sweep resumes without recomputing a finished configuration. The sweep
folder (layout :data:`~ragsweep.evaluation.runfolder.SWEEP_LAYOUT_VERSION`):

- ``sweep-state.json``         what this sweep is (:class:`~ragsweep.evaluation.context.SweepState`)
- ``chunks.jsonl``             the text of every chunk any configuration served, once (a chunk
                               shared by several configurations is one line), appended before
                               the case lines that refer to it
- ``configs/<id>/cases.jsonl`` one compact :class:`~ragsweep.evaluation.records.CaseResult` per case
                               (:func:`~ragsweep.evaluation.storage.compact`: hits refer to the chunk table
                               by doc id and offsets); read in full by
                               :func:`ragsweep.report.runs.read_cases`
- ``configs/<id>/result.json`` the configuration's aggregate, written last: it marks it done
- ``sweep.json``, ``sweep.csv`` (``report.html`` is the report layer's, written by the caller)

A configuration whose run fails (:data:`CONFIG_FAILURES`: the whole index group when its index fails) is
recorded as failed with its one-line reason (``SweepResult.failed``) and the sweep goes on: it is never
ranked, chosen, or what another configuration is compared with; it has no result.json, so ``--resume``
runs it again. When the first :data:`SAME_FAILURES_STOP` tries all fail with the same line and nothing
has been scored, the sweep stops there: the rest are listed as not run (:class:`Failures`).
"""

from __future__ import annotations

import itertools
import json
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import BaseModel, Field, ValidationError

from ragsweep.answer.run_setup import llm_calls, prepare_answering
from ragsweep.answer.served import app_answers_together
from ragsweep.core.errors import ConfigError, RunError, StageError
from ragsweep.core.keys import digest
from ragsweep.cost.configuration import configuration_cost, cost_pareto
from ragsweep.datasets.schema import Case, Dataset
from ragsweep.evaluation.choice import best_configs, case_lift, depends_on_depth, measured, same_depth_baseline
from ragsweep.evaluation.context import RunContext, SweepState
from ragsweep.evaluation.endpoints import check_answering
from ragsweep.evaluation.grid_size import GridSize, grid_size
from ragsweep.evaluation.loop import Answering, evaluate_configuration, scored_ks
from ragsweep.evaluation.manifest import CorpusManifest, DatasetManifest, SweepManifest, Timestamps
from ragsweep.evaluation.records import (
    Aggregate,
    CaseResult,
    ConfigResult,
    Count,
    FailedConfig,
    HoldoutConfig,
    HoldoutVerdict,
    SweepResult,
    UnlocatedReport,
    case_metric,
    own_k_name,
)
from ragsweep.evaluation.runfolder import RunFolder, git_commit, now, package_versions
from ragsweep.evaluation.scoring import aggregate, unlocated_report
from ragsweep.evaluation.settings import SweepSettings
from ragsweep.evaluation.storage import expand_lines
from ragsweep.execution.base import CONFIG_FAILURES, Executor, IndexWork
from ragsweep.metrics.registry import (
    DEFAULT_OBJECTIVES,
    asked_budgets,
    at_k_families,
    at_own_k,
    lower_is_better,
    unknown_name,
)
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.corpus import Corpus
from ragsweep.pipeline.language import sweep_language_warning
from ragsweep.pipeline.retrieval import Retrieved, parse_documents, store_depths
from ragsweep.pipeline.scalars import Overrides, Scalar

DEFAULT_KS = (1, 3, 5, 10)
ALPHA = 0.05
# this many failures in a row with the same line, and nothing scored yet: no knob of the grid changes
# the failure (an endpoint that is down, a key that is wrong), so the rest is not run
SAME_FAILURES_STOP = 2


class SweepGrid(BaseModel):
    """``pipelines/sweep.yaml``: ``grid`` axes, a ``baseline`` and ``objectives``.

    An axis whose values are mappings sets several variables together, e.g.
    ``chunking: [{min_tokens: 100, max_tokens: 200}, ...]``; a value ``{file: PATH}`` is the text of
    that file (relative to the grid file), e.g. a prompt template. An axis named
    ``<component>.<argument>`` sets one argument of a component (``question_answerer.search_topk``).
    """

    grid: dict[str, list[Scalar | dict[str, Scalar]]]  # each value replaces a plain $variable (or several)
    baseline: Overrides = Field(default_factory=dict)
    objectives: list[str] = Field(default_factory=lambda: list(DEFAULT_OBJECTIVES))
    ks: list[int] = Field(default_factory=lambda: list(DEFAULT_KS))
    # context-token budgets scored besides those the objectives name (recall@1500tok)
    budgets: list[int] = Field(default_factory=list)

    @classmethod
    def load(cls, path: str | Path) -> "SweepGrid":
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"grid file {str(p)!r} does not exist")
        data = read_yaml(p)
        if not isinstance(data, dict) or "grid" not in data:
            raise ConfigError(f"{p}: needs a top-level 'grid' mapping")
        try:
            grid = cls(**data)
        except ValidationError as err:
            shown = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors()[:3])
            raise ConfigError(f"{p}: {shown} (a grid value is a scalar, or a mapping of scalars)") from err
        if empty := [axis for axis, values in grid.grid.items() if not values]:
            raise ConfigError(f"{p}: grid axis {empty[0]!r} has no values: give it at least one, or remove it")
        grid.grid = {axis: [file_value(p, axis, v) for v in values] for axis, values in grid.grid.items()}
        return grid

    def configurations(self) -> list[Overrides]:
        axes = list(self.grid.items())
        combos = []
        for values in itertools.product(*(v for _, v in axes)):
            params: Overrides = {}
            for (name, _), value in zip(axes, values):
                if isinstance(value, dict):
                    params.update(value)
                else:
                    params[name] = value
            combos.append(params)
        return combos


def read_yaml(path: Path) -> object:
    """The file's YAML (safe loading), or one line saying where it is not YAML."""
    try:
        return yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(f"{path}: not valid YAML: {problem}{where}") from err
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read the grid file: {getattr(err, 'strerror', None) or err}") from err


def file_value(grid_path: Path, axis: str, value: Scalar | dict[str, Scalar]) -> Scalar | dict[str, Scalar]:
    """A grid value ``{file: PATH}``: the text of that file (relative to the grid file); others as given."""
    if not (isinstance(value, dict) and set(value) == {"file"} and isinstance(value["file"], str)):
        return value
    path = grid_path.parent / value["file"]
    if not path.is_file():
        raise ConfigError(f"{grid_path}: {axis}: {{file: {value['file']}}}: no file {str(path)!r}")
    return path.read_text()


def shown_value(value: object) -> str:
    """A value as a configuration's id shows it: a multi-line or very long text (a prompt) by its hash."""
    text = str(value)
    if len(text) > 80 or "\n" in text:
        return "text" + digest(text, 6)
    return text


def config_id(params: Overrides) -> str:
    text = json.dumps(params, sort_keys=True)
    readable = "-".join(f"{k}={shown_value(v)}" for k, v in sorted(params.items()))
    return f"{readable[:80]}-{digest(text, 6)}".replace("/", "_").replace(" ", "")


def served_depths(ks: list[int], config: PipelineConfig) -> tuple[list[int], list[int]]:
    """(depths a configuration serves and is scored at, reported depths it does not serve): those to its
    top_k, or to the deepest ask of an adaptive answerer, which widens its context up to it."""
    top_k = config.top_k
    deepest = max(config.answerer_depths() or [top_k])
    return sorted({k for k in ks if k <= deepest} | {top_k}), sorted(k for k in ks if k > deepest)


def grid_depths(grid: SweepGrid, configs: dict[str, tuple[Overrides, PipelineConfig]]) -> list[int]:
    """The grid's ``ks``; a grid that names none: every depth its adaptive answerers ask (as eval reports
    an adaptive app, :meth:`PipelineConfig.report_depths`), or the default ones."""
    if "ks" in grid.model_fields_set:
        return grid.ks
    return sorted({k for _, cfg in configs.values() for k in cfg.answerer_depths() or []}) or grid.ks


def pareto_front(points: list[tuple[str, float, float]], higher_is_better: bool = True) -> list[str]:
    """Ids not dominated on (quality, cost): cost lower is better, quality in its own direction."""
    sign = 1.0 if higher_is_better else -1.0
    pts = [(pid, sign * q, c) for pid, q, c in points]
    front = []
    for pid, q, c in pts:
        dominated = any((q2 >= q and c2 <= c) and (q2 > q or c2 < c) for _, q2, c2 in pts)
        if not dominated:
            front.append(pid)
    return front


class Sweep(BaseModel):
    """A loaded sweep: the grid's configurations by id, the baseline, objectives and depths."""

    model_config = {"arbitrary_types_allowed": True}

    grid: SweepGrid
    objectives: list[str]
    ks: list[int]
    budgets: list[int] = Field(default_factory=list)
    configs: dict[str, tuple[Overrides, PipelineConfig]]
    baseline_id: str


def load_grid(grid_path: str, base_config: PipelineConfig) -> tuple[SweepGrid, GridSize]:
    """The grid file and its size (counted, nothing expanded)."""
    try:
        grid = SweepGrid.load(grid_path)
    except ConfigError as err:
        raise RunError(str(err)) from err
    return grid, grid_size(grid.grid, base_config)


def load_sweep(
    grid_path: str,
    base_config: PipelineConfig,
    objectives: Sequence[str] | None = None,
    ks: Sequence[int] | None = None,
    budgets: Sequence[int] = (),
    allow_large: bool = False,
) -> Sweep:
    """The grid file's configurations over ``base_config``; ``objectives``, ``ks`` and ``budgets``
    given here replace the grid's own. A grid over the size limits (:mod:`~ragsweep.evaluation.grid_size`)
    is refused before it is expanded unless ``allow_large``."""
    grid, size = load_grid(grid_path, base_config)
    if (why := size.over_limit()) is not None and not allow_large:
        raise RunError(f"{grid_path}: {size.line()}: {why} (--yes runs it)")
    combos = grid.configurations()
    configs = {}
    for params in combos:
        try:
            configs[config_id(params)] = (params, base_config.with_overrides(params))
        except ConfigError as err:
            raise RunError(f"{grid_path}: {err}") from err
    matches = [p for p in combos if all(p.get(k) == v for k, v in grid.baseline.items())]
    if not matches:
        raise RunError(f"{grid_path}: the baseline {grid.baseline} is not a point of the grid")
    chosen = list(objectives or grid.objectives)
    depths_asked = sorted(set(ks or grid_depths(grid, configs)))
    all_budgets = sorted(set(budgets or grid.budgets) | set(asked_budgets(chosen)))
    depths = set(depths_asked) | {cfg.top_k for _, cfg in configs.values()}
    problems = [why for m in chosen if not m.endswith("@k") and (why := unknown_name(m, depths, all_budgets))]
    if problems:
        raise RunError(f"{grid_path}: objectives: " + "; ".join(problems))
    return Sweep(
        grid=grid,
        objectives=chosen,
        ks=depths_asked,
        budgets=all_budgets,
        configs=configs,
        baseline_id=config_id(matches[0]),
    )


def choice_and_holdout(cases: Sequence[Case], split: str | None) -> tuple[list[Case], list[Case]]:
    """(the cases the best configuration is chosen on, the held-out ones it is then scored on): with
    both splits and none asked for, choose on dev and give the verdict on test."""
    if split is None and {"dev", "test"} <= {c.split for c in cases}:
        holdout = [c for c in cases if c.split == "test"]
        chosen_on = [c for c in cases if c.split == "dev"]
        print(
            f"sweep: choosing on {len(chosen_on)} dev case(s); the choice is then scored on {len(holdout)} test "
            "case(s)",
            file=sys.stderr,
        )
        return chosen_on, holdout
    return list(cases), []


@dataclass
class Failures:
    """The configurations that failed in this run, each with its one-line reason, and when to stop."""

    reasons: dict[str, str] = field(default_factory=dict)
    scored: bool = False  # a configuration has numbers (finished in this run or an earlier one)
    lines: list[str] = field(default_factory=list)  # each failure's line while nothing is scored

    def fail(self, cids: Sequence[str], err: Exception) -> str:
        reason = " ".join(str(err).split()) or type(err).__name__  # one line, whatever the error
        self.reasons.update(dict.fromkeys(cids, reason))
        if not self.scored:
            self.lines.append(reason)
        return reason

    def stop_line(self) -> str | None:
        """Why the rest is not run: the first tries failed alike (no knob of the grid changed it)."""
        if self.scored or len(self.lines) < SAME_FAILURES_STOP or len(set(self.lines)) > 1:
            return None
        return (
            f"not run: the sweep stopped after its first {len(self.lines)} tries failed with the same error, "
            f"which the grid's knobs do not change ({self.lines[0]})"
        )


@dataclass
class SweepRun:
    """One sweep's inputs, as objects, and its open context."""

    plan: Sweep
    base_config: PipelineConfig
    dataset: Dataset
    cases: list[Case]
    holdout: list[Case]
    settings: SweepSettings
    run: RunContext[SweepState]

    @property
    def folder(self) -> RunFolder:
        return self.run.folder

    @property
    def executor(self) -> Executor:
        return self.run.executor


def run_sweep(sweep: SweepRun) -> SweepResult:
    """Every configuration of the grid scored (a resumed sweep: those not done yet), then the
    paired tests, best, Pareto set and the verdict on the held-out cases; sweep.json and sweep.csv written."""
    started_at = now()
    started = time.perf_counter()
    for _, config in sweep.plan.configs.values():  # before any parse: the endpoints every configuration calls
        check_answering(config, sweep.settings.answer if sweep.settings.answers else None)
    corpora = parse_corpora(sweep)
    corpus = corpus_for(corpora, sweep.base_config)
    warn_unsearchable_language(sweep, corpus)
    parse_seconds = time.perf_counter() - started
    results = finished_configs(sweep.folder, sweep.plan)
    failures = Failures(scored=bool(results))
    embedded = run_groups(sweep, corpora, results, failures)
    result = finish_sweep(sweep.folder, sweep.plan, results, failures.reasons)
    result.cost_pareto = cost_pareto(result.configs, sweep.plan.objectives)
    result.unlocated = sweep_unlocated(sweep.folder, sweep.plan, results, sweep.dataset.relevance.unlocated)
    result.ks = sweep.plan.ks
    result.budgets = sweep.plan.budgets
    result.choice_split = "dev" if sweep.holdout else sweep.settings.selection.split
    result.same_cases_for_choice_and_report = not sweep.holdout
    if sweep.holdout and result.configs:
        result.verdict = score_on_holdout(result, sweep, corpora)
    selection = sweep.settings.selection
    result.manifest = SweepManifest(
        pipeline=sweep.base_config.manifest(),
        dataset=DatasetManifest(
            path=selection.dataset,
            split=selection.split,
            limit=selection.limit,
            sample=selection.sample,
            seed=selection.seed,
            cases=len(sweep.cases),
        ),
        corpus=CorpusManifest(
            hash=corpus.content_hash,
            documents=len(corpus.documents),
            pdf_pipeline=corpus.pdf_pipeline,
        ),
        parse_seconds=round(parse_seconds, 3),
        embedded_texts_this_run=embedded,
        executor=sweep.executor.describe(),
        packages=package_versions(),
        git_commit=git_commit(),
        timestamps=Timestamps(started=started_at, finished=now()),
    )
    result.sweep_dir = str(sweep.folder.path)
    sweep.folder.write_json("sweep.json", result.model_dump(mode="python"))
    return result


def warn_unsearchable_language(sweep: SweepRun, corpus: Corpus) -> None:
    """Once, before any number: the configurations that cannot search the questions' or documents' script."""
    configs = {cid: cfg for cid, (_, cfg) in sweep.plan.configs.items()}
    questions = (c.question for c in [*sweep.cases, *sweep.holdout])
    line = sweep_language_warning(configs, questions, (d.text for d in corpus.documents))
    if line is not None:
        print(line, file=sys.stderr)


def parse_corpora(sweep: SweepRun) -> Corpora:
    """The documents parsed once for the whole sweep, by each distinct parser configuration of the grid."""
    corpora: Corpora = {}
    for cfg in [sweep.base_config, *(cfg for _, cfg in sweep.plan.configs.values())]:
        parse_for(sweep, corpora, cfg)
    return corpora


def parse_for(sweep: SweepRun, corpora: Corpora, config: PipelineConfig) -> Corpus:
    """The documents as ``config``'s parser parses them: parsed now unless ``corpora`` holds them already."""
    settings = sweep.settings
    if (identity := config.parser_spec().identity) not in corpora:
        try:
            corpora[identity] = parse_documents(
                sweep.dataset, settings.progress, settings.parse.workers, settings.parse.follow_symlinks,
                sweep.executor.dispatch, config,
            )  # fmt: skip
        except StageError as err:
            raise RunError(str(err)) from err
    return corpora[identity]


def finished_configs(folder: RunFolder, sweep: Sweep) -> dict[str, ConfigResult]:
    """The configurations an interrupted sweep finished (their result.json is written last)."""
    results: dict[str, ConfigResult] = {}
    for cid in sweep.configs:
        path = folder.file("configs", cid, "result.json")
        if path is not None and path.exists():
            try:
                results[cid] = ConfigResult.model_validate_json(path.read_text())
            except ValueError:
                print(f"warning: {path} is unreadable: configuration computed again", file=sys.stderr)
    if results:
        print(f"resuming: {len(results)} configuration(s) already done", file=sys.stderr)
    return results


def sweep_unlocated(folder: RunFolder, sweep: Sweep, results: dict[str, ConfigResult], mode: str) -> UnlocatedReport:
    """The unlocated cases, from the baseline's case lines (another scored configuration's if it failed)."""
    scored = [cid for cid in [sweep.baseline_id, *sweep.configs] if cid in results]
    return stored_unlocated(folder, scored[0], mode) if scored else UnlocatedReport()


def stored_unlocated(folder: RunFolder, config: str, mode: str) -> UnlocatedReport:
    """The unlocated cases, read from a configuration's case lines (finished in an earlier process too):
    which evidence is found in no parsed document does not depend on the configuration."""
    lines = expand_lines(folder.read_lines("configs", config, "cases.jsonl"), {})  # no hit text needed
    return unlocated_report([CaseResult.model_validate(line) for line in lines], mode)


# each parser configuration's corpus, by its identity (None: ragsweep's own parse)
Corpora = dict[str | None, Corpus]


def corpus_for(corpora: Corpora, config: PipelineConfig) -> Corpus:
    """The documents as the configuration's parser parsed them."""
    return corpora[config.parser_spec().identity]


def run_groups(sweep: SweepRun, corpora: Corpora, results: dict[str, ConfigResult], failures: Failures) -> int:
    """Every index group's configurations not in ``results`` yet (a failed one in ``failures``; the
    rest listed as not run there when :meth:`Failures.stop_line` says so); returns the texts embedded."""
    groups: dict[str, list[str]] = defaultdict(list)  # one index per (chunking, retriever)
    for cid, (_, cfg) in sweep.plan.configs.items():
        groups[cfg.index_key].append(cid)
    todos = {key: [cid for cid in members if cid not in results] for key, members in groups.items()}
    # every group's index work is submitted before the first is gathered: on Ray the groups run side by side
    pending = {key: submit_group(sweep, corpora, todo) for key, todo in todos.items() if todo}
    embedded = 0
    for n_group, (index_key, todo) in enumerate(todos.items(), start=1):
        if not todo:
            continue
        if (stop := failures.stop_line()) is not None:
            failures.reasons.update(dict.fromkeys(todo, stop))
            continue
        group = GroupRun(todo, (n_group, len(groups)), pending[index_key])
        embedded += run_group(sweep, corpora, results, failures, group)
    return embedded


@dataclass
class GroupRun:
    """One index group's configurations to run, its place among the groups, and its store work."""

    todo: list[str]
    position: tuple[int, int]
    retrieval: Callable[[], Retrieved]


def group_depths(sweep: Sweep, todo: list[str]) -> list[int]:
    """Every depth the store is asked at for one index's configurations: any of them needs it."""
    configs = [sweep.configs[cid][1] for cid in todo]
    return sorted({k for cfg in configs for k in store_depths(cfg, scored_ks(sweep.ks, cfg.top_k))})


def submit_group(sweep: SweepRun, corpora: Corpora, todo: list[str]) -> Callable[[], Retrieved]:
    """One index's store work handed to the executor (started now on Ray); the call returned gives its lists."""
    config = sweep.plan.configs[todo[0]][1]
    settings = sweep.settings
    depths = group_depths(sweep.plan, todo)
    return sweep.executor.submit(
        IndexWork(config, corpus_for(corpora, config), sweep.cases, depths, settings.progress, settings.fresh_retrieval)
    )


def run_group(
    sweep: SweepRun, corpora: Corpora, results: dict[str, ConfigResult], failures: Failures, group: GroupRun
) -> int:
    """One index's configurations: the store asked once at every depth any of them needs (``retrieval``,
    from :func:`submit_group`), then each configuration through the evaluation loop on those lists; a
    failure of the index or of its answerers fails them all, one configuration's fails it alone.
    Returns the texts embedded."""
    plan, cases, folder = sweep.plan, sweep.cases, sweep.folder
    todo, position = group.todo, group.position
    depths = group_depths(plan, todo)
    first_params, _ = plan.configs[todo[0]]
    label = ", ".join(f"{k}={shown_value(v)}" for k, v in first_params.items() if k != "top_k")
    print(
        f"[{position[0]}/{position[1]}] index {label}: {len(cases)} questions at k in {depths} for "
        f"{len(todo)} configuration(s)",
        file=sys.stderr,
    )
    rss_before = _rss_mb()
    started = time.perf_counter()
    try:
        retrieved = group.retrieval()
        group_seconds = time.perf_counter() - started
        answerings = answer_group(sweep, corpora, todo)
    except CONFIG_FAILURES as err:
        reason = failures.fail(todo, err)
        print(f"[{position[0]}/{position[1]}] failed ({len(todo)} configuration(s)): {reason}", file=sys.stderr)
        return 0
    for cid in todo:
        params, cfg = plan.configs[cid]
        started = time.perf_counter()
        sink = folder.case_file("configs", cid, "cases.jsonl", chunks=True)
        sink.reset()
        answering = answerings[cid]
        try:
            evaluated = evaluate_configuration(
                cfg, cases, corpus=corpus_for(corpora, cfg), ks=plan.ks, relevance=sweep.dataset.relevance,
                answering=answering, sink=sink, retrieved=retrieved, progress=sweep.settings.progress,
                budgets=plan.budgets,
            )  # fmt: skip
        except CONFIG_FAILURES as err:
            print(f"{cid}: failed: {failures.fail([cid], err)}", file=sys.stderr)
            continue
        finally:
            sink.close()
        failures.scored = True
        result = config_result(cid, params, cfg, evaluated.results, plan, interval_metrics=plan.objectives)
        result.llm_calls = llm_calls(answering)
        if sweep.settings.answers:
            result.cost = configuration_cost(cfg, evaluated.results, answering.answerer)
        result.seconds = round(group_seconds / len(todo) + time.perf_counter() - started, 3)
        result.index_run_seconds = round(group_seconds, 3)
        result.latency_ms_per_query = round(1000 * retrieved.seconds / max(1, len(cases) * len(depths)), 3)
        result.chunks, result.embedded_texts = retrieved.n_chunks, retrieved.embedded_texts
        result.rss_mb, result.rss_mb_before, result.peak_rss_mb = (
            round(_rss_mb(), 1), round(rss_before, 1), round(_peak_rss_mb(), 1)
        )  # fmt: skip
        folder.write_json(f"configs/{cid}/result.json", result.model_dump(mode="python"))
        results[cid] = result
    return retrieved.embedded_texts


def answer_group(sweep: SweepRun, corpora: Corpora, todo: list[str]) -> dict[str, Answering]:
    """Each of one index's configurations' answering; their app question answerers asked together, in
    one Pathway run over one index (configurations that differ only in how they answer share it)."""
    answerings = {cid: sweep_answering(sweep.plan.configs[cid][1], sweep.settings, sweep.cases) for cid in todo}
    if answerings and sweep.settings.answers:
        corpus = corpus_for(corpora, sweep.plan.configs[todo[0]][1])
        answerers = [a.answerer for a in answerings.values()]
        app_answers_together(answerers, sweep.cases, corpus, use_given=not sweep.settings.answer.use_llm)
    return answerings


def sweep_answering(config: PipelineConfig, settings: SweepSettings, cases: Sequence[Case]) -> Answering:
    """Eval's answering when the sweep answers (``--answers``); retrieval only otherwise."""
    if not settings.answers:
        return Answering(answerer=None)
    answering, _ = prepare_answering(config, settings.answer, cases, {}, probe=False)
    return answering


def config_result(
    cid: str,
    params: Overrides,
    config: PipelineConfig,
    cases: list[CaseResult],
    sweep: Sweep,
    interval_metrics: Sequence[str],
) -> ConfigResult:
    """A configuration's aggregate: ``<family>@k`` at its own top_k beside every depth, and a depth
    deeper than its top_k reported as missing (it does not serve it)."""
    own, unserved = served_depths(sweep.ks, config)
    names = [own_k_name(m, config.top_k) for m in [*interval_metrics, *(at_own_k(f) for f in at_k_families())]]
    agg = with_own_k(aggregate(cases, interval_metrics=names), config.top_k, unserved)
    return ConfigResult(
        id=cid, params=params, config_hash=config.hash, index_key=config.index_key, top_k=config.top_k,
        served_ks=own, unserved_ks=unserved, **dict(agg),
    )  # fmt: skip


def with_own_k(agg: Aggregate, top_k: int, unserved: Sequence[int]) -> Aggregate:
    """``<family>@k`` = ``<family>@<top_k>`` (metric, counts, interval, chance/oracle); an unserved depth: None."""
    for family in at_k_families():
        own = f"{family}@{top_k}"
        alias = at_own_k(family)
        agg.metrics[alias] = agg.metric(own)
        if own in agg.counts:
            agg.counts[alias] = agg.counts[own]
        if own in agg.intervals:
            agg.intervals[alias] = agg.intervals[own]
        if own in agg.baselines:
            agg.baselines[alias] = agg.baselines[own]
        total = agg.counts[own].n + agg.counts[own].missing if own in agg.counts else 0  # unlocated among them
        for k in unserved:
            agg.metrics[f"{family}@{k}"] = None
            agg.counts[f"{family}@{k}"] = Count(n=0, missing=total)
            agg.intervals.pop(f"{family}@{k}", None)
            agg.baselines.pop(f"{family}@{k}", None)
    return agg


def score_on_holdout(report: SweepResult, sweep_run: SweepRun, corpora: Corpora) -> HoldoutVerdict:
    """The configuration chosen on dev (best on the first objective), the baseline and what the choice is
    compared with (:func:`comparison`: at equal depth or on the lift over chance), scored on the test
    cases, with a paired test between the chosen one and that: the number to believe."""
    # deferred: metrics.stats imports scipy (~1 s); --help and the API import must not
    from ragsweep.metrics.stats import significant

    sweep, holdout, settings = sweep_run.plan, sweep_run.holdout, sweep_run.settings
    main = sweep.objectives[0]
    failed = {f.id for f in report.failed}
    chosen = report.best_on(main) or sweep.baseline_id  # a configuration's id is never empty
    reference, on = comparison(sweep, chosen, main, failed)
    verdict = HoldoutVerdict(
        cases=len(holdout), objective=main, chosen=chosen, baseline=sweep.baseline_id, compared_with=reference,
        compared_on=on, baseline_failed=sweep.baseline_id in failed,
    )  # fmt: skip
    per_case: dict[str, dict[str, _StoredScores]] = {}
    wanted = dict.fromkeys([chosen, sweep.baseline_id, *([reference] if reference else [])])
    for cid in [cid for cid in wanted if cid not in failed]:  # a failed one has no numbers here either
        params, cfg = sweep.configs[cid]
        evaluated = evaluate_configuration(
            cfg, holdout, corpus=corpus_for(corpora, cfg), ks=sweep.ks, relevance=sweep_run.dataset.relevance,
            answering=sweep_answering(cfg, settings, holdout), progress=settings.progress,
            fresh=settings.fresh_retrieval, budgets=sweep.budgets, executor=sweep_run.executor,
        )  # fmt: skip
        agg = config_result(cid, params, cfg, evaluated.results, sweep, interval_metrics=sweep.objectives)
        verdict.configs[cid] = HoldoutConfig(
            params=params,
            metrics=agg.metrics,
            intervals=agg.intervals,
            counts=agg.counts,
            baselines={m: agg.baselines[m] for m in sweep.objectives if m in agg.baselines},
        )
        per_case[cid] = {
            r.id: _StoredScores(id=r.id, top_k=r.top_k, metrics=r.metrics, chance=r.chance) for r in evaluated.results
        }
    if reference is not None:
        verdict.p_value = paired_p(per_case[chosen], per_case[reference], main, on)
        verdict.significant = significant(verdict.p_value, ALPHA)
        pairs = paired_values(per_case[chosen], per_case[reference], main, on)
        verdict.difference = sum(b - a for a, b in pairs) / len(pairs) if pairs else None
    return verdict


class _StoredScores(BaseModel):
    """What a paired test reads of a stored case line."""

    id: str
    top_k: int
    metrics: dict[str, float | None] = Field(default_factory=dict)
    chance: dict[str, float | None] = Field(default_factory=dict)

    def value(self, name: str, on: str) -> float | None:
        """``name``'s value (``on`` = "value") or its lift over the case's chance level ("lift")."""
        value = case_metric(self.metrics, name, self.top_k)
        return value if on == "value" else case_lift(value, case_metric(self.chance, name, self.top_k))


def comparison(sweep: Sweep, cid: str, metric: str, failed: Collection[str] = ()) -> tuple[str | None, str]:
    """(what ``cid``'s paired test on ``metric`` is against, on "value" or "lift"): the baseline, or for an
    objective at each configuration's own depth the baseline's pipeline at ``cid``'s depth, on the value;
    where the grid has none, the baseline on each case's lift over chance. None: not tested (the baseline
    itself, the baseline's pipeline at another depth, or a reference in ``failed``: it has no numbers, and
    no other configuration stands in for the baseline the grid names)."""
    reference, on = _reference(sweep, cid, metric)
    return (None if reference in failed else reference), on


def _reference(sweep: Sweep, cid: str, metric: str) -> tuple[str | None, str]:
    if not depends_on_depth(metric):
        return (None if cid == sweep.baseline_id else sweep.baseline_id), "value"
    points = {other: (params, cfg.top_k) for other, (params, cfg) in sweep.configs.items()}
    reference = same_depth_baseline(points, sweep.baseline_id, cid)
    if reference is None:
        return sweep.baseline_id, "lift"
    return (None if reference == cid else reference), "value"


def paired_values(
    ours: dict[str, _StoredScores], theirs: dict[str, _StoredScores], metric: str, on: str
) -> list[tuple[float, float]]:
    """(theirs, ours) per case, over the cases both have a value of."""
    pairs = [(theirs[i].value(metric, on), ours[i].value(metric, on)) for i in theirs if i in ours]
    return [(a, b) for a, b in pairs if a is not None and b is not None]


def paired_p(ours: dict[str, _StoredScores], theirs: dict[str, _StoredScores], metric: str, on: str) -> float | None:
    """The paired randomization test's p over the cases both have a value of."""
    # deferred: metrics.stats imports scipy (~1 s); --help and the API import must not
    from ragsweep.metrics.stats import paired_test

    full = paired_values(ours, theirs, metric, on)
    return paired_test([a for a, _ in full], [b for _, b in full]) if full else None


@dataclass
class _PairedTests:
    """Each scored configuration's paired test per objective: against what and on what (``compared``),
    its p-value, and that p-value Holm-adjusted across the configurations tested on the same metric."""

    compared: dict[tuple[str, str], tuple[str | None, str]]
    p_values: dict[str, dict[str, float | None]]  # metric -> every scored configuration (None: not tested)
    adjusted: dict[str, dict[str, float | None]]


def _paired_tests(folder: RunFolder, sweep: Sweep, scored: list[str], failed: Mapping[str, str]) -> _PairedTests:
    # deferred: metrics.stats imports scipy (~1 s); --help and the API import must not
    from ragsweep.metrics.stats import holm

    stored: dict[str, dict[str, _StoredScores]] = {}

    def per_case(cid: str) -> dict[str, _StoredScores]:
        # the stored lines as they are: their metrics, chance levels and top_k (a compact line keeps them)
        # are all a paired test needs, without the chunk table or a CaseResult per line and configuration
        if cid not in stored:
            rows = [_StoredScores.model_validate(row) for row in folder.read_lines("configs", cid, "cases.jsonl")]
            stored[cid] = {row.id: row for row in rows}
        return stored[cid]

    compared = {(cid, m): comparison(sweep, cid, m, failed) for cid in scored for m in sweep.objectives}
    p_values: dict[str, dict[str, float | None]] = defaultdict(dict)
    for (cid, name), (reference, on) in compared.items():
        p_values[name][cid] = None if reference is None else paired_p(per_case(cid), per_case(reference), name, on)
    # holm counts only the p-values there are: an untested configuration stays None and changes no other's
    adjusted = {metric: holm(by_cid) for metric, by_cid in p_values.items()}
    return _PairedTests(compared, p_values, adjusted)


def _tested_row(
    cid: str, row: ConfigResult, objectives: list[str], tests: _PairedTests, baseline: ConfigResult | None
) -> ConfigResult:
    """``row`` (configuration ``cid``) with, per objective, its paired test, its difference from the baseline and its lift over chance."""
    # deferred: metrics.stats imports scipy (~1 s); --help and the API import must not
    from ragsweep.metrics.stats import significant

    for m in objectives:
        row.compared_with[m], row.compared_on[m] = tests.compared[(cid, m)]
        row.p_values[m] = tests.p_values[m][cid]
        row.p_adjusted[m] = tests.adjusted[m][cid]
        row.significant[m] = significant(row.p_adjusted[m], ALPHA)
        value, base = row.metric(m), baseline.metric(m) if baseline is not None else None
        row.delta_vs_baseline[m] = None if value is None or base is None else value - base
        row.chance_level[m], row.lift_over_chance[m] = lift_over_chance(row, m)
    return row


def _choose(report: SweepResult, rows: list[ConfigResult], objectives: list[str]) -> None:
    """The best configuration per objective (ties named) and the Pareto front of the main objective
    against latency, on what "best" is chosen on (the value or its lift over chance)."""
    choice = best_configs(rows, objectives)
    report.best, report.chosen_by, report.ties = choice.best, choice.chosen_by, choice.ties
    main_metric = objectives[0]
    on = report.chosen_on(main_metric)  # quality on what "best" is chosen on: depth is not quality
    report.pareto = pareto_front(
        [(r.id, v, r.latency_ms_per_query) for r in rows if (v := measured(r, main_metric, on)) is not None],
        higher_is_better=not lower_is_better(main_metric),
    )
    report.pareto_axes = [f"{main_metric} lift over chance" if on == "lift" else main_metric, "latency_ms_per_query"]


def finish_sweep(
    folder: RunFolder, sweep: Sweep, results: dict[str, ConfigResult], failed: Mapping[str, str] | None = None
) -> SweepResult:
    """Paired tests like with like (:func:`comparison`; Holm across configurations), best, Pareto, CSV, over
    the configurations in ``results``; those in ``failed`` (id -> reason) listed apart, with no numbers."""
    failed = failed or {}
    scored = [cid for cid in sweep.configs if cid in results and cid not in failed]
    tests = _paired_tests(folder, sweep, scored, failed)
    baseline = results.get(sweep.baseline_id) if sweep.baseline_id not in failed else None
    rows = [_tested_row(cid, results[cid].model_copy(deep=True), sweep.objectives, tests, baseline) for cid in scored]
    report = SweepResult(
        baseline=sweep.baseline_id, grid=sweep.grid.grid, objectives=sweep.objectives, configs=rows,
        directions={m: ("lower" if lower_is_better(m) else "higher") for m in sweep.objectives}, alpha=ALPHA,
        failed=[FailedConfig(id=cid, params=sweep.configs[cid][0], reason=failed[cid]) for cid in sweep.configs
                if cid in failed],
    )  # fmt: skip
    _choose(report, rows, sweep.objectives)
    if folder.path is not None:
        write_csv(folder.path / "sweep.csv", rows, sweep.objectives)
    return report


def lift_over_chance(row: ConfigResult, metric: str) -> tuple[float | None, float | None]:
    """(chance level, value - chance) of ``metric``, both over the cases with a chance level
    (the aggregate's baselines: a random order of each case's candidate chunks)."""
    chance = row.level(metric, "chance")
    value = row.baselines[metric]["pipeline"] if metric in row.baselines else None
    if chance is None or value is None:
        return None, None
    return chance, float(value) - chance


def write_csv(path: Path, rows: list[ConfigResult], objectives: list[str]) -> None:
    import csv

    params = sorted({k for r in rows for k in r.params})
    metric_names = sorted({k for r in rows for k in r.metrics if "@k" in k or k in objectives})
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "id",
                *params,
                *metric_names,
                *[f"{m}_{s}" for m in objectives for s in ("ci_low", "ci_high", "p", "p_holm", "significant")],
                "seconds",
                "latency_ms_per_query",
                "peak_rss_mb",
            ]
        )
        for r in rows:
            w.writerow(
                [
                    r.id,
                    *[r.param(p) for p in params],
                    *[r.metric(m) for m in metric_names],
                    *[
                        v
                        for m in objectives
                        for v in (
                            *r.interval(m),
                            r.p_values[m],  # finish_sweep sets each objective's test on every row
                            r.p_adjusted[m],
                            r.significant[m],
                        )
                    ],
                    r.seconds,
                    r.latency_ms_per_query,
                    r.peak_rss_mb,
                ]
            )


def _rss_mb() -> float:
    try:
        import psutil

        return float(psutil.Process().memory_info().rss) / 2**20
    except ImportError:
        return 0.0


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
