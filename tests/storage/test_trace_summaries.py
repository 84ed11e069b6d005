"""The per-trace summary follows what is stored, under every re-sending rule."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import proto_json
from genai.prices import Pricer
from storage import session_summaries
from storage.database import Database, Transaction
from storage.identity import IdentityStore
from storage.schema import migrate
from storage.span_copy import locked
from storage.span_rows import SpanRow, rows_of
from storage.spans import SpanStore
from storage.trace_list import Cursor, TraceFilter, TraceSummaries, TraceSummary, page_query
from storage.trace_summaries import aggregate, recount
from tests.fuzz import FUZZ
from tests.proto_json.spans import span
from tests.storage.rows import sends, span_row
from tests.storage.writers import second_waits_for_first, waits_for

WINDOW_MS = 1_200_000
TRACE = "ab" * 16


def _store(db: Database, project_id: str, received_ms: int, *spans: dict[str, Any]) -> int:
    request = proto_json.convert_spans(orjson.dumps({"spans": list(spans)})).request
    return len(SpanStore(db).upsert(rows_of(request, project_id, received_ms), WINDOW_MS))


def _summary(db: Database, project_id: str) -> TraceSummary:
    found = TraceSummaries(db).get(project_id, TRACE)
    assert found is not None
    return found


def _root(**fields: Any) -> dict[str, Any]:
    return span(traceId=TRACE, spanId="1" * 16, name="root", **fields)


def _child(**fields: Any) -> dict[str, Any]:
    return span(traceId=TRACE, spanId="2" * 16, parentSpanId="1" * 16, name="child", **fields)


def test_summary_of_a_trace_sent_in_parts(database: Database) -> None:
    """Children first, root later: the count, errors, root name and start follow."""
    project = IdentityStore(database).create_project("demo").id
    _store(
        database,
        project,
        1,
        _child(status="error", startTime="2026-11-22T10:00:01Z", endTime="2026-11-22T10:00:02Z"),
    )
    first = _summary(database, project)
    assert (first.span_count, first.error_count, first.root_name) == (1, 1, None)
    _store(
        database,
        project,
        2,
        _root(
            startTime="2026-11-22T10:00:00Z",
            endTime="2026-11-22T10:00:03Z",
            attributes={"session.id": "s1"},
        ),
    )
    after = _summary(database, project)
    assert (after.span_count, after.error_count, after.root_name) == (2, 1, "root")
    assert after.start_ns < first.start_ns and after.duration_ms == 3000.0
    assert after.session_id == "s1" and after.received_ms == 2
    assert after.sort_ns == first.sort_ns  # the list's order never moves


#: A framework's model call (`y`: an LLM call reporting 10 + 5 tokens and $0.25), the
#: provider call below it reporting the same (`y`), and one reporting nothing (`v`).
_WRAPPER = {"span": "1", "content": "y", "start": 10}
_PROVIDER_CALL = {"span": "2", "content": "y", "root": False, "parent": "1", "start": 11}
_SILENT_CALL = {"span": "2", "content": "v", "root": False, "parent": "1", "start": 11}


@pytest.mark.parametrize(
    ("sends", "calls", "usage"),
    [
        ([[_WRAPPER, _PROVIDER_CALL]], 1, (10, 5, 15, 0.25)),
        ([[_PROVIDER_CALL], [_WRAPPER]], 1, (10, 5, 15, 0.25)),
        ([[_WRAPPER], [_PROVIDER_CALL]], 1, (10, 5, 15, 0.25)),
        ([[_WRAPPER], [_PROVIDER_CALL], [{**_SILENT_CALL, "received_ms": WINDOW_MS}]], 1,
         (10, 5, 15, 0.25)),
        ([[_WRAPPER, _SILENT_CALL]], 1, (10, 5, 15, 0.25)),
        ([[_WRAPPER, {**_PROVIDER_CALL, "span": "3"}, {**_PROVIDER_CALL, "span": "4"}]], 2,
         (20, 10, 30, 0.5)),
        ([[_WRAPPER, {**_PROVIDER_CALL, "parent": "0"}]], 2, (20, 10, 30, 0.5)),
        ([[_WRAPPER, _SILENT_CALL, {**_PROVIDER_CALL, "span": "3", "parent": "2"}]], 1,
         (10, 5, 15, 0.25)),
        ([[{**_PROVIDER_CALL, "span": "3", "parent": "2"}], [_SILENT_CALL], [_WRAPPER]], 1,
         (10, 5, 15, 0.25)),
    ],
    ids=["together", "provider-call-first", "wrapper-first", "replaced-silent", "silent-child",
         "two-children", "siblings", "silent-middle", "silent-middle-bottom-up"],
)  # fmt: skip
def test_a_model_call_wrapping_a_provider_call_is_counted_once(
    database: Database, sends: list[list[dict[str, Any]]], calls: int, usage: tuple[object, ...]
) -> None:
    """A framework's LLM span over the provider call its instrumentation records (both
    reporting the usage): the trace counts the provider call's usage and one LLM call,
    whichever arrives first; a wrapper's own usage counts when no call below reports any
    (also once the call below is replaced by one that reports none; a silent call between
    passes the usage of the call below it up), and two calls that are siblings both
    count."""
    project = IdentityStore(database).create_project("wrapped").id
    for rows in sends:
        SpanStore(database).upsert(
            [span_row(project=project, trace=TRACE, **row) for row in rows], WINDOW_MS
        )
    found = _summary(database, project)
    assert (found.llm_calls, found.usage) == (calls, usage)


def test_traces_stored_counting_a_wrapper_are_counted_anew(database: Database) -> None:
    """A trace stored by a build that counted a framework's model call beside the provider
    call below it: the walk makes its summary and its session's count the usage once, and
    leaves a trace with no call under a call as it is; run again, it does nothing."""
    from spangate.cli_support import upgrade_stored_spans
    from storage.genai_upgrade import COUNTED_ONCE, count_once

    project = IdentityStore(database).create_project("stored-twice").id
    rows = [
        span_row(project=project, trace=TRACE, session="s1", **_WRAPPER),
        span_row(project=project, trace=TRACE, session="s1", **_PROVIDER_CALL),
        span_row(project=project, trace="cd" * 16, content="y", session="s1"),
    ]
    SpanStore(database).upsert(rows, WINDOW_MS)
    upgrade_stored_spans(database, Pricer())  # every walk done and recorded
    with database.transaction() as tx:  # as the build before counted them
        tx.execute(
            "UPDATE trace_summaries SET llm_calls = 2, input_tokens = 20, output_tokens = 10, "
            "total_tokens = 30, cost_usd = 0.5 WHERE trace_id = ?",
            (TRACE,),
        )
        tx.execute("UPDATE trace_summaries SET llm_calls = 7 WHERE trace_id <> ?", (TRACE,))
        tx.execute("DELETE FROM schema_migrations WHERE version = ?", (COUNTED_ONCE,))
        session_summaries.refresh_stale(tx)
        assert tx.query("SELECT input_tokens, cost_usd FROM session_summaries") == [(30, 0.75)]
    upgrade_stored_spans(database, Pricer())  # as a worker starts: every walk, in order
    found = _summary(database, project)
    assert (found.llm_calls, found.usage) == (1, (10, 5, 15, 0.25))
    with database.transaction() as tx:
        assert tx.query("SELECT llm_calls FROM trace_summaries WHERE trace_id <> ?", (TRACE,)) == [
            (7,)
        ]
        assert tx.query("SELECT trace_count, input_tokens, cost_usd FROM session_summaries") == [
            (2, 20, 0.5)
        ]
    assert count_once(database, Pricer()) == 0


@pytest.mark.parametrize("walked", [False, True])
def test_names_of_any_script_are_found_in_any_case(
    database: Database, walked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`q` (the root's name) and `span_name` (any span's) find a name of letters
    outside ASCII in any case, any part of it, on either store (SQLite's own LOWER
    folds ASCII only; a Σ folded apart from its word must still match it); a span name
    by its few names' tokens or (`walked`) by a query of every name, each trace of the
    start index checked."""
    from storage import index_filters, trace_query

    if walked:
        monkeypatch.setattr(index_filters, "NAMES_MATCHED", 0)
        monkeypatch.setattr(trace_query, "DRIVING_MATCHES", 0)
        monkeypatch.setattr(trace_query, "DRIVING_MATCHES_POSTGRES", 0)
    root = span(traceId=TRACE, spanId="1" * 16, name="Été à Paris")
    child = span(traceId=TRACE, spanId="2" * 16, parentSpanId="1" * 16,
                 name="Überprüfung ΟΔΟΣ ΑΘΗΝΑΣ Straße 100 \u212a")  # fmt: skip
    _store(database, "p", 1, root, child)

    def found(**filters: str) -> int:
        return len(TraceSummaries(database).page("p", TraceFilter(**filters), 10).traces)

    for name in ("été", "ÉTÉ À", "été à paris", "PARIS", "Été", "é"):
        assert found(name=name) == found(span_name=name) == 1, name
    for name in ("ÜBERPRÜFUNG", "überprüfung ο", "ΔΟΣ Α", "οδοσ", "ΑΘΗΝΑΣ", "STRAßE", "100 k"):
        assert found(span_name=name) == 1, name
        assert found(name=name) == 0, name
    assert found(name="ete") == found(span_name="uberpr") == found(name="%") == 0
    assert found(span_name="a_h") == found(span_name="ö") == 0


