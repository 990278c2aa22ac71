"""The checks of a pipeline file's values before any work: its knobs (:mod:`ragsweep.pipeline.knobs`), the
arguments of its components ragsweep reads (:data:`ARGUMENT_RULES`), its top-k, the Hugging Face models
its components load. Each bad value is one line naming the file, the knob or argument, the value and what
is allowed; a secret's value is never shown."""

from __future__ import annotations

import re
from typing import cast

from pydantic import ValidationError

from ragsweep.core.errors import ConfigError
from ragsweep.pipeline.hub_models import HUB_MODEL_ARGUMENTS, missing_hub_model
from ragsweep.pipeline.knobs import ARGUMENT_RULES, KNOB_RULES, KnobContext, PipelineVariables
from ragsweep.pipeline.spec_tree import SpecTree
from ragsweep.pipeline.tag_classes import parameter_default
from ragsweep.pipeline.yaml_symbolic import Ref, Tagged, labelled_components

SECRET_NAME = re.compile(r"(api_?key|secret|password|passwd|bearer|credential)", re.IGNORECASE)
_NOT_READ = object()  # an argument's value that is not checked here (a component, an environment variable)


def show(name: str, value: object) -> str:
    """A knob's value for an error message (never a secret)."""
    if SECRET_NAME.search(name) and value not in (None, ""):
        return "***"
    if isinstance(value, Tagged):
        return "a constant" if value.bare and value.name.isupper() else f"a component (!{value.path})"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def checked_variables(tree: SpecTree) -> PipelineVariables:
    """Every knob ragsweep reads, checked; a :class:`ConfigError` lists each bad one."""
    values = {k.name: v for k, v in tree.raw.items() if isinstance(k, Ref) and k.name in KNOB_RULES}
    context = KnobContext(retriever_factories=tree.retriever_factory_variables())
    try:
        checked = PipelineVariables.model_validate(values, context=context)
    except ValidationError as err:
        raise ConfigError("\n".join(_knob_errors(tree.path, values, err))) from None
    if bad := argument_errors(tree):
        raise ConfigError("\n".join(bad))
    check_hub_models(tree)
    label, value = tree.written_top_k()
    if label is not None and label.removeprefix("$") not in values:  # search_topk: literal or other variable
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{tree.path}: {label} = {show(label, value)}: must be an integer >= 1")
    return checked


def _knob_errors(path: str, values: dict[str, object], err: ValidationError) -> list[str]:
    messages = []
    for e in err.errors():
        if not e["loc"]:  # the model validator: both bounds are set, the lower one above the upper one
            messages.append(
                f"{path}: $min_tokens = {show('min_tokens', values['min_tokens'])} > "
                f"$max_tokens = {show('max_tokens', values['max_tokens'])}: "
                "$min_tokens must be <= $max_tokens"
            )
            continue
        name = str(e["loc"][0])
        rule = e["msg"].removeprefix("Value error, ") if e["type"] == "value_error" else KNOB_RULES[name]
        messages.append(f"{path}: ${name} = {show(name, values.get(name))}: {rule}")
    return list(dict.fromkeys(messages))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _allowed(value: object, least: int, node: Tagged, name: str) -> bool:
    """Whether an argument's value passes its rule (null where the constructor's default is null)."""
    if value is None:
        return parameter_default(node.path, name) is None
    return _is_int(value) and cast(int, value) >= least


def argument_errors(tree: SpecTree) -> list[str]:
    """The components' arguments ragsweep reads (:data:`ARGUMENT_RULES`), literal or ``$variable``, each
    checked as its knob is: one line per bad value naming the component, the argument and the value."""
    messages = []
    for label, node in labelled_components(tree.raw):
        found: dict[str, object] = {}
        for name, rule in ARGUMENT_RULES.items():
            if name not in node.kwargs:
                continue
            shown, value = _argument_value(tree, name, node.kwargs[name])
            if value is _NOT_READ:
                continue
            found[name] = value
            if not _allowed(value, rule[0], node, name):
                messages.append(f"{tree.path}: {label}.{name} = {shown}: {rule[1]}")
        low, high = found.get("min_tokens"), found.get("max_tokens")
        if _is_int(low) and _is_int(high) and cast(int, low) >= 0 and cast(int, low) > cast(int, high) >= 1:
            messages.append(
                f"{tree.path}: {label}.min_tokens = {low} > {label}.max_tokens = {high}: "
                "min_tokens must be <= max_tokens"
            )
    return list(dict.fromkeys(messages))


def check_hub_models(tree: SpecTree) -> None:
    """A component that loads a Hugging Face model (Pathway's ``SentenceTransformerEmbedder``, its
    rerankers...) whose model is neither a local folder nor in the hub's cache is one line, before any
    work: offline, its constructor would fail deep in the build."""
    for label, node in labelled_components(tree.raw):
        argument = HUB_MODEL_ARGUMENTS.get(node.path)
        if argument is None:
            continue
        # HFPipelineChat's model defaults to gpt2
        given = node.kwargs[argument] if argument in node.kwargs else parameter_default(node.path, argument)
        _, model = _argument_value(tree, argument, given, knobs_checked=False)
        if isinstance(model, str) and (where := missing_hub_model(model, argument)) is not None:
            raise ConfigError(f"{tree.path}: {label} ({node.name}) {argument}: {model!r} {where}")


def _argument_value(tree: SpecTree, name: str, node: object, knobs_checked: bool = True) -> tuple[str, object]:
    """An argument's value as a message shows it and the value itself: a ``$variable`` followed to its
    definition; :data:`_NOT_READ` for one read from the environment, a component, or (``knobs_checked``)
    a knob checked already."""
    if isinstance(node, Ref):
        if knobs_checked and node.name in KNOB_RULES or node not in tree.raw:
            return "", _NOT_READ
        value = tree.raw[node]
        return f"${node.name} = {show(name, value)}", _NOT_READ if isinstance(value, Tagged) else value
    return show(name, node), _NOT_READ if isinstance(node, Tagged) else node
