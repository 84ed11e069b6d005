"""A canonical span's LLM semantics, whichever convention it uses: the GenAI view.

`view_of` reads a span's attributes and events (OTLP/JSON, as proto_json makes them)
through the tables of genai/conventions.py and answers a GenAIView, or None for a span
that no convention describes. Pure: no I/O, and it never raises on the span's content:
a value of the wrong type, negative or not a number, or JSON that does not parse leaves
its field None; messages are bounded (genai/messages.py).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import orjson

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

#: A text field of the view (a model, a name, an id) is cut to this many characters
#: (storage/_rows_genai.h cuts as many: TEXT_CHARS).
TEXT_CHARS = 1024

PREVIEW_CHARS = 500
#: A token count at or over this is no real count (the largest context windows hold a
#: few million): it is not usable, as a negative one is. A trace's and a session's sums
#: (BIGINT) then stay exact up to millions of spans at it (storage/_rows_genai.h reads
#: counts by the same bound).
MAX_TOKENS = 10**12  # 13 digits
TYPES = ("llm", "embedding", "agent", "tool", "retrieval", "chain")
MODEL_TYPES = frozenset(("llm", "embedding"))
_NO_SOURCES: Mapping[str, str] = MappingProxyType({})


class GenAIView(NamedTuple):
    """What an LLM engineer looks for in a span; None where the span does not say.

    A NamedTuple rather than the house's frozen dataclass: the worker makes one for
    every model call it stores, and a frozen dataclass of 16 fields costs a
    setattr each to build.
    """

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
    sources: Mapping[str, str] = _NO_SOURCES

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

    def previews(self) -> list[str | None]:
        """The previews a trace list shows of the span: `input_preview`,
        `output_preview`, and a model call's last user message where it has two or
        more (its turn's question: a chat's call holds the conversation so far, whose
        first user message is the input); each at most PREVIEW_CHARS characters."""
        shown = [self.input_preview, self.output_preview]
        if self.type in MODEL_TYPES:
            asked = [m for m in self.input_messages if m.role == "user"]
            if len(asked) > 1:
                shown.append(_preview(asked[-1]))
        return shown


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
    item = value.get("stringValue")
    if item is not None:
        return item if type(item) is str else None
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
        value = int(text) if text.isdecimal() and len(text) < 19 else None
    elif isinstance(value, float):
        value = int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, int) and 0 <= value < MAX_TOKENS:
        return value
    return None


def _text(value: Any) -> str | None:
    return value if type(value) is str and value.strip() else None


def _value(value: Any) -> Any:
    """An input or output value: a text, or a structure with something in it (a tool's
    arguments sent as an object), shown as JSON."""
    if type(value) is str:
        return value if value.strip() else None
    return value if type(value) in (dict, list) and value else None


def _cost(value: Any) -> float | None:
    if type(value) is str:
        value = _float(value)
    if type(value) is float or type(value) is int:
        if math.isfinite(value) and 0 <= value < 1e12:
            return float(value)
    return None


#: Each field read from single attributes: its keys in order, and what makes a value
#: usable (None: not usable, and the next key is read).
_FIELDS: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "model": (c.MODEL, _text),
    "provider": (c.PROVIDER, _text),
    "agentName": (c.AGENT_NAME, _text),
    "toolName": (c.TOOL_NAME, _text),
    "userId": (c.USER, _text),
    "sessionId": (c.SESSION, _text),
    "inputValue": (c.INPUT_VALUE, _value),
    "outputValue": (c.OUTPUT_VALUE, _value),
    "vercelText": (c.VERCEL_TEXT, _text),
    "inputTokens": (c.INPUT_TOKENS, _count),
    "outputTokens": (c.OUTPUT_TOKENS, _count),
    "totalTokens": (c.TOTAL_TOKENS, _count),
    "cacheReadTokens": (c.CACHE_READ_TOKENS, _count),
    "cacheWriteTokens": (c.CACHE_WRITE_TOKENS, _count),
    "reasoningTokens": (c.REASONING_TOKENS, _count),
    "costUsd": (c.COST, _cost),
}
#: Attributes kept as they are, for the readers of messages and types.
_RAW = frozenset(
    (
        *(key for key, _ in c.TYPE_ATTRIBUTES),
        *(key for key, _ in c.INPUT_MESSAGES),
        *(key for key, _ in c.OUTPUT_MESSAGES),
        c.SYSTEM_INSTRUCTIONS,
        c.VERCEL_TOOL_CALLS,
    )
)
_INDEXED = c.INDEXED_PREFIXES
_TYPE_KEYS = frozenset(key for key, _ in c.TYPE_ATTRIBUTES)
_MESSAGE_KEYS = _RAW - _TYPE_KEYS
_IS_INDEXED = operator.methodcaller("startswith", _INDEXED)
#: Attributes that make a span an LLM call's when nothing else types it: the messages
#: as JSON, and the first indexed message's role or content (a set test, where looking
#: for any indexed message tests every attribute's name).
_SAYING = _MESSAGE_KEYS | {
    f"{prefix}0.{member}"
    for prefix, _ in (*c.INDEXED_INPUT, *c.INDEXED_OUTPUT)
    for member in ("role", "content", "message.role", "message.content")
}


def _values_by_key(attributes: Any) -> dict[str, Any]:
    """OTLP/JSON key-values as {key: AnyValue} (the last of a key wins)."""
    if type(attributes) is not list:
        return {}
    try:
        found = {pair["key"]: pair["value"] for pair in attributes}
    except (TypeError, KeyError):  # not all well formed: the well formed ones
        found = {
            pair["key"]: pair.get("value")
            for pair in attributes
            if type(pair) is dict and type(pair.get("key")) is str
        }
    return found  # a key that is no text matches no convention's name


def _index() -> dict[str, tuple[tuple[str, int, Callable[[Any], Any]], ...]]:
    index: dict[str, list[tuple[str, int, Callable[[Any], Any]]]] = {}
    for name, (keys, check) in _FIELDS.items():
        for rank, key in enumerate(keys):
            index.setdefault(key, []).append((name, rank, check))
    return {key: tuple(slots) for key, slots in index.items()}


#: Attribute name -> the fields it may give (field, its rank among the field's keys,
#: the check of its value): a span's attributes are read in one pass.
_INDEX = _index()
_INDEX_KEYS = frozenset(_INDEX)


class _Reader:
    """One span's attributes: the best usable value of each field (with the key it came
    from), any attribute's value when asked for, and every attribute as a Python value
    when asked for (indexed messages). Only the attributes that give a field are
    converted here: a set intersection finds them."""

    __slots__ = ("values", "_best", "sources", "_all")

    def __init__(self, attributes: Any) -> None:
        self.values = _values_by_key(attributes)
        self._best: dict[str, tuple[int, Any, str]] | None = None
        self.sources: dict[str, str] = {}
        self._all: dict[str, Any] | None = None

    @property
    def best(self) -> dict[str, tuple[int, Any, str]]:
        """Each field's best usable value: (its key's rank, the value, the key); made
        when first asked for (a span's messages alone need it only where a tool's,
        agent's or the Vercel AI SDK's text gives them)."""
        if self._best is None:
            self._best = self._fields()
        return self._best

    def _fields(self) -> dict[str, tuple[int, Any, str]]:
        values = self.values
        best: dict[str, tuple[int, Any, str]] = {}
        for key in values.keys() & _INDEX_KEYS:
            item = values[key]
            if type(item) is not dict or len(item) != 1:
                continue
            for name, rank, check in _INDEX[key]:
                had = best.get(name)
                if had is not None and had[0] <= rank:
                    continue
                # the common cases inline (a call is most of a field's cost): text, and
                # counts sent as OTLP's decimal text; anything else through `check`
                if check is _text:
                    value = item.get("stringValue")
                    if type(value) is not str or not value or value.isspace():
                        continue
                else:
                    number = item.get("intValue") if check is _count else None
                    if type(number) is str and number.isdecimal() and len(number) < 13:
                        value = int(number)
                    else:
                        value = check(plain(item))
                        if value is None:
                            continue
                best[name] = (rank, value, key)
        return best

    def raw(self, key: str) -> Any:
        """One attribute's value (None when the span has no such attribute)."""
        return plain(self.values.get(key))

    def has(self, key: str) -> bool:
        """Whether the span has the attribute."""
        return key in self.values

    @property
    def indexed(self) -> bool:
        """Whether any attribute is an indexed message's."""
        try:
            return any(map(_IS_INDEXED, self.values))
        except AttributeError:  # a key that is no text
            return any(type(key) is str and _IS_INDEXED(key) for key in self.values)

    @property
    def attributes(self) -> dict[str, Any]:
        """Every attribute (made when first asked for)."""
        if self._all is None:
            self._all = {
                key: plain(value) for key, value in self.values.items() if type(key) is str
            }
        return self._all

    def take(self, name: str, source: str | None = None) -> Any:
        """The field's value (None when no key gives a usable one), its key recorded
        as the source of `source` (the field's own name by default)."""
        found = self.best.get(name)
        if found is None:
            return None
        self.sources[source or name] = found[2]
        return found[1]

    def text(self, name: str, source: str | None = None) -> str | None:
        """A text field, cut to TEXT_CHARS characters."""
        found = self.take(name, source)
        return None if found is None else str(found)[:TEXT_CHARS]