def test_refused_and_replaced_sends(database: Database) -> None:
    """Refused within the window: no change. Replaced after it: the new values. Another
    start day after it: a second stored span, counted."""
    project = IdentityStore(database).create_project("demo").id
    _store(database, project, 1_000, _root(status="ok"))
    assert _store(database, project, 2_000, _root(status="error")) == 1
    assert _summary(database, project).error_count == 0
    later = 1_000 + WINDOW_MS + 1
    assert _store(database, project, later, _root(status="error")) == 0
    replaced = _summary(database, project)
    assert (replaced.span_count, replaced.error_count) == (1, 1)
    _store(
        database,
        project,
        later + WINDOW_MS + 1,
        _root(status="ok", startTime="2026-11-23T10:00:00Z"),
    )
    assert (_summary(database, project).span_count, _summary(database, project).error_count) == (
        2,
        1,
    )


def test_upgrade_fills_summaries_of_stored_spans(database_url: str) -> None:
    """A database migrated with spans already stored gets their summaries."""
    db = Database(database_url)
    try:
        migrate(db, until=4)  # the schema as it was before summaries
        with db.transaction() as tx:
            tx.execute("INSERT INTO organizations VALUES ('o', 'default', 'then')")
            tx.execute("INSERT INTO projects VALUES ('p', 'demo', 'o', 'then')")
            request = proto_json.convert_spans(
                orjson.dumps({"spans": [_root(), _child(status="error")]})
            ).request
            for row in rows_of(request, "p", 5):
                tx.execute(f"INSERT INTO spans VALUES ({', '.join('?' * 20)})", tuple(row)[:20])
        migrate(db)
        found = _summary(db, "p")
        assert (found.span_count, found.error_count, found.root_name) == (2, 1, "root")
        traces = TraceSummaries(db).page("p", TraceFilter(), 10).traces
        assert [t.trace_id for t in traces] == [TRACE]
    finally:
        db.close()


