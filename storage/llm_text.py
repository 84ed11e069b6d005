"""What a span's messages give the text index: their text and the view's previews.

The worker reads them for every model call it stores (storage/trace_texts.py): the
contents of the span's input and output messages, one a line, which it keeps the words
of; and the GenAI view's input and output previews, which the trace list shows. Read
through the view (`message_view`) here, which is the reference; the C extension
(storage/_llm_text.c), where it was built, reads the OpenTelemetry GenAI convention's
messages straight from the attributes' JSON text, and declines (None) any span it does
not read exactly as this does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

import orjson

from genai import conventions as c
from genai.messages import MAX_CONTENT, MAX_MESSAGES
from genai.view import MODEL_TYPES, PREVIEW_CHARS, message_view
from proto_json import fastpath

#: A span's text, at most (the words after it are not found).
MAX_TEXT = 100_000
#: What a span's events' JSON text holds where one may be a GenAI event.
EVENT_MARKER = '"name":"gen_ai.'

#: An attribute that may give a span messages (genai/conventions.py names them): the
#: messages' own (any value), indexed messages, and the values of tools and agents
#: (strings); or a GenAI event. Only a span with one is read for its text.
_MESSAGE_KEYS = (
    *(key for key, _ in (*c.INPUT_MESSAGES, *c.OUTPUT_MESSAGES)),
    c.SYSTEM_INSTRUCTIONS,
    c.VERCEL_TOOL_CALLS,
)
_INDEXED = c.INDEXED_PREFIXES
_STRING_KEYS = (*c.INPUT_VALUE, *c.OUTPUT_VALUE, *c.VERCEL_TEXT)
_SAID = re.compile(
    '"key":"(?:'
    + "|".join(re.escape(key) + '"' for key in _MESSAGE_KEYS)
    + "|"
    + "|".join(map(re.escape, _INDEXED))
    + "|(?:"
    + "|".join(map(re.escape, _STRING_KEYS))
    + ')","value":\\{"stringValue")'
)


def says(attributes: str, events: str) -> bool:
    """Whether a span's attributes or events (their stored JSON texts) may hold
    messages: a cheap test, no parsing."""
    return EVENT_MARKER in events or _SAID.search(attributes) is not None


def gen_ai_events(events: str) -> Callable[[], Any] | None:
    """A span's events (their stored JSON text) as the view takes them: parsed when it
    first asks for them, and only where one may be a GenAI event."""
    return (lambda: orjson.loads(events)) if EVENT_MARKER in events else None


def text_and_previews(span_type: str, attributes: str, events: str) -> tuple[str, str] | None:
    """What a span the GenAI view describes (as of `span_type`) gives the text index,
    when it has messages: its input and output messages' contents, one a line (empty
    when none has any), cut to MAX_TEXT characters; and its view's previews as the JSON
    text `[input, output]`, or `[input, output, asked]` (GenAIView.previews)."""
    if _FAST is not None:
        model = span_type in MODEL_TYPES
        given: tuple[str, str] | bool | None = _FAST.text_and_previews(attributes, model)
        if given is False and EVENT_MARKER not in events:  # `says` would say no
            return None
        if isinstance(given, tuple):
            return given
    return read_text_and_previews(span_type, attributes, events)


def read_text_and_previews(span_type: str, attributes: str, events: str) -> tuple[str, str] | None:
    """`text_and_previews` read through the GenAI view (the reference)."""
    if not says(attributes, events):
        return None
    view = message_view(orjson.loads(attributes), gen_ai_events(events), span_type)
    if not (view.input_messages or view.output_messages):
        return None
    texts = [m.content for m in (*view.input_messages, *view.output_messages) if m.content]
    previews = orjson.dumps(view.previews()).decode()
    return "\n".join(texts)[:MAX_TEXT], previews


def _fast() -> ModuleType | None:
    """The C extension with its reading plan set, where it was built and is on: it reads
    the first messages attribute of each side, of the OTel shape, and tells a span whose
    attributes `says` finds nothing in (False)."""
    module = fastpath.extension("storage._llm_text")
    if module is None:
        return None
    (input_key, input_shape), (output_key, output_shape) = c.INPUT_MESSAGES[0], c.OUTPUT_MESSAGES[0]
    assert input_shape == output_shape == "otel"
    others = tuple(
        key for key in (*_MESSAGE_KEYS, *c.VERCEL_TEXT) if key not in (input_key, output_key)
    )
    module.set_plan(
        (
            input_key,
            output_key,
            others,
            _INDEXED,
            MAX_MESSAGES,
            MAX_CONTENT,
            PREVIEW_CHARS,
            MAX_TEXT,
            _MESSAGE_KEYS,
            _STRING_KEYS,
        )
    )
    return module


_FAST = _fast()
