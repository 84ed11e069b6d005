"""A walk over the stored traces: stopped between two chunks, it goes on from there."""

from __future__ import annotations

import threading

import pytest

from storage import trace_walk
from storage.database import Database, Transaction
from storage.spans import SpanStore
from tests.storage.rows import span_row

VERSION = 1999  # a walk of no release


def test_a_walk_stopped_between_chunks_goes_on_from_there(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped (its event set) during its second chunk, a walk raises Stopped once that
    chunk is done, not recorded; the next walk does the traces after it, each once, and
    records the walk, which then does nothing."""
    monkeypatch.setattr(trace_walk, "CHUNK_TRACES", 4)
    SpanStore(database).upsert([span_row(trace=f"{n:032x}") for n in range(10)], 1000)
    stop, seen = threading.Event(), []

    def work(tx: Transaction, project_id: str, trace_id: str) -> None:
        seen.append(trace_id)
        if len(seen) == 6:
            stop.set()

    told: list[tuple[int, int]] = []
    with trace_walk.stopped_by(stop), pytest.raises(trace_walk.Stopped):
        trace_walk.walk(database, VERSION, work, progress=lambda *n: told.append(n))
    assert seen == [f"{n:032x}" for n in range(8)] and told == [(4, 10), (8, 10)]
    assert trace_walk.needed(database, VERSION)
    seen.clear()
    told.clear()
    assert trace_walk.walk(database, VERSION, work, progress=lambda *n: told.append(n)) == 2
    assert seen == [f"{n:032x}" for n in range(8, 10)] and told == [(10, 10)]
    assert not trace_walk.needed(database, VERSION)
    with database.transaction() as tx:
        assert tx.query("SELECT * FROM walk_progress") == []
    assert trace_walk.walk(database, VERSION, work) == 0
