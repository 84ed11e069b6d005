"""The re-sending rules, applied by the span store in the transaction that writes a batch.

A span (project, traceId, spanId) may be stored as several rows, one per UTC day of its
start; each row keeps the content hash and the receive time of the send it holds. A
send is refused when a stored row of the same span holds other content and was received
less than the window before it: the window runs from the receive time of the send that
opened it, whenever the worker gets to either (a backlog changes nothing). Otherwise the
row of its start day is written: inserted, replaced when its content differs, left as
it is when the content is the same (a redelivery, or a send of the same span again).

The rows are the window, so it needs no state of its own: no Redis memory per span, and
it holds across restarts and upgrades. Rows are checked and written one by one, in queue
order, inside the batch's transaction, so a span sent twice in one batch is judged
against its first send. SQLite has one writer at a time, so workers agree exactly; with
PostgreSQL, two workers writing two different versions of one span at the same instant
on different start days could both store theirs (on the same start day the second waits
for the first's row, then leaves it, though it does not count itself refused).
"""

from __future__ import annotations

from collections.abc import Callable

from storage.span_rows import SpanRow

_FIELDS = SpanRow._fields
_KEY = ("project_id", "trace_id", "span_id", "start_day")
_INTEGER_COLUMNS = frozenset(("status_code", "start_ns", "end_ns", "received_ms"))


def refused_counter(project_id: str) -> str:
    """Running count of a project's spans refused by the window (kept in Redis)."""
    return f"spangate:{{{project_id}}}:refused"


def _refusal(new: Callable[[str], str], window_ms: int) -> str:
    """SQL true of a stored row (`stored`) of the new row's span that holds other content
    and was received within the window before it; `new(field)` spells the new value."""
    return (
        f"stored.project_id = {new('project_id')} AND stored.trace_id = {new('trace_id')} "
        f"AND stored.span_id = {new('span_id')} AND stored.content_hash <> "
        f"{new('content_hash')} AND stored.received_ms > {new('received_ms')} - "
        f"{int(window_ms)}"  # a setting, written into the SQL text as a number
    )


_SET = ", ".join(f"{f} = excluded.{f}" for f in _FIELDS if f not in _KEY)
#: Insert, or replace the row of the same span and start day when the content differs:
#: identical content is a no-op, so redelivered queue entries change nothing.
UPSERT = (
    f"INSERT INTO spans ({', '.join(_FIELDS)}) VALUES ({', '.join('?' * len(_FIELDS))}) "
    f"ON CONFLICT ({', '.join(_KEY)}) DO UPDATE SET {_SET} "
    "WHERE spans.content_hash <> excluded.content_hash"
)


def sqlite_refusal(window_ms: int) -> str:
    """SQLite: a query of a row's values (`?N` is its Nth field) that finds a row when
    the window refuses it; the store runs it before each row's UPSERT."""
    refusal = _refusal(lambda field: f"?{_FIELDS.index(field) + 1}", window_ms)
    return f"SELECT 1 FROM spans AS stored WHERE {refusal} LIMIT 1"


def postgres_upsert(window_ms: int) -> str:
    """PostgreSQL: UPSERT unless the window refuses the row, in one statement that
    answers whether it was refused. Parameters: a row's values, in order."""
    casts = ", ".join(f"?::{'bigint' if f in _INTEGER_COLUMNS else 'text'}" for f in _FIELDS)
    refusal = _refusal(lambda field: f"new.{field}", window_ms)
    return (
        f"WITH new ({', '.join(_FIELDS)}) AS (VALUES ({casts})), "
        f"refused AS (SELECT 1 FROM spans AS stored, new WHERE {refusal} LIMIT 1), "
        f"written AS (INSERT INTO spans ({', '.join(_FIELDS)}) SELECT * FROM new "
        f"WHERE NOT EXISTS (SELECT 1 FROM refused) ON CONFLICT ({', '.join(_KEY)}) "
        f"DO UPDATE SET {_SET} WHERE spans.content_hash <> excluded.content_hash "
        f"AND spans.received_ms <= excluded.received_ms - {int(window_ms)}) "
        "SELECT EXISTS (SELECT 1 FROM refused)"
    )
