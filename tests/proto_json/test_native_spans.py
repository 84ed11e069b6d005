"""Native /v1/spans bodies: every span rule, per-span rejection, ignored fields, caps."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import proto_json
from proto_json import EnvelopeError, Limits
from tests.proto_json import protobuf
from tests.proto_json.spans import SPAN_ID, TRACE_ID, only_span, span, spans_body


def _nested(levels: int) -> list[Any]:
    """Lists inside lists, `levels` deep."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def convert_one(**fields: Any) -> proto_json.Conversion:
    return proto_json.convert_spans(spans_body(span(**fields)))


def test_minimal_span_is_canonical() -> None:
    """A span with only the required fields becomes the expected canonical OTLP span."""
    result = proto_json.convert_spans(spans_body(span()))
    assert result.accepted == 1 and result.errors == () and result.ignored == ()
    assert only_span(result.request) == {
        "traceId": TRACE_ID,
        "spanId": SPAN_ID,
        "name": "llm call",
        "kind": 0,
        "startTimeUnixNano": "1795341600123456789",
        "status": {"code": 0},
    }
    protobuf.parse(result.request)


def test_full_span_is_canonical() -> None:
    """Every optional field converts by the canonical rules and parses as protobuf."""
    result = convert_one(
        traceId=TRACE_ID.upper(),
        parentSpanId="ABCDEF0123456789",
        kind="server",
        endTime="2026-11-22T10:00:01Z",
        status="error",
        attributes={"s": "x", "b": True, "i": -3, "f": 0.5, "l": [1, "a"], "d": {"k": None}},
        events=[{"name": "retry", "attributes": {"attempt": 2}}, {"name": "done"}],
    )
    converted = only_span(result.request)
    assert converted["traceId"] == TRACE_ID
    assert converted["parentSpanId"] == "abcdef0123456789"
    assert converted["kind"] == 2
    assert converted["endTimeUnixNano"] == "1795341601000000000"
    assert converted["status"] == {"code": 2}
    assert converted["attributes"] == [
        {"key": "s", "value": {"stringValue": "x"}},
        {"key": "b", "value": {"boolValue": True}},
        {"key": "i", "value": {"intValue": "-3"}},
        {"key": "f", "value": {"doubleValue": 0.5}},
        {
            "key": "l",
            "value": {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "a"}]}},
        },
        {"key": "d", "value": {"kvlistValue": {"values": [{"key": "k", "value": {}}]}}},
    ]
    assert converted["events"] == [
        {"name": "retry", "attributes": [{"key": "attempt", "value": {"intValue": "2"}}]},
        {"name": "done"},
    ]
    message = protobuf.parse(result.request)
    assert message.resource_spans[0].scope_spans[0].spans[0].trace_id.hex() == TRACE_ID


@pytest.mark.parametrize(
    ("kind", "number"),
    [("internal", 1), ("server", 2), ("client", 3), ("producer", 4), ("consumer", 5)],
)
def test_otel_kinds_map_to_enum(kind: str, number: int) -> None:
    """The five OTel kinds map to their enum numbers and add no attribute."""
    converted = only_span(convert_one(kind=kind).request)
    assert converted["kind"] == number and "attributes" not in converted


@pytest.mark.parametrize("kind", sorted(proto_json.AGENT_KINDS))
def test_agent_kinds_are_internal_with_attribute(kind: str) -> None:
    """The twelve agent kinds become INTERNAL and keep the SDK kind in one attribute."""
    converted = only_span(convert_one(kind=kind).request)
    assert converted["kind"] == 1
    assert converted["attributes"] == [
        {"key": proto_json.KIND_ATTRIBUTE, "value": {"stringValue": kind}}
    ]


