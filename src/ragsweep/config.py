"""Pipeline configs in Pathway's YAML syntax: load, override by variable name, hash, build.

A pipeline file is an llm-app ``app.yaml``: ``$variables`` and ``!pw.`` tags,
read with Pathway's own loader. ragsweep needs from it a splitter and a retriever
factory, found in this order:

- ``$retriever_mode`` names the variable holding the factory (``bm25``, ``knn``,
  ``hybrid`` in ``pipelines/default.yaml``);
- else ``$retriever_factory``;
- else the ``retriever_factory`` of ``$document_store`` (an existing app config
  evaluated as is; its ``$sources`` are replaced by the dataset's documents).

The splitter is ``$splitter`` or the one of ``$document_store``. Any plain scalar
variable can be overridden by name (``max_tokens=400``); the hash covers the
file's structure after overrides, so two runs with equal hashes ran one pipeline.
"""

from __future__ import annotations

import copy
import enum
import hashlib
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ragsweep.offline import ensure_offline

RETRIEVER_MODES = ("bm25", "knn", "hybrid")


class ConfigError(Exception):
    pass


@dataclass
class BuiltPipeline:
    """The live objects of one configuration."""

    splitter: Any
    retriever_factory: Any
    embedder: Any | None
    params: dict[str, Any]


