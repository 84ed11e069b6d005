"""The span table's days: partitions made ahead (PostgreSQL), and old days removed.

On PostgreSQL the span rows are partitioned by their UTC start day (schema migration
10): the worker makes the partitions of yesterday, today and the next AHEAD_DAYS days
(`make_partitions`, at start and every hour), and rows of any other day go to the
default partition. Removing the days before a cutoff (`remove_days_before`, the command
`spangate retention --days N`) then drops whole partitions, whatever their size, and
deletes the few rows of those days that sit in the default partition. SQLite has no
partitions: the rows are deleted.

Either way the rows are deleted, and the summaries and indexes of the traces that had a
span on a removed day made anew from what is left (gone when nothing is), a few hundred
traces a transaction, under the traces' locks as a writer takes them: the store keeps
its rule that every trace with a stored span has a summary, and a writer of one of
those traces meanwhile waits, then writes by what is left. Last, the resources' and
scopes' texts no row of a day left uses (storage/shared_texts.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import partial

from storage import session_summaries, shared_texts, trace_index, trace_summaries
from storage.database import Database, Transaction
from storage.span_copy import lock_every
from storage.trace_index import stale_partition

AHEAD_DAYS = 7
#: How long making a partition waits for the span table's lock.
PARTITION_LOCK_TIMEOUT_MS = 2000
#: Serialises changes to the partitions between processes (two workers starting).
_PARTITIONS_LOCK = 0x53504454  # "SPDT"
_NAME = re.compile(r"spans_(\d{8})")
#: Traces whose summaries one transaction recomputes.
_TRACES_A_TRANSACTION = 500
_PARTITIONS = (
    "SELECT child.relname FROM pg_inherits JOIN pg_class AS child "
    "ON child.oid = pg_inherits.inhrelid WHERE pg_inherits.inhparent = 'spans'::regclass"
)


def partition_name(day: date) -> str:
    """The name of the partition of one start day."""
    return f"spans_{day:%Y%m%d}"


def _day_partitions(tx: Transaction) -> dict[date, str]:
    days = {}
    for (name,) in tx.query(_PARTITIONS):
        if match := _NAME.fullmatch(name):
            days[datetime.strptime(match[1], "%Y%m%d").date()] = name
    return days


def today() -> date:
    """Today's UTC date."""
    return datetime.now(UTC).date()


def make_partitions(db: Database, day: date | None = None) -> list[str]:
    """PostgreSQL: make the missing partitions of the day before `day` (today when None)
    to AHEAD_DAYS after it; their names. Rows of those days already in the default
    partition move into theirs. Nothing on SQLite."""
    if not db.postgres:
        return []
    first = (day or today()) - timedelta(days=1)
    days = (first + timedelta(days=offset) for offset in range(AHEAD_DAYS + 2))
    return [partition_name(day) for day in days if db.retried(partial(_make_missing, day=day))]


def _make_missing(tx: Transaction, day: date) -> bool:
    """Make the partition of `day` unless it is there; whether it was made."""
    tx.query_one("SELECT pg_advisory_xact_lock(?)", (_PARTITIONS_LOCK,))
    if day in _day_partitions(tx):
        return False
    _make_partition(tx, day)
    return True


