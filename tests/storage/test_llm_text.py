"""What a span's messages give the text index: the C reading of the OTel GenAI
messages (storage/_llm_text.c) against the reading through the view (storage/llm_text.py), which
is the reference: the same text and previews, or declined."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import proto_json
from benchmarks.payloads import native_spans_body
from genai.messages import MAX_CONTENT
from genai.prices import Pricer
from storage import llm_text
from storage.span_genai import rows_with_views
from tests.fuzz import FUZZ

FAST = llm_text._FAST
pytestmark = pytest.mark.skipif(FAST is None, reason="storage._llm_text is not built")

#: Texts that test the reading's edges: escapes, every width of UTF-8, a surrogate pair,
#: a bound's characters and more (MAX_CONTENT), controls, what looks like JSON.
_TEXTS = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", " ", "a\nb", 'q"\\/', "\x00\x1f\x7f", "é€😀", "\u2028", "[{}]"]),
    st.builds(lambda c, n: c * n, st.sampled_from(["a", "é", "€", "😀"]), st.integers(1, 4)),
    st.builds(
        lambda c, n: c * n,
        st.sampled_from(["a", "é", "😀"]),
        st.integers(MAX_CONTENT - 2, MAX_CONTENT + 2),
    ),
)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False))
_CONTENT = st.one_of(_TEXTS, _TEXTS, _SCALARS, st.lists(_TEXTS, max_size=2))
_ROLES = st.sampled_from(["user", "system", "assistant", "tool", ""])
#: A part of the convention's kinds, of any members.
_ANY_PART = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["text", "tool_call", "tool_call_response", "blob", None, 3]),
            "content": _CONTENT,
            "response": _CONTENT,
            "result": _CONTENT,
            "id": _TEXTS,
            "name": _TEXTS,
            "arguments": st.one_of(_TEXTS, st.dictionaries(_TEXTS, _TEXTS, max_size=2)),
        },
    ),
    _TEXTS,
    st.none(),
)
_TEXT_PART = st.fixed_dictionaries({"type": st.just("text"), "content": _TEXTS})
_PART = st.one_of(_TEXT_PART, _TEXT_PART, _ANY_PART)
#: A message as clients write them (most), or of any members.
_MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": _ROLES, "parts": st.lists(_PART, max_size=3)}),
    st.fixed_dictionaries({"role": _ROLES, "content": _TEXTS}),
    st.fixed_dictionaries(
        {},
        optional={
            "role": st.one_of(_ROLES, _SCALARS),
            "parts": st.one_of(st.lists(_ANY_PART, max_size=4), _TEXTS, st.none()),
            "content": _CONTENT,
            "finish_reason": st.just("stop"),
        },
    ),
    _TEXTS,
    _SCALARS,
)
#: How a client writes the JSON: orjson, Python's json escaping non-ASCII (and the
#: surrogate pairs of characters past the BMP), and with `\/` and upper-case escapes.
_WRITERS = st.sampled_from(
    [
        lambda v: orjson.dumps(v).decode(),
        lambda v: json.dumps(v),
        lambda v: json.dumps(v, ensure_ascii=False, indent=1),
        lambda v: json.dumps(v).replace("/", "\\/").replace("\\u00e9", "\\u00E9"),
    ]
)
_WRITTEN = st.builds(lambda write, items: write(items), _WRITERS, st.lists(_MESSAGE, max_size=5))
_MESSAGES = st.one_of(
    _WRITTEN,
    _WRITTEN,
    _WRITTEN,
    st.sampled_from(
        [
            "",
            "[",
            "[1,]",
            "{}",
            "null",
            '[{"role":"user","content":"\\ud800"}]',
            '[{"role":"user","role":"system","content":"twice"}]',
            '[{"r\\u006fle":"system","content":"escaped name"}]',
        ]
    ),
)
#: Other attributes beside the messages: some that mean nothing to the messages, and
#: other conventions' message attributes (which make the span Python's).
_OTHER_KEYS = st.sampled_from(["server.address", "gen_ai.request.model", "input.value"])
_CONVENTIONS_KEYS = st.sampled_from(
    [
        "gen_ai.system_instructions",
        "ai.prompt.messages",
        "ai.response.text",
        "gen_ai.prompt.0.content",
        "llm.output_messages.0.message.content",
        "gen_ai.input.messages",
    ]
)
_OTHERS = st.lists(
    st.tuples(st.one_of(_OTHER_KEYS, _OTHER_KEYS, _CONVENTIONS_KEYS), _TEXTS), max_size=2
)


def _stored(pairs: list[tuple[str, Any]]) -> str:
    """Attributes as the span store keeps them (OTLP/JSON, written by orjson)."""
    return orjson.dumps(
        [
            {"key": key, "value": {"stringValue": value} if isinstance(value, str) else value}
            for key, value in pairs
        ]
    ).decode()


def read_alike(attributes: str, span_type: str) -> tuple[str, str] | None:
    """The C reading, which must be the reference's when it gives one; False only where
    the reference's first test finds nothing."""
    fast = FAST.text_and_previews(attributes, span_type in ("llm", "embedding"))
    assert (fast is False) == (not llm_text.says(attributes, "[]"))
    if fast is False:
        return None
    if fast is not None:
        assert fast == llm_text.read_text_and_previews(span_type, attributes, "[]")
    return fast


