"""A model call's request parameters (temperature, max tokens, ...) and the names of the
tools it offered the model, read from its span's attributes by genai/conventions.py's
tables: the span pane shows them beside the call's model and tokens.

Pure and bounded like the view: any value may be missing or malformed (a definition
that is not JSON is skipped), and at most MAX_TOOLS names are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from genai.conventions import INDEXED_TOOLS, REQUEST_PARAMETERS, TOOL_DEFINITIONS
from genai.messages import MAX_TOOL_CALLS as MAX_TOOLS
from genai.messages import as_text, loads
from genai.view import attribute_map

__all__ = ["MAX_TOOLS", "offered_tools", "request_parameters"]


def request_parameters(attributes: Any) -> list[tuple[str, str]]:
    """(label, value as text) of each parameter the span's OTLP attributes give, in
    REQUEST_PARAMETERS' order."""
    found = attribute_map(attributes)
    invocation = _json_object(found.get("llm.invocation_parameters"))
    shown: list[tuple[str, str]] = []
    for label, names, keys in REQUEST_PARAMETERS:
        value = next((found[name] for name in names if _usable(found.get(name))), None)
        if value is None:
            value = next((invocation[key] for key in keys if _usable(invocation.get(key))), None)
        text = as_text(value)  # as the messages' values are shown
        if text is not None:
            shown.append((label, text))
    return shown


def offered_tools(attributes: Any) -> list[str]:
    """The names of the tools the call offered, in the order given (each once)."""
    found = attribute_map(attributes)
    names: list[str | None] = []
    definitions = loads(found.get(TOOL_DEFINITIONS))
    if isinstance(definitions, list):
        names += [_name(definition) for definition in definitions[:MAX_TOOLS]]
    prefix, member = INDEXED_TOOLS
    indexed = sorted(
        (int(index), value)
        for key, value in found.items()
        if key.startswith(prefix) and key.endswith("." + member)
        and (index := key[len(prefix) : -len(member) - 1]).isdecimal() and len(index) <= 6
    )  # fmt: skip
    names += [_name(loads(value)) for _, value in indexed[:MAX_TOOLS]]
    return list(dict.fromkeys(name for name in names if name))[:MAX_TOOLS]


def _usable(value: Any) -> bool:
    return value is not None and value != "" and value != []


def _json_object(value: Any) -> Mapping[str, Any]:
    parsed = loads(value)
    return parsed if isinstance(parsed, dict) else {}


def _name(definition: Any) -> str | None:
    """A tool definition's name: `{"name"}`, or OpenAI's `{"function": {"name"}}`."""
    if not isinstance(definition, dict):
        return None
    name = definition.get("name")
    if not isinstance(name, str):
        function = definition.get("function")
        name = function.get("name") if isinstance(function, dict) else None
    return name[:200] if isinstance(name, str) and name else None
