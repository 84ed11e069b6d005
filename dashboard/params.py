"""Query parameters shared by the trace list page, its JSON and the export."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from quart import request

from dashboard.errors import invalid
from dashboard.genai_json import summary_genai_json
from storage.trace_list import Cursor, TraceFilter, TraceSummary

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


def trace_filter(args: Mapping[str, str]) -> TraceFilter:
    """`q` (root span name contains), `status=error`, `session`; 400 for a bad status."""
    status = args.get("status", "").strip()
    if status not in ("", "error"):
        raise invalid("status may only be 'error'")
    return TraceFilter(
        name=args.get("q", "").strip() or None,
        errors_only=status == "error",
        session=args.get("session", "").strip() or None,
    )


def limit_of(args: Mapping[str, str], default: int, maximum: int) -> int:
    """`limit`, 1 to `maximum`; 400 otherwise."""
    raw = args.get("limit", "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= maximum:
        raise invalid(f"limit must be an integer from 1 to {maximum}")
    return int(raw)


def cursor_of(args: Mapping[str, str]) -> Cursor | None:
    """`cursor`, as a previous page gave it; 400 for anything else."""
    raw = args.get("cursor", "").strip()
    if not raw:
        return None
    try:
        return Cursor.decode(raw)
    except ValueError as e:
        raise invalid(str(e)) from e


async def json_object() -> dict[str, Any]:
    """The request's body as a JSON object; 400 VALIDATION_ERROR for anything else."""
    try:
        body = orjson.loads(await request.get_data())
    except orjson.JSONDecodeError as e:
        raise invalid("the body is not JSON") from e
    if not isinstance(body, dict):
        raise invalid("the body must be a JSON object")
    return body


def summary_json(trace: TraceSummary) -> dict[str, Any]:
    """One trace of `GET .../traces`."""
    return {
        "traceId": trace.trace_id,
        "rootName": trace.root_name,
        "startTimeUnixNano": str(trace.start_ns),
        "durationMs": trace.duration_ms,
        "spanCount": trace.span_count,
        "errorCount": trace.error_count,
        "sessionId": trace.session_id,
        **summary_genai_json(trace),
    }
