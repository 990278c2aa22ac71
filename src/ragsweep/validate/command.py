"""Validate a dataset folder or a cases file, collecting ALL problems (never stopping at the first).

``ragsweep validate`` (and ``python -m ragsweep.validate.command``): the checks of
:mod:`ragsweep.validate.parsed`, printed one problem a line; without ``--parse`` the
evidence is located in the text readable without parsing, and the cases left to ``--parse`` counted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO, TypedDict

from ragsweep.argtypes import add_options, options_from
from ragsweep.commands.options import DocumentOptions
from ragsweep.datasets.loader import cases_file_name, read_cases, read_settings
from ragsweep.datasets.schema import list_doc_ids
from ragsweep.validate.parsed import check_dataset, validate_cases_file


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """``ragsweep validate --dataset D``: print every problem; exit code 0 when valid, 1 otherwise."""
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="ragsweep validate", description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", help="dataset folder (or a cases .jsonl file)")
    add_arguments(parser, short=True)
    args = parser.parse_args(argv)
    target = args.dataset or args.path
    if not target:
        parser.error("give a dataset folder")
    path = Path(target)
    if path.is_file():  # a cases file: checked against the docs/ folder next to it, if any
        settings, _ = read_settings(path.parent)
        docs_dir = path.parent / settings.docs
        doc_ids = set(list_doc_ids(docs_dir)) if docs_dir.is_dir() else None
        problems = validate_cases_file(path, doc_ids, docs_dir=docs_dir if docs_dir.is_dir() else None)
        parse_only = 0
    else:
        check = check_dataset(path, **parse_options(args))
        problems, parse_only = check.problems, check.parse_only
    for problem in problems:
        print(problem, file=out)
    if (line := parse_only_line(parse_only)) is not None:
        print(line, file=out)
    if problems:
        print(f"{len(problems)} problem(s) in {path}", file=out)
        return 1
    n = len(read_cases(path if path.is_file() else path / _cases_name(path))[0])
    print(f"OK: {path} ({n} cases)", file=out)
    return 0


def add_arguments(parser: argparse.ArgumentParser, short: bool = False) -> None:
    """``ragsweep validate``'s options (``--dataset``, ``--parse`` and the documents' options)."""
    flags = ("--dataset", "-d") if short else ("--dataset",)
    parser.add_argument(*flags, dest="dataset", required=not short, help="dataset folder (or a cases .jsonl file)")
    parser.add_argument(
        "--parse",
        action="store_true",
        help="parse the documents and locate every evidence span in them; each span found in no parsed text is a "
        "problem, shown with the closest passage",
    )
    parser.add_argument(
        "--pipeline",
        help="with --parse: parse with this pipeline's parser (your app's, as it serves the text), not ragsweep's own",
    )
    add_options(parser, DocumentOptions)


class ValidateKeywords(TypedDict):
    """The keywords of :func:`check_dataset` besides the folder."""

    parse: bool
    pipeline: str | None
    workers: int | None
    follow_symlinks: bool
    locate: bool


def parse_options(args: argparse.Namespace) -> ValidateKeywords:
    """The keywords of :func:`check_dataset` that ``args`` gives: without ``--parse``, the evidence is
    located in the text readable without parsing."""
    read = options_from(DocumentOptions, args)
    pipeline = getattr(args, "pipeline", None)
    return ValidateKeywords(
        parse=bool(args.parse),
        pipeline=pipeline,
        workers=read.workers,
        follow_symlinks=read.follow_symlinks,
        locate=not args.parse,
    )


def parse_only_line(cases: int) -> str | None:
    """What plain ``validate`` could not check: the cases whose evidence may lie in a document it did not parse."""
    if not cases:
        return None
    return (
        f"{cases} case(s) have evidence in documents that need parsing (not in the parse cache):"
        " only validate --parse can locate it"
    )


def _cases_name(root: Path) -> str:
    settings, _ = read_settings(root)
    return cases_file_name(root, settings)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
