"""Two writers of the span store at once, the second starting while the first holds its
transaction open."""

from __future__ import annotations

import threading

from storage.database import Database
from storage.span_rows import SpanRow
from storage.spans import SpanStore


def second_waits_for_first(
    database: Database, first: list[SpanRow], second: list[SpanRow], window_ms: int
) -> tuple[list[SpanRow], list[SpanRow]]:
    """The first writer writes `first` and keeps its transaction open; the second writes
    `second` meanwhile, and must wait for the first's commit (asserted). The rows each
    one's window refused."""
    store = SpanStore(database)
    written, release = threading.Event(), threading.Event()
    refused: dict[str, list[SpanRow]] = {}

    def hold_a_batch_open() -> None:
        with database.transaction(immediate=True) as tx:
            refused["first"] = store.write(tx, first, window_ms)
            written.set()
            release.wait(10)
        database.release_thread()

    def write_another() -> None:
        refused["second"] = store.upsert(second, window_ms)
        database.release_thread()

    holder = threading.Thread(target=hold_a_batch_open)
    holder.start()
    assert written.wait(10)
    writer = threading.Thread(target=write_another)
    writer.start()
    writer.join(0.5)  # time to reach the lock it must wait on
    waited = writer.is_alive()
    release.set()
    holder.join()
    writer.join()
    assert waited, "the second writer did not wait for the first"
    return refused["first"], refused["second"]
