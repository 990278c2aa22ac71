"""A benchmark script imported as a module, so a test calls its functions instead of running it."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from support import ROOT


def benchmark_module(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` loaded as the module ``<name>`` (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
