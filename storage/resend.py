"""The re-sending rules, applied by the span store in the transaction that writes a batch.

A span (project, traceId, spanId) may be stored as several rows, one per UTC day of its
start; each row keeps the content hash and the receive time of the send it holds. A
send is refused when a stored row of the same span holds other content and was received
less than the window before it: the window runs from the receive time of the send that
opened it, whenever the worker gets to either. Otherwise the row of its start day is
written: inserted, replaced when its content differs, left as it is when the content is
the same (a redelivery, or a send of the same span again), unless the send was received
before the row's, by less than two windows: that send is the one the row would hold had
they reached the store in the order received (in that order a row's content changes
only a window or more after the send it holds, so a row holding the same content
received later, by less than two windows, changed to nothing else between them). It
then takes the row's place, and a change sent within its window is refused, whichever
of the three reaches the store first.

Sends may reach the store out of the order they were received in: a worker that takes
over a stopped worker's entries writes them after entries received later, and workers
side by side finish in any order. A stored row received after a send does not refuse
it: the send came first and opens the window, and replaces the stored row of its start
day (a change sent within its window, which reached the store first). A send received
a window or more before the stored row of its start day is older than the row that
replaced it: it is refused, and leaves the row as it is. A stored row of another start
day received within the window after a send that reaches the store later stays beside
it: both are kept.

The rows are the window, so it needs no state of its own: no Redis memory per span, and
it holds across restarts and upgrades. A batch is judged in queue order inside its
transaction, so a span sent twice in one batch is judged against its first send. On
SQLite rows are checked and written one by one, and a row is only checked when
something stored could refuse it: its trace had a row before the batch (one query
finds those traces, a seek each), or its span came earlier in the batch; SQLite has
one writer at a time. On PostgreSQL a batch is written in a few set-based statements,
its traces locked through their summaries (storage/span_copy.py). Either way, any
number of workers decide exactly as one would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter
from typing import NamedTuple, cast

from storage.span_rows import SpanRow

FIELDS = SpanRow._fields


class Written(NamedTuple):
    """What writing a batch by the rules did: the positions of the rows the window
    refused, and of rows that may have met a stored row of the same content, and so
    written nothing (none when every row not refused wrote)."""

    refused: list[int]
    met: list[int]


#: A stored row's key: a span has a row per UTC day of its start.
KEY = ("project_id", "trace_id", "span_id", "start_day")
INTEGER_COLUMNS = frozenset(
    (
        "status_code",
        "start_ns",
        "end_ns",
        "received_ms",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
    )
)
#: Every column's PostgreSQL type, in FIELDS order.
COLUMN_TYPES = tuple(
    "bigint" if f in INTEGER_COLUMNS else "double precision" if f == "cost_usd" else "text"
    for f in FIELDS
)


def refusal(new: Callable[[str], str], window_ms: int) -> str:
    """SQL true of a stored row (`stored`) of the new row's span that holds other content
    and either was received within the window before it, or is of its start day and
    was received a window or more after it (the row that replaced it: the new row is an
    older send that reached the store late); `new(field)` spells the new value."""
    received, window = new("received_ms"), int(window_ms)  # a setting, as a number
    return (
        f"stored.project_id = {new('project_id')} AND stored.trace_id = {new('trace_id')} "
        f"AND stored.span_id = {new('span_id')} AND stored.content_hash <> "
        f"{new('content_hash')} AND (stored.received_ms > {received} - {window} "
        f"AND stored.received_ms <= {received} OR stored.start_day = {new('start_day')} "
        f"AND stored.received_ms >= {received} + {window})"
    )


def replaces(stored: str, new: str, window_ms: int) -> str:
    """SQL true when the new row (`new` its prefix) replaces the stored row of its key
    (`stored`), the window not refusing it: other content, or the same content received
    before it by less than two windows (the send the row holds, as in the order
    received)."""
    return (
        f"({stored}.content_hash <> {new}.content_hash OR {stored}.received_ms > "
        f"{new}.received_ms AND {stored}.received_ms < {new}.received_ms + {2 * int(window_ms)})"
    )


def replaced_by(kept: SpanRow | Stored, row: SpanRow, window_ms: int) -> bool:
    """`replaces` in Python: whether `row` replaces `kept`, the row of its key."""
    if kept.content_hash != row.content_hash:
        return True
    return row.received_ms < kept.received_ms < row.received_ms + 2 * window_ms


#: A stored row's key (project, trace, span, start day), and what gives a row's.
RowKey = tuple[str, str, str, str]
ROW_KEY = itemgetter(0, 1, 2, 3)


class Stored(NamedTuple):
    """What the rules read of a stored row: its content hash and receive time."""

    content_hash: str
    received_ms: int


def left_by(
    rows: Iterable[tuple[int, SpanRow]], refused: set[int], window_ms: int
) -> tuple[list[SpanRow], list[int]]:
    """A batch's rows (with their positions) as the upsert writes them in turn: the
    row each key is left holding, and the positions of the rows that met the row one
    before them in the batch left and did not replace it (`replaced_by`), which wrote
    nothing. A refused row leaves its key's row as it was."""
    held: dict[RowKey, SpanRow | Stored] = {}
    met = _judged(rows, refused, window_ms, held)
    return cast(list[SpanRow], list(held.values())), met  # the batch's rows, every one


