"""`ragsweep init|index|retrieve|validate|eval|watch|sweep|tune|compare|generate`."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from importlib.metadata import PackageNotFoundError, version

from ragsweep import __version__
from ragsweep.argtypes import add_options, bounded, options_from
from ragsweep.commands.eval import EvalOptions, run_eval_cli
from ragsweep.commands.generate import add_arguments as generate_arguments
from ragsweep.commands.generate import run_generate_cli
from ragsweep.commands.init import add_arguments as init_arguments
from ragsweep.commands.init import run_init_cli
from ragsweep.commands.options import DocumentOptions
from ragsweep.commands.sweep import SweepOptions, run_sweep_cli
from ragsweep.commands.tune import TuneOptions, run_tune_cli
from ragsweep.commands.watch import WatchOptions, run_watch
from ragsweep.core.errors import ConfigError, RunError, StageError
from ragsweep.core.offline import ensure_offline
from ragsweep.core.quiet import silence_dependency_warnings
from ragsweep.core.starter import DEFAULT_PIPELINE
from ragsweep.pipeline.app_components import AppComponentError
from ragsweep.pipeline.config import PipelineConfig, parse_overrides
from ragsweep.pipeline.corpus import CorpusError, parse_corpus, shown_name
from ragsweep.validate.command import add_arguments as validate_arguments
from ragsweep.validate.command import parse_only_line, parse_options
from ragsweep.validate.parsed import check_dataset


def _fail(message: str, code: int = 2) -> int:
    print(f"ragsweep: error: {message}", file=sys.stderr)
    return code


def _load_config(args):
    return PipelineConfig.load(args.pipeline, parse_overrides(getattr(args, "set", None)))


def _parse(args, config, quiet: bool = False):
    """``--docs`` parsed by the pipeline's parser, as ``--workers`` and ``--follow-symlinks`` say."""
    # deferred: imports Pathway (~1 s); --help must not
    from ragsweep.pipeline.parsing import check_parser

    read = options_from(DocumentOptions, args)
    spec = check_parser(config, args.docs)
    return parse_corpus(
        args.docs, progress=not quiet, workers=read.workers, follow_symlinks=read.follow_symlinks,
        parse_fn=spec.parse_fn(), parser_id=spec.identity,
    )  # fmt: skip


def _document_options(p) -> None:
    add_options(p, DocumentOptions)


def _pathway_threads_option(p) -> None:
    p.add_argument(
        "--pathway-threads",
        type=bounded(int, low=1, name="a whole number of threads"),
        metavar="N",
        help="Pathway workers (threads) of each index run: sets PATHWAY_THREADS, read by pw.run "
        "(default: that variable, else 1; Pathway reduces more than 8 to 8 without a licence key)",
    )


def _print_parse_notes(corpus, file=None) -> None:
    """The skipped documents and the parse warnings (``file`` None: stdout)."""
    for skipped in corpus.skipped:
        print(f"skipped {shown_name(skipped.doc_id)}: {skipped.reason}", file=file)
    for doc_id, warnings in corpus.warnings.items():
        for warning in warnings:
            print(f"warning {shown_name(doc_id)}: {warning}", file=file)


def cmd_index(args) -> int:
    # deferred: imports Pathway (~1 s); --help must not
    from ragsweep.pipeline.store import RagStore

    config = _load_config(args)
    started = time.perf_counter()
    corpus = _parse(args, config)
    parse_seconds = time.perf_counter() - started
    _print_parse_notes(corpus)
    if not corpus.documents:
        return _fail(f"no document of {args.docs!r} could be parsed ({len(corpus.skipped)} skipped)")
    store = RagStore(config, corpus)
    stats = store.index(progress=True)
    window = (config.variables.min_tokens or 0, config.variables.max_tokens or 10**9)
    assert store.last_run is not None
    outside = _outside_window(store.last_run.chunks, *window)
    report = _index_report(args.docs, config, corpus, stats, parse_seconds, outside)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    _print_index(report, corpus, stats, window)
    return 0


def _outside_window(chunks, min_tokens: int, max_tokens: int) -> int:
    """Chunks whose token count is outside [min_tokens, max_tokens], the last of each document excepted."""
    last_of_doc = {}
    for chunk in chunks:
        last_of_doc[chunk.doc_id] = chunk
    return len([c for c in chunks if not (min_tokens <= c.tokens <= max_tokens) and last_of_doc[c.doc_id] is not c])


