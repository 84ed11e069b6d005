"""Property tests: proto_json's invariants over generated spans and junk."""

from __future__ import annotations

import string
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import proto_json
from proto_json import EnvelopeError
from tests.proto_json import protobuf
from tests.proto_json.spans import only_span

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    INT64,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ATTRIBUTES = st.dictionaries(st.text(max_size=12), JSON_VALUES, max_size=6)


@st.composite
def hex_id(draw: st.DrawFn, length: int) -> str:
    value = draw(st.integers(min_value=1, max_value=16**length - 1))
    text = f"{value:0{length}x}"
    return text.upper() if draw(st.booleans()) else text


@st.composite
def iso_time(draw: st.DrawFn) -> tuple[str, int]:
    """An ISO 8601 string and its exact Unix nanoseconds."""
    seconds = draw(st.integers(min_value=86400, max_value=(2**63 - 1) // 10**9 - 86400))
    digits = draw(st.integers(min_value=0, max_value=9))
    fraction = draw(st.integers(min_value=0, max_value=10**digits - 1)) if digits else 0
    offset_minutes = draw(st.integers(min_value=-23 * 60, max_value=23 * 60))
    local = datetime.fromtimestamp(seconds, UTC) + timedelta(minutes=offset_minutes)
    text = local.strftime("%Y-%m-%dT%H:%M:%S")
    if digits:
        text += f".{fraction:0{digits}d}"
    if offset_minutes or draw(st.booleans()):
        sign = "+" if offset_minutes >= 0 else "-"
        hours, minutes = divmod(abs(offset_minutes), 60)
        text += f"{sign}{hours:02d}:{minutes:02d}"
    else:
        text += "Z"
    return text, seconds * 10**9 + fraction * 10 ** (9 - digits)


@st.composite
def native_span(draw: st.DrawFn) -> dict[str, Any]:
    start, _ = draw(iso_time())
    span: dict[str, Any] = {
        "traceId": draw(hex_id(32)),
        "spanId": draw(hex_id(16)),
        "name": draw(st.text(min_size=1, max_size=20)),
        "startTime": start,
    }
    optional = {
        "parentSpanId": hex_id(16),
        "kind": st.sampled_from(proto_json.SDK_KINDS),
        "endTime": iso_time().map(lambda pair: pair[0]),
        "status": st.sampled_from(["unset", "ok", "error"]),
        "attributes": ATTRIBUTES,
        "events": st.lists(
            st.fixed_dictionaries(
                {"name": st.text(max_size=8)}, optional={"attributes": ATTRIBUTES}
            ),
            max_size=3,
        ),
    }
    for field, strategy in optional.items():
        if draw(st.booleans()):
            span[field] = draw(strategy)
    return span


@settings(max_examples=300, deadline=None)
@given(native_span())
def test_valid_native_span_converts_and_parses_as_protobuf(span: dict[str, Any]) -> None:
    """Any valid native span is accepted and its canonical form is a valid protobuf request."""
    result = proto_json.convert_spans(orjson.dumps({"spans": [span]}))
    assert result.errors == () and result.accepted == 1
    message = protobuf.parse(result.request)
    parsed = message.resource_spans[0].scope_spans[0].spans[0]
    assert parsed.trace_id.hex() == span["traceId"].lower()
    assert parsed.span_id.hex() == span["spanId"].lower()


@settings(max_examples=200, deadline=None)
@given(native_span())
def test_every_route_yields_the_same_canonical_span_and_hash(span: dict[str, Any]) -> None:
    """/v1/spans, NDJSON, native /v1/traces and OTLP/JSON give one canonical span and hash."""
    via_spans = only_span(proto_json.convert_spans(orjson.dumps({"spans": [span]})).request)
    via_ndjson = only_span(proto_json.convert_ndjson(orjson.dumps(span)).request)
    trace = {"traceId": span["traceId"], "spans": [span]}
    via_traces = only_span(proto_json.convert_traces(orjson.dumps({"traces": [trace]})).request)
    otlp = {"resourceSpans": [{"scopeSpans": [{"spans": [via_spans]}]}]}
    via_otlp = only_span(proto_json.convert_otlp(orjson.dumps(otlp)).request)
    assert via_spans == via_ndjson == via_traces == via_otlp
    assert orjson.dumps(via_spans) == orjson.dumps(via_otlp)
    hashes = {
        proto_json.span_content_hash(s) for s in (via_spans, via_ndjson, via_traces, via_otlp)
    }
    assert len(hashes) == 1


@settings(max_examples=300, deadline=None)
@given(iso_time())
def test_timestamps_round_trip_to_the_nanosecond(pair: tuple[str, int]) -> None:
    """Every generated ISO 8601 time (offsets, 0-9 fraction digits) gives its exact nanos."""
    text, nanos = pair
    body = orjson.dumps(
        {"spans": [{"traceId": "1" * 32, "spanId": "1" * 16, "name": "n", "startTime": text}]}
    )
    assert only_span(proto_json.convert_spans(body).request)["startTimeUnixNano"] == str(nanos)


ENTRY_POINTS = (
    proto_json.convert_spans,
    proto_json.convert_ndjson,
    proto_json.convert_traces,
    proto_json.convert_otlp,
)


def _never_raises_but_envelope(body: bytes) -> None:
    for convert in ENTRY_POINTS:
        try:
            result = convert(body)
        except EnvelopeError as e:
            assert e.code in ("SERIALIZATION_ERROR", "VALIDATION_ERROR")
        else:
            assert result.accepted + result.rejected == result.span_count or result.refusal
            orjson.dumps(result.request)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_random_bytes_never_raise_other_errors(body: bytes) -> None:
    """Arbitrary bytes give a result or an EnvelopeError, on every entry point."""
    _never_raises_but_envelope(body)


KEYS = st.sampled_from(
    [
        "spans",
        "traces",
        "resourceSpans",
        "scopeSpans",
        "traceId",
        "spanId",
        "parentSpanId",
        "name",
        "startTime",
        "endTime",
        "kind",
        "status",
        "attributes",
        "events",
        "links",
        "startTimeUnixNano",
        "value",
        "key",
        "stringValue",
        "intValue",
        "doubleValue",
        "bytesValue",
        "arrayValue",
        "kvlistValue",
        "values",
        "code",
        "sessionId",
        "resource",
        "scope",
        "flags",
        "timeUnixNano",
    ]
) | st.text(string.ascii_letters, max_size=5)
SHAPED = st.recursive(
    SCALARS | hex_id(32) | hex_id(16) | iso_time().map(lambda pair: pair[0]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=6),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SHAPED)
def test_span_shaped_junk_never_raises_other_errors(document: Any) -> None:
    """JSON built from the formats' own keys, in wrong shapes, never raises anything else."""
    _never_raises_but_envelope(orjson.dumps(document))
    for wrapper in (
        {"spans": [document]},
        {"traces": [{"traceId": "1" * 32, "spans": [document]}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": [document]}]}]},
    ):
        _never_raises_but_envelope(orjson.dumps(wrapper))