def test_reserved_kind_attribute_from_client_is_dropped_and_reported() -> None:
    """A client-sent spangate.span.kind cannot forge the SDK kind; it is reported ignored."""
    result = convert_one(kind="tool_call", attributes={proto_json.KIND_ATTRIBUTE: "agent"})
    assert only_span(result.request)["attributes"] == [
        {"key": proto_json.KIND_ATTRIBUTE, "value": {"stringValue": "tool_call"}}
    ]
    assert result.ignored == (f"spans[].attributes.{proto_json.KIND_ATTRIBUTE}",)


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"traceId": None}, "INVALID_TRACE_ID"),
        ({"traceId": "abc"}, "INVALID_TRACE_ID"),
        ({"traceId": "g" * 32}, "INVALID_TRACE_ID"),
        ({"traceId": "0" * 32}, "INVALID_TRACE_ID"),
        ({"traceId": 12}, "INVALID_TRACE_ID"),
        ({"spanId": None}, "INVALID_SPAN_ID"),
        ({"spanId": "a" * 15}, "INVALID_SPAN_ID"),
        ({"spanId": "0" * 16}, "INVALID_SPAN_ID"),
        ({"parentSpanId": "xyz"}, "INVALID_PARENT_SPAN_ID"),
        ({"parentSpanId": 7}, "INVALID_PARENT_SPAN_ID"),
        ({"name": None}, "INVALID_NAME"),
        ({"name": ""}, "INVALID_NAME"),
        ({"name": ["x"]}, "INVALID_NAME"),
        ({"startTime": None}, "INVALID_TIMESTAMP"),
        ({"startTime": "yesterday"}, "INVALID_TIMESTAMP"),
        ({"endTime": 5}, "INVALID_TIMESTAMP"),
        ({"kind": "SERVER"}, "INVALID_KIND"),
        ({"kind": 2}, "INVALID_KIND"),
        ({"status": "failed"}, "INVALID_STATUS"),
        ({"status": {"code": 2}}, "INVALID_STATUS"),
        ({"attributes": ["a"]}, "INVALID_ATTRIBUTES"),
        ({"attributes": "a=b"}, "INVALID_ATTRIBUTES"),
        (
            {
                "attributes": {
                    "deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
                }
            },
            "INVALID_ATTRIBUTES",
        ),
        ({"events": {"name": "x"}}, "INVALID_EVENTS"),
        ({"events": ["x"]}, "INVALID_EVENTS"),
        ({"events": [{"attributes": {}}]}, "INVALID_EVENTS"),
        ({"events": [{"name": "x", "attributes": [1]}]}, "INVALID_EVENTS"),
        ({"events": [{"name": "x", "attributes": {"n": _nested(33)}}]}, "INVALID_ATTRIBUTES"),
    ],
)
def test_broken_span_rejected_others_accepted(fields: dict[str, Any], code: str) -> None:
    """A span that breaks a rule is rejected with a coded reason; its neighbours still go in."""
    body = spans_body(span(spanId="1" * 16), span(**fields), span(spanId="2" * 16))
    result = proto_json.convert_spans(body)
    assert result.accepted == 2
    assert [e.index for e in result.errors] == [1]
    assert result.errors[0].reason.startswith(f"{code}: ")


@pytest.mark.parametrize("junk", [None, 1, "span", [], True])
def test_span_that_is_not_an_object_is_rejected(junk: object) -> None:
    """A non-object entry in the spans array is one rejected span."""
    result = proto_json.convert_spans(orjson.dumps({"spans": [junk, span()]}))
    assert result.accepted == 1 and result.errors[0].reason.startswith("INVALID_SPAN: ")


@pytest.mark.parametrize("root", ["", None, "0000000000000000"])
def test_root_span_parent_forms(root: str | None) -> None:
    """Empty, null and all-zero parentSpanId all mean a root span: no parent in output."""
    body = orjson.dumps({"spans": [{**span(), "parentSpanId": root}]})
    assert "parentSpanId" not in only_span(proto_json.convert_spans(body).request)


