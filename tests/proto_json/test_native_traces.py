"""Native /v1/traces bodies: traces of spans, sessionId, per-trace errors."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import proto_json
from proto_json import EnvelopeError, Limits, SpanError, TraceErrors
from tests.proto_json.spans import TRACE_ID, only_span, span

OTHER_TRACE = "0123456789abcdef0123456789abcdef"


def traces(*items: dict[str, Any], **top: Any) -> bytes:
    return orjson.dumps({"traces": list(items), **top})


def test_session_id_becomes_session_attribute() -> None:
    """A trace's sessionId is the session.id attribute of each of its spans."""
    body = traces({"traceId": TRACE_ID, "sessionId": "s-1", "spans": [span()]})
    result = proto_json.convert_traces(body)
    assert only_span(result.request)["attributes"] == [
        {"key": "session.id", "value": {"stringValue": "s-1"}}
    ]
    assert (result.traces_accepted, result.accepted) == (1, 1)


def test_span_own_session_attribute_wins() -> None:
    """A span that already carries session.id keeps its own value."""
    body = traces(
        {"traceId": TRACE_ID, "sessionId": "s-1", "spans": [span(attributes={"session.id": "x"})]}
    )
    attributes = only_span(proto_json.convert_traces(body).request)["attributes"]
    assert attributes == [{"key": "session.id", "value": {"stringValue": "x"}}]


def test_span_may_omit_trace_id_but_not_contradict_it() -> None:
    """Inside a trace a span inherits the trace's id; a different id rejects the span."""
    body = traces(
        {
            "traceId": TRACE_ID.upper(),
            "spans": [span(traceId=None), span(spanId="1" * 16, traceId=OTHER_TRACE)],
        }
    )
    result = proto_json.convert_traces(body)
    assert only_span(result.request)["traceId"] == TRACE_ID
    assert result.trace_errors == (
        TraceErrors(
            TRACE_ID, (SpanError(1, "INVALID_TRACE_ID: span traceId differs from its trace's"),)
        ),
    )


def test_errors_grouped_per_trace_with_flat_indexes_too() -> None:
    """Errors are grouped per trace (index within trace); flat errors index the whole request."""
    body = traces(
        {"traceId": TRACE_ID, "spans": [span(), span(spanId="1" * 16, name="")]},
        {"traceId": "bad", "spans": [span(), span()]},
        {"traceId": OTHER_TRACE, "spans": [span(traceId=None)]},
    )
    result = proto_json.convert_traces(body)
    assert (result.accepted, result.rejected, result.traces_accepted) == (2, 3, 2)
    assert [(t.trace_id, [e.index for e in t.span_errors]) for t in result.trace_errors] == [
        (TRACE_ID, [1]),
        ("bad", [0, 1]),
    ]
    assert [e.index for e in result.errors] == [1, 2, 3]
    assert result.trace_errors[1].span_errors[0].reason.startswith("INVALID_TRACE_ID: ")


def test_non_string_session_id_rejects_the_trace_spans() -> None:
    """A sessionId that is not a string rejects every span of its trace, coded."""
    body = traces({"traceId": TRACE_ID, "sessionId": 5, "spans": [span()]})
    result = proto_json.convert_traces(body)
    assert result.accepted == 0
    assert result.errors[0].reason.startswith("INVALID_SESSION_ID: ")


def test_unknown_fields_at_each_level() -> None:
    """Unknown top-level, trace and span fields are reported with their paths."""
    body = traces({"traceId": TRACE_ID, "spans": [span(x=1)], "userId": "u"}, meta=1)
    assert proto_json.convert_traces(body).ignored == (
        "meta",
        "traces[].userId",
        "traces[].spans[].x",
    )


@pytest.mark.parametrize(
    "body",
    [
        b"{}",
        b'{"traces": {}}',
        b'{"traces": [1]}',
        b'{"traces": [{"traceId": "x"}]}',
        b'{"traces": [{"spans": {}}]}',
    ],
)
def test_envelope_errors(body: bytes) -> None:
    """A traces array or trace objects of the wrong shape are VALIDATION_ERROR."""
    with pytest.raises(EnvelopeError) as caught:
        proto_json.convert_traces(body)
    assert caught.value.code == "VALIDATION_ERROR"


def test_caps_cover_all_traces() -> None:
    """Span and attribute caps count across all traces of the request."""
    body = traces(
        {"traceId": TRACE_ID, "spans": [span(attributes={"a": 1})]},
        {"traceId": "bad", "spans": [span(attributes={"b": 1}), span(attributes={"c": 1})]},
    )
    assert proto_json.convert_traces(body, Limits(max_spans=2)).refusal == "TOO_MANY_SPANS"
    assert (
        proto_json.convert_traces(body, Limits(max_attributes=2)).refusal == "TOO_MANY_ATTRIBUTES"
    )
    assert proto_json.convert_traces(body, Limits(max_spans=3, max_attributes=3)).accepted == 1


def test_detector() -> None:
    """resourceSpans (or {}) is OTLP; traces, or anything else, is native."""
    assert proto_json.traces_format({"resourceSpans": []}) == "otlp"
    assert proto_json.traces_format({}) == "otlp"
    assert proto_json.traces_format({"traces": []}) == "native"
    assert proto_json.traces_format({"spans": []}) == "native"
    assert proto_json.traces_format({"resourceSpans": [], "traces": []}) == "otlp"
