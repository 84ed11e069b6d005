"""PostgreSQL: every query the dashboard reads spans and summaries with is answered
through an index on a seeded store, and every index of those tables serves one.

(With a filter, the planner may sort the few traces an index finds rather than walk
another index in order: on this seed it does for errors of a name. The unfiltered
list, the default view, must never sort.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from storage.database import Database
from storage.retention import make_partitions, today
from storage.span_rows import SpanRow
from storage.spans import SpanStore
from storage.trace_list import Cursor, TraceFilter, page_query
from storage.trace_query import SORTS, TraceOrder
from tests.storage.rows import span_row

PROJECTS = 4
TRACES = 2000  # a project
SPANS = 5  # a trace


def _seed_rows() -> Iterator[list[SpanRow]]:
    days = [today() - timedelta(days=n) for n in range(3)]
    for project in range(PROJECTS):
        rows = []
        for trace in range(TRACES):
            day = days[trace % len(days)]
            start = (trace + 1) * 10**9
            rows += [
                span_row(
                    project=f"p{project}",
                    trace=f"{trace:032x}",
                    span=f"{span:016x}",
                    day=day.isoformat(),
                    root=span == 0,
                    start=start + span,
                    end=start + 100,
                    error=trace % 7 == 0,
                    session=f"s{trace % 50}" if trace % 3 else None,
                )
                for span in range(SPANS)
            ]
        yield rows


@pytest.fixture(scope="module")
def seeded(postgres_database: Database) -> Database:
    make_partitions(postgres_database)
    for rows in _seed_rows():
        SpanStore(postgres_database).upsert(rows, 1000)
    with postgres_database.transaction() as tx:
        tx.execute("ANALYZE spans")
        tx.execute("ANALYZE trace_summaries")
    return postgres_database


_TRACE = f"{7:032x}"
_PAGE_FILTERS = [
    TraceFilter(),
    TraceFilter(errors_only=True),
    TraceFilter(session="s1"),
    TraceFilter(name="name", errors_only=True),
]
# The reads of storage/spans.py and storage/trace_summaries.py the dashboard makes.
_READS: list[tuple[str, str, list[Any]]] = [
    *(
        (f"list page {f} after {after}", *page_query("p1", f, 51, after, postgres=True))
        for f in _PAGE_FILTERS
        for after in (None, Cursor(1000 * 10**9, "f" * 32))
    ),
    *(
        (
            f"list page by {sort}",
            *page_query("p1", TraceFilter(), 51, None, TraceOrder(sort), postgres=True),
        )
        for sort in SORTS
        if sort != "start"
    ),
    ("list page of a user", *page_query("p1", TraceFilter(user="u1"), 51, None, postgres=True)),
    (
        "a trace's spans",
        "SELECT * FROM spans WHERE project_id = ? AND trace_id = ? "
        "ORDER BY start_ns, span_id, start_day",
        ["p1", _TRACE],
    ),
    (
        "a span",
        "SELECT * FROM spans WHERE project_id = ? AND trace_id = ? AND span_id = ? "
        "ORDER BY start_day",
        ["p1", _TRACE, "0" * 16],
    ),
    (
        "outlines of a page",
        "SELECT trace_id, span_id FROM spans WHERE project_id = ? AND trace_id IN (?, ?, ?) "
        "ORDER BY trace_id, start_ns, span_id",
        ["p1", _TRACE, f"{8:032x}", f"{9:032x}"],
    ),
    (
        "a trace's summary",
        "SELECT * FROM trace_summaries WHERE project_id = ? AND trace_id = ?",
        ["p1", _TRACE],
    ),
    (
        "a session's traces",
        "SELECT * FROM trace_summaries WHERE project_id = ? AND session_id = ? "
        "ORDER BY sort_ns, trace_id LIMIT ?",
        ["p1", "s1", 100],
    ),
    (
        "the sessions",
        "SELECT session_id, COUNT(*), MIN(start_ns), MAX(end_ns) FROM trace_summaries "
        "WHERE project_id = ? AND session_id IS NOT NULL GROUP BY session_id "
        "ORDER BY MAX(sort_ns) DESC, session_id LIMIT ?",
        ["p1", 50],
    ),
]


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _plan(db: Database, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    with db.transaction() as tx:
        (answer,) = tx.query_one(f"EXPLAIN (FORMAT JSON) {sql}", params) or [None]
    document = answer if isinstance(answer, list) else json.loads(answer)
    return list(_nodes(document[0]["Plan"]))


def _holds_rows(db: Database, relation: str) -> bool:
    with db.transaction() as tx:
        return tx.query_one(f"SELECT 1 FROM {relation} LIMIT 1") is not None


@pytest.mark.parametrize(("what", "sql", "params"), _READS, ids=[r[0] for r in _READS])
def test_each_read_goes_through_an_index(
    seeded: Database, what: str, sql: str, params: list[Any]
) -> None:
    nodes = _plan(seeded, sql, params)
    scans = [node for node in nodes if "Scan" in node["Node Type"]]
    assert scans, what
    # the empty partitions of the days ahead are scanned: nothing to read
    scanned = {n["Relation Name"] for n in scans if n["Node Type"] == "Seq Scan"}
    assert not [name for name in scanned if _holds_rows(seeded, name)], (what, scanned)
    if what.startswith(f"list page {TraceFilter()}"):  # the index's order: no sort
        assert not [n for n in nodes if n["Node Type"] == "Sort"], (what, nodes)


def test_every_index_serves_a_read(seeded: Database) -> None:
    """No index of spans or summaries that no read uses (writes pay for each one); the
    primary keys are the tables' keys, used by the writes."""
    used = {
        node["Index Name"]
        for _, sql, params in _READS
        for node in _plan(seeded, sql, params)
        if "Index Name" in node
    }
    with seeded.transaction() as tx:
        indexes = tx.query(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename IN ('spans', 'trace_summaries')"
        )
    unused = {name for (name,) in indexes} - used - {"spans_pkey", "trace_summaries_pkey"}
    assert not unused, unused
