"""The GenAI view's facts for the spans stored before the store had columns for them.

Run once, after the migrations, by the commands that start the worker: trace by trace
(through the summaries, whose key lists every stored trace), the spans that a
convention describes get their facts, and the trace's summary is made anew from its
spans (keeping its order in the list). Each chunk of traces is one transaction, so a
large store is upgraded while the service runs, and a stop midway loses nothing: the
next start does it again, which changes nothing already done. A span that the worker
replaced meanwhile is left as the worker wrote it (the update names its content hash).
"""

from __future__ import annotations

from collections.abc import Callable

from genai.prices import Pricer
from storage import trace_summaries
from storage.clock import utc_now_iso
from storage.database import Database, Transaction
from storage.schema import SPAN_GENAI_COLUMNS
from storage.span_genai import described, facts, stored_view

#: The version recorded in schema_migrations once every stored span has its facts.
UPGRADED = 1011
CHUNK_TRACES = 500
Progress = Callable[[int, int], None]

_SET = ", ".join(f"{name} = ?" for name, _ in SPAN_GENAI_COLUMNS)
_UPDATE = (
    f"UPDATE spans SET {_SET}, session_id = COALESCE(session_id, ?) WHERE project_id = ? "
    "AND trace_id = ? AND span_id = ? AND start_day = ? AND content_hash = ?"
)
_REFRESH = {
    postgres: trace_summaries.refresh_statement(
        "s.project_id = ? AND s.trace_id = ?", postgres=postgres
    )
    for postgres in (False, True)
}


def needed(db: Database) -> bool:
    """Whether the store has not been upgraded yet."""
    with db.transaction() as tx:
        row = tx.query_one("SELECT 1 FROM schema_migrations WHERE version = ?", (UPGRADED,))
    return row is None


def _upgrade_trace(tx: Transaction, pricer: Pricer, project_id: str, trace_id: str) -> None:
    rows = tx.query(
        "SELECT span_id, start_day, name, kind, attributes, events, content_hash FROM spans "
        "WHERE project_id = ? AND trace_id = ?",
        (project_id, trace_id),
    )
    for span_id, start_day, name, kind, attributes, events, content_hash in rows:
        if not described(kind, attributes, events):
            continue
        view = stored_view(name, kind, attributes, events)
        if view is None:
            continue
        found = facts(view, pricer)
        tx.execute(
            _UPDATE,
            (
                *found,
                view.session_id,
                project_id,
                trace_id,
                span_id,
                start_day,
                content_hash,
            ),
        )
    tx.execute(_REFRESH[tx.postgres], (project_id, trace_id))


def upgrade(db: Database, pricer: Pricer, progress: Progress | None = None) -> int:
    """Give the spans stored before the GenAI columns their facts, and their traces'
    summaries their sums; the traces gone through (0 when it was done before)."""
    if not needed(db):
        return 0
    with db.transaction() as tx:
        total_row = tx.query_one("SELECT COUNT(*) FROM trace_summaries")
    total, done = int(total_row[0]) if total_row else 0, 0
    after = ("", "")
    while True:
        with db.transaction(immediate=True) as tx:
            traces = tx.query(
                "SELECT project_id, trace_id FROM trace_summaries WHERE project_id > ? "
                "OR (project_id = ? AND trace_id > ?) ORDER BY project_id, trace_id LIMIT ?",
                (after[0], after[0], after[1], CHUNK_TRACES),
            )
            for project_id, trace_id in traces:
                _upgrade_trace(tx, pricer, project_id, trace_id)
        if not traces:
            break
        after = (traces[-1][0], traces[-1][1])
        done += len(traces)
        if progress is not None:
            progress(done, total)
    with db.transaction(immediate=True) as tx:
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?) "
            "ON CONFLICT (version) DO NOTHING",
            (UPGRADED, utc_now_iso()),
        )
    return done
