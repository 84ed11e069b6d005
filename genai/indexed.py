"""Messages kept as indexed attributes (`<prefix>N.<member>`), and as span events.

OpenInference writes `llm.input_messages.N.message.role`, `.message.content`,
`.message.contents.M.message_content.text` and
`.message.tool_calls.M.tool_call.{id,function.name,function.arguments}`, and an
embedding call's texts as `embedding.embeddings.N.embedding.text`; OpenLLMetry and
the older OTel GenAI names write `gen_ai.prompt.N.role`, `.content` and
`.tool_calls.M.{id,name,arguments}`. Both become the same members here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from genai.messages import (
    MAX_MESSAGES,
    MAX_TOOL_CALLS,
    Message,
    ToolCall,
    as_text,
    bounded,
    loads,
    otel_messages,
)

#: OpenInference's member names, as the OpenLLMetry ones they stand for.
_MEMBERS = (
    (re.compile(r"message\.tool_calls\.(\d+)\.tool_call\.function\.name"), r"tool_calls.\1.name"),
    (
        re.compile(r"message\.tool_calls\.(\d+)\.tool_call\.function\.arguments"),
        r"tool_calls.\1.arguments",
    ),
    (re.compile(r"message\.tool_calls\.(\d+)\.tool_call\.id"), r"tool_calls.\1.id"),
    (re.compile(r"message\.contents\.(\d+)\.message_content\.text"), r"contents.\1"),
    (re.compile(r"embedding\.text"), "content"),  # an embedding call's text
    (re.compile(r"message\.(.+)"), r"\1"),
)


def indexed_groups(attributes: Mapping[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """The members of each message under `prefix`, by index (the first MAX_MESSAGES)."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index, _, member = key[len(prefix) :].partition(".")
        if not index.isdecimal() or len(index) > 6 or not member:
            continue
        at = int(index)
        if at >= MAX_MESSAGES:
            continue
        for pattern, replacement in _MEMBERS:
            if pattern.fullmatch(member):
                member = pattern.sub(replacement, member)
                break
        groups.setdefault(at, {})[member] = value
    return groups


def _numbered(members: Mapping[str, Any], name: str) -> dict[int, dict[str, Any]]:
    """Of `members`, those named `name.M.rest`, by M (the first MAX_TOOL_CALLS)."""
    found: dict[int, dict[str, Any]] = {}
    start = f"{name}."
    for key, value in members.items():
        if key.startswith(start):
            index, _, rest = key[len(start) :].partition(".")
            if index.isdecimal() and len(index) <= 6 and int(index) < MAX_TOOL_CALLS:
                found.setdefault(int(index), {})[rest] = value
    return found


def _content(members: Mapping[str, Any]) -> str | None:
    content = members.get("content")
    if isinstance(content, str) and content[:1] == "[":
        parts = loads(content)  # OpenLLMetry writes a list of parts as JSON text
        if isinstance(parts, list) and all(isinstance(part, Mapping) for part in parts):
            texts = [p["text"] for p in parts if isinstance(p.get("text"), str)]
            return bounded("\n".join(texts)) if texts else as_text(content)
    if content is not None:
        return as_text(content)
    parts = _numbered(members, "contents")
    texts = [part[""] for _, part in sorted(parts.items()) if isinstance(part.get(""), str)]
    return bounded("\n".join(texts)) if texts else None


def _tool_calls(members: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    calls = _numbered(members, "tool_calls")
    return tuple(
        ToolCall(
            _text(call.get("id")),
            _text(call.get("name")),
            None if call.get("arguments") is None else as_text(call.get("arguments")),
        )
        for _, call in sorted(calls.items())
    )


def indexed_messages(attributes: Mapping[str, Any], prefix: str, role: str) -> list[Message]:
    """The messages under `prefix`, in index order (`role` when one has none)."""
    groups = indexed_groups(attributes, prefix)
    messages = []
    for _, members in sorted(groups.items()):
        given = members.get("role")
        messages.append(
            Message(
                given if isinstance(given, str) and given else role,
                _content(members),
                _tool_calls(members),
            )
        )
    return messages


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# -- span events ----------------------------------------------------------------------


def event_message(role: str, attributes: Mapping[str, Any]) -> Message:
    """A message event's message: `content` (text or JSON) and `tool_calls`."""
    body = attributes
    for key in ("body", "gen_ai.event.content", "message"):
        nested = loads(attributes.get(key))
        if isinstance(nested, Mapping):
            body = nested
            break
    given = body.get("role")
    calls = body.get("tool_calls")
    tool_calls: tuple[ToolCall, ...] = ()
    parsed = loads(calls)
    if isinstance(parsed, list):
        tool_calls = tuple(
            ToolCall(
                _text(call.get("id")),
                _text(_function(call).get("name")),
                None
                if _function(call).get("arguments") is None
                else as_text(_function(call).get("arguments")),
            )
            for call in parsed[:MAX_TOOL_CALLS]
            if isinstance(call, Mapping)
        )
    return Message(
        given if isinstance(given, str) and given else role,
        as_text(body.get("content")),
        tool_calls,
    )


def _function(call: Mapping[str, Any]) -> Mapping[str, Any]:
    function = call.get("function")
    return function if isinstance(function, Mapping) else call


def details_messages(attributes: Mapping[str, Any]) -> tuple[list[Message], list[Message]]:
    """The input and output messages of a gen_ai.client.inference.operation.details
    event (the OTel message attributes, carried by an event)."""
    return (
        otel_messages(attributes.get("gen_ai.input.messages"), "user"),
        otel_messages(attributes.get("gen_ai.output.messages"), "assistant"),
    )
