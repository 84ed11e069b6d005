"""The find indexes (storage/trace_index.py) for the spans stored before them.

Run once, after the migrations, by the commands that start the worker (as
storage/genai_upgrade.py): trace by trace, through the summaries, each trace's stored
rows give their texts, attribute and name rows. A chunk of traces is one transaction,
its traces locked on PostgreSQL as a writer locks them, so a worker writing meanwhile
is never undone; a stop midway loses nothing: the next start does it again, which
adds nothing already there.
"""

from __future__ import annotations

from storage import trace_index
from storage.clock import utc_now_iso
from storage.database import Database
from storage.span_copy import locked
from storage.span_rows import SpanRow

#: The version recorded in schema_migrations once every stored trace is indexed.
UPGRADED = 1013
CHUNK_TRACES = 500
_STORED = (
    "SELECT project_id, trace_id, span_id, start_day, parent_span_id, name, kind, "
    "status_code, status_message, start_ns, end_ns, session_id, attributes, events, "
    "'[]', '{}', '{}', '{}', content_hash, received_ms, llm_type FROM spans "
    "WHERE project_id = ? AND trace_id = ?"
)


def needed(db: Database) -> bool:
    """Whether the store has not been indexed yet."""
    with db.transaction() as tx:
        row = tx.query_one("SELECT 1 FROM schema_migrations WHERE version = ?", (UPGRADED,))
    return row is None


def upgrade(db: Database) -> int:
    """Index every stored trace; the traces gone through (0 when it was done before)."""
    if not needed(db):
        return 0
    done, after = 0, ("", "")
    while True:
        with db.transaction(immediate=True) as tx:
            traces = tx.query(
                "SELECT project_id, trace_id FROM trace_summaries WHERE project_id > ? "
                "OR (project_id = ? AND trace_id > ?) ORDER BY project_id, trace_id LIMIT ?",
                (after[0], after[0], after[1], CHUNK_TRACES),
            )
            if traces and tx.postgres:
                locked(tx, [tuple(trace) for trace in traces])
            for project_id, trace_id in traces:
                rows = [SpanRow(*row) for row in tx.query(_STORED, (project_id, trace_id))]
                trace_index.write(tx, rows, [])
        if not traces:
            break
        after = (traces[-1][0], traces[-1][1])
        done += len(traces)
    with db.transaction(immediate=True) as tx:
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?) "
            "ON CONFLICT (version) DO NOTHING",
            (UPGRADED, utc_now_iso()),
        )
    return done