def _make_partition(tx: Transaction, day: date) -> None:
    name, low, high = partition_name(day), day.isoformat(), (day + timedelta(days=1)).isoformat()
    # The span table and its partitions, locked first, against every other transaction:
    # a writer's row of the day put in the default partition after the move would fail
    # the attach's check of it, and a statement that began before the attach and waited
    # for it would put the row there anyway, by the partitions it knew, and fail. The
    # strongest lock at once: a weaker one would have to grow at the attach, waiting on
    # a reader that itself waits to write. Every other transaction queues behind the
    # request: it gives up after a while (a long read holding the table), and the
    # worker tries again a minute later.
    tx.execute(f"SET LOCAL lock_timeout = {PARTITION_LOCK_TIMEOUT_MS}")
    tx.execute("LOCK TABLE spans IN ACCESS EXCLUSIVE MODE")
    tx.execute(f"CREATE TABLE {name} (LIKE spans INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
    # the rows moved keep their previews, which their delete's trigger deletes, and their
    # indexes, which it notes stale: the notes are this transaction's to forget
    tx.execute(
        "CREATE TEMPORARY TABLE moved_previews ON COMMIT DROP AS SELECT * FROM span_texts "
        "WHERE start_day >= ? AND start_day < ?",
        (low, high),
    )
    tx.execute(
        "WITH moved AS (DELETE FROM spans_default WHERE start_day >= ? AND start_day < ? "
        f"RETURNING *) INSERT INTO {name} SELECT * FROM moved",
        (low, high),
    )
    tx.execute("INSERT INTO span_texts SELECT * FROM moved_previews ON CONFLICT DO NOTHING")
    tx.execute("DELETE FROM trace_index_stale WHERE xmin = pg_current_xact_id()::xid")
    # bounds are dates this function formats, never outside input
    tx.execute(f"ALTER TABLE spans ATTACH PARTITION {name} FOR VALUES FROM ('{low}') TO ('{high}')")


@dataclass(frozen=True, slots=True)
class Removed:
    """What `remove_days_before` removed."""

    partitions: list[str]  # dropped whole (PostgreSQL)
    rows: int  # deleted one by one (SQLite; the default partition on PostgreSQL)
    traces: int  # whose summaries were recomputed or removed


def remove_days_before(db: Database, cutoff: date) -> Removed:
    """Remove every span row whose start day is before `cutoff`, and recompute the
    summaries of the traces that had one. Each transaction that meets another's (a
    deadlock the server broke) is run again."""
    dropped = db.retried(partial(_drop_partitions, cutoff=cutoff)) if db.postgres else []
    cutoff_ns = (cutoff - date(1970, 1, 1)).days * 86_400 * 10**9
    with db.transaction() as tx:
        touched = tx.query(
            "SELECT project_id, trace_id FROM trace_summaries WHERE start_ns < ? "
            "ORDER BY project_id, trace_id",
            (cutoff_ns,),
        )
    rows = 0
    for at in range(0, len(touched), _TRACES_A_TRANSACTION):
        traces = [(project, trace) for project, trace in touched[at : at + _TRACES_A_TRANSACTION]]
        rows += db.retried(partial(_remove, traces=traces, cutoff=cutoff), immediate=True)
    db.retried(partial(shared_texts.remove_before, day=cutoff.isoformat()), immediate=True)
    return Removed(dropped, rows, len(touched))


def _drop_partitions(tx: Transaction, cutoff: date) -> list[str]:
    """PostgreSQL: drop the partitions of the days before `cutoff`, their rows noted
    stale, and those days' texts; their names."""
    tx.query_one("SELECT pg_advisory_xact_lock(?)", (_PARTITIONS_LOCK,))
    days = sorted((day, name) for day, name in _day_partitions(tx).items() if day < cutoff)
    if not days:
        return []
    # every partition's drop locks the span table: at once, first (as `_make_partition`);
    # no writer is then between its spans and its commit, and the days' texts go here
    # too (a dropped table fires no trigger)
    tx.execute("LOCK TABLE spans IN ACCESS EXCLUSIVE MODE")
    for _, name in days:
        stale_partition(tx, name)
        tx.execute(f"DROP TABLE {name}")
    tx.execute("DELETE FROM span_texts WHERE start_day < ?", (cutoff.isoformat(),))
    tx.execute("DELETE FROM trace_texts WHERE start_day < ?", (cutoff.isoformat(),))
    return [name for _, name in days]


def _remove(tx: Transaction, traces: list[tuple[str, str]], cutoff: date) -> int:
    """Delete the span rows of the days before `cutoff` of traces that had one (on
    PostgreSQL, those in the default partition), under the traces' locks, recount their
    summaries, and make their indexes and their sessions' summaries anew; how many
    rows."""
    if tx.postgres:
        lock_every(tx, traces)
    rows = 0
    for project, trace in traces:
        rows += tx.execute(
            "DELETE FROM spans WHERE project_id = ? AND trace_id = ? AND start_day < ?",
            (project, trace, cutoff.isoformat()),
        )
        trace_summaries.recount(tx, project, {trace})
    trace_index.rebuild_stale(tx, traces, recounted=True)
    session_summaries.refresh_stale(tx)
    return rows
