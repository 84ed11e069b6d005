"""PostgreSQL's set-based writes decide as SQLite's row-by-row ones, and two writers
decide as one, whichever commits first."""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from storage import span_copy
from storage.database import Database, Transaction
from storage.resend import Written
from storage.schema import migrate
from storage.span_rows import SpanRow
from storage.spans import SpanStore
from tests.fuzz import FUZZ
from tests.storage.rows import sends, span_row
from tests.storage.writers import second_waits_for_first

WINDOW_MS = 1000
_ROWS = sends(WINDOW_MS)
_IN_ORDER = "ORDER BY project_id, trace_id, span_id, start_day"
_SPANS = f"SELECT * FROM spans {_IN_ORDER}"
_SUMMARIES = "SELECT * FROM trace_summaries ORDER BY project_id, trace_id"


@FUZZ
@given(batches=st.lists(st.lists(_ROWS, max_size=10), max_size=4))
@example(  # two roots of one start: the trace is named by its earliest start day's
    batches=[
        [span_row(project="q", day="2026-11-24", start=0)],
        [span_row(project="q", day="2026-11-23", content="y", received_ms=1000, start=0)],
    ]
)
def test_postgres_decides_as_sqlite(
    postgres_database: Database, batches: list[list[SpanRow]]
) -> None:
    """Batch after batch (repeats within a batch, refusals, replacements, other days,
    several projects): the same rows refused, the same rows stored, the same
    summaries."""
    postgres = postgres_database
    with postgres.transaction() as tx:
        tx.execute("TRUNCATE spans, trace_summaries")
    with tempfile.TemporaryDirectory() as work:
        sqlite = Database(f"sqlite:///{work}/reference.db")
        try:
            migrate(sqlite)
            for batch in batches:
                expected = SpanStore(sqlite).upsert(batch, WINDOW_MS)
                assert SpanStore(postgres).upsert(batch, WINDOW_MS) == expected
            for query in (_SPANS, _SUMMARIES):
                with postgres.transaction() as one, sqlite.transaction() as other:
                    assert one.query(query) == other.query(query)
        finally:
            sqlite.close()


@pytest.mark.parametrize("day", ["2026-11-23", "2026-11-24"])
@pytest.mark.parametrize("trace", ["new", "stored before", "sent twice"])
def test_two_writers_of_two_versions_of_a_span_decide_as_one(
    database: Database, day: str, trace: str
) -> None:
    """Two workers store two versions of one span received within the window, at the
    same time, on the same start day or on another, in a trace new to the store, or one
    with another span stored before, or with the second's version sent twice in its
    batch: the second to get its turn waits for the first's commit, then refuses its own
    version (and counts it)."""
    stored = [("2026-11-23", "x")]
    if trace == "stored before":
        SpanStore(database).upsert([span_row(span="0", content="w")], WINDOW_MS)
        stored.insert(0, ("2026-11-23", "w"))
    first = [span_row(content="x", day="2026-11-23", received_ms=10_000)]
    second = [span_row(content="y", day=day, received_ms=10_500)]
    if trace == "sent twice":
        second *= 2
    refused = list(second_waits_for_first(database, first, second, WINDOW_MS))
    assert refused == [[], second]
    with database.transaction() as tx:
        assert tx.query(f"SELECT start_day, content_hash FROM spans {_IN_ORDER}") == stored
        assert tx.query("SELECT span_count FROM trace_summaries") == [(len(stored),)]


def test_a_writer_meeting_a_new_trace_of_another_goes_on_without_starting_again(
    postgres_database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers of other spans of one new trace at once: the second waits for the
    first's commit, then writes its spans as those of a stored trace, in the same
    transaction (writing its whole part again cost a part's COPY every time workers met
    on a trace, as they do when a trace's spans come in several requests)."""
    with postgres_database.transaction() as tx:
        tx.execute("TRUNCATE spans, trace_summaries")
    transactions = []

    def counted(tx: Transaction, batch: span_copy.Batch, window_ms: int) -> Written:
        transactions.append(batch.rows)
        return write(tx, batch, window_ms)

    write = span_copy.write
    monkeypatch.setattr(span_copy, "write", counted)
    first = [span_row(span="a", content="x"), span_row(span="b", content="x")]
    second = [span_row(span="b", content="x"), span_row(span="c", content="y", error=True)]
    assert second_waits_for_first(postgres_database, first, second, WINDOW_MS) == ([], [])
    assert transactions == [first, second]
    with postgres_database.transaction() as tx:
        assert tx.query(f"SELECT span_id FROM spans {_IN_ORDER}") == [("a",), ("b",), ("c",)]
        assert tx.query("SELECT span_count, error_count FROM trace_summaries") == [(3, 1)]


def _spans_read(tx: Transaction) -> int:
    """The span rows read by this backend, as far as its statistics have them."""
    (read,) = tx.query_one(
        "SELECT COALESCE(SUM(idx_tup_fetch + COALESCE(seq_tup_read, 0)), 0) "
        "FROM pg_stat_xact_user_tables WHERE starts_with(relname, 'spans')"
    ) or (0,)
    return int(read)


@pytest.mark.parametrize("root", [False, True])
def test_a_long_stored_trace_gaining_a_span_is_not_read_again(
    postgres_database: Database, root: bool
) -> None:
    """A span added to a stored trace of 1,000: its summary is added to, not recomputed
    from the trace's stored spans (which made a long trace, sent in many requests, cost
    its length at each of them); a root, which comes once, has them read for the
    earliest root's name."""
    with postgres_database.transaction() as tx:
        tx.execute("TRUNCATE spans, trace_summaries")
    store = SpanStore(postgres_database)
    spans = [span_row(span=f"{n:04}", root=n == 500, start=100 + n) for n in range(1000)]
    store.upsert(spans, WINDOW_MS)
    added = span_row(span="late", content="z", root=root, start=50, end=2000, error=True)
    with postgres_database.transaction() as tx:
        # the counts this backend has not yet reported (of earlier transactions) too
        before = _spans_read(tx)
        assert store.write(tx, [added], WINDOW_MS) == []
        read = _spans_read(tx) - before
    assert root or read < 10  # not the trace's 1,000
    with postgres_database.transaction() as tx:
        summary = tx.query(
            "SELECT start_ns, end_ns, span_count, error_count, root_name FROM trace_summaries"
        )
    assert summary == [(50, 2000, 1001, 1, "name z" if root else "name x")]


def test_a_part_of_many_traces_is_written(postgres_database: Database) -> None:
    """A part of 20,000 one-span traces: written, each with its summary (the traces'
    locks take no shared memory: advisory locks, one a trace, filled PostgreSQL's lock
    table, and the worker would have tried the part again forever)."""
    with postgres_database.transaction() as tx:
        tx.execute("TRUNCATE spans, trace_summaries")
    rows = [span_row(trace=f"{n:032x}") for n in range(20_000)]
    assert SpanStore(postgres_database).upsert(rows, WINDOW_MS) == []
    with postgres_database.transaction() as tx:
        assert tx.query("SELECT COUNT(*), SUM(span_count) FROM trace_summaries") == [
            (20_000, 20_000)
        ]
