"""What went wrong in a trace: an error span's own words, for the trace's header and
for each listed trace with errors."""

from __future__ import annotations

from typing import Any

from dashboard.formats import cut
from genai.view import plain
from storage.spans import SpanStore
from storage.trace_list import TraceSummary

#: The most of an error's message the trace's header shows.
ERROR_CHARS = 300


def what_failed(span: dict[str, Any]) -> str:
    """What a canonical error span says went wrong: its status message, else its first
    exception event's type and message (OpenTelemetry's `exception.*`), else its
    `error.type` (the class of error OpenTelemetry's conventions give a failed
    operation: `timeout`, `500`), cut short."""
    said = (span["status"].get("message") or "").strip()
    if not said:
        for event in span.get("events", ()):
            if event.get("name") != "exception":
                continue
            pairs = event.get("attributes", ())
            found = {pair["key"]: pair["value"].get("stringValue", "") for pair in pairs}
            kind, message = found.get("exception.type", ""), found.get("exception.message", "")
            kind, message = kind.strip(), message.strip()
            said = f"{kind}: {message}" if kind and message else kind or message
            break
    if not said:
        for pair in span.get("attributes", ()):
            if pair["key"] == "error.type":
                value = plain(pair["value"])
                said = "" if value is None else str(value).strip()
                break
    return cut(said, ERROR_CHARS)


#: The most of an error's message a listed trace shows (its whole is on its page).
LISTED_ERROR_CHARS = 120


def failures(store: SpanStore, project_id: str, traces: list[TraceSummary]) -> dict[str, str]:
    """Of each of a page's traces with errors, its earliest error span's name and what it
    says went wrong (`name: what`, or the name alone), by trace id."""
    wanted = [(t.trace_id, t.start_ns, _latest_start(t)) for t in traces if t.error_count]
    found = {}
    for trace_id, span in store.first_errors(project_id, wanted).items():
        said, name = cut(what_failed(span), LISTED_ERROR_CHARS), cut(span["name"], NAME_CHARS)
        found[trace_id] = f"{name}: {said}" if said else name
    return found


#: The most of an error span's name a listed trace shows.
NAME_CHARS = 80


def _latest_start(trace: TraceSummary) -> int:
    """The latest a span of the trace can start, as far as its summary tells: by its
    last end, or, for a span without an end (still running when sent), by when the
    trace was last received (a span is sent after it starts)."""
    return max(trace.end_ns or trace.start_ns, trace.received_ms * 1_000_000)
