"""Day partitions made ahead (PostgreSQL) and old days removed (both databases)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date, timedelta
from functools import partial
from pathlib import Path

import orjson
import pytest

from storage import retention
from storage.database import Database
from storage.erasure import Eraser, Selection
from storage.errors import StoreUnavailable
from storage.retention import AHEAD_DAYS, make_partitions, partition_name, remove_days_before
from storage.retention import today as utc_today
from storage.span_rows import SpanRow
from storage.spans import SpanStore
from storage.trace_list import TraceFilter, TraceSummaries
from tests.storage.rows import span_row
from tests.storage.test_trace_index import _every_end, _model_call, _span_id, assert_exact
from tests.storage.writers import waits_for_a_writer

WINDOW_MS = 1000
_NS_A_DAY = 86_400 * 10**9


def _on(day: date, trace: str, span: str, root: bool = True) -> SpanRow:
    start = (day - date(1970, 1, 1)).days * _NS_A_DAY + 3600 * 10**9
    return span_row(
        trace=trace, span=span, day=day.isoformat(), start=start, end=start + 10, root=root
    )


def _partition_of(db: Database, trace: str) -> list[str]:
    with db.transaction() as tx:
        rows = tx.query(
            "SELECT tableoid::regclass::text FROM spans WHERE trace_id = ? ORDER BY 1", (trace,)
        )
    return [name.split(".")[-1] for (name,) in rows]


def _summaries(db: Database) -> dict[str, tuple[int, int]]:
    with db.transaction() as tx:
        rows = tx.query("SELECT trace_id, span_count, start_ns FROM trace_summaries")
    return {trace: (count, start) for trace, count, start in rows}


def test_partitions_are_made_ahead_once_and_take_their_rows_from_the_default(
    database: Database,
) -> None:
    """Yesterday to AHEAD_DAYS after today get a partition each, once; a row stored
    before its day had one moves into it."""
    today = utc_today()
    tomorrow = today + timedelta(days=1)
    SpanStore(database).upsert([_on(tomorrow, "t", "1")], WINDOW_MS)
    made = make_partitions(database)
    if not database.postgres:
        assert made == []
        return
    expected = [partition_name(today + timedelta(days=n)) for n in range(-1, AHEAD_DAYS + 1)]
    assert made == expected
    assert make_partitions(database) == []
    assert _partition_of(database, "t") == [partition_name(tomorrow)]
    SpanStore(database).upsert([_on(today - timedelta(days=400), "old", "1")], WINDOW_MS)
    assert _partition_of(database, "old") == ["spans_default"]


def test_a_row_moved_into_its_days_partition_keeps_its_text(database: Database) -> None:
    """An LLM span stored before its day had a partition (a clock ahead) moves into it
    with its previews and words."""
    ahead = utc_today() + timedelta(days=AHEAD_DAYS + 3)
    said = [{"role": "user", "parts": [{"type": "text", "content": "Victor whiskey"}]}]
    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": orjson.dumps(said).decode()}},
    ]
    call = _on(ahead, "t", "1" * 16)._replace(
        attributes=orjson.dumps(attributes).decode(), llm_type="llm"
    )
    SpanStore(database).upsert([call], WINDOW_MS)
    make_partitions(database, ahead)
    SpanStore(database).upsert([_on(ahead, "u", "2" * 16)], WINDOW_MS)  # a batch after

    traces = TraceSummaries(database).page("p", TraceFilter(words=("victor",)), 10).traces
    assert [(t.trace_id, t.input) for t in traces] == [("t", "Victor whiskey")]
    assert_exact(database)
    if database.postgres:
        assert _partition_of(database, "t") == [partition_name(ahead)]


def test_partitions_are_made_once_a_writer_of_their_day_commits(
    postgres_database: Database,
) -> None:
    """A worker holds a row of a day that has no partition yet (in the default
    partition), uncommitted, while the partitions are made: making them waits for the
    commit, then moves the row into its day's partition (the check of the default
    partition that attaching a partition makes would otherwise find it there)."""
    make_partitions(postgres_database)
    later = utc_today() + timedelta(days=AHEAD_DAYS + 1)  # the first day made next
    _, made = waits_for_a_writer(
        postgres_database,
        [_on(later, "t", "1")],
        WINDOW_MS,
        lambda: make_partitions(postgres_database, later + timedelta(days=1)),
    )
    assert made == [partition_name(later + timedelta(days=n)) for n in range(AHEAD_DAYS + 2)]
    assert _partition_of(postgres_database, "t") == [partition_name(later)]
    assert_exact(postgres_database)


def test_making_a_partition_gives_up_while_a_reader_holds_the_span_table(
    postgres_database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Making a partition waits for the span table a while, every writer and reader
    queued behind it, then gives up (the worker tries again a minute later); once the
    reader is done, it is made."""
    monkeypatch.setattr(retention, "PARTITION_LOCK_TIMEOUT_MS", 100)
    day = utc_today() + timedelta(days=40)
    with postgres_database.transaction() as tx:
        tx.query("SELECT 1 FROM spans LIMIT 1")  # a long read of the trace pages
        with pytest.raises(StoreUnavailable, match="lock timeout"):
            make_partitions(postgres_database, day)
    assert partition_name(day) in make_partitions(postgres_database, day)