@FUZZ
@given(
    st.one_of(st.none(), _MESSAGES),
    st.one_of(st.none(), _MESSAGES),
    _OTHERS,
    st.sampled_from(["llm", "embedding", "agent", "tool", "chain"]),
)
def test_the_c_reading_is_the_views_or_declines(
    inputs: str | None, outputs: str | None, others: list[tuple[str, Any]], span_type: str
) -> None:
    pairs = [("gen_ai.input.messages", inputs), ("gen_ai.output.messages", outputs), *others]
    read_alike(_stored([(key, value) for key, value in pairs if value is not None]), span_type)


_CLIENTS_MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": _ROLES, "parts": st.lists(_TEXT_PART, max_size=3)}),
    st.fixed_dictionaries({"role": _ROLES, "content": _TEXTS}),
)
_CLIENTS_MESSAGES = st.builds(
    lambda write, items: write(items), _WRITERS, st.lists(_CLIENTS_MESSAGE, min_size=1, max_size=4)
)


@FUZZ
@given(_CLIENTS_MESSAGES, _CLIENTS_MESSAGES, st.sampled_from(["llm", "agent"]))
def test_messages_as_clients_write_them_are_read_in_c(
    inputs: str, outputs: str, span_type: str
) -> None:
    stored = _stored([("gen_ai.input.messages", inputs), ("gen_ai.output.messages", outputs)])
    assert read_alike(stored, span_type) is not None


def test_it_reads_what_clients_write() -> None:
    """The common shapes are read, not declined: escapes of every kind (json.dumps's
    `\\uXXXX` and surrogate pairs, `\\/`), bounds, parts of each kind, no role."""
    long = "é" * (MAX_CONTENT + 5)
    messages = [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief. 😀 / é"}]},
        {"parts": [{"type": "text", "content": long}, {"type": "blob", "content": "x"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "response": "42"}]},
        {"role": "user", "content": "plain content"},
    ]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": 'ok\n"done"'}]}]
    for write in (json.dumps, lambda v: json.dumps(v).replace("/", "\\/")):
        stored = _stored(
            [("gen_ai.input.messages", write(messages)), ("gen_ai.output.messages", write(answer))]
        )
        text, previews = read_alike(stored, "llm") or ("", "")
        assert text.startswith("Be brief. 😀 / é\n" + "é" * MAX_CONTENT + "…\n42\nplain")
        # the first user message (of no role), the answer, the last user message
        assert orjson.loads(previews) == ["é" * 500, 'ok\n"done"', "plain content"]


