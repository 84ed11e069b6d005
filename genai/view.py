"""A canonical span's LLM semantics, whichever convention it uses: the GenAI view.

`view_of` reads a span's attributes and events (OTLP/JSON, as proto_json makes them)
through the tables of genai/conventions.py and answers a GenAIView, or None for a span
that no convention describes. Pure: no I/O, and it never raises on the span's content:
a value of the wrong type, negative or not a number, or JSON that does not parse leaves
its field None; messages are bounded (genai/messages.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from genai import conventions as c
from genai.indexed import details_messages, event_message, indexed_messages
from genai.messages import (
    Message,
    as_text,
    otel_instructions,
    otel_messages,
    vercel_messages,
    vercel_prompt,
    vercel_tool_calls,
)

PREVIEW_CHARS = 500
_MAX_TOKENS = 2**62  # beyond any real count; keeps sums inside a BIGINT
TYPES = ("llm", "embedding", "agent", "tool", "retrieval", "chain")
MODEL_TYPES = frozenset(("llm", "embedding"))


@dataclass(frozen=True, slots=True)
class GenAIView:
    """What an LLM engineer looks for in a span; None where the span does not say."""

    type: str
    name: str | None = None
    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    client_cost: float | None = None
    user_id: str | None = None
    session_id: str | None = None
    input_messages: tuple[Message, ...] = ()
    output_messages: tuple[Message, ...] = ()
    #: field name (the contract's camelCase) -> the attribute or event it came from
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def has_usage(self) -> bool:
        """Whether the span reports tokens or a cost of its own."""
        return (
            self.input_tokens is not None
            or self.output_tokens is not None
            or self.total_tokens is not None
            or self.client_cost is not None
        )

    @property
    def input_preview(self) -> str | None:
        """A model call's first user message, or another span's input; at most
        PREVIEW_CHARS characters."""
        if self.type in MODEL_TYPES:
            found = next((m for m in self.input_messages if m.role == "user"), None)
        else:
            found = self.input_messages[0] if self.input_messages else None
        return _preview(found)

    @property
    def output_preview(self) -> str | None:
        """The last output message's text (or its tool calls); at most PREVIEW_CHARS."""
        return _preview(self.output_messages[-1] if self.output_messages else None)


def _preview(message: Message | None) -> str | None:
    if message is None:
        return None
    text = message.content
    if text is None and message.tool_calls:
        text = "; ".join(f"{call.name}({call.arguments or ''})" for call in message.tool_calls)
    return None if text is None else text[:PREVIEW_CHARS]


def plain(value: Any) -> Any:
    """An OTLP/JSON AnyValue as a Python value (None for anything else)."""
    if type(value) is not dict or len(value) != 1:
        return None
    ((kind, item),) = value.items()
    if kind == "stringValue":
        return item if type(item) is str else None
    if kind == "intValue":
        return _int_value(item)
    if kind == "doubleValue":
        return item if type(item) is float or type(item) is int else None
    if kind == "boolValue":
        return item if type(item) is bool else None
    return (
        _array(item) if kind == "arrayValue" else _kvlist(item) if kind == "kvlistValue" else None
    )


def _int_value(text: Any) -> int | None:
    if type(text) is int:
        return text
    try:
        return int(text) if type(text) is str else None
    except ValueError:
        return None


def _array(items: Any) -> Any:
    values = items.get("values") if type(items) is dict else None
    return [plain(v) for v in values] if type(values) is list else None


def _kvlist(items: Any) -> Any:
    values = items.get("values") if type(items) is dict else None
    return attribute_map(values) if type(values) is list else None


def attribute_map(attributes: Any) -> dict[str, Any]:
    """OTLP/JSON key-value pairs as a dict of Python values (the last of a key wins)."""
    found: dict[str, Any] = {}
    if type(attributes) is not list:
        return found
    for pair in attributes:
        if type(pair) is dict:
            key = pair.get("key")
            if type(key) is str:
                found[key] = plain(pair.get("value"))
    return found


