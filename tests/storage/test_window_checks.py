"""The window's query runs only for the rows something stored could refuse
(storage/resend.py, window_checks); the store decides exactly as when it runs for all."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.database import Database
from storage.resend import (
    SQLITE_STORED_TRACES,
    STORED_TRACES_ASKED,
    sqlite_refusal,
    traces_asked,
    upsert,
    window_checks,
)
from storage.schema import migrate
from storage.span_rows import SpanRow
from storage.spans import SpanStore
from tests.fuzz import FUZZ
from tests.storage.rows import sends, span_row

WINDOW_MS = 1000


def test_rows_of_traces_not_stored_are_checked_only_after_their_span() -> None:
    """Nothing stored: only a span's later rows can be refused (by its first)."""
    rows = [
        span_row(span="1"),
        span_row(span="2"),
        span_row(span="1", content="y"),
        span_row(trace="b", span="1"),  # the same span id in another trace
        span_row(project="q", span="1"),  # the same trace and span in another project
        span_row(span="2", day="2026-11-24"),  # another start day is the same span
    ]
    assert window_checks(rows, set()) == bytes([0, 0, 1, 0, 0, 1])


def test_rows_of_stored_traces_are_all_checked() -> None:
    rows = [
        span_row(trace="a"),
        span_row(trace="b"),
        span_row(trace="a", span="2"),
        span_row(trace="b"),
    ]
    assert window_checks(rows, {"a"}) == bytes([1, 0, 1, 1])


def test_stored_traces_are_found_over_many_queries_and_projects(tmp_path: Path) -> None:
    """Traces past one query's worth, over two projects: exactly those stored in the
    project asked about are found."""
    db = Database(f"sqlite:///{tmp_path / 'spans.db'}")
    try:
        migrate(db)
        stored = [f"{n:032x}" for n in range(0, 2 * STORED_TRACES_ASKED, 2)]
        SpanStore(db).upsert([span_row(trace=trace) for trace in stored], WINDOW_MS)
        asked = [span_row(trace=f"{n:032x}") for n in range(2 * STORED_TRACES_ASKED + 5)]
        asked += [span_row(project="q", trace=stored[0]), span_row(project="q", trace="f" * 32)]
        with db.transaction() as tx:
            queries = list(traces_asked(asked))
            found = [trace for one in queries for (trace,) in tx.query(SQLITE_STORED_TRACES, one)]
        assert sorted(found) == stored  # each once
        assert len(queries) == 4  # p: 3 queries, q: 1
    finally:
        db.close()


def _every_row_checked(db: Database, rows: list[SpanRow]) -> list[SpanRow]:
    with db.transaction(immediate=True) as tx:
        skipped = tx.executemany(upsert(WINDOW_MS), rows, unless=sqlite_refusal(WINDOW_MS))
    return [rows[at] for at in skipped]


_ROWS = sends(WINDOW_MS)


@FUZZ
@given(st.lists(st.lists(_ROWS, max_size=8), max_size=4))
def test_the_store_decides_as_when_every_row_is_checked(batches: list[list[SpanRow]]) -> None:
    """Batch after batch of sends of a few spans (projects, traces, start days, contents
    and receive times mixed): the same rows refused and the same rows stored."""
    with tempfile.TemporaryDirectory() as work:
        store = SpanStore(Database(f"sqlite:///{work}/checked.db"))
        reference = Database(f"sqlite:///{work}/all.db")
        try:
            migrate(store.db)
            migrate(reference)
            for batch in batches:
                assert store.upsert(batch, WINDOW_MS) == _every_row_checked(reference, batch)
            query = "SELECT * FROM spans ORDER BY project_id, trace_id, span_id, start_day"
            with store.db.transaction() as one, reference.transaction() as other:
                assert one.query(query) == other.query(query)
        finally:
            store.db.close()
            reference.close()


#: Sends of one span within a window of the first: a change within its window, the
#: first content again (an exporter's retry), another change.
_WITHIN = [("x", 0), ("y", 300), ("x", 600), ("w", 900)]


@pytest.mark.parametrize("apart", [True, False])
def test_sends_within_a_window_leave_the_first_whatever_order_they_are_stored_in(
    database: Database, apart: bool
) -> None:
    """Every order of storing the sends (a worker taking over a stopped one's entries,
    workers side by side; `apart`: each a batch, else one batch): the first send is the
    row, as in the order received (every change refused), its summary as recounted."""
    store = SpanStore(database)
    orders = list(itertools.permutations(_WITHIN))
    for number, order in enumerate(orders):
        rows = [
            span_row(trace=f"{number:032x}", content=content, received_ms=1_000 + at)
            for content, at in order
        ]
        for batch in [[row] for row in rows] if apart else [rows]:
            store.upsert(batch, WINDOW_MS)
    with database.transaction() as tx:
        stored = tx.query("SELECT trace_id, content_hash, received_ms FROM spans")
        summaries = tx.query("SELECT trace_id, received_ms, root_name FROM trace_summaries")
    assert sorted(stored) == [(f"{n:032x}", "x", 1_000) for n in range(len(orders))]
    assert sorted(summaries) == [(f"{n:032x}", 1_000, "name x") for n in range(len(orders))]
