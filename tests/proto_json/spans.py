"""Builders for native spans and bodies used across the proto_json tests."""

from __future__ import annotations

from typing import Any

import orjson

TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"


def span(**fields: Any) -> dict[str, Any]:
    """A valid native span; keyword arguments override or add fields (None removes one)."""
    base: dict[str, Any] = {
        "traceId": TRACE_ID,
        "spanId": SPAN_ID,
        "name": "llm call",
        "startTime": "2026-11-22T10:00:00.123456789Z",
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def spans_body(*spans: dict[str, Any], **top: Any) -> bytes:
    """A /v1/spans body."""
    return orjson.dumps({"spans": list(spans), **top})


def otlp_body(*spans: dict[str, Any], resource: dict[str, Any] | None = None) -> bytes:
    """An OTLP/JSON body with one resource and one scope."""
    scope_spans = [{"scope": {"name": "test"}, "spans": list(spans)}]
    resource_spans = [{"resource": resource or {}, "scopeSpans": scope_spans}]
    return orjson.dumps({"resourceSpans": resource_spans})


def otlp_span(**fields: Any) -> dict[str, Any]:
    """A valid OTLP/JSON span; keyword arguments override or add fields (None removes one)."""
    base: dict[str, Any] = {
        "traceId": TRACE_ID,
        "spanId": SPAN_ID,
        "name": "llm call",
        "startTimeUnixNano": "1795341600123456789",
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def only_span(request: dict[str, Any]) -> dict[str, Any]:
    """The single span of a canonical request."""
    [resource_spans] = request["resourceSpans"]
    [scope_spans] = resource_spans["scopeSpans"]
    [the_span] = scope_spans["spans"]
    return the_span  # type: ignore[no-any-return]