def _type(reader: _Reader, kind: str | None) -> str | None:
    if kind is not None and kind in c.NATIVE_TYPES:
        reader.sources["type"] = "spangate.span.kind"
        return c.NATIVE_TYPES[kind]
    values = reader.values
    if values.keys().isdisjoint(_TYPE_KEYS):
        return None
    for key, types in c.TYPE_ATTRIBUTES:
        value = plain(values[key]) if key in values else None
        if isinstance(value, str):
            found = types.get(value) or types.get(value.upper()) or types.get(value.lower())
            if found is not None:
                reader.sources["type"] = key
                return found
    return None


def _messages_of_attributes(
    reader: _Reader, span_type: str | None
) -> tuple[list[Message], list[Message]]:
    """Input and output messages from the attributes: JSON ones, then indexed ones."""
    return _input_messages(reader, span_type), _output_messages(reader)


_READERS = {"otel": lambda v: otel_messages(v, "user"), "vercel": vercel_messages}


#: The prefixes of indexed input messages, in order; an embedding call's texts last.
_INDEXED_INPUTS = tuple(prefix for prefix, _ in c.INDEXED_INPUT)
_EMBEDDING_INPUTS = (*_INDEXED_INPUTS, c.EMBEDDING_TEXTS)


def _input_messages(reader: _Reader, span_type: str | None) -> list[Message]:
    sources = reader.sources
    inputs: list[Message] = []
    for key, shape in c.INPUT_MESSAGES:
        if reader.has(key):
            inputs = _READERS.get(shape, vercel_prompt)(reader.raw(key))
            if inputs:
                sources["inputMessages"] = key
                break
    for prefix in _EMBEDDING_INPUTS if span_type == "embedding" else _INDEXED_INPUTS:
        if inputs or not reader.indexed:
            break
        inputs = indexed_messages(reader.attributes, prefix, "user")
        if inputs:
            sources["inputMessages"] = f"{prefix}N"
    if reader.has(c.SYSTEM_INSTRUCTIONS):
        system = otel_instructions(reader.raw(c.SYSTEM_INSTRUCTIONS))
        if system and not inputs:
            sources["inputMessages"] = c.SYSTEM_INSTRUCTIONS
        inputs = system + inputs
    return inputs


