"""A pipeline file with some of its knobs set, edited as text: every other line (tags, comments, order,
blank lines) stays byte for byte, so the diff against the user's file is the changed values alone.

A knob is a top-level ``$variable`` (its line, and a block under it such as a ``|`` text, replaced), or
one argument of a component (``question_answerer.search_topk``, ``llm.model``: its line in the
component's block, or one added under the component's tag line where the app takes the default; an app's
top-k is its question answerer's ``search_topk``). What the edit gives is loaded back
as ``eval --pipeline`` loads it and must hold exactly the values asked for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import yaml

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.component_overrides import component_argument, is_argument_override
from ragsweep.pipeline.config import PipelineConfig
from ragsweep.pipeline.scalars import Scalar

_COMMENT = re.compile(r"\s+#.*$")


def yaml_scalar(value: Scalar) -> str:
    """``value`` as one line of YAML that reads back as itself (a JSON string where plain text would not)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    plain = text and text == text.strip() and "#" not in text and ": " not in text and "\n" not in text
    try:
        reads_back = plain and yaml.safe_load(text) == text
    except yaml.YAMLError:
        reads_back = False
    return text if reads_back else json.dumps(text, ensure_ascii=False)


def _block(value: Scalar, indent: str) -> list[str]:
    """A text of several lines as a literal block (``|``, or ``|-`` without a final newline)."""
    text = str(value)
    head = "|" if text.endswith("\n") else "|-"
    return [head, *(f"{indent}{line}" if line else "" for line in text.removesuffix("\n").split("\n"))]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _node_end(lines: list[str], start: int) -> int:
    """The line after the node whose key is on ``lines[start]``: the lines indented deeper than that key (and
    blank lines between them); a comment, a key or a list item at the key's indentation or less ends it."""
    end, column = start + 1, _indent(lines[start])
    for j in range(start + 1, len(lines)):
        line = lines[j]
        if line.strip() and _indent(line) <= column:
            break
        if line.strip():
            end = j + 1
    return end


def _quoted_end(rest: str, start: int) -> int:
    """The index after the quoted scalar that opens at ``rest[start]`` (``\\"`` and ``''`` inside it skipped)."""
    quote, i = rest[start], start + 1
    while i < len(rest):
        if quote == '"' and rest[i] == "\\":
            i += 2
            continue
        if rest[i] == quote:
            if quote == "'" and rest[i + 1 : i + 2] == "'":
                i += 2
                continue
            return i + 1
        i += 1
    return len(rest)


def _inline_value(rest: str) -> tuple[str, str]:
    """(the value, what follows it: spaces and a comment) of the text after ``key:`` on one line."""
    stripped = rest.lstrip()
    if stripped[:1] in ("'", '"'):
        end = _quoted_end(rest, len(rest) - len(stripped))
        return rest[:end], rest[end:]
    match = _COMMENT.search(rest)
    return (rest[: match.start()], rest[match.start() :]) if match else (rest, "")


def _set_line(lines: list[str], index: int, key_end: int, value: Scalar, indent: str) -> None:
    """Replace the value of the ``key:`` line ``lines[index]`` (its node, with any block under it)."""
    line = lines[index]
    end = _node_end(lines, index)
    old, comment = _inline_value(line[key_end:])
    if isinstance(value, str) and "\n" in value and not value.startswith((" ", "\n")):
        block = _block(value, indent + "  ")
        lines[index:end] = [f"{line[:key_end]} {block[0]}{comment}", *block[1:]]
        return
    new = f" {yaml_scalar(value)}"
    if comment and len(new) < len(old):  # keep a comment where it stood
        new = new.ljust(len(old))
    lines[index:end] = [f"{line[:key_end]}{new}{comment}"]


def _variable_line(lines: list[str], name: str) -> int | None:
    pattern = re.compile(rf"^\${re.escape(name)}\s*:")
    return next((i for i, line in enumerate(lines) if pattern.match(line)), None)


def _component_argument(lines: list[str], component: str, argument: str, value: Scalar) -> None:
    """``argument`` of the top-level ``component:`` block (or ``$component:``) set, or added under its tag line."""
    names = [component] if component.startswith("$") else [component, f"${component}"]
    patterns = [re.compile(rf"^{re.escape(name)}\s*:") for name in names]
    start = next((i for i, line in enumerate(lines) if any(p.match(line) for p in patterns)), None)
    if start is None:
        raise ConfigError(f"no top-level {component!r} to set {argument} in")
    end = _node_end(lines, start)
    for i in range(start + 1, end):
        found = re.match(rf"^(\s+){re.escape(argument)}\s*:", lines[i])
        if found:
            _set_line(lines, i, found.end(), value, found.group(1))
            return
    body = [line for line in lines[start + 1 : end] if line.strip()]
    indent = re.match(r"^\s*", body[0]).group(0) if body else "  "  # type: ignore[union-attr]
    lines.insert(start + 1, f"{indent}{argument}:")
    _set_line(lines, start + 1, len(indent) + len(argument) + 1, value, indent)


def set_values(config: PipelineConfig, values: Mapping[str, Scalar], text: str | None = None) -> str:
    """``config``'s file (or ``text``) with each knob of ``values`` set; raises :class:`ConfigError`."""
    source = Path(config.path).read_text() if text is None else text
    lines = source.split("\n")
    for name, value in values.items():
        if is_argument_override(name):  # <component>.<argument>: inside the component's block
            component, _, argument = name.partition(".")
            _component_argument(lines, component, argument, value)
            continue
        index = _variable_line(lines, name)
        origin = config.top_k_origin if name == "top_k" else None  # an app's depth: its search_topk
        if index is None and origin is not None and origin.startswith("$"):
            index = _variable_line(lines, origin[1:])
        if index is not None:
            _set_line(lines, index, lines[index].index(":") + 1, value, "")
        elif origin is not None:
            _component_argument(lines, origin.split(".")[0], "search_topk", value)
        else:  # a knob ragsweep reads that the file does not set (route_docs): a line of its own, first
            lines.insert(0, f"${name}: {yaml_scalar(value)}")
    return "\n".join(lines)


def check_values(path: Path, values: Mapping[str, Scalar]) -> None:
    """The written file, loaded as ``eval --pipeline`` loads it, holds ``values``: one line when it does not."""
    written = PipelineConfig.load(path)
    for name, value in values.items():
        if is_argument_override(name):
            got = component_argument(written.symbols, name)
        elif name == "top_k" and name not in written.scalars():
            got = written.top_k
        else:
            got = written.scalars().get(name)
        if got != value:
            raise ConfigError(f"{path}: ${name} reads back as {got!r}, not {value!r}: the file was not edited")