@dataclass
class PipelineConfig:
    path: str
    raw: dict = field(repr=False)
    overrides: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------- loading
    @classmethod
    def load(cls, path: str | Path, overrides: dict[str, Any] | None = None) -> "PipelineConfig":
        ensure_offline()
        from pathway.internals.yaml_loader import PathwayYamlLoader

        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"pipeline config {str(p)!r} does not exist")
        try:
            raw = yaml.load(p.read_text(), PathwayYamlLoader)
        except (yaml.YAMLError, ImportError, AttributeError) as err:
            raise ConfigError(f"{p}: {err}") from err
        if not isinstance(raw, dict):
            raise ConfigError(f"{p}: expected a mapping of $variables at the top level")
        config = cls(path=str(p), raw=raw)
        return config.with_overrides(overrides or {})

    def with_overrides(self, overrides: dict[str, Any]) -> "PipelineConfig":
        from pathway.internals.yaml_loader import Variable

        raw = copy.copy(self.raw)
        for name, value in overrides.items():
            var = Variable(name)
            if var not in raw:
                known = ", ".join(sorted(v.name for v in raw if isinstance(v, Variable) and _is_scalar(raw[v])))
                raise ConfigError(f"{self.path}: no variable ${name} to override (scalars: {known})")
            if not _is_scalar(raw[var]):
                raise ConfigError(f"{self.path}: ${name} is a component, not a scalar: it cannot be overridden")
            raw[var] = value
        return PipelineConfig(path=self.path, raw=raw, overrides={**self.overrides, **overrides})

    # ------------------------------------------------------------- reading
    def scalars(self) -> dict[str, Any]:
        """Every plain ``$variable`` with its value after overrides."""
        from pathway.internals.yaml_loader import Variable

        return {k.name: v for k, v in self.raw.items() if isinstance(k, Variable) and _is_scalar(v)}

    def get(self, name: str, default: Any = None) -> Any:
        value = self.scalars().get(name, default)
        return default if value is None else value

    @property
    def top_k(self) -> int:
        return int(self.get("top_k", 5))

    @property
    def retriever_mode(self) -> str | None:
        mode = self.get("retriever_mode")
        return str(mode) if mode is not None else None

    @property
    def hash(self) -> str:
        canonical = json.dumps(_canonical(self.raw), sort_keys=True, default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def chunking_key(self) -> str:
        """Hash of what decides the chunks: equal keys mean equal chunk texts."""
        return _sub_hash(self.raw, "splitter")

    @property
    def index_key(self) -> str:
        """Hash of what decides the index (chunks + retriever), not top-k."""
        return hashlib.sha256(
            (self.chunking_key + _sub_hash(self.raw, self._retriever_variable())).encode()
        ).hexdigest()[:16]

    def text(self) -> str:
        return Path(self.path).read_text()

    # ------------------------------------------------------------- building
    def _retriever_variable(self) -> str:
        from pathway.internals.yaml_loader import Variable

        mode = self.retriever_mode
        if mode is not None:
            if Variable(mode) not in self.raw:
                raise ConfigError(f"{self.path}: $retriever_mode is {mode!r} but there is no ${mode}")
            return mode
        if Variable("retriever_factory") in self.raw:
            return "retriever_factory"
        if Variable("document_store") in self.raw:
            return "document_store"
        raise ConfigError(f"{self.path}: needs $retriever_mode, $retriever_factory or $document_store")

    def build(self) -> BuiltPipeline:
        """Construct the splitter and the retriever factory (fresh objects each call)."""
        from pathway.internals.yaml_loader import Resolver, Value, Variable

        raw = _fresh_copy(self.raw)
        target = self._retriever_variable()
        if target == "document_store":
            store = raw[Variable("document_store")]
            if not isinstance(store, Value):
                raise ConfigError(f"{self.path}: $document_store is not a component")
            factory_ref = store.kwargs.get("retriever_factory")
            splitter_ref = store.kwargs.get("splitter", raw.get(Variable("splitter")))
        else:
            factory_ref = Variable(target)
            splitter_ref = Variable("splitter") if Variable("splitter") in raw else None
        doc = dict(raw)
        doc["retriever_factory"] = factory_ref
        if splitter_ref is not None:
            doc["splitter"] = splitter_ref
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unused variables (the other retriever modes)
            with Resolver() as resolver:
                resolved = resolver.resolve(doc)
        splitter = resolved.get("splitter")
        if splitter is None:
            from ragsweep.chunking import OffsetTokenCountSplitter

            splitter = OffsetTokenCountSplitter()
        factory = resolved["retriever_factory"]
        return BuiltPipeline(
            splitter=splitter,
            retriever_factory=factory,
            embedder=_find_embedder(factory),
            params=self.scalars(),
        )

    def manifest(self) -> dict[str, Any]:
        """What a report records of this config; secrets are masked."""
        return {
            "path": self.path,
            "hash": self.hash,
            "overrides": redact(self.overrides),
            "variables": redact(self.scalars()),
            "retriever_mode": self.retriever_mode,
        }

    def public_text(self) -> str:
        """The config file with the values of secret-looking keys masked."""
        return _SECRET_LINE.sub(lambda m: m.group(1) + "***", self.text())


_SECRET_NAME = re.compile(r"(api_?key|secret|password|passwd|bearer|credential)", re.IGNORECASE)
_SECRET_LINE = re.compile(r"^(\s*\$?[\w.-]*(?:api_?key|secret|password|passwd|bearer|credential)[\w.-]*\s*:\s*).+$",
                          re.IGNORECASE | re.MULTILINE)


def redact(values: dict[str, Any]) -> dict[str, Any]:
    """Mask the values of keys that name a secret (``llm_api_key``, ``secret``...)."""
    return {k: ("***" if _SECRET_NAME.search(k) and v not in (None, "") else v) for k, v in values.items()}


def _fresh_copy(obj: Any) -> Any:
    """Copy the loaded YAML so each build constructs new objects (Pathway's
    resolver marks Values as constructed in place); constants stay shared."""
    from pathway.internals.yaml_loader import Value

    if isinstance(obj, Value):
        if obj.constructor is None or obj.constructed:
            return obj
        return Value(constructor=obj.constructor, kwargs=_fresh_copy(obj.kwargs))
    if isinstance(obj, dict):
        return {k: _fresh_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_fresh_copy(v) for v in obj]
    return obj


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _canonical(obj: Any) -> Any:
    from pathway.internals.yaml_loader import Value, Variable

    if isinstance(obj, Variable):
        return f"${obj.name}"
    if isinstance(obj, Value):
        if obj.constructor is None or obj.constructed:
            value = obj.value
            return {"!value": f"{type(value).__name__}.{value.name}" if isinstance(value, enum.Enum) else repr(value)}
        c = obj.constructor
        return {"!" + f"{getattr(c, '__module__', '')}.{getattr(c, '__qualname__', repr(c))}": _canonical(obj.kwargs)}
    if isinstance(obj, dict):
        return {str(_canonical(k)): _canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    return obj


def _sub_hash(raw: dict, name: str) -> str:
    """Hash of one variable's definition with every variable it references, recursively."""
    from pathway.internals.yaml_loader import Value, Variable

    seen: dict[str, Any] = {}

    def visit(obj: Any) -> None:
        if isinstance(obj, Variable):
            if obj.name not in seen and obj in raw:
                seen[obj.name] = None
                seen[obj.name] = _canonical(raw[obj])
                visit(raw[obj])
        elif isinstance(obj, Value):
            visit(obj.kwargs)
        elif isinstance(obj, dict):
            for v in obj.values():
                visit(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                visit(v)

    visit(Variable(name))
    return hashlib.sha256(json.dumps(seen, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _find_embedder(factory: Any) -> Any | None:
    embedder = getattr(factory, "embedder", None)
    if embedder is not None:
        return embedder
    for inner in getattr(factory, "retriever_factories", []) or []:
        found = _find_embedder(inner)
        if found is not None:
            return found
    return None


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """``["max_tokens=400", "retriever_mode=bm25"]`` -> typed dict (YAML scalars)."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not NAME=VALUE")
        name, value = item.split("=", 1)
        out[name.strip().lstrip("$")] = yaml.safe_load(value)
    return out
