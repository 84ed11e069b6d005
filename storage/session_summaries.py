"""The per-session summary: kept from the trace summaries, read by the sessions list.

A trace summary written or deleted notes its session (and the one it had) as stale, by
trigger (storage/find_schema.py). Whoever wrote it, in the same transaction, then makes
those sessions' summaries anew from their traces' summaries (`refresh_stale`), through
the summaries' session index: the writer after a batch, erasure and retention after
they recount. A session summary is therefore exactly what its traces' summaries add up
to, whatever the re-sending rules did to their spans.

On PostgreSQL, two writers may refresh one session at once (its traces fall to both):
each first locks the session's row (inserting a placeholder when it has none), and only
then reads the traces' summaries, in a statement of its own, whose snapshot holds what
the other committed before it let go of the lock.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import orjson

from storage.database import Database, Transaction, arrays
from storage.storable import id_text
from storage.summary_genai import capped_sum
from storage.trace_query import COST, INPUT_TOKENS, OUTPUT_TOKENS, fits_int64

_COLUMNS = (
    "project_id, session_id, trace_count, start_ns, end_ns, last_ns, error_count, "
    "input_tokens, output_tokens, cost_usd, user_id"
)
_AGGREGATE = (
    "SELECT project_id, session_id, COUNT(*), MIN(start_ns), MAX(end_ns), MAX(sort_ns), "
    f"SUM(error_count), SUM({INPUT_TOKENS}), SUM({OUTPUT_TOKENS}), SUM({COST}), MIN(user_id) "
    "FROM trace_summaries WHERE project_id = ? AND session_id = ? GROUP BY project_id, session_id"
)
_SETS = ", ".join(
    f"{c} = excluded.{c}" for c in _COLUMNS.split(", ") if c not in ("project_id", "session_id")
)


def _upsert(postgres: bool) -> str:
    """A session's summary made anew from its traces' (its token sums capped:
    storage/summary_genai.py's capped_sum)."""
    aggregate = _AGGREGATE
    for tokens in (INPUT_TOKENS, OUTPUT_TOKENS):
        aggregate = aggregate.replace(f"SUM({tokens})", capped_sum(tokens, postgres))
    return (
        f"INSERT INTO session_summaries ({_COLUMNS}) {aggregate} "
        f"ON CONFLICT (project_id, session_id) DO UPDATE SET {_SETS}"
    )


_UPSERTS = {postgres: _upsert(postgres) for postgres in (False, True)}
_LOCK = (
    "INSERT INTO session_summaries (project_id, session_id, trace_count, start_ns, last_ns, "
    "error_count) SELECT project_id, session_id, 0, 0, 0, 0 FROM unnest(?::text[], ?::text[]) "
    "AS s (project_id, session_id) ORDER BY 1, 2 ON CONFLICT DO NOTHING"
)
_LOCKED = (
    "SELECT project_id, session_id FROM session_summaries WHERE (project_id, session_id) IN "
    "(SELECT * FROM unnest(?::text[], ?::text[])) ORDER BY 1, 2 FOR UPDATE"
)
#: A session left with no trace: its placeholder or old summary goes.
_EMPTY = (
    "DELETE FROM session_summaries WHERE project_id = ? AND session_id = ? AND NOT EXISTS "
    "(SELECT 1 FROM trace_summaries AS t WHERE t.project_id = ? AND t.session_id = ?)"
)


def refresh_stale(tx: Transaction) -> int:
    """Make the summaries of the sessions noted stale anew from their traces'; how
    many."""
    stale = sorted(tx.query("SELECT project_id, session_id FROM session_stale"))
    if not stale:
        return 0
    tx.execute("DELETE FROM session_stale")
    if tx.postgres:
        keys = [tuple(row) for row in stale]
        tx.execute(_LOCK, arrays(keys))
        tx.query(_LOCKED, arrays(keys))
    for project, session in stale:
        tx.execute(_UPSERTS[tx.postgres], (project, session))
        tx.execute(_EMPTY, (project, session, project, session))
    return len(stale)


#: Every session's summary, from the trace summaries.
EVERY_SESSION = _AGGREGATE.replace(
    "WHERE project_id = ? AND session_id = ?", "WHERE session_id IS NOT NULL"
)
#: The session summaries of the sessions stored before the table (migration 13).
BACKFILL = f"INSERT INTO session_summaries ({_COLUMNS}) {EVERY_SESSION}"


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One session as the sessions list shows it."""

    session_id: str
    traces: int
    start_ns: int
    end_ns: int | None
    last_ns: int = 0
    error_count: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    user_id: str | None = None

    @property
    def duration_ms(self) -> float:
        """From its first trace's start to its last end (0 while none has ended)."""
        return ((self.end_ns or self.start_ns) - self.start_ns) / 1e6

    @property
    def total_tokens(self) -> int | None:
        """Input and output tokens; None while neither is known."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


@dataclass(frozen=True, slots=True)
class SessionCursor:
    """Where a page of sessions ends: after this session, last active at `last_ns`."""

    last_ns: int
    session_id: str

    def encode(self) -> str:
        """The opaque text a client passes back."""
        text = orjson.dumps([self.last_ns, self.session_id])
        return base64.urlsafe_b64encode(text).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> SessionCursor:
        """The cursor `encode` wrote; ValueError for anything else."""
        try:
            raw = base64.urlsafe_b64decode(text.encode() + b"=" * (-len(text) % 4))
            last_ns, session_id = orjson.loads(raw)
        except (binascii.Error, UnicodeError, ValueError, TypeError) as e:
            raise ValueError("cursor is not one this list gave") from e
        if not fits_int64(last_ns) or not isinstance(session_id, str) or "\0" in session_id:
            # no session id holds a NUL (PostgreSQL's text cannot)
            raise ValueError("cursor is not one this list gave")
        return cls(last_ns, session_id)


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """What the sessions list may be narrowed to."""

    user: str | None = None
    from_ns: int | None = None  # a trace of the session starts at or after
    to_ns: int | None = None  # and before


def sessions_query(
    project_id: str, filters: SessionFilter, limit: int, after: SessionCursor | None
) -> tuple[str, list[Any]]:
    """The SQL and parameters of a page of sessions, latest activity first."""
    sql = f"SELECT {_COLUMNS} FROM session_summaries AS s WHERE s.project_id = ?"
    params: list[Any] = [project_id]
    if filters.user is not None:  # any of its traces' users (a session may have several)
        sql += (
            " AND s.session_id IN (SELECT t.session_id FROM trace_summaries AS t "
            "WHERE t.project_id = ? AND t.user_id = ? AND t.session_id IS NOT NULL)"
        )
        params += [project_id, id_text(filters.user)]  # as stored: storage/storable.py
    if filters.from_ns is not None or filters.to_ns is not None:
        sql += (
            " AND EXISTS (SELECT 1 FROM trace_summaries AS t WHERE t.project_id = s.project_id "
            "AND t.session_id = s.session_id"
        )
        for value, condition in ((filters.from_ns, ">="), (filters.to_ns, "<")):
            if value is not None:
                sql += f" AND t.start_ns {condition} ?"
                params.append(value)
        sql += ")"
    if after is not None:
        sql += " AND (s.last_ns < ? OR (s.last_ns = ? AND s.session_id < ?))"
        params += [after.last_ns, after.last_ns, after.session_id]
    sql += " ORDER BY s.last_ns DESC, s.session_id DESC LIMIT ?"
    return sql, [*params, limit]


def _summary(row: Any) -> SessionSummary:
    return SessionSummary(*row[1:11])


def session_summary(db: Database, project_id: str, session_id: str) -> SessionSummary | None:
    """One session's summary (its id compared as stored: storage/storable.py), or None."""
    with db.transaction() as tx:
        row = tx.query_one(
            f"SELECT {_COLUMNS} FROM session_summaries WHERE project_id = ? AND session_id = ?",
            (project_id, id_text(session_id)),
        )
    return None if row is None else _summary(row)


def sessions_page(
    db: Database,
    project_id: str,
    filters: SessionFilter,
    limit: int,
    after: SessionCursor | None = None,
) -> tuple[list[SessionSummary], SessionCursor | None]:
    """Up to `limit` sessions, latest activity first, after `after`; and the next
    page's cursor (None when this page is the last)."""
    with db.transaction() as tx:
        rows = tx.query(*sessions_query(project_id, filters, limit + 1, after))
    found = [_summary(r) for r in rows[:limit]]
    if len(rows) <= limit:
        return found, None
    return found, SessionCursor(found[-1].last_ns, found[-1].session_id)