def test_unknown_fields_reported_once_each_in_order() -> None:
    """Unknown fields at every level are dropped and listed once, in first-seen order."""
    body = spans_body(
        span(foo=1, events=[{"name": "e", "bar": 2, "timestamp": 3}]),
        span(spanId="1" * 16, foo=2, baz=3),
        meta={"sdk": "py"},
    )
    result = proto_json.convert_spans(body)
    assert result.ignored == (
        "meta",
        "spans[].foo",
        "spans[].events[].bar",
        "spans[].events[].timestamp",
        "spans[].baz",
    )
    assert "foo" not in only_span(proto_json.convert_spans(spans_body(span(foo=1))).request)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"", "SERIALIZATION_ERROR"),
        (b"{", "SERIALIZATION_ERROR"),
        (b"\xff\xfe", "SERIALIZATION_ERROR"),
        (b"NaN", "SERIALIZATION_ERROR"),
        (b"[]", "VALIDATION_ERROR"),
        (b'"spans"', "VALIDATION_ERROR"),
        (b"{}", "VALIDATION_ERROR"),
        (b'{"spans": {}}', "VALIDATION_ERROR"),
        (b'{"spans": null}', "VALIDATION_ERROR"),
    ],
)
def test_envelope_errors(body: bytes, code: str) -> None:
    """Bodies that are not JSON, or not `{"spans": [...]}`, are whole-request errors."""
    with pytest.raises(EnvelopeError) as caught:
        proto_json.convert_spans(body)
    assert caught.value.code == code


def test_empty_spans_array_is_valid() -> None:
    """An empty spans array accepts nothing and rejects nothing."""
    result = proto_json.convert_spans(b'{"spans": []}')
    assert (result.accepted, result.rejected, result.request) == (0, 0, {"resourceSpans": []})


def test_too_many_spans_refuses_whole_request() -> None:
    """Over the span cap the whole request is refused and nothing is converted."""
    body = spans_body(*[span(spanId=f"{i + 1:016x}") for i in range(4)])
    result = proto_json.convert_spans(body, Limits(max_spans=3))
    assert result.refusal == "TOO_MANY_SPANS" and result.accepted == 0
    assert result.span_count == 4 and result.request == {"resourceSpans": []}
    assert proto_json.convert_spans(body, Limits(max_spans=4)).accepted == 4


def test_too_many_attributes_counts_span_and_event_pairs() -> None:
    """Span and event attribute pairs of the whole request count toward the cap."""
    one = span(attributes={"a": 1, "b": 2}, events=[{"name": "e", "attributes": {"c": 3}}])
    body = spans_body(one, {**one, "spanId": "1" * 16})
    assert proto_json.convert_spans(body, Limits(max_attributes=6)).attribute_count == 6
    result = proto_json.convert_spans(body, Limits(max_attributes=5))
    assert result.refusal == "TOO_MANY_ATTRIBUTES" and result.accepted == 0


def test_rejected_spans_still_count_toward_attribute_cap() -> None:
    """Attributes of a span rejected for another reason still count (they were sent)."""
    body = spans_body(span(traceId="bad", attributes={"a": 1, "b": 2}), span(spanId="1" * 16))
    result = proto_json.convert_spans(body, Limits(max_attributes=1))
    assert result.refusal == "TOO_MANY_ATTRIBUTES"


def test_default_limits_are_the_specs() -> None:
    """The defaults are the documented 10,000 spans and 24,000 attribute pairs."""
    assert Limits() == Limits(max_spans=10_000, max_attributes=24_000)


@pytest.mark.parametrize(
    ("literal", "stored"),
    [
        (b"9223372036854775807", {"intValue": "9223372036854775807"}),
        (b"-9223372036854775808", {"intValue": "-9223372036854775808"}),
        (b"9223372036854775808", {"doubleValue": 9223372036854775808.0}),
        (b"18446744073709551615", {"doubleValue": 18446744073709551615.0}),
        (b"18446744073709551616", {"doubleValue": 18446744073709551616.0}),
        (b"-9223372036854775809", {"doubleValue": -9223372036854775809.0}),
    ],
)
def test_an_integer_no_int_value_holds_is_a_double(literal: bytes, stored: dict[str, Any]) -> None:
    """An attribute's integer within 64 bits signed is an intValue; any past them a
    double, as the parser makes one past 64 bits unsigned (none refused, none kept)."""
    body = spans_body(span()).replace(b"}]}", b', "attributes": {"n": ' + literal + b"}}]}")
    conversion = proto_json.convert_spans(body)
    assert conversion.errors == ()
    assert only_span(conversion.request)["attributes"] == [{"key": "n", "value": stored}]
