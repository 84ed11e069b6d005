"""Trace and span ids: hex of a fixed length, stored lowercase, never all zeros."""

from __future__ import annotations

import re

from proto_json.errors import SpanRejected

_HEX32 = re.compile(r"[0-9a-fA-F]{32}")
_HEX16 = re.compile(r"[0-9a-fA-F]{16}")
# Already-canonical ids are the common case: matching them first saves a .lower() copy.
_LOWER32 = re.compile(r"[0-9a-f]{32}")
_LOWER16 = re.compile(r"[0-9a-f]{16}")
_ZERO32 = "0" * 32
_ZERO16 = "0" * 16


def trace_id(value: object, code: str = "INVALID_TRACE_ID", field: str = "traceId") -> str:
    """The lowercase form of a 32-hex-character trace id."""
    if type(value) is str:
        if _LOWER32.fullmatch(value) is None:
            if _HEX32.fullmatch(value) is None:
                raise SpanRejected(code, f"{field} must be 32 hex characters")
            value = value.lower()
        if value != _ZERO32:
            return value
        raise SpanRejected(code, f"{field} must not be all zeros")
    raise SpanRejected(code, f"{field} must be 32 hex characters")


def span_id(value: object, code: str = "INVALID_SPAN_ID", field: str = "spanId") -> str:
    """The lowercase form of a 16-hex-character span id."""
    if type(value) is str:
        if _LOWER16.fullmatch(value) is None:
            if _HEX16.fullmatch(value) is None:
                raise SpanRejected(code, f"{field} must be 16 hex characters")
            value = value.lower()
        if value != _ZERO16:
            return value
        raise SpanRejected(code, f"{field} must not be all zeros")
    raise SpanRejected(code, f"{field} must be 16 hex characters")


def parent_span_id(value: object) -> str | None:
    """The parent id, or None for a root span.

    A root is written as an absent, null or empty parentSpanId; some clients write the
    invalid all-zero span id instead, which means the same and is read as a root too.
    """
    if value is None or value == "" or value == _ZERO16:
        return None
    if type(value) is str and _LOWER16.fullmatch(value) is not None:
        return value
    if type(value) is not str or _HEX16.fullmatch(value) is None:
        raise SpanRejected("INVALID_PARENT_SPAN_ID", "parentSpanId must be 16 hex characters")
    return value.lower()
