"""``ragsweep init DIR``: a pipeline and an evaluation set next to your app, from the files the wheel ships.

``DIR/pipeline.yaml`` is the default pipeline (Pathway's DocumentStore: parse, split, embed, hybrid index;
its ``$variables`` are the knobs) and ``DIR/eval-set/`` a dataset folder (``docs/``, ``cases.jsonl``,
``dataset.yaml``, ``README.md``) holding a starter set of 3 CUAD contracts and their 123 questions, so that
``ragsweep eval`` runs at once; ``--empty`` writes the folder without them, to fill with your own. A file
that is already there is kept, and said to be kept, unless ``--force``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from ragsweep.core.starter import packaged_dataset, packaged_pipeline

EVAL_SET = "eval-set"
PIPELINE = "pipeline.yaml"

EMPTY_DATASET_YAML = """\
# the dataset's name is its folder's; relevance: a chunk is relevant when it overlaps a labelled evidence span
relevance: evidence_offsets
evidence_min_overlap_fraction: 0.5
evidence_min_overlap_chars: 100
"""

EMPTY_README = """\
# My evaluation set

Where the documents in `docs/` come from, under which licence, and who wrote the questions of
`cases.jsonl` (`ragsweep validate` asks for this file).

`cases.jsonl` holds one question a line, with the passage that answers it (`doc_id` optional):

    {"id": "term", "question": "Who may terminate the agreement?", "evidence": [{"doc_id": "contract.txt", \
"text": "The Sponsor shall have the right to terminate this Agreement"}]}

A question the documents do not answer has `"unanswerable": true` and no evidence.
"""


@dataclass(frozen=True)
class Planned:
    """One file ``init`` writes: where, and its bytes."""

    path: Path
    data: bytes


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", metavar="DIR", help="the folder to write into, e.g. next to your app.yaml")
    p.add_argument("--empty", action="store_true", help="the dataset folder without the starter contracts and cases")
    p.add_argument("--force", action="store_true", help="overwrite files that are already there")


def planned_files(root: Path, empty: bool) -> list[Planned]:
    """What ``init`` writes under ``root``: the pipeline, then the dataset folder's files."""
    files = [Planned(root / PIPELINE, packaged_pipeline().read_bytes())]
    dataset, starter = root / EVAL_SET, packaged_dataset()
    if empty:
        files.append(Planned(dataset / "dataset.yaml", EMPTY_DATASET_YAML.encode()))
        files.append(Planned(dataset / "README.md", EMPTY_README.encode()))
        files.append(Planned(dataset / "cases.jsonl", b""))
        return files
    for source in sorted(p for p in starter.rglob("*") if p.is_file()):
        files.append(Planned(dataset / source.relative_to(starter), source.read_bytes()))
    return files


def write_files(files: list[Planned], force: bool, out=None) -> list[Path]:
    """Write each file, saying what happened to it; returns the ones kept as they were."""
    out = out or sys.stdout
    kept = []
    for planned in files:
        existed = planned.path.exists()
        if existed and not force:
            kept.append(planned.path)
            print(f"kept     {planned.path} (already there; --force overwrites it)", file=out)
            continue
        planned.path.parent.mkdir(parents=True, exist_ok=True)
        planned.path.write_bytes(planned.data)
        print(f"{'replaced' if existed else 'wrote':<8} {planned.path}", file=out)
    return kept


def run_init_cli(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    if root.exists() and not root.is_dir():
        print(f"ragsweep: error: {root}: not a folder", file=sys.stderr)
        return 2
    kept = write_files(planned_files(root, args.empty), args.force)
    (root / EVAL_SET / "docs").mkdir(parents=True, exist_ok=True)
    if kept:
        print(f"{len(kept)} file(s) already there were kept as they were")
    pipeline, dataset = root / PIPELINE, root / EVAL_SET
    if args.empty:
        print(f"next: put your documents in {dataset / 'docs'}, your questions in {dataset / 'cases.jsonl'}, then")
    else:
        print(f"next (then replace {dataset / 'docs'} and {dataset / 'cases.jsonl'} with your own):")
    print(f"  ragsweep validate --dataset {dataset}")
    print(f"  ragsweep eval --pipeline {pipeline} --dataset {dataset}")
    return 0
