"""Workers, an erasure, retention and partitions being made, all at once on one store:
afterwards every summary and index equals a recount of the stored spans, and no
transaction failed for meeting another."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from datetime import date

import pytest

from storage.database import Database
from storage.erasure import Eraser
from storage.retention import make_partitions, remove_days_before
from storage.span_rows import SpanRow
from storage.spans import SpanStore
from storage.trace_summaries import aggregate
from tests.fuzz import ROUNDS
from tests.storage.rows import span_row
from tests.storage.test_trace_index import _indexed, assert_exact

WINDOW_MS = 1_200_000
DAYS = [date(2026, 11, day) for day in (21, 22, 23, 24)]
CUTOFF = DAYS[1]
_NS_A_DAY = 86_400 * 10**9


def _row(plan: random.Random) -> SpanRow:
    """A row of a few traces' spans, sent again and again, on the days about the cutoff:
    LLM calls, agents and plain spans, some refused by the window, some replacing."""
    day = plan.choice(DAYS)
    start = (day - date(1970, 1, 1)).days * _NS_A_DAY + plan.randrange(100)
    return _indexed(
        span_row(
            trace=plan.choice("abc"),
            span=f"{plan.randrange(1, 5):016x}",  # as long as an OTLP span id
            day=day.isoformat(),
            content=plan.choice("xyzw"),
            received_ms=plan.choice([0, WINDOW_MS + 1, 5 * WINDOW_MS]),
            root=plan.random() < 0.3,
            start=start,
            end=start + 200,
            session=plan.choice([None, "s1", "s2"]),
        )
    )


def _batch(plan: random.Random) -> list[SpanRow]:
    return [_row(plan) for _ in range(plan.randrange(1, 8))]


def _write(database: Database, plan: random.Random) -> None:
    for _ in range(8):
        SpanStore(database).upsert(_batch(plan), WINDOW_MS)


def _erase(database: Database, plan: random.Random) -> None:
    eraser = Eraser(database, "p")
    for _ in range(3):
        if plan.random() < 0.5:
            eraser.erase(eraser.trace(plan.choice("abc")))
        else:
            subject = f"t-{plan.choice('xyzw')}"
            eraser.erase(eraser.attribute("tenant", subject, plan.random() < 0.3))


def _remove_days(database: Database, plan: random.Random) -> None:
    if plan.random() < 0.5:
        make_partitions(database, DAYS[2])
    remove_days_before(database, CUTOFF)
    make_partitions(database, DAYS[3])


Work = Callable[[Database, random.Random], None]


def _at_once(database: Database, works: list[tuple[Work, random.Random]]) -> list[BaseException]:
    """Run each work in a thread of its own; what they raised."""
    failed: list[BaseException] = []

    def run(work: Work, plan: random.Random) -> None:
        try:
            work(database, plan)
        except BaseException as e:  # the caller's test fails on it
            failed.append(e)
        finally:
            database.release_thread()

    threads = [threading.Thread(target=run, args=work) for work in works]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failed


@pytest.mark.parametrize("seed", range(ROUNDS))
def test_writers_erasure_and_retention_at_once_leave_every_summary_exact(
    database: Database, seed: int
) -> None:
    """Three writers of the same traces, an erasure of traces and of a subject's spans,
    and retention with partitions made before and after it, in threads of their own:
    each transaction waits for the locks of the traces it changes (or runs again when
    the server broke a deadlock), so what is stored adds up as if they had run one
    after the other."""
    plan = random.Random(seed)
    for _ in range(3):
        SpanStore(database).upsert(_batch(plan), WINDOW_MS)
    works: list[Work] = [_write, _write, _write, _erase, _remove_days]
    plans = [random.Random(f"{seed}-{n}") for n in range(len(works))]
    failed = _at_once(database, list(zip(works, plans, strict=True)))
    assert not failed, failed
    assert_exact(database)
    with database.transaction() as tx:
        expected = sorted(tx.query(aggregate("1 = 1", database.postgres)))
        stored = sorted(tx.query("SELECT * FROM trace_summaries"))
    # all but the list's order key, the start a trace had when first stored
    assert [r[:2] + r[3:] for r in stored] == [r[:2] + r[3:] for r in expected]