class _Reader:
    """One span's attributes, read field by field, recording where each came from."""

    def __init__(self, attributes: dict[str, Any]) -> None:
        self.attributes = attributes
        self.sources: dict[str, str] = {}

    def text(self, name: str, keys: Iterable[str]) -> str | None:
        for key in keys:
            value = self.attributes.get(key)
            if isinstance(value, str) and value.strip():
                self.sources[name] = key
                return value[:1024]
        return None

    def count(self, name: str, keys: Iterable[str]) -> int | None:
        for key in keys:
            value = _count(self.attributes.get(key))
            if value is not None:
                self.sources[name] = key
                return value
        return None

    def cost(self) -> float | None:
        for key in c.COST:
            value = self.attributes.get(key)
            if isinstance(value, str):
                value = _float(value)
            if isinstance(value, int | float) and not isinstance(value, bool):
                if math.isfinite(value) and 0 <= value < 1e12:
                    self.sources["costUsd"] = key
                    return float(value)
        return None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _count(value: Any) -> int | None:
    """A token count: a whole number, 0 or more (numeric text too)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        value = int(text) if text.isdigit() and len(text) < 19 else None
    elif isinstance(value, float):
        value = int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, int) and 0 <= value < _MAX_TOKENS:
        return value
    return None


def _type(reader: _Reader, kind: str | None) -> str | None:
    if kind is not None and kind in c.NATIVE_TYPES:
        reader.sources["type"] = "spangate.span.kind"
        return c.NATIVE_TYPES[kind]
    for key, types in c.TYPE_ATTRIBUTES:
        value = reader.attributes.get(key)
        if isinstance(value, str):
            found = types.get(value) or types.get(value.upper()) or types.get(value.lower())
            if found is not None:
                reader.sources["type"] = key
                return found
    return None


def _messages_of_attributes(reader: _Reader) -> tuple[list[Message], list[Message]]:
    """Input and output messages from the attributes: JSON ones, then indexed ones."""
    return _input_messages(reader), _output_messages(reader)


_READERS = {"otel": lambda v: otel_messages(v, "user"), "vercel": vercel_messages}


def _input_messages(reader: _Reader) -> list[Message]:
    attributes, sources = reader.attributes, reader.sources
    inputs: list[Message] = []
    for key, shape in c.INPUT_MESSAGES:
        if key in attributes:
            inputs = _READERS.get(shape, vercel_prompt)(attributes[key])
            if inputs:
                sources["inputMessages"] = key
                break
    for prefix, _ in c.INDEXED_INPUT:
        if inputs:
            break
        inputs = indexed_messages(attributes, prefix, "user")
        if inputs:
            sources["inputMessages"] = f"{prefix}N"
    if c.SYSTEM_INSTRUCTIONS in attributes:
        system = otel_instructions(attributes[c.SYSTEM_INSTRUCTIONS])
        if system and not inputs:
            sources["inputMessages"] = c.SYSTEM_INSTRUCTIONS
        inputs = system + inputs
    return inputs


def _output_messages(reader: _Reader) -> list[Message]:
    attributes, sources = reader.attributes, reader.sources
    for key, _ in c.OUTPUT_MESSAGES:
        outputs = otel_messages(attributes.get(key), "assistant")
        if outputs:
            sources["outputMessages"] = key
            return outputs
    for prefix, _ in c.INDEXED_OUTPUT:
        outputs = indexed_messages(attributes, prefix, "assistant")
        if outputs:
            sources["outputMessages"] = f"{prefix}N"
            return outputs
    return _vercel_answer(reader)


def _vercel_answer(reader: _Reader) -> list[Message]:
    calls = vercel_tool_calls(reader.attributes.get(c.VERCEL_TOOL_CALLS))
    text = reader.text("outputMessages", c.VERCEL_TEXT)
    if calls and text is None:
        reader.sources["outputMessages"] = c.VERCEL_TOOL_CALLS
    if text is None and not calls:
        return []
    return [
        Message("assistant", as_text(reader.attributes[c.VERCEL_TEXT[0]]) if text else None, calls)
    ]


def _messages_of_events(
    events: Any, sources: dict[str, str]
) -> tuple[list[Message], list[Message]]:
    """Input and output messages from OTel GenAI's message events, in their order."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    if not isinstance(events, list):
        return inputs, outputs
    for event in events:
        name = event.get("name") if isinstance(event, Mapping) else None
        if not isinstance(name, str) or not name.startswith("gen_ai."):
            continue
        attributes = attribute_map(event.get("attributes"))
        if name in c.MESSAGE_EVENTS and len(inputs) < MAX_EVENT_MESSAGES:
            inputs.append(event_message(c.MESSAGE_EVENTS[name], attributes))
            sources.setdefault("inputMessages", name)
        elif name == c.CHOICE_EVENT and len(outputs) < MAX_EVENT_MESSAGES:
            outputs.append(event_message("assistant", attributes))
            sources.setdefault("outputMessages", name)
        elif name == c.DETAILS_EVENT:
            found_in, found_out = details_messages(attributes)
            if found_in and not inputs:
                inputs = found_in
                sources["inputMessages"] = name
            if found_out and not outputs:
                outputs = found_out
                sources["outputMessages"] = name
    return inputs, outputs


