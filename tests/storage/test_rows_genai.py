"""The GenAI facts the C row builder fills (storage/_rows_genai.h) against those of
genai/view.py's reader (storage/span_genai.with_views): the very same rows."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import proto_json
from genai import conventions
from genai.prices import Pricer
from genai.view import reading_plan
from storage import span_genai, span_rows, trace_index
from storage.span_genai import MARKED_NAMES, MARKED_PREFIXES, rows_with_views, with_views
from tests.fuzz import FUZZ

FAST = span_rows.FAST_ROWS
pytestmark = pytest.mark.skipif(FAST is None, reason="the C row builder is not built")

PLAN_KEYS = [key for key, _, _ in reading_plan()[1]]
NAMES = st.one_of(
    st.sampled_from(PLAN_KEYS),
    st.sampled_from(MARKED_PREFIXES).map(lambda prefix: prefix + "x"),
    st.sampled_from(MARKED_NAMES),
    st.sampled_from(["user.id", "session.id", "http.method", 'gen_ai."q', "llm.\n"]),
)
TEXTS = st.one_of(
    st.sampled_from(["", " ", "   ", "\u3000", " \xa0", "gpt-4o", " x ", "a\nb", 'q"', "LLM"]),
    st.sampled_from([*conventions.NATIVE_TYPES, "chat", "CHAT", "Agent", "TOOL", "embeddings"]),
    st.text(max_size=12),
    st.text(min_size=1020, max_size=1030, alphabet="ab\u00e9"),
    # past the texts whose hashes are kept, with every escape the body may hold
    st.text(min_size=250, max_size=300, alphabet='a"\\\n\t\x01\x1f\u00e9\u898b/'),
)
DIGITS = st.one_of(
    st.integers(min_value=0, max_value=10**20).map(str),
    st.sampled_from(["", "-3", "007", "1e3", " 5", "\u0661\u0662", "9" * 18, "9" * 19]),
)
SCALARS = st.one_of(
    TEXTS.map(lambda text: {"stringValue": text}),
    DIGITS.map(lambda digits: {"stringValue": digits}),
    st.sampled_from(["0", "-3", "007", "9" * 18]).map(lambda n: {"intValue": n}),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(lambda n: {"intValue": str(n)}),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: {"doubleValue": x}),
    st.booleans().map(lambda b: {"boolValue": b}),
    st.just({}),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=2).map(lambda items: {"arrayValue": {"values": items}}),
    st.lists(st.tuples(NAMES, SCALARS), max_size=2).map(
        lambda pairs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in pairs]}}
    ),
)
ATTRIBUTES = st.lists(st.tuples(NAMES, VALUES), max_size=8).map(
    lambda pairs: [{"key": key, "value": value} for key, value in pairs]
)
EVENTS = st.lists(
    st.sampled_from(["gen_ai.user.message", "gen_ai.choice", "exception", "gen_ai.x"]).map(
        lambda name: {"name": name, "timeUnixNano": "1"}
    ),
    max_size=2,
)


@st.composite
def otlp_span(draw: st.DrawFn) -> dict[str, Any]:
    attributes = draw(ATTRIBUTES)
    if draw(st.booleans()):  # a native kind, as the SDK sends it
        kind = draw(st.sampled_from([*conventions.NATIVE_TYPES, "plain"]))
        attributes.append({"key": "spangate.span.kind", "value": {"stringValue": kind}})
    return {
        "traceId": "1" * 32,
        "spanId": f"{draw(st.integers(min_value=1, max_value=2**64 - 1)):016x}",
        "name": draw(st.sampled_from(["p", "planner", "x" * 1100])),
        "kind": draw(st.integers(min_value=0, max_value=5)),
        "startTimeUnixNano": "5",
        "attributes": attributes,
        "events": draw(EVENTS),
    }


def _body(spans: list[dict[str, Any]]) -> bytes:
    request = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    conversion = proto_json.convert_otlp(orjson.dumps(request))
    assert conversion.accepted == len(spans), conversion.errors
    return conversion.payload


def same_rows(body: bytes) -> tuple[list[int], list[int]] | None:
    """Both readings of a body give the same rows, and the attribute index the same
    rows of them (from the C builder's pairs, and from the attributes' text); the
    positions of the rows the C builder left to be priced, and to Python (None: it
    declined the body, as it does bodies it does not build rows of, such as a name with
    an escape in a list it sorts)."""
    assert FAST is not None
    pricer = Pricer()
    reference = with_views(span_rows.rows_of(orjson.loads(body), "p", 7), pricer)
    rows, pairs = rows_with_views(body, "p", 7, pricer)
    assert rows == reference
    if pairs is not None:
        for row, row_pairs in zip(rows, pairs, strict=True):
            from_pairs = trace_index.index_rows([row], [row_pairs]).facets
            from_text = trace_index.index_rows([row]).facets
            assert [(p, t, set(k)) for p, t, k in from_pairs] == [
                (p, t, set(k)) for p, t, k in from_text
            ]
    built = FAST.span_rows_json(body, "p", 7, span_rows.SpanRow, span_genai._PLAN)
    return None if built is None else (built[1], built[2])


@FUZZ
@given(st.lists(otlp_span(), min_size=1, max_size=4))
def test_any_attributes_give_the_same_facts(spans: list[dict[str, Any]]) -> None:
    """Whatever names and values a span's attributes hold (every name the reader
    looks at, marked ones, texts blank or not, counts in any form, repeated names,
    nested pairs, native kinds, message events), the rows are those of Python's view."""
    same_rows(_body(spans))


def test_the_ordinary_are_read_in_c() -> None:
    """A span of each convention with ordinary values is read in C (none left to
    Python), and a model call with tokens is left to be priced."""
    spans = [
        {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
         "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2},
        {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
         "llm.token_count.prompt": 10, "input.value": "hi"},
        {"traceloop.span.kind": "tool", "traceloop.entity.name": "lookup"},
        {"ai.operationId": "ai.generateText.doGenerate", "ai.model.id": "gpt-4o",
         "ai.usage.promptTokens": 3},
        {"http.method": "GET", "user.id": "u1"},
    ]  # fmt: skip
    body = proto_json.convert_spans(
        orjson.dumps(
            {
                "spans": [
                    {
                        "traceId": "1" * 32,
                        "spanId": f"{n + 1:016x}",
                        "name": "call",
                        "startTime": "2026-11-22T10:00:00Z",
                        "attributes": attributes,
                    }
                    for n, attributes in enumerate(spans)
                ]
            }
        )  # fmt: skip
    ).payload
    assert same_rows(body) == ([0, 1, 3], [])