def _output_messages(reader: _Reader) -> list[Message]:
    sources = reader.sources
    for key, _ in c.OUTPUT_MESSAGES:
        outputs = otel_messages(reader.raw(key), "assistant")
        if outputs:
            sources["outputMessages"] = key
            return outputs
    for prefix, _ in c.INDEXED_OUTPUT:
        if not reader.indexed:
            break
        outputs = indexed_messages(reader.attributes, prefix, "assistant")
        if outputs:
            sources["outputMessages"] = f"{prefix}N"
            return outputs
    return _vercel_answer(reader)


def _vercel_answer(reader: _Reader) -> list[Message]:
    calls = vercel_tool_calls(reader.raw(c.VERCEL_TOOL_CALLS))
    text = reader.take("vercelText", "outputMessages")
    if calls and text is None:
        reader.sources["outputMessages"] = c.VERCEL_TOOL_CALLS
    if text is None and not calls:
        return []
    return [Message("assistant", as_text(text), calls)]


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
    given_in = reader.take("inputValue", "inputMessages")
    given_out = reader.take("outputValue", "outputMessages")
    roles = ("assistant", "tool") if kind == "tool" else ("user", "assistant")
    inputs = [Message(roles[0], as_text(given_in))] if given_in is not None else []
    outputs = [Message(roles[1], as_text(given_out))] if given_out is not None else []
    return inputs, outputs


