"""The span table's days: partitions made ahead (PostgreSQL), and old days removed.

On PostgreSQL the span rows are partitioned by their UTC start day (schema migration
10): the worker makes the partitions of yesterday, today and the next AHEAD_DAYS days
(`make_partitions`, at start and every hour), and rows of any other day go to the
default partition. Removing the days before a cutoff (`remove_days_before`, the command
`spangate retention --days N`) then drops whole partitions, whatever their size, and
deletes the few rows of those days that sit in the default partition. SQLite has no
partitions: the rows are deleted.

Either way the summaries of the traces that had a span on a removed day are recomputed
from what is left (gone when nothing is), under the traces' locks, so the store keeps
its rule that every trace with a stored span has a summary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from storage import session_summaries, trace_index, trace_summaries, trace_texts
from storage.database import Database, Transaction
from storage.span_copy import locked
from storage.trace_index import stale_partition

AHEAD_DAYS = 7
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
    made = []
    for offset in range(AHEAD_DAYS + 2):
        wanted = first + timedelta(days=offset)
        with db.transaction() as tx:
            tx.query_one("SELECT pg_advisory_xact_lock(?)", (_PARTITIONS_LOCK,))
            if wanted in _day_partitions(tx):
                continue
            _make_partition(tx, wanted)
        made.append(partition_name(wanted))
    return made


def _make_partition(tx: Transaction, day: date) -> None:
    name, low, high = partition_name(day), day.isoformat(), (day + timedelta(days=1)).isoformat()
    tx.execute(f"CREATE TABLE {name} (LIKE spans INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
    # the rows moved keep their previews, which their delete's trigger deletes (it notes
    # them stale too: their traces' indexes are made anew from them, as they were)
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
    summaries of the traces that had one."""
    dropped = []
    if db.postgres:
        with db.transaction() as tx:
            tx.query_one("SELECT pg_advisory_xact_lock(?)", (_PARTITIONS_LOCK,))
            for day, name in sorted(_day_partitions(tx).items()):
                if day < cutoff:
                    stale_partition(tx, name)
                    tx.execute(f"DROP TABLE {name}")
                    dropped.append(name)
    with db.transaction() as tx:
        rows = tx.execute("DELETE FROM spans WHERE start_day < ?", (cutoff.isoformat(),))
        # a dropped partition fired no trigger: its rows' texts go here
        tx.execute("DELETE FROM span_texts WHERE start_day < ?", (cutoff.isoformat(),))
        tx.execute("DELETE FROM trace_texts WHERE start_day < ?", (cutoff.isoformat(),))
    cutoff_ns = (cutoff - date(1970, 1, 1)).days * 86_400 * 10**9
    with db.transaction() as tx:
        touched = tx.query(
            "SELECT project_id, trace_id FROM trace_summaries WHERE start_ns < ? "
            "ORDER BY project_id, trace_id",
            (cutoff_ns,),
        )
    for at in range(0, len(touched), _TRACES_A_TRANSACTION):
        traces = touched[at : at + _TRACES_A_TRANSACTION]
        with db.transaction(immediate=True) as tx:
            if db.postgres:
                locked(tx, traces)
            for project, trace in traces:
                trace_summaries.recount(tx, project, {trace})
            # the first chunk's rebuild takes every trace noted stale, before the later
            # chunks' summaries are recounted: each chunk's ends are given theirs here
            # (a trace with a row removed has a summary that started before the cutoff)
            trace_index.rebuild_stale(tx, ends=False)
            trace_texts.give_ends(tx, traces)
            session_summaries.refresh_stale(tx)
    return Removed(dropped, rows, len(touched))
