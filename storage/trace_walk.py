"""Work done once on every stored trace, after the migrations (storage/genai_upgrade.py,
storage/find_upgrade.py): trace by trace through the summaries, whose key lists every
stored trace, a chunk of traces a transaction, so that a large store is upgraded while
the service runs. A stop midway loses nothing: the next start walks again, which the
work must make harmless for a trace already done. Once every trace is done, its version
is recorded in schema_migrations, and later starts walk nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from storage.clock import utc_now_iso
from storage.database import Database, Transaction
from storage.span_copy import locked

CHUNK_TRACES = 500
#: What is done to each trace, in the chunk's transaction: (tx, project, trace).
Work = Callable[[Transaction, str, str], None]
#: Told the traces done so far and the traces stored, after each chunk.
Progress = Callable[[int, int], None]


def needed(db: Database, version: int) -> bool:
    """Whether the walk recorded as `version` has not been done yet."""
    with db.transaction() as tx:
        return not recorded(tx, version)


def recorded(tx: Transaction, version: int) -> bool:
    """Whether the walk `version` is recorded as done, read in `tx`."""
    return tx.query_one("SELECT 1 FROM schema_migrations WHERE version = ?", (version,)) is not None


def walk(
    db: Database, version: int, work: Work, lock: bool = False, progress: Progress | None = None
) -> int:
    """`work` on every stored trace, unless the walk recorded as `version` was done; the
    traces gone through (0 when it was done before). `lock`: each chunk's traces locked
    on PostgreSQL as a writer locks them, so a worker writing meanwhile is never undone."""
    if not needed(db, version):
        return 0
    total = 0
    if progress is not None:
        with db.transaction() as tx:
            total_row = tx.query_one("SELECT COUNT(*) FROM trace_summaries")
        total = int(total_row[0]) if total_row else 0
    done, after = 0, ("", "")
    while True:
        with db.transaction(immediate=True) as tx:
            traces = tx.query(
                "SELECT project_id, trace_id FROM trace_summaries WHERE project_id > ? "
                "OR (project_id = ? AND trace_id > ?) ORDER BY project_id, trace_id LIMIT ?",
                (after[0], after[0], after[1], CHUNK_TRACES),
            )
            if traces and lock and tx.postgres:
                locked(tx, [tuple(trace) for trace in traces])
            for project_id, trace_id in traces:
                work(tx, project_id, trace_id)
        if not traces:
            break
        after = (traces[-1][0], traces[-1][1])
        done += len(traces)
        if progress is not None:
            progress(done, total)
    record(db, version)
    return done


def record(db: Database, version: int) -> None:
    """Record the walk `version` as done."""
    with db.transaction(immediate=True) as tx:
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?) "
            "ON CONFLICT (version) DO NOTHING",
            (version, utc_now_iso()),
        )
