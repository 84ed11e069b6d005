"""Every body the gateway answers with (docs/api.md gives the shapes), and the one renderer."""

from __future__ import annotations

from typing import Any

from quart import Response

from collector.errors import GatewayError
from proto_json import Conversion
from service.web import json_response

MAX_IGNORED_FIELDS = 10
MAX_OTLP_MESSAGE_ERRORS = 10


def _ignored(conversion: Conversion, body: dict[str, Any]) -> None:
    if conversion.ignored:
        body["ignored"] = {
            "count": len(conversion.ignored),
            "fields": list(conversion.ignored[:MAX_IGNORED_FIELDS]),
        }


def spans_answer(conversion: Conversion) -> dict[str, Any]:
    """/v1/spans and /v1/spans/batch: accepted, rejected, errors?, ignored?."""
    body: dict[str, Any] = {"accepted": conversion.accepted, "rejected": conversion.rejected}
    if conversion.errors:
        body["errors"] = [{"index": e.index, "error": e.reason} for e in conversion.errors]
    _ignored(conversion, body)
    return body


def traces_answer(conversion: Conversion) -> dict[str, Any]:
    """Native /v1/traces: tracesAccepted, spansAccepted, spansRejected, errors?, ignored?."""
    body: dict[str, Any] = {
        "tracesAccepted": conversion.traces_accepted,
        "spansAccepted": conversion.accepted,
        "spansRejected": conversion.rejected,
    }
    if conversion.trace_errors:
        body["errors"] = [
            {
                "traceId": trace.trace_id,
                "spanErrors": [{"index": e.index, "error": e.reason} for e in trace.span_errors],
            }
            for trace in conversion.trace_errors
        ]
    _ignored(conversion, body)
    return body


def otlp_answer(conversion: Conversion) -> dict[str, Any]:
    """OTLP form: partialSuccess with rejectedSpans and an errorMessage summarising them."""
    errors = conversion.errors
    message = ""
    if errors:
        shown = "; ".join(f"span {e.index}: {e.reason}" for e in errors[:MAX_OTLP_MESSAGE_ERRORS])
        more = len(errors) - MAX_OTLP_MESSAGE_ERRORS
        message = f"{len(errors)} spans rejected: {shown}" + (
            f" (and {more} more)" if more > 0 else ""
        )
    elif conversion.ignored and conversion.span_count == 0:  # OTLP's warning: no span
        message = "no span was found in the body; members ignored: " + ", ".join(conversion.ignored)
    return otlp_body(len(errors), message)


def otlp_body(rejected: int, message: str) -> dict[str, Any]:
    """The OTLP ExportTraceServiceResponse body."""
    return {"partialSuccess": {"rejectedSpans": rejected, "errorMessage": message}}


def render_error(error: GatewayError) -> Response:
    """The one place a GatewayError becomes a response.

    Body failures (decode, parse, size) on an OTLP-form request get an OTLP body; a
    bare error gets no error object; everything else gets the documented `error` object,
    with `retry_after` and the Retry-After header where docs/api.md gives them.
    """
    headers: dict[str, str] = {}
    if error.retry_after is not None:
        headers["Retry-After"] = str(error.retry_after)
    if error.body_error and error.otlp_form:
        return json_response(otlp_body(0, f"{error.code}: {error.message}"), error.status, headers)
    if error.bare:
        return Response(b"", status=error.status, headers=headers)
    payload: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.retry_after is not None:
        payload["retry_after"] = error.retry_after
    return json_response({"error": payload}, error.status, headers)