_ROWS = sends(WINDOW_MS)
_RECOMPUTED = aggregate("1 = 1", postgres=False)  # the aggregate over every stored span


@FUZZ
@given(st.lists(st.lists(_ROWS, max_size=10), max_size=4))
def test_summaries_equal_a_recount_of_the_stored_spans(batches: list[list[SpanRow]]) -> None:
    """Batch after batch (repeats, refusals, replacements, other days, new and stored
    traces mixed): every summary equals an aggregate of the stored rows, but for the
    list's order key, which keeps the start the trace had when first stored."""
    with tempfile.TemporaryDirectory() as work:
        db = Database(f"sqlite:///{work}/spans.db")
        try:
            migrate(db)
            first_start: dict[tuple[str, str], int] = {}
            for batch in batches:
                SpanStore(db).upsert(batch, WINDOW_MS)
                with db.transaction() as tx:
                    expected = sorted(tx.query(_RECOMPUTED))
                    stored = sorted(tx.query("SELECT * FROM trace_summaries"))
                for row in expected:
                    first_start.setdefault((row[0], row[1]), row[3])
                assert [r[:2] + r[3:] for r in stored] == [r[:2] + r[3:] for r in expected]
                assert [r[2] for r in stored] == [first_start[r[0], r[1]] for r in stored]
        finally:
            db.close()