_TOKENS = (
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "reasoningTokens",
)


def view_of(
    attributes: Any,
    events: Any = None,
    name: str | None = None,
    kind: str | None = None,
    messages: bool = True,
) -> GenAIView | None:
    """The GenAI view of a span (its OTLP/JSON attributes and events, or a function
    that gives its events; its name and SDK kind), or None when no convention describes
    it. `messages=False` leaves the messages out (a span's stored facts need none): the
    view is the same but for its messages and their sources."""
    return _view(_Reader(attributes), events, name, kind, messages)


#: OpenInference's input and output: a span that gives either and no type is a chain.
_OPENINFERENCE_VALUES = frozenset(("input.value", "output.value"))


def _given(best: dict[str, tuple[int, Any, str]]) -> list[tuple[int, Any, str]]:
    """The input and output values a span gives (rank, value, key)."""
    return [best[field] for field in ("inputValue", "outputValue") if field in best]


def user_and_session_of(attributes: Any) -> tuple[str | None, str | None]:
    """The user (`user.id`, `enduser.id`) and session (`session.id`,
    `gen_ai.conversation.id`) a span's attributes name, read as its view reads them:
    for a span no convention describes (a trace's user is often set on its root alone,
    an application's span, whatever convention its model calls use)."""
    reader = _Reader(attributes)
    return reader.text("userId"), reader.text("sessionId")


def _view(
    reader: _Reader, events: Any, name: str | None, kind: str | None, messages: bool
) -> GenAIView | None:
    sources = reader.sources
    best = reader.best
    span_type = _type(reader, kind)
    model = reader.text("model")
    take = reader.take
    tokens = {field: take(field) for field in _TOKENS if field in best}
    inputs, outputs, said = _said(reader, events, messages, span_type)
    if span_type is None and (model or tokens or said or inputs or outputs):
        span_type = "llm"
    if span_type is None and _OPENINFERENCE_VALUES & {found[2] for found in _given(best)}:
        span_type = "chain"  # OpenInference's span of no kind: its generic one
    if span_type is None:
        return None
    if model is None and span_type in MODEL_TYPES and reader.has(c.INVOCATION_PARAMETERS):
        model = _model_asked(reader)
    if messages and not inputs and not outputs and span_type not in MODEL_TYPES:
        inputs, outputs = _values(reader, span_type)
    total = tokens.get("totalTokens")
    if total is None and ("inputTokens" in tokens or "outputTokens" in tokens):
        total = tokens.get("inputTokens", 0) + tokens.get("outputTokens", 0)
    return GenAIView(
        span_type,
        _name(reader, span_type, name),
        model,
        reader.text("provider"),
        tokens.get("inputTokens"),
        tokens.get("outputTokens"),
        total,
        tokens.get("cacheReadTokens"),
        tokens.get("cacheWriteTokens"),
        tokens.get("reasoningTokens"),
        reader.take("costUsd"),
        reader.text("userId"),
        reader.text("sessionId"),
        tuple(inputs),
        tuple(outputs),
        sources,
    )


def _model_asked(reader: _Reader) -> str | None:
    """The model a call's parameters name (OpenInference's `llm.invocation_parameters`,
    JSON): a call that failed before an answer has no other."""
    given = reader.raw(c.INVOCATION_PARAMETERS)
    try:
        parameters = orjson.loads(given) if type(given) is str else None
    except orjson.JSONDecodeError:
        return None
    model = parameters.get("model") if type(parameters) is dict else None
    if type(model) is not str or not model or model.isspace():
        return None
    reader.sources["model"] = c.INVOCATION_PARAMETERS
    return model[:TEXT_CHARS]


