"""Chat messages out of each convention's shapes, bounded, never raising.

Every reader takes values as the span carried them (text that should hold JSON may
not) and answers a list of Message, possibly empty: a malformed value is skipped, not
an error. The lists are bounded (MAX_MESSAGES, MAX_CONTENT), so a span with ten
thousand indexed message attributes or a 200 KB prompt gives a view of bounded size.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

MAX_MESSAGES = 200
MAX_CONTENT = 32_768
MAX_TOOL_CALLS = 64
_TRUNCATED = "…"


class ToolCall(NamedTuple):
    """A call the model asked for: its id, the tool's name, the arguments as JSON text.
    (NamedTuples here, and for Message: the worker makes them for every model call it
    stores, and a frozen dataclass costs a setattr a field to build.)"""

    id: str | None
    name: str | None
    arguments: str | None

    def as_json(self) -> dict[str, Any]:
        """The contract's shape."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


class Message(NamedTuple):
    """One chat turn: role, text content (None when it has none) and tool calls."""

    role: str
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The contract's shape: toolCalls only when there are some."""
        shown: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            shown["toolCalls"] = [call.as_json() for call in self.tool_calls]
        return shown


def bounded(text: str | None) -> str | None:
    """`text`, cut to MAX_CONTENT characters."""
    if text is None or len(text) <= MAX_CONTENT:
        return text
    return text[:MAX_CONTENT] + _TRUNCATED


def was_cut(text: str | None) -> bool:
    """Whether `bounded` cut this text (a text it leaves whole is at most MAX_CONTENT
    characters long)."""
    return text is not None and len(text) == MAX_CONTENT + len(_TRUNCATED)


def as_text(value: Any) -> str | None:
    """A value as display text: strings as they are, anything else as JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return bounded(value)
    try:
        return bounded(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode())
    except (TypeError, orjson.JSONEncodeError):
        return bounded(str(value))


def loads(value: Any) -> Any:
    """A JSON text's value (None when it is not JSON); other values as they are."""
    if not isinstance(value, str | bytes):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return None


def _role(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value else default


def _arguments(value: Any) -> str | None:
    """Tool call arguments as JSON text: text is kept as sent, anything else encoded."""
    return None if value is None else as_text(value)


def _text_of_parts(parts: list[Any], text_keys: tuple[str, ...]) -> str | None:
    texts = []
    for part in parts[:MAX_MESSAGES]:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            for key in text_keys:
                if isinstance(part.get(key), str):
                    texts.append(part[key])
                    break
    return bounded("\n".join(texts)) if texts else None


# -- OpenTelemetry GenAI: gen_ai.input.messages / gen_ai.output.messages (JSON) --------


def _otel_part_text(part: Mapping[str, Any]) -> str | None:
    kind = part.get("type")
    if kind == "text" or (kind is None and "content" in part):
        return as_text(part.get("content"))
    if kind == "tool_call_response":
        return as_text(part.get("response", part.get("result")))
    return None


def _otel_message(item: Any, default_role: str) -> Message | None:
    if not isinstance(item, Mapping):
        return None
    texts: list[str] = []
    calls: list[ToolCall] = []
    parts = item.get("parts")
    if isinstance(parts, list):
        for part in parts[:MAX_MESSAGES]:
            if not isinstance(part, Mapping):
                continue
            if part.get("type") == "tool_call" and len(calls) < MAX_TOOL_CALLS:
                calls.append(
                    ToolCall(
                        _str(part.get("id")),
                        _str(part.get("name")),
                        _arguments(part.get("arguments")),
                    )
                )
            else:
                text = _otel_part_text(part)
                if text is not None:
                    texts.append(text)
    elif "content" in item:
        text = as_text(item.get("content"))
        if text is not None:
            texts.append(text)
    content = bounded("\n".join(texts)) if texts else None
    return Message(_role(item.get("role"), default_role), content, tuple(calls))


def otel_messages(value: Any, default_role: str) -> list[Message]:
    """OTel GenAI's messages: a list of {role, parts: [{type, content | id, name,
    arguments | response}]}."""
    items = loads(value)
    if not isinstance(items, list):
        return []
    found = (_otel_message(item, default_role) for item in items[:MAX_MESSAGES])
    return [message for message in found if message is not None]


def otel_instructions(value: Any) -> list[Message]:
    """gen_ai.system_instructions: a list of parts (or a text), as one system message."""
    parts = loads(value) if isinstance(value, str) and value[:1] in "[{" else value
    if isinstance(parts, str):
        return [Message("system", bounded(parts))]
    if isinstance(parts, list):
        text = _text_of_parts(parts, ("content", "text"))
        return [Message("system", text)] if text is not None else []
    return []


# -- the Vercel AI SDK: ai.prompt.messages, ai.prompt, ai.response.toolCalls ----------


def _vercel_message(item: Any) -> Message | None:
    if not isinstance(item, Mapping):
        return None
    content = item.get("content")
    calls: list[ToolCall] = []
    texts: list[str] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for part in content[:MAX_MESSAGES]:
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind == "tool-call" and len(calls) < MAX_TOOL_CALLS:
                arguments = part.get("input", part.get("args"))
                calls.append(
                    ToolCall(
                        _str(part.get("toolCallId")),
                        _str(part.get("toolName")),
                        _arguments(arguments),
                    )
                )
            elif kind == "tool-result":
                text = as_text(part.get("output", part.get("result")))
                if text is not None:
                    texts.append(text)
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
    text = bounded("\n".join(texts)) if texts else None
    return Message(_role(item.get("role"), "user"), text, tuple(calls))


def vercel_messages(value: Any) -> list[Message]:
    """ai.prompt.messages: a list of {role, content: text | [parts]}."""
    items = loads(value)
    if not isinstance(items, list):
        return []
    found = (_vercel_message(item) for item in items[:MAX_MESSAGES])
    return [message for message in found if message is not None]


def vercel_prompt(value: Any) -> list[Message]:
    """ai.prompt: {system?, prompt?, messages?} of an outer AI SDK call."""
    prompt = loads(value)
    if not isinstance(prompt, Mapping):
        return []
    messages: list[Message] = []
    if isinstance(prompt.get("system"), str):
        messages.append(Message("system", bounded(prompt["system"])))
    if isinstance(prompt.get("prompt"), str):
        messages.append(Message("user", bounded(prompt["prompt"])))
    messages.extend(vercel_messages(prompt.get("messages")))
    return messages[:MAX_MESSAGES]


def vercel_tool_calls(value: Any) -> tuple[ToolCall, ...]:
    """ai.response.toolCalls: [{toolCallId, toolName, args | input}]."""
    items = loads(value)
    if not isinstance(items, list):
        return ()
    return tuple(
        ToolCall(
            _str(item.get("toolCallId")),
            _str(item.get("toolName")),
            _arguments(item.get("input", item.get("args"))),
        )
        for item in items[:MAX_TOOL_CALLS]
        if isinstance(item, Mapping)
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
