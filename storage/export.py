"""The trace export (at most 100 traces): one JSON or CSV document,
the same from the CLI and from the dashboard.

A CSV row is for people and spreadsheets: the status by name (`unset`, `ok`, `error`),
the attributes as one JSON object (`{"key": value}`), each event's too. The JSON export
keeps the canonical OTLP/JSON form.

Span text is written by strangers, and a spreadsheet runs a cell that starts with `=`,
`+`, `-` or `@` (or a tab or carriage return before one) as a formula: such a CSV cell
is written behind a `'` (OWASP's advice), which spreadsheets show as text. The JSON
export keeps every value exact.
"""

from __future__ import annotations

import csv
import io
from typing import Any

import orjson

from storage.database import Database
from storage.spans import SpanStore
from storage.trace_list import Cursor, TraceFilter, TraceOrder, TraceSummaries

MAX_EXPORT_TRACES = 100
CSV_COLUMNS = (
    "traceId",
    "spanId",
    "parentSpanId",
    "name",
    "kind",
    "status",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "sessionId",
    "attributes",
    "events",
)


def check_limit(limit: int) -> int:
    """The limit, or ValueError when an export could not hold it."""
    if not 1 <= limit <= MAX_EXPORT_TRACES:
        raise ValueError(
            f"limit must be 1 to {MAX_EXPORT_TRACES}: an export holds at most "
            f"{MAX_EXPORT_TRACES} traces"
        )
    return limit


def export_traces(
    db: Database,
    project_id: str,
    filters: TraceFilter,
    limit: int,
    after: Cursor | None = None,
    order: TraceOrder | None = None,
) -> list[dict[str, Any]]:
    """The page of the list (`limit` traces, at most 100) that the filters, `after` and
    `order` give, each with its stored spans."""
    summaries = (
        TraceSummaries(db)
        .page(project_id, filters, check_limit(limit), after, ends=False, order=order)
        .traces
    )
    store = SpanStore(db)
    return [
        {"traceId": t.trace_id, "spans": store.trace(project_id, t.trace_id)} for t in summaries
    ]


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralised(text: str) -> str:
    """`text` as a CSV cell that no spreadsheet reads as a formula."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


STATUS_NAMES = ("unset", "ok", "error")


def status_name(status: dict[str, Any]) -> str:
    """A span's status code by name (`unset`, `ok`, `error`; another code as it is)."""
    code = status.get("code", 0)
    return STATUS_NAMES[code] if code in (0, 1, 2) else str(code)


def _plain(value: dict[str, Any]) -> Any:
    """An OTLP AnyValue as the plain JSON value it stands for."""
    for member, given in value.items():
        if member == "arrayValue":
            return [_plain(item) for item in given.get("values", [])]
        if member == "kvlistValue":
            return _object(given.get("values", []))
        if member == "intValue":
            return int(given)
        return given
    return None


def _object(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """OTLP key/value pairs as one JSON object."""
    return {str(pair.get("key", "")): _plain(pair.get("value", {})) for pair in pairs}


def _csv_cell(span: dict[str, Any], column: str) -> str:
    value = span.get(column)
    if column == "status":
        return status_name(span["status"])
    if column == "attributes":
        value = _object(value or [])
    elif column == "events":
        value = [{**event, "attributes": _object(event.get("attributes", []))}
                 for event in value or []]  # fmt: skip
    if isinstance(value, list | dict):
        return orjson.dumps(value).decode()
    return "" if value is None else neutralised(str(value))


def as_csv(traces: list[dict[str, Any]]) -> str:
    """One row per span, traces in the order given; a header row first."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for trace in traces:
        for span in trace["spans"]:
            writer.writerow([_csv_cell(span, column) for column in CSV_COLUMNS])
    return out.getvalue()