def _said(
    reader: _Reader, events: Any, messages: bool, span_type: str | None
) -> tuple[list[Message], list[Message], bool]:
    """A span's input and output messages from its attributes, else from its events
    (none when not `messages`), and whether either says any (`span_type`: the span's
    type as known so far; an embedding call's texts are its input alone)."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    values = reader.values
    said = not values.keys().isdisjoint(_SAYING) or (
        not values.keys().isdisjoint(c.VERCEL_TEXT) and "vercelText" in reader.best
    )
    if messages and (said or reader.indexed):
        inputs, outputs = _messages_of_attributes(reader, span_type)
    if not said and events is not None:  # read only when needed
        listed = events() if callable(events) else events
        if messages:
            inputs, outputs = _messages_of_events(listed, reader.sources)
        said = _has_message_events(listed)
    return inputs, outputs, said


def message_view(attributes: Any, events: Any, span_type: str) -> GenAIView:
    """The messages of a span of a known GenAI type (its view's, as `view_of` gives
    them): a view of that type and its messages alone, with their previews, for less
    than the whole view (the worker reads them for the text index of every model call
    it stores: storage/trace_texts.py)."""
    reader = _Reader(attributes)
    inputs, outputs, _ = _said(reader, events, True, span_type)
    if not inputs and not outputs and span_type not in MODEL_TYPES:
        inputs, outputs = _values(reader, span_type)
    return GenAIView(span_type, input_messages=tuple(inputs), output_messages=tuple(outputs))


def _has_message_events(events: Any) -> bool:
    """Whether span events hold messages a convention reads (the events mode)."""
    return isinstance(events, list) and any(
        isinstance(event, Mapping) and event.get("name") in _MESSAGE_EVENTS for event in events
    )


_MESSAGE_EVENTS = frozenset((*c.MESSAGE_EVENTS, c.CHOICE_EVENT, c.DETAILS_EVENT))


_NAMED = {"agent": "agentName", "tool": "toolName"}


def _name(reader: _Reader, span_type: str, span_name: str | None) -> str | None:
    """An agent's or tool's name: the attribute that names it, else the span's name."""
    field = _NAMED.get(span_type)
    if field is None:
        return None
    named = reader.text(field, "name")
    if named is None and span_name:
        reader.sources["name"] = "name"
        return span_name[:TEXT_CHARS]
    return named


#: The checks storage/_rows_genai.h makes itself (`_value`'s of a text alone); a span any
#: other check reads is Python's (2).
_CHECKS: dict[Callable[[Any], Any], int] = {_text: 0, _count: 1, _value: 3}


def reading_plan() -> tuple[Any, ...]:
    """The reader's tables, for storage/_rows_genai.h: the fields; for every attribute
    the reader looks at, its roles (1: gives fields, 2: types the span, 4: says it holds
    messages) and the fields it gives as (field, rank, check); the typing attributes in
    order, with the types their texts give; and the native kinds' types. Role 8: the
    parameters that name a model when nothing else does (a span with them and no model
    is Python's)."""
    fields = tuple(_FIELDS)
    keys = []
    for key in sorted(_INDEX_KEYS | _TYPE_KEYS | _SAYING | {c.INVOCATION_PARAMETERS}):
        slots = tuple(
            (fields.index(field), rank, _CHECKS.get(check, 2))
            for field, rank, check in _INDEX.get(key, ())
        )
        roles = (1 if slots else 0) | (2 if key in _TYPE_KEYS else 0)
        roles |= (4 if key in _SAYING else 0) | (8 if key == c.INVOCATION_PARAMETERS else 0)
        keys.append((key, roles, slots))
    types = tuple((key, dict(types)) for key, types in c.TYPE_ATTRIBUTES)
    return fields, tuple(keys), types, tuple(c.NATIVE_TYPES.items())
