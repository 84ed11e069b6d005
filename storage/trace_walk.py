"""Work done once on every stored trace, after the migrations (storage/genai_upgrade.py,
storage/find_upgrade.py): trace by trace through the summaries, whose key lists every
stored trace, a chunk of traces a transaction, so that a large store is upgraded while
the service runs. Each chunk's transaction records the last trace it did (`walk_progress`):
a walk stopped midway (its process stopping between two chunks, `stopped_by`, or
killed) goes on from there at the next start; the work must be harmless for a trace
done again (a chunk that did not commit). Once every trace is done, its version is
recorded in schema_migrations, and later starts walk nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from storage.clock import utc_now_iso
from storage.database import Database, Transaction
from storage.span_copy import locked

CHUNK_TRACES = 500
#: What is done to each trace, in the chunk's transaction: (tx, project, trace).
Work = Callable[[Transaction, str, str], None]
#: Told the traces done so far and the traces stored, after each chunk.
Progress = Callable[[int, int], None]


class Stopped(Exception):
    """A walk stopped between two chunks: its process is stopping (`stopped_by`)."""


_stopping: list[threading.Event] = []

_PROGRESS = (
    "INSERT INTO walk_progress (version, project_id, trace_id) VALUES (?, ?, ?) "
    "ON CONFLICT (version) DO UPDATE SET project_id = excluded.project_id, "
    "trace_id = excluded.trace_id"
)


@contextmanager
def stopped_by(event: threading.Event) -> Iterator[None]:
    """Within, a walk raises Stopped between two chunks once `event` is set (a worker's
    SIGTERM), its progress kept for the next start."""
    _stopping.append(event)
    try:
        yield
    finally:
        _stopping.remove(event)


def needed(db: Database, version: int) -> bool:
    """Whether the walk recorded as `version` has not been done yet."""
    with db.transaction() as tx:
        return not recorded(tx, version)


def recorded(tx: Transaction, version: int) -> bool:
    """Whether the walk `version` is recorded as done, read in `tx`."""
    return tx.query_one("SELECT 1 FROM schema_migrations WHERE version = ?", (version,)) is not None


def _start(db: Database, version: int, counted: bool) -> tuple[tuple[str, str], int, int]:
    """Where a walk starts: after the last trace done before a stop (or at the first),
    and (`counted`) the traces done so far and stored."""
    with db.transaction() as tx:
        kept = tx.query_one(
            "SELECT project_id, trace_id FROM walk_progress WHERE version = ?", (version,)
        )
        after = ("", "") if kept is None else (kept[0], kept[1])
        if not counted:
            return after, 0, 0
        total = tx.query_one("SELECT COUNT(*) FROM trace_summaries")
        done = (0,) if kept is None else tx.query_one(
            "SELECT COUNT(*) FROM trace_summaries WHERE project_id < ? "
            "OR (project_id = ? AND trace_id <= ?)",
            (after[0], after[0], after[1]),
        )  # fmt: skip
    return after, int(done[0]) if done else 0, int(total[0]) if total else 0


def walk(
    db: Database, version: int, work: Work, lock: bool = False, progress: Progress | None = None
) -> int:
    """`work` on every stored trace, unless the walk recorded as `version` was done (after
    the last one done, when it was stopped before); the traces gone through (0 when it
    was done before). `lock`: each chunk's traces locked
    on PostgreSQL as a writer locks them, so a worker writing meanwhile is never undone."""
    if not needed(db, version):
        return 0
    after, before, total = _start(db, version, progress is not None)
    done = before
    while True:
        if any(event.is_set() for event in _stopping):
            raise Stopped(f"the walk {version} stopped after {done:,} traces")
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
            if traces:
                tx.execute(_PROGRESS, (version, traces[-1][0], traces[-1][1]))
        if not traces:
            break
        after = (traces[-1][0], traces[-1][1])
        done += len(traces)
        if progress is not None:
            progress(done, total)
    record(db, version)
    return done - before


def record(db: Database, version: int) -> None:
    """Record the walk `version` as done (its progress no longer kept)."""
    with db.transaction(immediate=True) as tx:
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?) "
            "ON CONFLICT (version) DO NOTHING",
            (version, utc_now_iso()),
        )
        tx.execute("DELETE FROM walk_progress WHERE version = ?", (version,))
