"""A reference set for the LLM judge decided by a rule, built in two steps (the rule is
:mod:`ragsweep.datasets.rule_verdicts`): ``select`` the decidable CUAD cases, then ``label`` a run's answers on them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ragsweep.datasets.rule_verdicts import label_records, select_cases
from ragsweep.report.runs import Manifest, read_run


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragsweep.commands.rule_verdicts", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("select", help="write the decidable CUAD cases (no verdicts yet)")
    s.add_argument("--cuad", default="datasets/cuad/cases.jsonl")
    s.add_argument("--out", required=True)
    s.add_argument("--per-category", type=int)
    s = sub.add_parser("label", help="add rule verdicts on a run's answers; keep the decided cases")
    s.add_argument("--cases", required=True, help="the selected cases (cases.jsonl)")
    s.add_argument("--run", required=True, help="a run folder of `ragsweep eval --llm` on those cases")
    s.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if args.cmd == "select":
        rows = [json.loads(line) for line in Path(args.cuad).read_text(encoding="utf-8").splitlines() if line.strip()]
        chosen = select_cases(rows, args.per_category)
        Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen), encoding="utf-8")
        print(f"{len(chosen)} case(s) -> {args.out}")
        return 0
    cases = [json.loads(line) for line in Path(args.cases).read_text(encoding="utf-8").splitlines() if line.strip()]
    run = read_run(args.run)
    llm = Manifest.of(run.manifest).llm
    answers = {c.id: c.answer for c in run.cases if c.answer is not None}
    labelled, counts = label_records(cases, answers, (llm.model if llm is not None else None) or "unknown model")
    Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in labelled), encoding="utf-8")
    print(json.dumps(counts), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
