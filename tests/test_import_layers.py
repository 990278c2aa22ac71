"""Imports go one way: a module imports only its own layer or lower ones, and no modules import
each other in a circle.

Computed from source with ``ast``: every ``import``/``from ... import`` of ragsweep in every module
under ``src/ragsweep``, wherever it stands (module level, inside a function, under
``if TYPE_CHECKING:``). A type-only import still ties the modules together (mypy and a reader
follow it, and it is one edit away from a runtime import), so it counts like any other.
A submodule's implicit import of its parent package is not an edge; an explicit
``from ragsweep.datasets import x`` is an edge to ``ragsweep.datasets`` (its ``__init__``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "ragsweep"

# highest first; a layer may import itself and any layer after it, never one before it
LAYERS = (
    "interfaces",
    "generate",
    "report",
    "evaluation",
    "execution",
    "metrics",
    "pipeline",
    "datasets",
    "answer",
    "llm",
    "core",
)
# the modules and packages of the interface layer (what a user calls: commands, API, test helpers)
INTERFACES = {
    "ragsweep",
    "ragsweep.__main__",
    "ragsweep.cli",
    "ragsweep.api",
    "ragsweep.testing",
    "ragsweep.pytest_plugin",
    "ragsweep.pytest_results",
    "ragsweep.argtypes",
    "ragsweep.commands",
}
# A feature package keeps one concern in one folder although its parts belong to different layers
# (the judge: its metric beside the metrics, its report beside the evaluation, its page section beside
# the report; answering: the answerers in their own layer, the app's answerer with the pipeline it is
# built from, what a run asks for with the evaluation; cost: what a call costs with the LLM client). Each of its modules is named with the layer of what it does, so the rules hold module by
# module; its ``__init__`` sits with its lowest module (it imports nothing up).
FEATURES: dict[str, dict[str, str]] = {
    "judge": {
        **dict.fromkeys(("metric", "probes", "stats"), "metrics"),
        **dict.fromkeys(("trust", "report"), "evaluation"),
        "html": "report",
    },
    "answer": {
        **dict.fromkeys(("base", "refusal", "prompt", "extractive", "stored_answers", "llm"), "answer"),
        **dict.fromkeys(("served", "app"), "pipeline"),
        "run_setup": "evaluation",
    },
    "cost": {"calls": "llm", "records": "evaluation", "configuration": "evaluation", "html": "report"},
    "dry_run": {"llm_calls": "metrics", "run": "evaluation", "sweep": "evaluation"},
    "validate": {"dataset": "datasets", "parsed": "evaluation", "command": "interfaces"},
    "funnel": {
        **dict.fromkeys(("stages", "records"), "metrics"),
        **dict.fromkeys(("attribute", "lists"), "evaluation"),
        "terminal": "report",
    },
    "tuning": {
        **dict.fromkeys(
            ("records", "space", "study", "trial", "summary", "search", "replay", "parallel"), "evaluation"
        ),
        "table": "report",
    },
}


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module (or package, for names imported from its __init__)
    path: Path
    line: int

    def where(self) -> str:
        shown = self.path.relative_to(SRC.parent) if self.path.is_relative_to(SRC.parent) else self.path
        return f"{shown}:{self.line}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if module in INTERFACES or ".".join(parts[:2]) in INTERFACES:
        return "interfaces"
    if len(parts) > 1 and parts[1] in FEATURES:
        return _feature_layer(module, FEATURES[parts[1]])
    if len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    raise AssertionError(f"{module} belongs to no layer: name it in LAYERS or INTERFACES of {__file__}")


def _feature_layer(module: str, layers: dict[str, str]) -> str:
    parts = module.split(".")
    if len(parts) == 2:  # the package's __init__
        return max(layers.values(), key=LAYERS.index)
    if ".".join(parts[2:]) in layers:
        return layers[".".join(parts[2:])]
    raise AssertionError(f"{module} belongs to no layer: name it in FEATURES of {__file__}")


def _resolve(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = source.split(".") if is_package else source.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(source: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    """Every ragsweep module ``source`` imports, one edge per name that resolves to a module."""
    edges: list[Edge] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(source, path.name == "__init__.py", node)
            # `from pkg import submodule` imports the submodule; `from mod import name` the module
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for target in dict.fromkeys(targets):
            if target == "ragsweep" or target.startswith("ragsweep."):
                edges.append(Edge(source, target, path, node.lineno))
    return edges


def all_edges() -> list[Edge]:
    modules = all_modules()
    return [e for name, path in modules.items() for e in imports_of(name, path, modules)]


def back_up_imports(edges: list[Edge]) -> list[str]:
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    return [
        f"{e.where()}: {e.source} ({layer_of(e.source)}) imports {e.target} ({layer_of(e.target)})"
        for e in edges
        if rank[layer_of(e.target)] < rank[layer_of(e.source)]
    ]


def find_cycles(edges: list[Edge]) -> list[list[Edge]]:
    """One cycle per strongly connected group of modules (Tarjan), as the edges that close it."""
    graph: dict[str, dict[str, Edge]] = {}
    for e in edges:
        if e.source != e.target:
            graph.setdefault(e.source, {}).setdefault(e.target, e)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:  # recursion depth is bounded by the module count (~150)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_in(sorted(group)[0], group, graph) for group in groups]


def _cycle_in(start: str, group: set[str], graph: dict[str, dict[str, Edge]]) -> list[Edge]:
    """A shortest path from ``start`` back to itself inside ``group`` (breadth first)."""
    came: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w, e in sorted(graph.get(v, {}).items()):
                if w not in group or w in came:
                    continue
                came[w] = e
                if w == start:
                    path = [e]
                    while path[0].source != start:
                        path.insert(0, came[path[0].source])
                    return path
                nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")


def test_every_module_has_a_layer() -> None:
    for name in all_modules():
        layer_of(name)


def test_every_feature_module_exists() -> None:
    named = {f"ragsweep.{package}.{m}" for package, layers in FEATURES.items() for m in layers}
    assert not named - all_modules().keys(), "FEATURES names modules that are gone"


def test_no_import_points_back_up() -> None:
    offenders = back_up_imports(all_edges())
    assert not offenders, "a lower layer imports a higher one:\n" + "\n".join(offenders)


def test_no_import_cycles() -> None:
    cycles = find_cycles(all_edges())
    shown = [" -> ".join([c[0].source] + [f"{e.target} ({e.where()})" for e in c]) for c in cycles]
    assert not cycles, "modules import each other in a circle:\n" + "\n".join(shown)


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    """A back-up import and a two-module cycle, made up, are both reported with file and line."""
    fake = tmp_path / "m.py"
    fake.write_text("")
    up = Edge("ragsweep.core.errors", "ragsweep.cli", fake, 3)
    down = Edge("ragsweep.cli", "ragsweep.core.errors", fake, 4)
    assert back_up_imports([up, down]) == [f"{fake}:3: ragsweep.core.errors (core) imports ragsweep.cli (interfaces)"]
    # inside a feature package, each module keeps its own layer
    judge_up = Edge("ragsweep.judge.metric", "ragsweep.judge.html", fake, 5)
    judge_down = Edge("ragsweep.judge.html", "ragsweep.judge.trust", fake, 6)
    assert back_up_imports([judge_up, judge_down]) == [
        f"{fake}:5: ragsweep.judge.metric (metrics) imports ragsweep.judge.html (report)"
    ]
    a_b = Edge("ragsweep.llm.a", "ragsweep.llm.b", fake, 1)
    b_a = Edge("ragsweep.llm.b", "ragsweep.llm.a", fake, 2)
    assert find_cycles([a_b, b_a, Edge("ragsweep.llm.b", "ragsweep.core.x", fake, 3)]) == [[a_b, b_a]]


DEFERRED = "# deferred:"


def undeclared_deferred_imports(path: Path, root: Path = SRC.parent) -> list[str]:
    """ragsweep imports inside a function without a ``# deferred: <reason>`` comment on the line
    above (a block of imports shares the comment above its first) or at the end of the line: an
    import that dodges nothing belongs at module level."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = []
    for func in ast.walk(ast.parse(text, str(path))):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if not node.level else ["ragsweep"]
            if not any(n == "ragsweep" or n.startswith("ragsweep.") for n in names):
                continue
            above = node.lineno - 2  # 0-based index of the line above
            while above >= 0 and lines[above].strip().startswith(("from ", "import ")):
                above -= 1
            own = lines[node.lineno - 1]
            if DEFERRED not in own and not (above >= 0 and lines[above].strip().startswith(DEFERRED)):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {own.strip()}")
    return sorted(set(found))


def test_imports_inside_functions_say_what_they_defer() -> None:
    offenders = [line for path in sorted(PACKAGE.rglob("*.py")) for line in undeclared_deferred_imports(path)]
    assert not offenders, (
        f"ragsweep imports inside functions with no `{DEFERRED} <reason>` comment above them (lift them to "
        "module level unless they defer a heavy dependency):\n" + "\n".join(offenders)
    )


def test_the_deferred_check_catches_a_bare_import(tmp_path: Path) -> None:
    module = tmp_path / "ragsweep" / "m.py"
    module.parent.mkdir()
    module.write_text(
        "def f():\n    from ragsweep.core import hits\n\n"
        "def g():\n    # deferred: imports pathway\n    from ragsweep.pipeline import store\n"
        "    from ragsweep.pipeline import serving\n"
    )
    assert undeclared_deferred_imports(module, tmp_path) == ["ragsweep/m.py:2: from ragsweep.core import hits"]
