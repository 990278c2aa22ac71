"""Reports of run folders: self-contained HTML, MLflow logging, paired run comparison, and the
readers that give a folder as typed results (``read_run``, ``read_sweep``, ``read_config_cases``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ragsweep.report.compare import Comparison, compare_runs, render_markdown, render_terminal, run_compare_cli
    from ragsweep.report.html import write_html_report
    from ragsweep.report.mlflow_log import log_to_mlflow
    from ragsweep.report.runs import read_config_cases, read_run, read_sweep

_LAZY = {
    "write_html_report": "ragsweep.report.html",
    "log_to_mlflow": "ragsweep.report.mlflow_log",
    "Comparison": "ragsweep.report.compare",
    "compare_runs": "ragsweep.report.compare",
    "render_terminal": "ragsweep.report.compare",
    "render_markdown": "ragsweep.report.compare",
    "run_compare_cli": "ragsweep.report.compare",
    "read_run": "ragsweep.report.runs",
    "read_sweep": "ragsweep.report.runs",
    "read_config_cases": "ragsweep.report.runs",
}


def write_html(run_dir: Path, *, live: bool = False) -> None:
    """report.html beside report.json / sweep.json; a failure here warns and loses nothing computed.
    ``live``: a watch's evaluation, whose page follows the watch when served."""
    # deferred: report.html imports scipy (~0.3 s); --help and the Python API import this module
    from ragsweep.report.html import write_html_report

    try:
        write_html_report(run_dir, live=live)
    except Exception as err:  # noqa: BLE001 - the run's results are already on disk
        print(f"warning: report.html not written: {err}", file=sys.stderr)


def __getattr__(name: str):
    """Import lazily: mlflow is slow to import and only `log_to_mlflow` needs it."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)


__all__ = [
    "Comparison",
    "compare_runs",
    "log_to_mlflow",
    "read_config_cases",
    "read_run",
    "read_sweep",
    "render_markdown",
    "render_terminal",
    "run_compare_cli",
    "write_html",
    "write_html_report",
]