@pytest.mark.parametrize("then", ["retention", "erasure"])
def test_a_trace_recounted_after_a_writer_took_its_dropped_rows_notes_gives_its_new_ends(
    postgres_database: Database, then: str
) -> None:
    """Retention drops an old day's partition, which held a trace's first model call; a
    worker then adds a span to the trace (and makes its indexes anew, from the notes of
    the dropped rows, by the summary from before the drop); then the trace is recounted,
    by retention's next step or by an erasure: the call that is now its first gives the
    input, though it was stored without previews (neither its batch's first nor last)."""
    db, trace = postgres_database, f"dropped-{then}"
    old = date(2025, 3, 10)
    kept = (old + timedelta(days=2)).isoformat()
    make_partitions(db, old)  # the old days' partitions, as a worker made them
    store = SpanStore(db)

    def call(span: str, start: int, asked: str, day: str) -> SpanRow:
        row = _model_call(span, (date.fromisoformat(day) - date(1970, 1, 1)).days * _NS_A_DAY
                          + start, asked, day)  # fmt: skip
        return row._replace(trace_id=trace)

    store.upsert([call("1", 10, "one", old.isoformat())], WINDOW_MS)
    store.upsert([call("2", 100, "two", kept), call("3", 150, "three", kept),
                  call("4", 200, "four", kept)], WINDOW_MS)  # fmt: skip
    # the second call re-sent, later, as a plain span: the third is its day's first call
    plain = span_row(trace=trace, span=_span_id("2"), day=kept, root=False, received_ms=10**9)
    store.upsert([plain], WINDOW_MS)
    db.retried(partial(retention._drop_partitions, cutoff=old + timedelta(days=1)))
    store.upsert([span_row(trace=trace, span=_span_id("9"), day=kept, root=False)], WINDOW_MS)
    if then == "retention":
        remove_days_before(db, old + timedelta(days=1))
    else:  # an erasure of a span already gone recounts the trace
        gone = Selection(frozenset(), frozenset({(trace, _span_id("1"), old.isoformat())}))
        Eraser(db, "p").erase(gone)
    assert _every_end(db)[trace] == ("three", "FOUR")
    assert_exact(db)


def test_old_days_are_removed_and_their_traces_summaries_recomputed(database: Database) -> None:
    """Spans that started before the cutoff go (whole partitions on PostgreSQL, rows of
    the default partition too); a trace with nothing left loses its summary, one with
    spans on both sides keeps the count of what is left."""
    today = utc_today()
    old, cutoff = today - timedelta(days=40), today - timedelta(days=30)
    make_partitions(database, old)  # the old days have partitions, as a worker made them
    rows = [
        _on(old, "gone", "1"),
        _on(old - timedelta(days=300), "gone", "2", root=False),  # in the default partition
        _on(old, "both", "1"),
        _on(today, "both", "2", root=False),
        _on(today, "kept", "1"),
    ]
    SpanStore(database).upsert(rows, WINDOW_MS)
    before = _summaries(database)
    removed = remove_days_before(database, cutoff)
    store = SpanStore(database)
    assert [s["spanId"] for s in store.trace("p", "both")] == ["2"]
    assert store.trace("p", "gone") == []
    after = _summaries(database)
    assert set(after) == {"both", "kept"}
    assert after["kept"] == before["kept"]
    assert after["both"] == (1, rows[3].start_ns)
    assert removed.traces == 2
    if database.postgres:
        assert removed.partitions == [
            partition_name(old + timedelta(days=n)) for n in range(-1, AHEAD_DAYS + 1)
        ]
        assert removed.rows == 1  # the row in the default partition
    else:
        assert (removed.partitions, removed.rows) == ([], 3)


def test_the_command_says_what_it_keeps_and_removes_only_when_told(
    database_url: str, database: Database, tmp_path: Path
) -> None:
    """`spangate retention --days N` names the first day kept; with --yes it removes."""
    today = utc_today()
    SpanStore(database).upsert(
        [_on(today - timedelta(days=10), "old", "1"), _on(today, "new", "1")], WINDOW_MS
    )
    env = {**os.environ, "SPANGATE_DATABASE_URL": database_url}

    def run(*args: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-m", "spangate.cli", "retention", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        answer: dict[str, object] = orjson.loads(done.stdout)
        return answer

    keep_from = (today - timedelta(days=5)).isoformat()
    assert run("--days", "5") == {"keepFrom": keep_from, "removed": None}
    assert set(_summaries(database)) == {"old", "new"}
    answer = run("--days", "5", "--yes")
    assert answer["keepFrom"] == keep_from
    assert answer["removed"] == {
        "partitions": [],
        "rows": 1,
        "tracesRecounted": 1,
    }
    assert set(_summaries(database)) == {"new"}


def test_the_command_refuses_a_retention_of_no_days(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spangate.cli", "retention", "--days", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2
    assert "must be 1 to 36,500" in done.stderr and "Traceback" not in done.stderr
