"""The canonical OTLP/JSON envelope, the attributes spangate adds, and the JSON entry parse."""

from __future__ import annotations

from typing import Any

import orjson

from proto_json.errors import EnvelopeError
from proto_json.result import CanonicalRequest

#: Attribute holding the SDK kind of a span whose kind is one of the twelve agent kinds
#: (the OTel kind is INTERNAL then), so the SDK kind survives the trip through OTLP.
KIND_ATTRIBUTE = "spangate.span.kind"
#: OpenTelemetry semantic-convention attribute for a native trace's `sessionId`.
SESSION_ATTRIBUTE = "session.id"


def load_json(data: bytes) -> Any:
    """Parse a JSON body; SERIALIZATION_ERROR when it is not UTF-8 JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise EnvelopeError("SERIALIZATION_ERROR", f"body is not valid JSON: {e}") from e


def load_object(data: bytes) -> dict[str, Any]:
    """Parse a JSON body that must be an object; VALIDATION_ERROR when it is something else."""
    document = load_json(data)
    if type(document) is not dict:
        raise EnvelopeError("VALIDATION_ERROR", "body must be a JSON object")
    return document


def request_of(spans: list[dict[str, Any]]) -> CanonicalRequest:
    """The canonical request holding native spans: one resource, one scope, no attributes."""
    if not spans:
        return {"resourceSpans": []}
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}