def _index_report(docs: str, config, corpus, stats, parse_seconds: float, outside: int) -> dict:
    """What ``ragsweep index --json`` prints."""
    return {
        "pipeline": config.manifest(),
        "docs": docs,
        "pdf_pipeline": corpus.pdf_pipeline,
        "parsed": len(corpus.documents),
        "parsed_from_cache": sum(d.cached for d in corpus.documents),
        "skipped": [s.model_dump() for s in corpus.skipped],
        "warnings": corpus.warnings,
        "chunks": stats.chunks,
        "tokens": stats.tokens,
        "tokens_per_chunk": [stats.tokens_per_chunk_min, stats.tokens_per_chunk_max],
        "chunks_outside_window_excluding_last": outside,
        "embedded_texts": stats.embedded_texts,
        "seconds": {
            "parse": round(parse_seconds, 2),
            "split": round(stats.split_seconds, 2),
            "embed": round(stats.embed_seconds, 2),
            "index_total": round(stats.seconds, 2),
        },
    }


def _print_index(report: dict, corpus, stats, window: tuple[int, int]) -> None:
    """``ragsweep index`` without --json: the documents, the chunks and the time taken."""
    print(
        f"documents: {len(corpus.documents)} parsed ({report['parsed_from_cache']} from cache), "
        f"{len(corpus.skipped)} skipped; PDF pipeline: {corpus.pdf_pipeline}"
    )
    names = {d.doc_id: shown_name(d.doc_id) for d in corpus.documents}  # a newline in a name stays one line
    width = max(len(name) for name in names.values())
    for doc in corpus.documents:
        print(
            f"  {names[doc.doc_id]:<{width}}  {doc.parser:<22} {len(doc.text):>8} chars  "
            f"{stats.chunks_per_document.get(doc.doc_id, 0):>4} chunks  {doc.seconds:6.2f}s"
        )
    print(
        f"chunks: {stats.chunks}  tokens: {stats.tokens}  tokens/chunk: "
        f"{stats.tokens_per_chunk_min}..{stats.tokens_per_chunk_max}  "
        f"outside [{window[0]}, {window[1]}] (last chunk of a document excepted): "
        f"{report['chunks_outside_window_excluding_last']}"
    )
    s = report["seconds"]
    print(
        f"time: parse {s['parse']}s, split {s['split']}s, embed {s['embed']}s "
        f"({stats.embedded_texts} texts embedded, the rest from cache), index run total {s['index_total']}s"
    )


def cmd_retrieve(args) -> int:
    # deferred: imports Pathway (~1 s); --help must not
    from ragsweep.pipeline.store import RagStore

    config = _load_config(args)
    corpus = _parse(args, config, quiet=True)
    _print_parse_notes(corpus, sys.stderr)
    if not corpus.documents:
        return _fail(f"no document of {args.docs!r} could be parsed")
    # --scope is repeatable (action="append"): args.scope is already the list of document ids
    scope = list(args.scope) if args.scope else None
    if scope and (bad := _unserved_scope(scope, corpus)) is not None:
        return _fail(bad)
    hits_per_question = RagStore(config, corpus).retrieve(
        args.question, k=args.k, doc_scopes=[scope] * len(args.question)
    )
    if args.json:
        print(json.dumps([[h.model_dump() for h in hits] for hits in hits_per_question], indent=2))
        return 0
    for question, hits in zip(args.question, hits_per_question):
        print(f"Q: {question}")
        for h in hits:
            snippet = " ".join(h.served_text.split())[:160]
            print(f"  {h.rank:>2}. {h.score:9.4f}  {shown_name(h.doc_id)} [{h.start}:{h.end}]\n      {snippet}")
    return 0


def _unserved_scope(scope: list[str], corpus) -> str | None:
    """Why a ``--scope`` names a document the index does not hold (an empty answer would look like a miss)."""
    parsed = {d.doc_id for d in corpus.documents}
    skipped = {s.doc_id: s.reason for s in corpus.skipped}
    for doc_id in scope:
        if doc_id in skipped:
            return f"--scope {doc_id!r}: that document was not parsed ({skipped[doc_id]})"
        if doc_id not in parsed:
            example = min(parsed, default="")
            return f"--scope {doc_id!r}: no such document in {corpus.docs_dir} (an id is a path under it, e.g. {example!r})"
    return None


def cmd_validate(args) -> int:
    check = check_dataset(args.dataset, **parse_options(args))
    problems = check.problems
    for problem in problems:
        print(problem)
    if (line := parse_only_line(check.parse_only)) is not None:
        print(line)
    if problems:
        print(f"{len(problems)} problem(s) in {args.dataset}", file=sys.stderr)
        return 1
    print(f"{args.dataset}: no problems")
    return 0


def cmd_eval(args) -> int:
    try:
        options = options_from(EvalOptions, args)
    except ValueError as err:  # a bad --min or --set (pydantic's ValidationError is one too)
        return _fail(str(err))
    return run_eval_cli(options, args)


