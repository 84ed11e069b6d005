"""Canonical OTLP/JSON requests to span store rows (pure: no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, NamedTuple

import orjson

from proto_json import KIND_ATTRIBUTE, SESSION_ATTRIBUTE, fastpath, span_content_hash
from storage.shared_texts import held

#: The C row builder (storage/_rows.c), where it was built: the same rows from a
#: request's bytes, without parsing them into Python objects.
FAST_ROWS = fastpath.extension("storage._rows")

_NANOS_PER_DAY = 86_400 * 10**9
OTEL_KIND_NAMES = ("unspecified", "internal", "server", "client", "producer", "consumer")
#: Members of a canonical span that have columns of their own; the rest go to `extras`.
_COLUMNS = frozenset(
    (
        "traceId",
        "spanId",
        "parentSpanId",
        "name",
        "kind",
        "startTimeUnixNano",
        "endTimeUnixNano",
        "attributes",
        "events",
        "links",
        "status",
    )
)
_day_names: dict[int, str] = {}


class SpanRow(NamedTuple):
    """One stored span, in column order.

    A NamedTuple rather than the house's frozen dataclass: building a frozen dataclass
    of its first 20 fields cost 9 us a span (object.__setattr__ per field), over half of a
    worker batch's row building; a tuple is immutable too, and is already the
    parameter sequence executemany takes.
    """

    project_id: str
    trace_id: str
    span_id: str
    start_day: str
    parent_span_id: str | None
    name: str
    kind: str
    status_code: int
    status_message: str | None
    start_ns: int
    end_ns: int | None
    session_id: str | None
    attributes: str
    events: str
    links: str
    extras: str
    # the resource's and the scope's JSON text, or its key (storage/shared_texts.py)
    resource: str
    scope: str
    content_hash: str
    received_ms: int
    # The GenAI view's facts (genai/), set by storage/span_genai.py; None for a span
    # that no LLM convention describes. The C builder leaves them None.
    llm_type: str | None = None
    llm_name: str | None = None
    model: str | None = None
    provider: str | None = None
    user_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    cost_source: str | None = None


def utc_day(nanos: int) -> str:
    """The UTC calendar day of a Unix nanosecond time, `YYYY-MM-DD`."""
    day = nanos // _NANOS_PER_DAY
    name = _day_names.get(day)
    if name is None:
        name = datetime.fromtimestamp(day * 86_400, UTC).strftime("%Y-%m-%d")
        if len(_day_names) > 4096:
            _day_names.clear()
        _day_names[day] = name
    return name


def _tagged(attributes: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """(session.id, agent kind) string attributes, in one pass."""
    session = agent = None
    for pair in attributes:
        key = pair["key"]
        if key == SESSION_ATTRIBUTE:
            session = pair["value"].get("stringValue")
        elif key == KIND_ATTRIBUTE:
            agent = pair["value"].get("stringValue")
    return session, agent


def sdk_kind(kind: int, agent: str | None) -> str:
    """The SDK's kind: an agent kind kept in KIND_ATTRIBUTE, else the OTel kind's name."""
    return agent if kind == 1 and isinstance(agent, str) else OTEL_KIND_NAMES[kind]


def _json(value: Any, empty: str) -> str:
    return orjson.dumps(value).decode() if value else empty


def row_of(
    span: dict[str, Any], project_id: str, received_ms: int, resource: str, scope: str
) -> SpanRow:
    """The row for one canonical span."""
    attributes = span.get("attributes") or []
    session, agent = _tagged(attributes)
    start = int(span["startTimeUnixNano"])
    end = span.get("endTimeUnixNano")
    status = span["status"]
    extras = (
        "{}"
        if _COLUMNS.issuperset(span)
        else orjson.dumps({k: v for k, v in span.items() if k not in _COLUMNS}).decode()
    )
    return SpanRow(
        project_id=project_id,
        trace_id=span["traceId"],
        span_id=span["spanId"],
        start_day=utc_day(start),
        parent_span_id=span.get("parentSpanId"),
        name=span["name"],
        kind=sdk_kind(span["kind"], agent),
        status_code=status["code"],
        status_message=status.get("message"),
        start_ns=start,
        end_ns=int(end) if end is not None else None,
        session_id=session if isinstance(session, str) else None,
        attributes=_json(attributes, "[]"),
        events=_json(span.get("events"), "[]"),
        links=_json(span.get("links"), "[]"),
        extras=extras,
        resource=resource,
        scope=scope,
        content_hash=span_content_hash(span),
        received_ms=received_ms,
    )


def rows_of(request: dict[str, Any], project_id: str, received_ms: int) -> list[SpanRow]:
    """Every span of a canonical request, in order: the reference the C builder's rows
    from a request's bytes are tested against, and the path for those it declines."""
    rows: list[SpanRow] = []
    for resource_spans in request.get("resourceSpans", []):
        resource = held(orjson.dumps(resource_spans.get("resource", {})).decode())
        for scope_spans in resource_spans.get("scopeSpans", []):
            scope = held(orjson.dumps(scope_spans.get("scope", {})).decode())
            for span in scope_spans.get("spans", []):
                rows.append(row_of(span, project_id, received_ms, resource, scope))
    return rows


def rows_of_json(body: bytes, project_id: str, received_ms: int) -> list[SpanRow]:
    """Every span of a canonical request given as its bytes (a queue entry's body).

    The C builder reads the bytes without making Python objects of them when they are
    written as spangate writes them; otherwise they are parsed with orjson (a
    JSONDecodeError, a ValueError, for bytes that are not JSON).
    """
    if FAST_ROWS is not None:
        built: list[SpanRow] | None = FAST_ROWS.span_rows_json(
            body, project_id, received_ms, SpanRow
        )
        if built is not None:
            return built
    return rows_of(orjson.loads(body), project_id, received_ms)
