"""One span of the native wire format (camelCase JSON) to one canonical OTLP/JSON span."""

from __future__ import annotations

from typing import Any

from proto_json import ids
from proto_json.canonical import KIND_ATTRIBUTE, SESSION_ATTRIBUTE
from proto_json.errors import SpanRejected
from proto_json.timestamps import iso8601_to_unix_nano
from proto_json.values import KeyValue, PairPool, native_key_values

SPAN_FIELDS = frozenset(
    (
        "traceId",
        "spanId",
        "name",
        "startTime",
        "parentSpanId",
        "kind",
        "endTime",
        "status",
        "attributes",
        "events",
    )
)
EVENT_FIELDS = frozenset(("name", "attributes"))
OTEL_KINDS = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
AGENT_KINDS = frozenset(
    (
        "agent",
        "llm_call",
        "tool_call",
        "retrieval",
        "decision",
        "delegation",
        "coordination",
        "message",
        "think",
        "decide",
        "observe",
        "reflect",
    )
)
SDK_KINDS = tuple(OTEL_KINDS) + tuple(sorted(AGENT_KINDS))
STATUS_CODES = {"unset": 0, "ok": 1, "error": 2}

Ignored = dict[str, None]  # an insertion-ordered set of field paths


class RequestScope:
    """State shared by the spans of one request: dropped field paths and pooled values.

    Pooled values (see values.PairPool) are shared between the request's spans, which
    saves most of the allocations of a conversion; its output is therefore read-only.
    """

    __slots__ = ("ignored", "pool", "statuses")

    def __init__(self) -> None:
        self.ignored: Ignored = {}
        self.pool = PairPool()
        self.statuses = ({"code": 0}, {"code": 1}, {"code": 2})


def attribute_pairs(raw: object) -> int:
    """Attribute pairs of a native span, its events' included, whatever else is wrong with it."""
    if type(raw) is not dict:
        return 0
    attributes = raw.get("attributes")
    count = len(attributes) if type(attributes) is dict else 0
    events = raw.get("events")
    if type(events) is list:
        for event in events:
            if type(event) is dict:
                event_attributes = event.get("attributes")
                if type(event_attributes) is dict:
                    count += len(event_attributes)
    return count


def _note_unknown(raw: dict[str, Any], known: frozenset[str], ignored: Ignored, at: str) -> None:
    for key in raw:
        if key not in known:
            ignored[at + key] = None


def _kind(raw: object) -> tuple[int, str | None]:
    """The OTel kind number, and the agent kind to keep in KIND_ATTRIBUTE (or None)."""
    if raw is None:
        return 0, None
    if type(raw) is str:
        number = OTEL_KINDS.get(raw)
        if number is not None:
            return number, None
        if raw in AGENT_KINDS:
            return 1, raw
    raise SpanRejected("INVALID_KIND", f"kind must be one of {', '.join(SDK_KINDS)}")


def _attributes(
    raw: object, agent_kind: str | None, session_id: str | None, scope: RequestScope, at: str
) -> list[KeyValue]:
    if raw is None:
        raw = {}
    elif type(raw) is not dict:
        raise SpanRejected("INVALID_ATTRIBUTES", "attributes must be an object")
    if KIND_ATTRIBUTE in raw:  # reserved: it carries the SDK kind, see canonical.KIND_ATTRIBUTE
        scope.ignored[f"{at}attributes.{KIND_ATTRIBUTE}"] = None
        raw = {k: v for k, v in raw.items() if k != KIND_ATTRIBUTE}
    pairs = native_key_values(raw, "attributes", scope.pool)
    if agent_kind is not None:
        pairs.append(scope.pool.string(KIND_ATTRIBUTE, agent_kind))
    if session_id is not None and SESSION_ATTRIBUTE not in raw:  # the span's own value wins
        pairs.append({"key": SESSION_ATTRIBUTE, "value": {"stringValue": session_id}})
    return pairs


def _events(raw: object, scope: RequestScope, at: str) -> list[dict[str, Any]]:
    if type(raw) is not list:
        raise SpanRejected("INVALID_EVENTS", "events must be an array")
    out: list[dict[str, Any]] = []
    for i, event in enumerate(raw):
        if type(event) is not dict:
            raise SpanRejected("INVALID_EVENTS", f"events[{i}] must be an object")
        if not EVENT_FIELDS.issuperset(event):
            _note_unknown(event, EVENT_FIELDS, scope.ignored, at + "events[].")
        name = event.get("name")
        if type(name) is not str:
            raise SpanRejected("INVALID_EVENTS", f"events[{i}].name must be a string")
        converted: dict[str, Any] = {"name": name}
        attributes = event.get("attributes")
        if attributes is not None:
            if type(attributes) is not dict:
                raise SpanRejected("INVALID_EVENTS", f"events[{i}].attributes must be an object")
            if attributes:
                where = f"events[{i}].attributes"
                converted["attributes"] = native_key_values(attributes, where, scope.pool)
        out.append(converted)
    return out


def _status(raw: object) -> int:
    code = STATUS_CODES.get(raw) if type(raw) is str else None
    if code is not None:
        return code
    if raw is None:
        return 0
    raise SpanRejected("INVALID_STATUS", "status must be one of unset, ok, error")


def _trace_id(own: object, of_trace: str | None) -> str:
    """The span's trace id; inside a native trace it may be omitted, not contradicted."""
    if of_trace is None:
        return ids.trace_id(own)
    if own is not None and ids.trace_id(own) != of_trace:
        raise SpanRejected("INVALID_TRACE_ID", "span traceId differs from its trace's")
    return of_trace


def convert_span(
    raw: object,
    scope: RequestScope,
    at: str,
    trace_id: str | None = None,
    session_id: str | None = None,
) -> dict[str, Any]:
    """The canonical span for a native one; SpanRejected with the first broken rule.

    `at` prefixes dropped field paths (`spans[].`). Inside a native trace, `trace_id` is
    the trace's (a span may omit its own, and must not contradict it) and `session_id`
    becomes the `session.id` attribute.
    """
    if type(raw) is not dict:
        raise SpanRejected("INVALID_SPAN", "span must be an object")
    if not SPAN_FIELDS.issuperset(raw):
        _note_unknown(raw, SPAN_FIELDS, scope.ignored, at)
    get = raw.get
    span: dict[str, Any] = {
        "traceId": _trace_id(get("traceId"), trace_id),
        "spanId": ids.span_id(get("spanId")),
    }
    parent = ids.parent_span_id(get("parentSpanId"))
    if parent is not None:
        span["parentSpanId"] = parent
    name = get("name")
    if type(name) is not str or not name:
        raise SpanRejected("INVALID_NAME", "name must be a non-empty string")
    span["name"] = name
    span["kind"], agent_kind = _kind(get("kind"))
    span["startTimeUnixNano"] = str(iso8601_to_unix_nano(get("startTime"), "startTime"))
    end = get("endTime")
    if end is not None:
        span["endTimeUnixNano"] = str(iso8601_to_unix_nano(end, "endTime"))
    attributes = get("attributes")
    if attributes is not None or agent_kind is not None or session_id is not None:
        converted = _attributes(attributes, agent_kind, session_id, scope, at)
        if converted:
            span["attributes"] = converted
    events = get("events")
    if events is not None:
        converted_events = _events(events, scope, at)
        if converted_events:
            span["events"] = converted_events
    span["status"] = scope.statuses[_status(get("status"))]
    return span
