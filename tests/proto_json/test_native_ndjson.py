"""NDJSON /v1/spans/batch bodies."""

from __future__ import annotations

import orjson

import proto_json
from proto_json import Limits
from tests.proto_json.spans import span


def line(**fields: object) -> bytes:
    return orjson.dumps(span(**fields))


def test_one_span_per_line_with_blank_lines_and_crlf() -> None:
    """Spans on their own lines convert; blank lines and CRLF endings are skipped."""
    body = b"\n".join([line(spanId="1" * 16), b"", b"   ", line(spanId="2" * 16) + b"\r", b""])
    result = proto_json.convert_ndjson(body)
    assert result.accepted == 2 and result.errors == () and result.span_count == 2


def test_unparseable_line_is_one_rejected_entry_indexed_among_non_blank_lines() -> None:
    """An unparseable line is rejected alone, indexed among non-blank lines, named by number."""
    body = b"\n".join([line(spanId="1" * 16), b"", b"{not json", line(spanId="2" * 16)])
    result = proto_json.convert_ndjson(body)
    assert result.accepted == 2
    assert [(e.index, e.reason) for e in result.errors] == [
        (1, "SERIALIZATION_ERROR: line 3 is not valid JSON")
    ]


def test_invalid_span_and_non_object_lines_rejected() -> None:
    """A valid JSON line that is not a valid span object is rejected with its reason."""
    body = b"\n".join([line(traceId="nope"), b"[1, 2]", line()])
    result = proto_json.convert_ndjson(body)
    assert result.accepted == 1
    assert [e.reason.split(":")[0] for e in result.errors] == ["INVALID_TRACE_ID", "INVALID_SPAN"]


def test_ignored_paths_read_like_spans_route() -> None:
    """Unknown fields are reported as spans[].x, as on /v1/spans whose answer this shares."""
    assert proto_json.convert_ndjson(line(extra=1)).ignored == ("spans[].extra",)


def test_empty_body_accepts_nothing() -> None:
    """An empty body is zero spans, not an error."""
    result = proto_json.convert_ndjson(b"")
    assert (result.accepted, result.rejected) == (0, 0)


def test_caps_apply_to_lines() -> None:
    """The span cap counts non-blank lines; the attribute cap spans the whole body."""
    body = b"\n".join(line(spanId=f"{i + 1:016x}", attributes={"a": i}) for i in range(3))
    assert proto_json.convert_ndjson(body, Limits(max_spans=2)).refusal == "TOO_MANY_SPANS"
    assert (
        proto_json.convert_ndjson(body, Limits(max_attributes=2)).refusal == "TOO_MANY_ATTRIBUTES"
    )
    assert proto_json.convert_ndjson(body, Limits(max_spans=3, max_attributes=3)).accepted == 3


def test_same_span_same_canonical_form_as_spans_route() -> None:
    """A span sent as NDJSON converts to exactly what /v1/spans makes of it."""
    one = span(kind="agent", attributes={"k": "v"}, events=[{"name": "e"}])
    assert (
        proto_json.convert_ndjson(orjson.dumps(one)).request
        == proto_json.convert_spans(orjson.dumps({"spans": [one]})).request
    )
