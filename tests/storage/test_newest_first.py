"""A page of the newest traces that an index filter lets through, read from the filter's
documents newest written first (storage/newest_first.py), is the page the list reads
otherwise: documents written out of their traces' order, traces whose clock ran ahead
of the store's, summaries recounted by erasure and retention, stores migrated with
documents written before their ceilings, two projects; and it stops early."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson
import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage import document_ceilings, newest_first, trace_query
from storage.database import Database
from storage.erasure import Eraser, Selection
from storage.retention import make_partitions, remove_days_before
from storage.schema import migrate
from storage.span_rows import SpanRow
from storage.spans import SpanStore
from storage.trace_list import Cursor, TraceFilter, TraceSummaries
from tests.conftest import POSTGRES_URL, migrated_postgres
from tests.fuzz import FUZZ
from tests.storage.rows import span_row

WINDOW_MS = 1_200_000
DAYS = ["2026-11-23", "2026-11-24"]
#: The clock a ceiling is capped at, in the tests: a trace starting later is ahead of it.
CLOCK = 6
FILTERS = [
    TraceFilter(words=("alpha",)),
    TraceFilter(words=("alpha", "bravo")),
    TraceFilter(attributes=(("tenant", "t1"),)),
    TraceFilter(attributes=(("tenant", None),)),
    TraceFilter(attributes=(("tenant", "t1"),), words=("bravo",)),
    TraceFilter(attributes=(("tenant", "t0"),), errors_only=True),
]


def _span(
    project: str, trace: int, span: int, said: str, tenant: str, start: int, day: str
) -> SpanRow:
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": said}]}]
    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.output.messages", "value": {"stringValue": orjson.dumps(answer).decode()}},
        {"key": "tenant", "value": {"stringValue": tenant}},
    ]
    row = span_row(
        project=project,
        trace=f"{trace:032x}",
        span=f"{span:016x}",
        day=day,
        content="y",
        start=start,
        end=start + 1,
        error=span == 2,
    )
    return row._replace(attributes=orjson.dumps(attributes).decode())


_SPAN = st.tuples(
    st.sampled_from("pq"),
    st.integers(0, 5),  # trace
    st.integers(0, 2),  # span
    st.sampled_from(["alpha", "bravo", "alpha bravo", "charlie"]),
    st.sampled_from(["t0", "t1"]),
    st.integers(0, 9),  # start: ties, and some ahead of CLOCK
    st.sampled_from(DAYS),
)


@contextmanager
def _store(until: int | None = None) -> Iterator[Database]:
    with tempfile.TemporaryDirectory() as work:
        db = Database(f"sqlite:///{work}/spans.db")
        try:
            migrate(db, until)
            yield db
        finally:
            db.close()


def _pages(db: Database, filters: TraceFilter, limit: int) -> list[list[str]]:
    """Every page of the list, newest first, read forward through its cursors."""
    summaries, pages, after = TraceSummaries(db), list[list[str]](), None
    while True:
        page = summaries.page("p", filters, limit, after, ends=False)
        pages.append([trace.trace_id for trace in page.traces])
        if page.next is None:
            return pages
        after = Cursor.decode(page.next.encode())


def _answered(monkeypatch: pytest.MonkeyPatch, name: str = "rows") -> list[bool]:
    """Whether each page was read from its filter's documents (`rows` on SQLite, not
    given up; `walked` on PostgreSQL)."""
    answers: list[bool] = []
    read = getattr(newest_first, name)

    def counted(*args: Any, **kwargs: Any) -> list[Any] | None:
        found = read(*args, **kwargs)
        answers.append(found is not None)
        return found

    monkeypatch.setattr(newest_first, name, counted)
    return answers


def _assert_same_pages(db: Database) -> None:
    """Each filter's pages, read from the documents, are those the list reads without
    them; every one was read so where it may check every document ahead of its ceiling
    and read them all; and so they are with the reads cut short (STREAMED, AHEAD)."""
    for filters in FILTERS:
        for limit in (1, 2, 50):
            with pytest.MonkeyPatch.context() as patched:
                patched.setattr(newest_first, "STREAMED", 0)  # the list's own plans
                expected = _pages(db, filters, limit)
            for streamed, ahead in ((1000, 1000), (2, 0), (4, 1)):
                with pytest.MonkeyPatch.context() as patched:
                    patched.setattr(newest_first, "STREAMED", streamed)
                    patched.setattr(newest_first, "AHEAD", ahead)
                    answers = _answered(patched)
                    assert _pages(db, filters, limit) == expected, (filters, limit, streamed)
                if streamed == 1000:
                    assert all(answers), (filters, limit)


@FUZZ
@given(
    st.lists(st.lists(_SPAN, min_size=1, max_size=8), min_size=1, max_size=5),
    st.integers(0, 63),
)
def test_pages_read_newest_first_are_the_lists_pages(
    batches: list[list[tuple[Any, ...]]], erased: int
) -> None:
    """Batches of spans of two projects (their documents written out of their traces'
    order, later spans of a trace starting earlier, some traces ahead of the clock,
    spans sent again after the window with other words); then a span erased, then the
    first day removed (each may move a trace's sort value later)."""
    with _store() as db, pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(document_ceilings, "now_ns", lambda: CLOCK)
        store = SpanStore(db)
        for at, batch in enumerate(batches):
            rows = [_span(*span)._replace(received_ms=at * 2 * WINDOW_MS) for span in batch]
            store.upsert(rows, WINDOW_MS)
        _assert_same_pages(db)
        stored = [span for batch in batches for span in batch if span[0] == "p"]
        if stored:  # one of them, on its day
            _, trace, span, *_, day = stored[erased % len(stored)]
            key = (f"{trace:032x}", f"{span:016x}", day)
            Eraser(db, "p").erase(Selection(frozenset(), frozenset([key])))
        _assert_same_pages(db)
        remove_days_before(db, date(2026, 11, 24))
        _assert_same_pages(db)


def _first_span_erased(db: Database, store: SpanStore, trace: int) -> None:
    """Trace `trace` (`_span`'s number) of two spans, its first ("charlie") of the day
    before its second ("alpha", starting at `trace + 4`), then two traces of the later
    day that start before that ("alpha", at `trace + 2` and `trace + 3`); its first span
    erased."""
    store.upsert(
        [
            _span("p", trace, 0, "charlie", "t0", 1, DAYS[0]),
            _span("p", trace, 1, "alpha", "t0", trace + 4, DAYS[1]),
        ],
        WINDOW_MS,
    )
    later = [_span("p", n, 0, "alpha", "t0", n, DAYS[1]) for n in (trace + 2, trace + 3)]
    store.upsert(later, WINDOW_MS)
    span = (f"{trace:032x}", f"{0:016x}", DAYS[0])
    Eraser(db, "p").erase(Selection(frozenset(), frozenset([span])))


def test_a_trace_whose_start_an_erasure_moves_later_is_read_at_its_new_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A trace whose first span is erased sorts by its next one: its text of another
    day, written before the other traces' and not made anew by the erasure itself,
    is made anew above them, where the read finds it first."""
    with _store() as db:
        _first_span_erased(db, SpanStore(db), 1)
        answers = _answered(monkeypatch)
        page = TraceSummaries(db).page("p", TraceFilter(words=("alpha",)), 1, ends=False)
        assert [trace.trace_id for trace in page.traces] == [f"{1:032x}"]
        assert answers == [True]


def test_a_trace_ahead_of_the_clock_is_found_below_where_the_read_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A trace dated long after the clock, written first, heads the page; the read
    stops after a few documents (that trace's ceiling is the clock, not its date)."""
    clock = [5]
    monkeypatch.setattr(document_ceilings, "now_ns", lambda: clock[0])
    with _store() as db:
        store = SpanStore(db)
        store.upsert([_span("p", 1, 0, "alpha", "t1", 10**9, DAYS[0])], WINDOW_MS)
        clock[0] = 10**6
        for batch in range(10):
            traces = range(10 + batch * 10, 20 + batch * 10)
            store.upsert([_span("p", n, 0, "alpha", "t1", n, DAYS[0]) for n in traces], WINDOW_MS)
        stops: list[object] = []
        read = newest_first._read

        def counted(*args: Any) -> Any:
            stops.append(read(*args))
            return stops[-1]

        monkeypatch.setattr(newest_first, "_read", counted)
        answers = _answered(monkeypatch)
        for filters in (TraceFilter(words=("alpha",)), TraceFilter(attributes=(("tenant", "t1"),))):
            page = TraceSummaries(db).page("p", filters, 3, ends=False)
            assert [t.trace_id for t in page.traces] == [f"{n:032x}" for n in (1, 109, 108)]
        assert answers == [True, True]
        # each read stopped at a document (its number), not after reading all 101
        assert [type(stop) for stop in stops] == [int, int]


def test_documents_written_before_their_ceilings_are_read_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A store migrated from before the ceilings (its documents without them, the
    floor the highest sort value then, as migration 26 leaves them): its documents
    count as that floor; pages over old and new documents are the list's, and a page
    of new traces alone stops above the old documents."""
    with _store() as db:
        store = SpanStore(db)
        old = [_span("p", n, 0, "alpha bravo", "t1", 20 - n, DAYS[0]) for n in range(8)]
        store.upsert(old, WINDOW_MS)
        with db.transaction() as tx:
            for table in document_ceilings.DOCUMENTS:
                tx.execute(f"UPDATE {table} SET sort_ns = NULL, ceiling = NULL")
            tx.execute("DELETE FROM document_ceiling_floor")
            floor = [
                s for s in document_ceilings.SQLITE_MIGRATION if "INTO document_ceiling_floor" in s
            ]
            tx.execute(floor[0])
        new = [_span("p", n, 0, "alpha", "t1", 100 + n, DAYS[1]) for n in range(8, 16)]
        store.upsert(new, WINDOW_MS)
        _assert_same_pages(db)
        answers = _answered(monkeypatch)
        page = TraceSummaries(db).page("p", TraceFilter(words=("alpha",)), 2, ends=False)
        assert [t.trace_id for t in page.traces] == [f"{n:032x}" for n in (15, 14)]
        page = TraceSummaries(db).page("p", TraceFilter(words=("bravo",)), 2, ends=False)
        assert [t.trace_id for t in page.traces] == [f"{n:032x}" for n in (0, 1)]
        assert answers == [True, True]


def test_postgres_walks_a_common_filters_documents_in_their_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PostgreSQL: a filter too common to drive the page walks its documents by their
    sort values; its pages are those of the walk of the summaries: traces of two
    projects, written out of their order, over two days, a later span of a trace
    starting earlier, an error in some; after a trace's first span is erased."""
    monkeypatch.setattr(trace_query, "DRIVING_MATCHES_POSTGRES", 0)  # every filter walked
    with migrated_postgres() as db:
        make_partitions(db)
        store = SpanStore(db)
        for batch in range(4):
            rows = [
                _span(project, n, span, said, f"t{n % 2}", (n * 7) % 23 - span, DAYS[span % 2])
                for n in range(batch, 24, 4)
                for project in "pq"
                for span, said in enumerate(("alpha", "bravo" if n % 3 else "alpha bravo"))
            ]
            store.upsert(rows, WINDOW_MS)
        walks = _answered(monkeypatch, "walked")
        for erase in (False, True):
            if erase:
                key = (f"{5:032x}", f"{1:016x}", DAYS[1])
                Eraser(db, "p").erase(Selection(frozenset(), frozenset([key])))
            for filters in FILTERS:
                for limit in (1, 2, 50):
                    with pytest.MonkeyPatch.context() as patched:
                        patched.setattr(newest_first, "applies", lambda *_: False)
                        expected = _pages(db, filters, limit)
                    assert _pages(db, filters, limit) == expected, (filters, limit, erase)
        # a trace whose first span is erased sorts by its text of the other day
        _first_span_erased(db, store, 101)
        page = TraceSummaries(db).page("p", TraceFilter(words=("alpha",)), 1, ends=False)
        assert [trace.trace_id for trace in page.traces] == [f"{101:032x}"]
        assert walks and all(walks)


def test_postgres_walk_orders_ties_as_the_summaries_collate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PostgreSQL whose default collation is not "C" (the texts' ids are): traces of one
    start, `Z…`, `b…` and `a…`, page in the summaries' order (`Z` last in "C", first in
    English), whichever document walk reads them."""
    if not POSTGRES_URL:
        pytest.skip("SPANGATE_TEST_POSTGRES_URL is not set: no PostgreSQL here")
    monkeypatch.setattr(trace_query, "DRIVING_MATCHES_POSTGRES", 0)
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(
            f"CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER icu "
            "ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
        )
    try:
        db = Database(urlunsplit(urlsplit(POSTGRES_URL)._replace(path=f"/{name}")))
        try:
            migrate(db)
            make_partitions(db)
            rows = [
                _span("p", 0, 0, "alpha", "t1", 7, DAYS[0])._replace(trace_id=trace)
                for trace in ("Z" * 32, "a" * 32, "b" * 32)
            ]
            SpanStore(db).upsert(rows, WINDOW_MS)
            walks = _answered(monkeypatch, "walked")
            for filters in (
                TraceFilter(words=("alpha",)),
                TraceFilter(attributes=(("tenant", "t1"),)),
            ):
                for limit in (1, 2):
                    pages = _pages(db, filters, limit)
                    assert sum(pages, []) == ["Z" * 32, "b" * 32, "a" * 32], (filters, limit)
            assert walks and all(walks)
        finally:
            db.close()
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name}")


def test_a_batchs_sort_values_are_read_by_the_summaries_key() -> None:
    """The sort values a batch's documents take are each read by the summaries' key:
    a `trace_id IN` list had SQLite read the project's whole sort index (covering), as
    many rows as the store has, for each batch."""
    with _store() as db:
        SpanStore(db).upsert(
            [_span("p", n, 0, "alpha", "t1", n, DAYS[0]) for n in range(3)], WINDOW_MS
        )
        asked: list[tuple[str, list[Any]]] = []
        with db.transaction() as tx:
            query = tx.query

            def recorded(sql: str, params: Any = ()) -> list[Any]:
                asked.append((sql, list(params)))
                return query(sql, params)

            tx.query = recorded  # type: ignore[method-assign]
            found = document_ceilings.sort_values(tx, [("p", f"{n:032x}") for n in range(3)])
            assert found == {("p", f"{n:032x}"): n for n in range(3)}
            ((sql, params),) = asked
            plan = [row[-1] for row in query(f"EXPLAIN QUERY PLAN {sql}", params)]
        assert any("USING INDEX sqlite_autoindex_trace_summaries_1" in line for line in plan), plan
