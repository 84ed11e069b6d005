"""A transaction held open (a writer of the span store, a recount) while something else
starts: another writer, an erasure, partitions being made, a lock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from storage.database import Database, Transaction
from storage.span_rows import SpanRow
from storage.spans import SpanStore

_Result = TypeVar("_Result")


def waits_for(
    database: Database, hold: Callable[[Transaction], object], then: Callable[[], _Result]
) -> _Result:
    """`hold` runs in a transaction kept open; `then` runs meanwhile, and must wait for
    its commit (asserted). What `then` gave."""
    done, release = threading.Event(), threading.Event()
    gave: list[_Result] = []

    def hold_open() -> None:
        with database.transaction(immediate=True) as tx:
            hold(tx)
            done.set()
            release.wait(10)
        database.release_thread()

    def run_then() -> None:
        gave.append(then())
        database.release_thread()

    holder = threading.Thread(target=hold_open)
    holder.start()
    assert done.wait(10)
    second = threading.Thread(target=run_then)
    second.start()
    second.join(0.5)  # time to reach the lock it must wait on
    waited = second.is_alive()
    release.set()
    holder.join()
    second.join()
    assert waited, "it did not wait for the transaction held open"
    assert gave, "it failed"
    return gave[0]


def waits_for_a_writer(
    database: Database, rows: list[SpanRow], window_ms: int, then: Callable[[], _Result]
) -> tuple[list[SpanRow], _Result]:
    """A writer writes `rows` and keeps its transaction open; `then` runs meanwhile, and
    must wait for the writer's commit (asserted). The rows the writer's window refused,
    and what `then` gave."""
    store = SpanStore(database)
    refused: list[SpanRow] = []
    gave = waits_for(database, lambda tx: refused.extend(store.write(tx, rows, window_ms)), then)
    return refused, gave


def second_waits_for_first(
    database: Database, first: list[SpanRow], second: list[SpanRow], window_ms: int
) -> tuple[list[SpanRow], list[SpanRow]]:
    """The first writer writes `first` and keeps its transaction open; the second writes
    `second` meanwhile, and must wait for the first's commit (asserted). The rows each
    one's window refused."""
    store = SpanStore(database)
    return waits_for_a_writer(database, first, window_ms, lambda: store.upsert(second, window_ms))
