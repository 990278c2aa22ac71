"""The quality tuner on datasets with dev and test splits: each lever on test, and the tuner's choice.

For each dataset, in one process and on one cache:

1. ``ragsweep.sweep`` over the grid with no ``--split``: it chooses on dev (the grid's first
   objective) and scores the choice and the baseline on test (``verdict``);
2. the same sweep with ``--split test``: every configuration on test, each objective with its
   95% CI, its chance level and its paired test against the baseline (Holm-adjusted across the
   configurations);
3. ``ragsweep.compare`` of each test configuration with the baseline: the paired difference of
   recall@k and of the token-budget recall with its 95% CI.

Printed: one Markdown table per dataset (the rows of ``benchmarks/README.md``), ``RESULT`` lines
and a final ``JSON`` line.

    .venv/bin/python benchmarks/quality_levers.py                      # datasets/cuad-open and datasets/cuad
    .venv/bin/python benchmarks/quality_levers.py --datasets datasets/cuad-open --out /tmp/levers
    .venv/bin/python benchmarks/quality_levers.py --smoke              # cuad-mini, 60 cases, 2 configurations
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SMOKE_GRID = """grid:
  chunk_header: [none, title]
  retriever_mode: [bm25]
  top_k: [5]
baseline: {chunk_header: none, retriever_mode: bm25, top_k: 5}
objectives: [recall@k, recall@1500tok]
ks: [1, 5]
budgets: [1500]
"""


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(interval: Any) -> str:
    if not interval or interval[0] is None or interval[1] is None:
        return ""
    return f" [{interval[0]:.3f}, {interval[1]:.3f}]"


def _delta(comparison: Any, metric: str) -> str:
    row = next((m for m in comparison.metrics if m.metric == metric), None)
    if row is None or row.delta is None:
        return "—"
    return f"{row.delta:+.3f} [{row.ci_low:+.3f}, {row.ci_high:+.3f}]"


def _label(params: dict[str, Any]) -> str:
    shown = {k: "null" if v is None else v for k, v in params.items() if k != "top_k"}
    return ", ".join(f"{k}={v}" for k, v in shown.items()) or "(baseline)"


def table(dataset: str, chosen: Any, on_test: Any, folder: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """The Markdown rows of one dataset's test sweep, and their numbers."""
    import ragsweep

    main, budget = on_test.objectives[0], next((o for o in on_test.objectives if o.endswith("tok")), None)
    base = next(c for c in on_test.configs if c.id == on_test.baseline)
    picked = chosen.verdict.chosen if chosen.verdict else None
    head = f"| {dataset} test | {main} [95% CI] | chance | {budget} [95% CI] | chance | Δ {main} vs default | Δ {budget} | Holm p ({main}, {budget}) |"
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    rows = []
    for c in on_test.configs:
        role = " (default)" if c.id == base.id else ""
        role += " **(tuner's choice)**" if c.id == picked else ""
        comparison = ragsweep.compare(folder / "configs" / base.id, folder / "configs" / c.id)
        holm = ", ".join(_fmt(c.p_adjusted.get(m)) for m in (main, budget) if m) if c.id != base.id else "—"
        lines.append(
            f"| {_label(c.params)}{role} | {_fmt(c.metrics.get(main))}{_ci(c.intervals.get(main))} "
            f"| {_fmt(c.chance_level.get(main))} | {_fmt(c.metrics.get(budget))}{_ci(c.intervals.get(budget))} "
            f"| {_fmt(c.chance_level.get(budget))} | {_delta(comparison, main) if c.id != base.id else '—'} "
            f"| {_delta(comparison, budget) if c.id != base.id and budget else '—'} | {holm} |"
        )
        rows.append({"id": c.id, "chosen": c.id == picked, main: c.metrics.get(main), budget: c.metrics.get(budget)})
    return lines, rows


def run(dataset: str, grid: Path, out: Path, extra: dict[str, Any]) -> dict[str, Any]:
    import ragsweep

    name = Path(dataset).name
    t0 = time.perf_counter()
    chosen = ragsweep.sweep(ROOT / "pipelines/default.yaml", dataset, grid, out=out / f"{name}-choice", **extra)
    on_test = ragsweep.sweep(
        ROOT / "pipelines/default.yaml", dataset, grid, out=out / f"{name}-test", split="test", **extra
    )
    lines, rows = table(name, chosen, on_test, Path(str(on_test.sweep_dir)))
    print("\n".join(lines))
    verdict = chosen.verdict
    if verdict:
        print(
            f"RESULT {name}: chosen on dev {verdict.chosen}; on test vs the default p = {verdict.p_value}"
            f" ({'significant' if verdict.significant else 'not significant'})"
        )
    print(f"RESULT {name}: {len(on_test.configs)} configurations on test in {time.perf_counter() - t0:.0f} s")
    return {"dataset": name, "chosen": verdict.chosen if verdict else None, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["datasets/cuad-open", "datasets/cuad"])
    parser.add_argument("--grid", type=Path, default=ROOT / "pipelines/sweep-quality.yaml")
    parser.add_argument("--out", type=Path, default=None, help="keep the sweep folders here")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ragsweep-levers-") as tmp:
        out = args.out or Path(tmp)
        extra: dict[str, Any] = {}
        datasets, grid = args.datasets, args.grid
        if args.smoke:
            print(
                "SMOKE RUN: cuad-mini, 60 sampled cases, 2 configurations (bm25, chunk header none/title); not a measurement"
            )
            datasets, extra = [str(ROOT / "datasets/cuad-mini")], {"sample": 60, "seed": 0}
            grid = out / "smoke-grid.yaml"
            grid.write_text(SMOKE_GRID)
        results = [run(d, grid, out, extra) for d in datasets]
    print("JSON " + json.dumps({"smoke": args.smoke, "results": results}))
    return 0


if __name__ == "__main__":
    from lib.process_exit import exit_now

    exit_now(main())