def test_a_writer_waits_for_the_other_writer_of_its_trace(database: Database) -> None:
    """Two workers write spans of one trace at once: the one that commits second counts
    the first one's spans too (it waits for the trace's lock, then reads the spans)."""
    project = IdentityStore(database).create_project("demo").id
    first = [span_row(project=project, trace=TRACE, span=f"{n:016x}") for n in range(3)]
    second = [span_row(project=project, trace=TRACE, span=f"{n:016x}") for n in range(3, 5)]
    second_waits_for_first(database, first, second, WINDOW_MS)
    assert _summary(database, project).span_count == 5


def test_a_summary_recounted_while_another_waits_for_its_lock_is_locked_as_recounted(
    postgres_database: Database,
) -> None:
    """A trace's summary is recounted (an erasure, retention) while another transaction
    waits to lock it: that one then holds it as recounted. A summary deleted and
    inserted anew would be skipped (its row gone), and the other transaction would go
    on without the trace's lock."""
    db = postgres_database
    project = IdentityStore(db).create_project("recounted").id
    _store(db, project, 1, _root(), _child())
    trace = [(project, TRACE)]

    def recount_held(tx: Transaction) -> None:
        locked(tx, trace)
        recount(tx, project, {TRACE})

    def lock() -> set[tuple[str, str]]:
        with db.transaction() as tx:
            return locked(tx, trace)

    assert waits_for(db, recount_held, lock) == set(trace)
    assert _summary(db, project).span_count == 2


@pytest.mark.parametrize(
    "filters",
    [
        TraceFilter(),
        TraceFilter(errors_only=True),
        TraceFilter(session="s1"),
        TraceFilter(name="plan", errors_only=True),
    ],
)
def test_list_pages_are_read_through_an_index(tmp_path: Path, filters: TraceFilter) -> None:
    """Every page of the list (any filter, first or later) walks an index of the
    summaries in order: no scan of the table, no sort."""
    db = Database(f"sqlite:///{tmp_path / 'spans.db'}")
    try:
        migrate(db)
        for after in (None, Cursor(10, "a" * 32)):
            sql, params = page_query("p", filters, 51, after)
            with db.transaction() as tx:
                plan = " / ".join(row[-1] for row in tx.query(f"EXPLAIN QUERY PLAN {sql}", params))
            assert "USING INDEX trace_summaries_" in plan, plan
            assert "TEMP B-TREE" not in plan, plan
    finally:
        db.close()


def test_a_listed_traces_input_and_output_spans_are_sought_by_their_key(tmp_path: Path) -> None:
    """The spans that give listed traces' input and output, and their texts' previews,
    are read through the tables' whole keys, in one query (SQLite seeks a row-value IN
    list by the project alone)."""
    from storage.trace_list import _PREVIEWS, _SPAN, _STORED_PREVIEWS, span_query

    db = Database(f"sqlite:///{tmp_path / 'spans.db'}")
    try:
        migrate(db)
        whole_key = "(project_id=? AND trace_id=? AND span_id=? AND start_day=?)"
        keys = [("t1", "s1", "d1"), ("t2", "s2", "d2")]
        for select, tables in (
            (_SPAN, ("spans",)),
            (_STORED_PREVIEWS, ("spans", "x")),
            (_PREVIEWS, ("x",)),
        ):
            sql, params = span_query("p", keys, False, select)
            with db.transaction() as tx:
                plan = [row[-1] for row in tx.query(f"EXPLAIN QUERY PLAN {sql}", params)]
            for table in tables:
                assert any(
                    step.startswith(f"SEARCH {table} ") and whole_key in step for step in plan
                ), plan
    finally:
        db.close()