def cmd_watch(args) -> int:
    try:
        options = options_from(WatchOptions, args)
    except ValueError as err:
        return _fail(str(err))
    return run_watch(options)


def cmd_sweep(args) -> int:
    try:
        options = options_from(SweepOptions, args)
    except ValueError as err:
        return _fail(str(err))
    return run_sweep_cli(options, args)


def cmd_tune(args) -> int:
    try:
        options = options_from(TuneOptions, args)
    except ValueError as err:
        return _fail(str(err))
    return run_tune_cli(options, args)


def cmd_compare(args) -> int:
    # deferred: the paired tests import scipy (~0.3 s); --help must not
    from ragsweep.report.compare import run_compare_cli

    return run_compare_cli(args)


def cmd_generate(args) -> int:
    return run_generate_cli(args)


def package_version() -> str:
    """The installed distribution's version (what pip installed), else the source tree's."""
    try:
        return version("ragsweep")
    except PackageNotFoundError:
        return __version__


def _mlflow_options(p) -> None:
    p.add_argument("--mlflow", action="store_true", help="log the run to MLflow")
    p.add_argument("--mlflow-uri", help="MLflow tracking URI (default: a local file store)")


def _pipeline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pipeline", default=DEFAULT_PIPELINE,
        help="pipeline YAML (Pathway syntax); where ./pipelines/default.yaml does not exist, the default is "
        "the one ragsweep ships (default: %(default)s)",
    )  # fmt: skip
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a $variable of the pipeline")


def _add_corpus_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands that set up or look at a documents folder and a dataset, before any evaluation."""
    p = sub.add_parser(
        "init", help="write the default pipeline and a starter dataset folder into DIR, next to your app"
    )
    init_arguments(p)
    p.set_defaults(func=run_init_cli)

    p = sub.add_parser("index", help="parse, split, embed and index a documents folder; report what was built")
    _pipeline_args(p)
    p.add_argument("--docs", required=True)
    _document_options(p)
    _pathway_threads_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("retrieve", help="top-k chunks for one or more questions")
    _pipeline_args(p)
    p.add_argument("--docs", required=True)
    p.add_argument("-k", type=bounded(int, low=1), default=None, help="how many chunks (default: the pipeline's top_k)")
    p.add_argument("--scope", action="append", help="restrict to this document id (repeatable)")
    _document_options(p)
    _pathway_threads_option(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("question", nargs="+")
    p.set_defaults(func=cmd_retrieve)

    p = sub.add_parser("validate", help="list every problem of a dataset")
    validate_arguments(p)
    p.set_defaults(func=cmd_validate)


def _add_evaluation_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands that evaluate (once, on every change, over a grid) and that compare two runs."""
    p = sub.add_parser("eval", help="evaluate a pipeline on a dataset; write a run folder")
    add_options(p, EvalOptions)
    _mlflow_options(p)
    _pathway_threads_option(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("watch", help="evaluate, then again on every change of the documents folder: what moved")
    add_options(p, WatchOptions)
    _pathway_threads_option(p)
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("sweep", help="grid search over pipeline variables")
    add_options(p, SweepOptions)
    _mlflow_options(p)
    _pathway_threads_option(p)
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("tune", help="search a space of pipeline variables with Optuna (a grid is a space)")
    add_options(p, TuneOptions)
    _mlflow_options(p)
    _pathway_threads_option(p)
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("compare", help="per-metric deltas between two runs, paired")
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument("--markdown", help="also write the comparison as Markdown to this file")
    p.add_argument("--json", help="also write the comparison as JSON to this file (the case ids of each move)")
    p.set_defaults(func=cmd_compare)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragsweep", description=__doc__)
    parser.add_argument("--version", action="version", version=f"ragsweep {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_corpus_commands(sub)
    _add_evaluation_commands(sub)
    p = sub.add_parser("generate", help="a verified test set from a documents folder (OpenAI-compatible LLM)")
    _pipeline_args(p)
    generate_arguments(p)
    p.set_defaults(func=cmd_generate)
    return parser


def main(argv: list[str] | None = None) -> int:
    ensure_offline()
    silence_dependency_warnings()
    logging.basicConfig(level=logging.WARNING)
    args = build_parser().parse_args(argv)
    if getattr(args, "pathway_threads", None):  # before any pw.run, which reads it
        os.environ["PATHWAY_THREADS"] = str(args.pathway_threads)
    try:
        return int(args.func(args) or 0)
    except (ConfigError, RunError, CorpusError, AppComponentError, StageError, FileNotFoundError) as err:
        return _fail(str(err))
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
