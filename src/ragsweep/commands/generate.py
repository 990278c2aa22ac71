"""The options of ``ragsweep generate`` and the command itself (``ragsweep.cli`` adds the subparser)."""

from __future__ import annotations

import argparse
import json
import sys

from ragsweep.argtypes import add_options, bounded, options_from
from ragsweep.commands.options import DocumentOptions
from ragsweep.core.errors import RunError
from ragsweep.cost.calls import NO_PRICE
from ragsweep.evaluation.settings import ParseSettings
from ragsweep.generate.propose import KINDS
from ragsweep.generate.settings import DEFAULT_DEDUPE_THRESHOLD, GenerateSettings
from ragsweep.pipeline.config import parse_overrides


def _types(text: str) -> list[str]:
    kinds = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in kinds if t not in KINDS]
    if not kinds or bad:
        raise argparse.ArgumentTypeError(f"--types {text!r}: expected some of {','.join(KINDS)}")
    return list(dict.fromkeys(kinds))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--docs", help="documents folder (default with --from-failures: the run's)")
    p.add_argument("--out", required=True, help="the dataset folder to write, e.g. datasets/mine")
    p.add_argument(
        "--n",
        type=bounded(int, low=1, name="a whole number of cases"),
        default=200,
        help="number of cases (default 200)",
    )
    p.add_argument(
        "--types", type=_types, default=list(KINDS), help=f"kinds of question, split evenly (default {','.join(KINDS)})"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the passage sampling and the dev/test split")
    p.add_argument("--dry-run", action="store_true", help="print the LLM calls and tokens it would take, then stop")
    p.add_argument(
        "--from-failures",
        metavar="RUN_DIR",
        help="propose new cases from the failed cases of an eval run (same type, other documents)",
    )
    p.add_argument(
        "--dedupe-threshold",
        type=bounded(float, 0, 1, name="a cosine similarity"),
        default=DEFAULT_DEDUPE_THRESHOLD,
        help=f"cosine similarity from which a question is a near-duplicate (default {DEFAULT_DEDUPE_THRESHOLD})",
    )
    p.add_argument(
        "--test-fraction",
        type=bounded(float, 0, 1, name="a share"),
        default=0.5,
        help="share of each kind in the test split",
    )
    p.add_argument(
        "--oversample",
        type=float,
        default=1.5,
        help="candidates proposed per case needed, to make up for drops (default 1.5)",
    )
    p.add_argument(
        "--max-rounds",
        type=bounded(int, low=1, name="a whole number of rounds"),
        default=10,
        help="rounds of proposals to replace drops and calls that failed (default 10)",
    )
    p.add_argument(
        "--check-k",
        type=bounded(int, low=1, name="a whole number of chunks"),
        help="chunks retrieved to check an unanswerable question (default: the pipeline's top_k)",
    )
    p.add_argument("--link-docs", action="store_true", help="symlink docs/ instead of copying the documents")
    p.add_argument("--force", action="store_true", help="replace a non-empty --out folder")
    add_options(p, DocumentOptions)


def settings_of(args: argparse.Namespace) -> GenerateSettings:
    """The generator's settings from the parsed options (the documents options as every command reads them)."""
    documents = options_from(DocumentOptions, args)
    return GenerateSettings(
        docs=args.docs,
        out=args.out,
        n=args.n,
        types=args.types,
        seed=args.seed,
        pipeline=args.pipeline,
        overrides=parse_overrides(getattr(args, "set", None)),
        parse=ParseSettings(workers=documents.workers, follow_symlinks=documents.follow_symlinks),
        dry_run=args.dry_run,
        from_failures=args.from_failures,
        dedupe_threshold=args.dedupe_threshold,
        test_fraction=args.test_fraction,
        oversample=max(1.0, args.oversample),
        max_rounds=args.max_rounds,
        check_k=args.check_k,
        link_docs=args.link_docs,
        force=args.force,
        command="ragsweep " + " ".join(sys.argv[1:]),
    )


def run_generate_cli(args: argparse.Namespace) -> int:
    # deferred: the generator and the run reader load the records and the metrics (~0.15 s); --help must not
    from ragsweep.generate.failures import FailuresError

    # deferred: the generator loads the pipeline store and the run records; --help must not
    from ragsweep.generate.generator import GenerateError, estimate, generate_dataset

    try:
        settings = settings_of(args)
        if settings.dry_run:
            print(json.dumps(estimate(settings), indent=2))
            return 0
        result = generate_dataset(settings)
    except (GenerateError, FailuresError, RunError) as err:  # RunError: the endpoint went away mid-generation
        print(f"ragsweep: error: {err}", file=sys.stderr)
        return 2
    print(f"{result['out']}: {result['cases']} cases {result['kept']} (requested {result['requested']})")
    print(
        f"proposed {result['proposed']}; dropped {result['dropped'] or 'none'}"
        + (f"; {result['surplus']} passed beyond the quota" if result["surplus"] else "")
    )
    u = result["usage"]
    rate = u["errors"] / u["calls"] if u["calls"] else 0.0
    print(
        f"LLM: {u['calls']} calls ({u['cached']} from cache, {u['errors']} failed: {rate:.1%}), "
        f"{u['prompt_tokens']} prompt + {u['completion_tokens']} completion tokens, "
        + (f"${u['cost_usd']:.4f}" if result["price_set"] else NO_PRICE)
    )
    calls = result["llm_calls"]
    if calls:
        print(f"  {'failed: ' + calls['why'] + '; ' if calls['why'] else ''}{calls['endpoint_line']}")
    print(f"stopped after {result['rounds']} round(s): {result['stopped']}")
    if result["short"]:
        print(f"warning: fewer cases than requested: {result['short']} ({result['stopped']})", file=sys.stderr)
    if result["problems"]:
        for p in result["problems"]:
            print(p, file=sys.stderr)
        print(f"ragsweep: error: `ragsweep validate` found {len(result['problems'])} problem(s)", file=sys.stderr)
        return 1
    print(f"validate: {result['out']}: no problems")
    return 0