@pytest.mark.parametrize(
    "pairs",
    [
        [("gen_ai.input.messages", '[{"role":"user","content":"a"}]'), ("ai.response.text", "b")],
        [("gen_ai.input.messages", '[{"role":"user","role":"x","content":"a"}]')],
        [("gen_ai.input.messages", '[{"role":"user","content":5}]')],
        [("gen_ai.input.messages", '[{"role":"user","content":"\\ud800"}]')],
        [
            ("gen_ai.input.messages", '[{"role":"user","content":"a"}]'),
            ("gen_ai.input.messages", '[{"role":"user","content":"b"}]'),
        ],
        [("gen_ai.output.messages", '[{"parts":[{"type":"tool_call","name":"f"}]}]')],
    ],
)
def test_what_it_declines(pairs: list[tuple[str, str]]) -> None:
    """Another convention beside the messages, a repeated member or attribute, content
    that is no text, JSON orjson refuses, a previewed message of tool calls alone: the
    reference reads them."""
    assert FAST.text_and_previews(_stored(pairs), True) is None


def test_a_key_written_otherwise_is_not_read() -> None:
    """Attributes whose messages key is written with spaces (never as the store writes
    them): the reference's first test does not find it, and neither does the C."""
    answer = '"[{\\"content\\":\\"hi\\"}]"'
    stored = '[{"key" : "gen_ai.output.messages","value":{"stringValue":' + answer + "}}]"
    assert llm_text.read_text_and_previews("llm", stored, "[]") is None
    assert FAST.text_and_previews(stored, True) is False
    written_so = stored.replace('"key" : ', '"key":')
    assert FAST.text_and_previews(written_so, True) == ("hi", '[null,"hi"]')


#: Every key the reference's first test looks for, keys that begin or end like one,
#: and others.
_SAID_KEYS = st.sampled_from(
    [
        *llm_text._MESSAGE_KEYS,
        *llm_text._INDEXED,
        *(prefix + "0.content" for prefix in llm_text._INDEXED),
        *llm_text._STRING_KEYS,
        *(key[:-1] for key in (*llm_text._MESSAGE_KEYS, *llm_text._STRING_KEYS)),
        *(key + "s" for key in (*llm_text._MESSAGE_KEYS, *llm_text._STRING_KEYS)),
        "llm.model",
        "tool.args.x",
        'input.value","value":{"stringValue"',
    ]
)
_VALUES = st.one_of(
    _TEXTS.map(lambda text: {"stringValue": text}),
    st.integers().map(lambda n: {"intValue": str(n)}),
    st.just({"arrayValue": {"values": [{"stringValue": "query"}]}}),
    st.just({}),
)


@FUZZ
@given(st.lists(st.tuples(st.one_of(_SAID_KEYS, _TEXTS), _VALUES), max_size=6))
def test_it_tells_attributes_that_hold_no_messages_as_the_reference_does(
    pairs: list[tuple[str, Any]],
) -> None:
    """False (nothing to read) exactly where the reference's first test finds nothing:
    whatever the keys, and whatever the values' kinds."""
    stored = orjson.dumps([{"key": key, "value": value} for key, value in pairs]).decode()
    assert (FAST.text_and_previews(stored, True) is False) == (not llm_text.says(stored, "[]"))


def test_a_key_found_inside_the_text_of_another_is_found() -> None:
    """The pattern is looked for from each byte, as Python's search does: a `"key":"`
    whose last quote begins another is found (text no JSON writer makes, told alike)."""
    for text in (
        '"key":"key":"gen_ai.prompt.',
        'x"key":"key":"input.value","value":{"stringValue"',
    ):
        assert llm_text.says(text, "[]")
        assert FAST.text_and_previews(text, True) is None


def test_the_benchmarks_model_calls_are_read() -> None:
    """bench_worker --genai's spans, as the worker stores them: every one read in C."""
    body = proto_json.convert_spans(native_spans_body(40, genai="gen_ai")).payload
    rows, _ = rows_with_views(body, "p", 1, Pricer())
    assert rows and all(read_alike(row.attributes, row.llm_type or "") for row in rows)
