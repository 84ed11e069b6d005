"""One OTLP/JSON span to its canonical form, following the OTLP spec's JSON rules.

Ids are hex in any case (stored lowercase), enums are integers (their proto names are
accepted too, as protobuf's own JSON parser does), 64-bit integers may be JSON numbers
or decimal strings, and unknown members are ignored at every level.
"""

from __future__ import annotations

from typing import Any

from proto_json import ids
from proto_json.errors import SpanRejected
from proto_json.timestamps import MAX_UNIX_NANO
from proto_json.values import json_integer, otlp_key_values

_SPAN_KINDS = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
_STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_UINT32_MAX = 2**32 - 1


def unsigned(raw: object, field: str, maximum: int, code: str = "VALIDATION_ERROR") -> int:
    """An unsigned integer given as a JSON number or a decimal string (absent is 0)."""
    if raw is None:
        return 0
    number = json_integer(raw)
    if number is None:
        raise SpanRejected(code, f"{field} must be an unsigned integer")
    if not 0 <= number <= maximum:
        raise SpanRejected(code, f"{field} is out of range")
    return number


def _enum(raw: object, names: dict[str, int], field: str, code: str) -> int:
    if raw is None:
        return 0
    if type(raw) is int and 0 <= raw < len(names):
        return raw
    number = names.get(raw) if type(raw) is str else None
    if number is None:
        raise SpanRejected(code, f"{field} must be one of 0..{len(names) - 1}")
    return number


def _optional_string(raw: object, field: str) -> str:
    if raw is None:
        return ""
    if type(raw) is not str:
        raise SpanRejected("VALIDATION_ERROR", f"{field} must be a string")
    return raw


def _put_counts(out: dict[str, Any], raw: dict[str, Any], fields: tuple[str, ...]) -> None:
    for field in fields:
        number = unsigned(raw.get(field), field, _UINT32_MAX)
        if number:
            out[field] = number


def _attributes_into(out: dict[str, Any], raw: dict[str, Any], where: str) -> None:
    attributes = otlp_key_values(raw.get("attributes"), where)
    if attributes:
        out["attributes"] = attributes
    _put_counts(out, raw, ("droppedAttributesCount",))


def _objects(raw: object, field: str, code: str) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if type(raw) is not list or any(type(item) is not dict for item in raw):
        raise SpanRejected(code, f"{field} must be an array of objects")
    return raw


def _event(raw: dict[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    time = unsigned(
        raw.get("timeUnixNano"), f"{where}.timeUnixNano", MAX_UNIX_NANO, "INVALID_EVENTS"
    )
    if time:
        out["timeUnixNano"] = str(time)
    out["name"] = _optional_string(raw.get("name"), f"{where}.name")
    _attributes_into(out, raw, f"{where}.attributes")
    return out


def _link(raw: dict[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": ids.trace_id(raw.get("traceId"), "INVALID_LINKS", f"{where}.traceId"),
        "spanId": ids.span_id(raw.get("spanId"), "INVALID_LINKS", f"{where}.spanId"),
    }
    trace_state = _optional_string(raw.get("traceState"), f"{where}.traceState")
    if trace_state:
        out["traceState"] = trace_state
    _attributes_into(out, raw, f"{where}.attributes")
    flags = unsigned(raw.get("flags"), f"{where}.flags", _UINT32_MAX, "INVALID_LINKS")
    if flags:
        out["flags"] = flags
    return out


def _status(raw: object) -> dict[str, Any]:
    if raw is None:
        return {"code": 0}
    if type(raw) is not dict:
        raise SpanRejected("INVALID_STATUS", "status must be an object")
    status: dict[str, Any] = {
        "code": _enum(raw.get("code"), _STATUS_CODES, "status.code", "INVALID_STATUS")
    }
    message = _optional_string(raw.get("message"), "status.message")
    if message:
        status["message"] = message
    return status


def _identity(raw: dict[str, Any], span: dict[str, Any]) -> None:
    trace_state = _optional_string(raw.get("traceState"), "traceState")
    if trace_state:
        span["traceState"] = trace_state
    parent = ids.parent_span_id(raw.get("parentSpanId"))
    if parent is not None:
        span["parentSpanId"] = parent
    flags = unsigned(raw.get("flags"), "flags", _UINT32_MAX)
    if flags:
        span["flags"] = flags


def _times(raw: dict[str, Any], span: dict[str, Any]) -> None:
    start = unsigned(
        raw.get("startTimeUnixNano"), "startTimeUnixNano", MAX_UNIX_NANO, "INVALID_TIMESTAMP"
    )
    if not start:
        raise SpanRejected("INVALID_TIMESTAMP", "startTimeUnixNano is required")
    span["startTimeUnixNano"] = str(start)
    end = unsigned(
        raw.get("endTimeUnixNano"), "endTimeUnixNano", MAX_UNIX_NANO, "INVALID_TIMESTAMP"
    )
    if end:
        span["endTimeUnixNano"] = str(end)


def convert_span(raw: object) -> dict[str, Any]:
    """The canonical span for an OTLP/JSON one; SpanRejected with the first broken rule.

    Members appear in the same order as in a converted native span, so the same span
    has the same canonical bytes whichever route carried it.
    """
    if type(raw) is not dict:
        raise SpanRejected("INVALID_SPAN", "span must be an object")
    span: dict[str, Any] = {
        "traceId": ids.trace_id(raw.get("traceId")),
        "spanId": ids.span_id(raw.get("spanId")),
    }
    _identity(raw, span)
    name = raw.get("name")
    if type(name) is not str or not name:
        raise SpanRejected("INVALID_NAME", "name must be a non-empty string")
    span["name"] = name
    span["kind"] = _enum(raw.get("kind"), _SPAN_KINDS, "kind", "INVALID_KIND")
    _times(raw, span)
    _attributes_into(span, raw, "attributes")
    raw_events = _objects(raw.get("events"), "events", "INVALID_EVENTS")
    events = [_event(event, f"events[{i}]") for i, event in enumerate(raw_events)]
    if events:
        span["events"] = events
    _put_counts(span, raw, ("droppedEventsCount",))
    raw_links = _objects(raw.get("links"), "links", "INVALID_LINKS")
    links = [_link(link, f"links[{i}]") for i, link in enumerate(raw_links)]
    if links:
        span["links"] = links
    _put_counts(span, raw, ("droppedLinksCount",))
    span["status"] = _status(raw.get("status"))
    return span


def attribute_pairs(raw: object) -> int:
    """Span and event attribute pairs of an OTLP span, whatever else is wrong with it."""
    if type(raw) is not dict:
        return 0
    attributes = raw.get("attributes")
    count = len(attributes) if type(attributes) is list else 0
    events = raw.get("events")
    if type(events) is list:
        for event in events:
            if type(event) is dict:
                event_attributes = event.get("attributes")
                if type(event_attributes) is list:
                    count += len(event_attributes)
    return count