def wrote_nothing(
    rows: list[SpanRow],
    refused: set[int],
    stored: dict[RowKey, Stored],
    window_ms: int,
) -> list[int]:
    """The positions of the rows of a batch that wrote nothing: each met the row of its
    key as stored before the batch (`stored`, by key) or as a row before it in the batch
    left it, and did not replace it (a span sent again, its receive time whatever)."""
    return _judged(enumerate(rows), refused, window_ms, dict(stored))


def _judged(
    rows: Iterable[tuple[int, SpanRow]],
    refused: set[int],
    window_ms: int,
    held: dict[RowKey, SpanRow | Stored],
) -> list[int]:
    """The rows in turn, each key's row `held` as they leave it; the positions of those
    that met it and did not replace it."""
    met: list[int] = []
    for at, row in rows:
        if at in refused:
            continue
        key = ROW_KEY(row)
        kept = held.get(key)
        if kept is None or replaced_by(kept, row, window_ms):
            held[key] = row
        else:
            met.append(at)
    return met


#: A span row's insert, every column.
INSERT = f"INSERT INTO spans ({', '.join(FIELDS)}) VALUES ({', '.join('?' * len(FIELDS))})"


def upsert(window_ms: int) -> str:
    """Insert, or replace the row of the same span and start day (`replaces`); else
    identical content is a no-op, so redelivered entries change nothing."""
    changed = ", ".join(f"{f} = excluded.{f}" for f in FIELDS if f not in KEY)
    return (
        f"{INSERT} ON CONFLICT ({', '.join(KEY)}) DO UPDATE SET {changed} "
        f"WHERE {replaces('spans', 'excluded', window_ms)}"
    )


def sqlite_refusal(window_ms: int) -> str:
    """SQLite: a query of a row's values (`?N` is its Nth field) that finds a row when
    the window refuses it; the store runs it before the `upsert` of each row that
    `window_checks` names."""
    check = refusal(lambda field: f"?{FIELDS.index(field) + 1}", window_ms)
    return f"SELECT 1 FROM spans AS stored WHERE {check} LIMIT 1"


#: Traces one stored-traces query asks about (900 parameters: old SQLite allows 999).
STORED_TRACES_ASKED = 899
#: SQLite: of a project's (?1) STORED_TRACES_ASKED traces, those with a stored row: one
#: seek a trace, where the window's query would seek once for every span of it.
SQLITE_STORED_TRACES = (
    "WITH asked (trace_id) AS (VALUES "
    + ", ".join(f"(?{n})" for n in range(2, STORED_TRACES_ASKED + 2))
    + ") SELECT trace_id FROM asked WHERE EXISTS (SELECT 1 FROM spans AS stored "
    "WHERE stored.project_id = ?1 AND stored.trace_id = asked.trace_id)"
)
_PROJECT, _TRACE, _SPAN = itemgetter(0), itemgetter(1), itemgetter(2)
_SPAN_KEY = itemgetter(0, 1, 2)


def traces_asked(rows: list[SpanRow]) -> Iterator[list[str | None]]:
    """The parameters of the stored-traces queries for these rows: a project, then its
    distinct traces (the last query's padded with NULLs, which match nothing)."""
    projects = set(map(_PROJECT, rows))
    for project in projects:
        mine = rows if len(projects) == 1 else [row for row in rows if row[0] == project]
        traces = list(set(map(_TRACE, mine)))
        for at in range(0, len(traces), STORED_TRACES_ASKED):
            asked = traces[at : at + STORED_TRACES_ASKED]
            yield [project, *asked, *[None] * (STORED_TRACES_ASKED - len(asked))]


def spans_repeat(rows: list[SpanRow]) -> bool:
    """Whether a span (project, trace, span id) comes more than once in the rows."""
    return len(set(map(_SPAN_KEY, rows))) < len(rows)


def window_checks(
    rows: list[SpanRow], stored_traces: set[str], repeats: bool | None = None
) -> bytes:
    """Which rows (a nonzero byte) need the window's query, the rows written in order:
    only a stored row of its span can refuse a row, so one whose trace had no stored row
    before (`stored_traces` are those that had, in any of the rows' projects) needs it
    only when its span came earlier in the rows. `repeats`: `spans_repeat(rows)`, when
    the caller has it."""
    if stored_traces:
        checks = bytearray(map(stored_traces.__contains__, map(_TRACE, rows)))
    else:
        checks = bytearray(len(rows))
    if spans_repeat(rows) if repeats is None else repeats:
        seen: set[tuple[str, str, str]] = set()
        for at, span in enumerate(map(_SPAN_KEY, rows)):
            if span in seen:
                checks[at] = 1
            seen.add(span)
    return bytes(checks)
