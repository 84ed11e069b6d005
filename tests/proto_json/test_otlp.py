"""OTLP/JSON bodies, by the OTLP spec's JSON rules."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest

import proto_json
from proto_json import EnvelopeError, Limits
from tests.proto_json import protobuf
from tests.proto_json.spans import SPAN_ID, TRACE_ID, only_span, otlp_body, otlp_span

EXAMPLES = Path(__file__).parents[2] / "examples"


def convert_one(**fields: Any) -> proto_json.Conversion:
    return proto_json.convert_otlp(otlp_body(otlp_span(**fields)))


def value_of(raw: dict[str, Any]) -> dict[str, Any]:
    converted = only_span(convert_one(attributes=[{"key": "k", "value": raw}]).request)
    return converted["attributes"][0]["value"]  # type: ignore[no-any-return]


def test_golden_example_from_opentelemetry_proto() -> None:
    """The opentelemetry-proto example (uppercase hex ids, kind 2, numeric nanos) converts."""
    result = proto_json.convert_otlp((EXAMPLES / "otlp_trace_example.json").read_bytes())
    assert result.accepted == 1 and result.errors == ()
    [resource_spans] = result.request["resourceSpans"]
    assert resource_spans["resource"] == {
        "attributes": [{"key": "service.name", "value": {"stringValue": "my.service"}}]
    }
    scope = resource_spans["scopeSpans"][0]["scope"]
    assert (scope["name"], scope["version"]) == ("my.library", "1.0.0")
    converted = only_span(result.request)
    assert converted == {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "parentSpanId": "eee19b7ec3c1b173",
        "name": "I'm a server span",
        "kind": 2,
        "startTimeUnixNano": "1544712660000000000",
        "endTimeUnixNano": "1544712661000000000",
        "attributes": [{"key": "my.span.attr", "value": {"stringValue": "some value"}}],
        "status": {"code": 0},
    }
    message = protobuf.parse(result.request)
    assert message.resource_spans[0].scope_spans[0].spans[0].span_id.hex() == "eee19b7ec3c1b174"


def test_all_members_survive_and_parse_as_protobuf() -> None:
    """Links, trace state, flags, dropped counts, event times and status message are kept."""
    result = convert_one(
        traceState="k=v",
        flags=257,
        kind="SPAN_KIND_CLIENT",
        endTimeUnixNano=1795341601000000000,
        droppedAttributesCount=1,
        events=[
            {
                "timeUnixNano": "1795341600500000000",
                "name": "e",
                "attributes": [{"key": "a", "value": {"intValue": 3}}],
                "droppedAttributesCount": 2,
            }
        ],
        droppedEventsCount="3",
        links=[
            {
                "traceId": TRACE_ID.upper(),
                "spanId": SPAN_ID,
                "traceState": "x=y",
                "attributes": [],
                "flags": 1,
            }
        ],
        droppedLinksCount=4,
        status={"code": "STATUS_CODE_ERROR", "message": "boom"},
    )
    converted = only_span(result.request)
    assert converted["traceState"] == "k=v" and converted["flags"] == 257
    assert converted["kind"] == 3
    assert converted["events"] == [
        {
            "timeUnixNano": "1795341600500000000",
            "name": "e",
            "attributes": [{"key": "a", "value": {"intValue": "3"}}],
            "droppedAttributesCount": 2,
        }
    ]
    assert converted["links"] == [
        {"traceId": TRACE_ID, "spanId": SPAN_ID, "traceState": "x=y", "flags": 1}
    ]
    assert (
        converted["droppedAttributesCount"],
        converted["droppedEventsCount"],
        converted["droppedLinksCount"],
    ) == (1, 3, 4)
    assert converted["status"] == {"code": 2, "message": "boom"}
    message = protobuf.parse(result.request)
    assert message.resource_spans[0].scope_spans[0].spans[0].links[0].trace_id.hex() == TRACE_ID


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ({"stringValue": "s"}, {"stringValue": "s"}),
        ({"boolValue": False}, {"boolValue": False}),
        ({"intValue": "-9223372036854775808"}, {"intValue": "-9223372036854775808"}),
        ({"intValue": 42}, {"intValue": "42"}),
        ({"doubleValue": 1}, {"doubleValue": 1.0}),
        ({"doubleValue": "2.5"}, {"doubleValue": 2.5}),
        ({"doubleValue": "NaN"}, {"doubleValue": "NaN"}),
        ({"doubleValue": "-Infinity"}, {"doubleValue": "-Infinity"}),
        ({"bytesValue": "AQI"}, {"bytesValue": "AQI="}),
        ({"bytesValue": "-_8="}, {"bytesValue": "+/8="}),
        ({"arrayValue": {}}, {"arrayValue": {"values": []}}),
        (
            {"arrayValue": {"values": [{"intValue": "1"}, {}]}},
            {"arrayValue": {"values": [{"intValue": "1"}, {}]}},
        ),
        (
            {"kvlistValue": {"values": [{"key": "a", "value": {"boolValue": True}}]}},
            {"kvlistValue": {"values": [{"key": "a", "value": {"boolValue": True}}]}},
        ),
        ({}, {}),
        ({"stringValue": "s", "unknownFutureField": 1}, {"stringValue": "s"}),
    ],
)
def test_any_value_canonical_encodings(raw: dict[str, Any], canonical: dict[str, Any]) -> None:
    """AnyValue members are read leniently and written in one canonical encoding."""
    assert value_of(raw) == canonical
    protobuf.parse(convert_one(attributes=[{"key": "k", "value": raw}]).request)


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"traceId": "W47/95gDgQPSabYzgT/GDA=="}, "INVALID_TRACE_ID"),  # base64, not hex
        ({"traceId": "5b8e"}, "INVALID_TRACE_ID"),
        ({"spanId": "7uGbfsPBsXQ="}, "INVALID_SPAN_ID"),
        ({"parentSpanId": "zz"}, "INVALID_PARENT_SPAN_ID"),
        ({"name": ""}, "INVALID_NAME"),
        ({"kind": 9}, "INVALID_KIND"),
        ({"kind": "SERVER"}, "INVALID_KIND"),
        ({"startTimeUnixNano": None}, "INVALID_TIMESTAMP"),
        ({"startTimeUnixNano": "-5"}, "INVALID_TIMESTAMP"),
        ({"startTimeUnixNano": "18446744073709551616"}, "INVALID_TIMESTAMP"),
        ({"startTimeUnixNano": str(2**63)}, "INVALID_TIMESTAMP"),  # no store holds it
        ({"endTimeUnixNano": "soon"}, "INVALID_TIMESTAMP"),
        ({"status": {"code": 3}}, "INVALID_STATUS"),
        ({"status": "ok"}, "INVALID_STATUS"),
        ({"attributes": {"k": "v"}}, "INVALID_ATTRIBUTES"),
        ({"attributes": [{"value": {}}]}, "INVALID_ATTRIBUTES"),
        ({"attributes": [{"key": "k", "value": {"intValue": "1.5"}}]}, "INVALID_ATTRIBUTES"),
        (
            {"attributes": [{"key": "k", "value": {"intValue": "9223372036854775808"}}]},
            "INVALID_ATTRIBUTES",
        ),
        ({"attributes": [{"key": "k", "value": {"doubleValue": "fast"}}]}, "INVALID_ATTRIBUTES"),
        ({"attributes": [{"key": "k", "value": {"bytesValue": "%%%"}}]}, "INVALID_ATTRIBUTES"),
        (
            {"attributes": [{"key": "k", "value": {"stringValue": "a", "intValue": 1}}]},
            "INVALID_ATTRIBUTES",
        ),
        ({"attributes": [{"key": "k", "value": {"boolValue": "true"}}]}, "INVALID_ATTRIBUTES"),
        ({"events": [1]}, "INVALID_EVENTS"),
        ({"events": [{"timeUnixNano": "x"}]}, "INVALID_EVENTS"),
        ({"links": [{"traceId": TRACE_ID}]}, "INVALID_LINKS"),
        ({"flags": -1}, "VALIDATION_ERROR"),
        ({"droppedEventsCount": 2**32}, "VALIDATION_ERROR"),
    ],
)
def test_broken_span_rejected_others_accepted(fields: dict[str, Any], code: str) -> None:
    """A span that breaks an OTLP rule is rejected alone, with a coded reason."""
    body = otlp_body(otlp_span(spanId="1" * 16), otlp_span(**fields), otlp_span(spanId="2" * 16))
    result = proto_json.convert_otlp(body)
    assert result.accepted == 2 and [e.index for e in result.errors] == [1]
    assert result.errors[0].reason.startswith(f"{code}: "), result.errors[0].reason


def test_error_indexes_run_across_resources_and_scopes() -> None:
    """Span error indexes count spans across the whole request in document order."""
    bad = otlp_span(traceId="x")
    body = orjson.dumps(
        {
            "resourceSpans": [
                {"scopeSpans": [{"spans": [otlp_span(), bad]}, {"spans": [bad]}]},
                {"scopeSpans": [{"spans": [bad, otlp_span(spanId="1" * 16)]}]},
            ]
        }
    )
    result = proto_json.convert_otlp(body)
    assert result.accepted == 2 and [e.index for e in result.errors] == [1, 2, 3]
    scopes = [len(r["scopeSpans"]) for r in result.request["resourceSpans"]]
    assert scopes == [1, 1]  # a scope whose spans were all rejected is left out


@pytest.mark.parametrize(
    "body",
    [
        b"{}",
        b'{"resourceSpans": []}',
        b'{"resourceSpans": null}',
        b'{"resourceSpans": [{}]}',
        b'{"resourceSpans": [{"scopeSpans": [{}]}]}',
    ],
)
def test_empty_requests_are_valid(body: bytes) -> None:
    """An empty export request is valid and accepts nothing."""
    result = proto_json.convert_otlp(body)
    assert (result.accepted, result.rejected, result.request) == (0, 0, {"resourceSpans": []})


def test_unknown_fields_ignored_everywhere() -> None:
    """Unknown members at any level are ignored silently (OTLP forward compatibility)."""
    body = orjson.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {"x": 1},
                    "y": 2,
                    "scopeSpans": [
                        {"scope": {"name": "s", "z": 3}, "spans": [otlp_span(future=True)], "w": 4}
                    ],
                }
            ],
            "v": 5,
        }
    )
    result = proto_json.convert_otlp(body)
    assert result.accepted == 1 and result.ignored == ()
    protobuf.parse(result.request)


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'{"resourceSpans": {}}',
        b'{"resourceSpans": [1]}',
        b'{"resourceSpans": [{"scopeSpans": 1}]}',
        b'{"resourceSpans": [{"scopeSpans": [{"spans": 1}]}]}',
        b'{"resourceSpans": [{"resource": []}]}',
        b'{"resourceSpans": [{"resource": {"attributes": [{"key": 1}]}}]}',
        b'{"resourceSpans": [{"scopeSpans": [{"scope": {"name": 5}}]}]}',
        b'{"resourceSpans": [{"schemaUrl": 5}]}',
    ],
)
def test_malformed_envelope_is_validation_error(body: bytes) -> None:
    """A malformed resource, scope or array above the spans fails the whole request,
    its message naming where, and its code said once (the answer puts it first)."""
    with pytest.raises(EnvelopeError) as caught:
        proto_json.convert_otlp(body)
    assert caught.value.code == "VALIDATION_ERROR"
    assert "VALIDATION_ERROR" not in caught.value.message


def test_a_scopes_bad_member_is_named_once() -> None:
    body = b'{"resourceSpans": [{"scopeSpans": [{"scope": {"droppedAttributesCount": -5}}]}]}'
    with pytest.raises(EnvelopeError) as caught:
        proto_json.convert_otlp(body)
    assert caught.value.message == (
        "resourceSpans[0].scopeSpans[0].scope: droppedAttributesCount is out of range"
    )


def test_caps() -> None:
    """Span and attribute caps apply to OTLP bodies (span + event attributes)."""
    one = otlp_span(
        attributes=[{"key": "a", "value": {}}],
        events=[{"name": "e", "attributes": [{"key": "b", "value": {}}]}],
    )
    body = otlp_body(one, {**one, "spanId": "1" * 16})
    assert proto_json.convert_otlp(body, Limits(max_spans=1)).refusal == "TOO_MANY_SPANS"
    assert proto_json.convert_otlp(body, Limits(max_attributes=3)).refusal == "TOO_MANY_ATTRIBUTES"
    assert proto_json.convert_otlp(body, Limits(max_attributes=4)).accepted == 2


def test_nan_double_round_trips_through_orjson() -> None:
    """Non-finite doubles stay JSON strings, so serialising the canonical form loses nothing."""
    value = value_of({"doubleValue": "Infinity"})
    assert orjson.loads(orjson.dumps(value)) == {"doubleValue": "Infinity"}
    parsed = protobuf.parse(convert_one(attributes=[{"key": "k", "value": value}]).request)
    assert math.isinf(
        parsed.resource_spans[0].scope_spans[0].spans[0].attributes[0].value.double_value
    )