MAX_EVENT_MESSAGES = 200


def _values(reader: _Reader, kind: str) -> tuple[list[Message], list[Message]]:
    """A tool's, agent's or chain's input and output values, as messages."""
    given_in = reader.text("inputMessages", c.INPUT_VALUE)
    given_out = reader.text("outputMessages", c.OUTPUT_VALUE)
    attributes = reader.attributes
    full_in = next((attributes[k] for k in c.INPUT_VALUE if k in attributes), None)
    full_out = next((attributes[k] for k in c.OUTPUT_VALUE if k in attributes), None)
    roles = ("assistant", "tool") if kind == "tool" else ("user", "assistant")
    inputs = [Message(roles[0], as_text(full_in))] if given_in is not None else []
    outputs = [Message(roles[1], as_text(full_out))] if given_out is not None else []
    return inputs, outputs


def view_of(
    attributes: Any, events: Any = None, name: str | None = None, kind: str | None = None
) -> GenAIView | None:
    """The GenAI view of a span (its OTLP/JSON attributes and events, or a function
    that gives its events; its name and SDK kind), or None when no convention describes
    it."""
    reader = _Reader(attribute_map(attributes))
    sources = reader.sources
    span_type = _type(reader, kind)
    model = reader.text("model", c.MODEL)
    tokens = {
        field: reader.count(field, keys)
        for field, keys in (
            ("inputTokens", c.INPUT_TOKENS),
            ("outputTokens", c.OUTPUT_TOKENS),
            ("totalTokens", c.TOTAL_TOKENS),
            ("cacheReadTokens", c.CACHE_READ_TOKENS),
            ("cacheWriteTokens", c.CACHE_WRITE_TOKENS),
            ("reasoningTokens", c.REASONING_TOKENS),
        )
    }
    inputs, outputs = _messages_of_attributes(reader)
    if not inputs and not outputs:  # events are read only when needed (`events()`)
        inputs, outputs = _messages_of_events(events() if callable(events) else events, sources)
    if span_type is None and (
        model or any(v is not None for v in tokens.values()) or inputs or outputs
    ):
        span_type = "llm"
    if span_type is None:
        return None
    if not inputs and not outputs and span_type not in MODEL_TYPES:
        inputs, outputs = _values(reader, span_type)
    total = tokens["totalTokens"]
    if total is None and (tokens["inputTokens"] is not None or tokens["outputTokens"] is not None):
        total = (tokens["inputTokens"] or 0) + (tokens["outputTokens"] or 0)
    return GenAIView(
        type=span_type,
        name=_name(reader, span_type, name),
        model=model,
        provider=reader.text("provider", c.PROVIDER),
        input_tokens=tokens["inputTokens"],
        output_tokens=tokens["outputTokens"],
        total_tokens=total,
        cache_read_tokens=tokens["cacheReadTokens"],
        cache_write_tokens=tokens["cacheWriteTokens"],
        reasoning_tokens=tokens["reasoningTokens"],
        client_cost=reader.cost(),
        user_id=reader.text("userId", c.USER),
        session_id=reader.text("sessionId", c.SESSION),
        input_messages=tuple(inputs),
        output_messages=tuple(outputs),
        sources=sources,
    )


def _name(reader: _Reader, span_type: str, span_name: str | None) -> str | None:
    """An agent's or tool's name: the attribute that names it, else the span's name."""
    keys = c.AGENT_NAME if span_type == "agent" else c.TOOL_NAME if span_type == "tool" else ()
    if not keys:
        return None
    named = reader.text("name", keys)
    if named is None and span_name:
        reader.sources["name"] = "name"
        return span_name[:1024]
    return named
