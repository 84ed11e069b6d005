"""The worker against a real Redis and a real database: delivery and the re-sending rules."""

from __future__ import annotations

import gc
import itertools
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis

import proto_json
from spangate import cli
from spanqueue.layout import (
    GROUP,
    STREAMS_KEY,
    QueuedRequest,
    attempts_key,
    dead_letter_key,
    depth_key,
    lag_key,
    refused_counter,
    stream_key,
)
from storage.checkpoints import BackgroundCheckpoints
from storage.database import Database
from storage.errors import StoreUnavailable
from storage.span_rows import SpanRow
from storage.spans import Prepared, SpanStore
from storage.trace_facets import Facets
from storage.trace_list import TraceFilter, TraceSummaries
from tests.proto_json.spans import span
from worker import steps
from worker.loop import (
    PARTS_AHEAD,
    POSTGRES_WRITERS,
    SWITCH_INTERVAL_S,
    Worker,
    WorkerStats,
)

WINDOW_S = 60
DAY_NS = 86_400 * 10**9


class Queue:
    """A project's stream, filled the way the collector fills it."""

    def __init__(self, client: redis.Redis, project_id: str) -> None:
        self.client = client
        self.project_id = project_id

    def send(self, *spans: dict[str, Any], received_ms: int | None = None) -> None:
        conversion = proto_json.convert_spans(orjson.dumps({"spans": list(spans)}))
        assert conversion.errors == ()
        item = QueuedRequest(
            self.project_id,
            "spans",
            received_ms or int(time.time() * 1000),
            conversion.accepted,
            orjson.dumps(conversion.request),
        )
        self.add(item.fields())

    def add(self, fields: dict[bytes, bytes]) -> None:
        """One entry, added as a producer adds it: the stream registered, then XADD."""
        self.client.sadd(STREAMS_KEY, stream_key(self.project_id))
        self.client.xadd(stream_key(self.project_id), fields)  # type: ignore[arg-type]

    def length(self) -> int:
        return int(self.client.xlen(stream_key(self.project_id)))


@pytest.fixture
def queue(client: redis.Redis, project_id: str) -> Queue:
    return Queue(client, project_id)


@pytest.fixture
def store(database: Database) -> SpanStore:
    return SpanStore(database)


def drain(client: redis.Redis, store: SpanStore, **options: Any) -> Worker:
    worker = Worker(client, store, WINDOW_S, block_ms=10, **options)
    worker.run(burst=True)
    return worker


def _drained(client: redis.Redis, store: SpanStore, queue: Queue) -> tuple[str, int]:
    """Drain the queue: the name of the span of `span()`'s id as stored, and how many
    sends the worker refused."""
    worker = drain(client, store)
    [stored] = store.trace(queue.project_id, span()["traceId"])
    return stored["name"], worker.stats.spans_refused


def test_queued_spans_are_stored_acknowledged_and_trimmed(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """Every queued span is stored; entries are acknowledged and deleted from the stream."""
    queue.send(span(), span(spanId="1" * 16, kind="llm_call", attributes={"m": "x"}))
    queue.send(span(spanId="2" * 16))
    worker = drain(client, store)
    assert store.count(queue.project_id) == 3
    assert (worker.stats.entries, worker.stats.spans_written) == (2, 3)
    assert queue.length() == 0
    assert client.xpending(stream_key(queue.project_id), GROUP)["pending"] == 0
    stored = {s["spanId"]: s for s in store.trace(queue.project_id, span()["traceId"])}
    assert stored["1" * 16]["kind"] == "llm_call"


def test_same_span_same_content_is_one_span(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """Sending the same span twice (or redelivering it) makes no second span."""
    queue.send(span())
    queue.send(span())
    drain(client, store)
    queue.send(span(), received_ms=int(time.time() * 1000) - 10 * WINDOW_S * 1000)
    drain(client, store)
    assert store.count(queue.project_id) == 1
    assert int(client.get(refused_counter(queue.project_id)) or 0) == 0


def test_changed_span_within_window_is_refused_first_kept(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """Different content within the window is refused (counted); the first send stays."""
    queue.send(span(name="first"))
    queue.send(span(name="second"))
    worker = drain(client, store)
    [stored] = store.trace(queue.project_id, span()["traceId"])
    assert stored["name"] == "first"
    assert worker.stats.spans_refused == 1
    assert int(client.get(refused_counter(queue.project_id)) or 0) == 1


def test_changed_span_after_window_same_day_replaces(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """After the window, a changed span starting the same UTC day replaces the stored one."""
    long_ago = int(time.time() * 1000) - 2 * WINDOW_S * 1000
    queue.send(span(name="first"), received_ms=long_ago)
    drain(client, store)
    queue.send(span(name="changed", startTime="2026-11-22T23:59:59Z"))
    drain(client, store)
    [stored] = store.trace(queue.project_id, span()["traceId"])
    assert stored["name"] == "changed"


def test_changed_span_after_window_other_day_is_a_second_span(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """After the window, a changed span starting on another UTC day is stored beside it."""
    long_ago = int(time.time() * 1000) - 2 * WINDOW_S * 1000
    queue.send(span(name="first"), received_ms=long_ago)
    drain(client, store)
    queue.send(span(name="moved", startTime="2026-11-23T00:00:00Z"))
    drain(client, store)
    names = sorted(s["name"] for s in store.trace(queue.project_id, span()["traceId"]))
    assert names == ["first", "moved"]


def test_two_workers_agree_on_the_window(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """Two workers taking different entries of one span agree: one stored, one refused."""
    queue.send(span(name="a"))
    queue.send(span(name="b"))
    one = Worker(client, store, WINDOW_S, consumer="one", batch_entries=1, block_ms=10)
    two = Worker(client, store, WINDOW_S, consumer="two", batch_entries=1, block_ms=10)
    assert one.run_once(block=False) == 1 and two.run_once(block=False) == 1
    assert store.count(queue.project_id) == 1
    assert one.stats.spans_refused + two.stats.spans_refused == 1


def test_a_backlog_does_not_shorten_the_window(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """The window is measured on receive times: a change received within it is refused
    even when the worker only gets to it after the window has passed."""
    received = int(time.time() * 1000) - 10 * WINDOW_S * 1000
    queue.send(span(name="first"), received_ms=received)
    queue.send(span(name="changed"), received_ms=received + WINDOW_S * 1000 - 1)
    assert _drained(client, store, queue) == ("first", 1)


def test_an_older_send_delivered_late_does_not_replace_a_newer_one(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """A send received a window or more before the stored one (a stale redelivery) never
    replaces it: it is refused, as an older send than the one that replaced it."""
    now = int(time.time() * 1000)
    queue.send(span(name="newer"), received_ms=now)
    drain(client, store)
    queue.send(span(name="older"), received_ms=now - 10 * WINDOW_S * 1000)
    assert _drained(client, store, queue) == ("newer", 1)


@pytest.mark.parametrize("late_by_ms", [1, WINDOW_S * 1000 - 1])
def test_the_first_send_stored_after_a_change_sent_within_its_window_wins(
    client: redis.Redis, queue: Queue, store: SpanStore, late_by_ms: int
) -> None:
    """Sends stored out of the order they were received in (a worker taking over a
    stopped one's entries writes them after later ones): the first send still opens the
    window, and replaces the change sent within it, which reached the store first."""
    now = int(time.time() * 1000)
    queue.send(span(name="changed"), received_ms=now)
    queue.send(span(name="first"), received_ms=now - late_by_ms)
    assert _drained(client, store, queue) == ("first", 0)
    queue.send(span(name="changed again"), received_ms=now - late_by_ms + 1)
    assert _drained(client, store, queue) == ("first", 1)


def test_a_first_send_stored_after_a_change_of_another_day_is_kept_beside_it(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """The first send, reaching the store after a change of another start day sent
    within its window: both rows are kept (the change is not taken back)."""
    now = int(time.time() * 1000)
    queue.send(span(name="moved", startTime="2026-11-23T00:00:00Z"), received_ms=now)
    queue.send(span(name="first"), received_ms=now - 1000)
    worker = drain(client, store)
    names = sorted(s["name"] for s in store.trace(queue.project_id, span()["traceId"]))
    assert (names, worker.stats.spans_refused) == (["first", "moved"], 0)


def test_the_window_of_a_send_stored_on_another_day_holds_for_every_day(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """A changed span stored after the window as a second row (another start day) opens a
    new window: a change back to the first day within it is refused, after it replaces."""
    now = int(time.time() * 1000)
    queue.send(span(name="first"), received_ms=now - 3 * WINDOW_S * 1000)
    queue.send(span(name="moved", startTime="2026-11-23T00:00:00Z"), received_ms=now)
    queue.send(span(name="back"), received_ms=now + 1000)
    worker = drain(client, store)
    names = sorted(s["name"] for s in store.trace(queue.project_id, span()["traceId"]))
    assert (names, worker.stats.spans_refused) == (["first", "moved"], 1)
    queue.send(span(name="back"), received_ms=now + WINDOW_S * 1000)
    drain(client, store)
    names = sorted(s["name"] for s in store.trace(queue.project_id, span()["traceId"]))
    assert names == ["back", "moved"]


def test_a_span_twice_in_one_batch_is_judged_against_its_first_send(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """Two versions of a span in one entry: the first is stored, the second refused; the
    same span twice with the same content is one span."""
    queue.send(span(name="one"), span(name="two"), span(spanId="3" * 16), span(spanId="3" * 16))
    worker = drain(client, store)
    stored = {s["spanId"]: s["name"] for s in store.trace(queue.project_id, span()["traceId"])}
    assert stored == {span()["spanId"]: "one", "3" * 16: span()["name"]}
    assert (worker.stats.spans_written, worker.stats.spans_refused) == (3, 1)
    assert int(client.get(refused_counter(queue.project_id)) or 0) == 1


def test_the_window_keeps_no_key_per_span_in_redis(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """The stored rows are the window: Redis holds nothing per span once entries are done
    (the ingestion record's lags are a list per project, of one lag per request)."""
    queue.send(*[span(spanId=f"{i + 1:016x}") for i in range(50)])
    drain(client, store)
    keys = {key.decode() for key in client.scan_iter(match=f"spangate:{{{queue.project_id}}}:*")}
    lags = lag_key(queue.project_id)
    assert keys <= {stream_key(queue.project_id), depth_key(queue.project_id), lags}
    assert client.llen(lags) == 1


def test_stream_deleted_and_written_again_is_read_again(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """A stream deleted after the worker found it (its consumer group with it), then
    written again: the worker creates the group again instead of failing on NOGROUP."""
    queue.send(span())
    worker = Worker(client, store, WINDOW_S, block_ms=10)
    worker.run(burst=True)
    client.delete(stream_key(queue.project_id))
    queue.send(span(spanId="2" * 16))
    worker.run(burst=True)
    assert store.count(queue.project_id) == 2 and queue.length() == 0


def test_a_registered_key_that_is_no_stream_is_skipped(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """Another type of key in a registered stream's place is logged and skipped; the
    other streams are still drained."""
    other = f"spangate:{{prj_{uuid.uuid4().hex[:12]}}}:spans"
    client.set(other, "not a stream")
    client.sadd(STREAMS_KEY, other)
    try:
        queue.send(span())
        drain(client, store)
    finally:
        client.delete(other)
        client.srem(STREAMS_KEY, other)
    assert store.count(queue.project_id) == 1


def test_dead_worker_entries_are_taken_over(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """Entries read by a worker that died before acknowledging are claimed and stored."""
    queue.send(span())
    dead = Worker(client, store, WINDOW_S, consumer="dead", block_ms=10)
    assert len(dead.queue.read_new(dead.queue.discover(force=True), block=False)) == 1  # dies
    assert store.count(queue.project_id) == 0
    drain(client, store, claim_idle_ms=0)
    assert store.count(queue.project_id) == 1 and queue.length() == 0


def _sent_in_three(queue: Queue) -> None:
    """A span, a change of it within its window, and the first content again: in the
    order received, the change is refused and the first send stays."""
    now = int(time.time() * 1000)
    queue.send(span(name="first"), received_ms=now - 2000)
    queue.send(span(name="changed"), received_ms=now - 1000)
    queue.send(span(name="first"), received_ms=now)


def _ended_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.Popen(["true"])  # noqa: S607
    child.wait()
    return child.pid


def _reads(client: redis.Redis, store: SpanStore, consumer: str, entries: int) -> None:
    """A worker named `consumer` reads `entries` new entries, one at a time, and is
    killed before writing them."""
    held = Worker(client, store, WINDOW_S, consumer=consumer, block_ms=10, batch_entries=1)
    streams = held.queue.discover(force=True)
    for _ in range(entries):
        assert len(held.queue.read_new(streams, block=False)) == 1


def test_a_worker_started_again_takes_up_its_own_entries_before_new_ones(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """A worker killed holding entries, started again under the same name (`--consumer`)
    with newer entries queued: it writes its own in queue order before the newer ones,
    as when it had not stopped (the change refused, the first send kept)."""
    queue.send(span(spanId="2" * 16))
    _sent_in_three(queue)
    _reads(client, store, "same", 3)  # the other span, the first send and the change
    again = drain(client, store, consumer="same", batch_entries=1)
    stored = {s["spanId"]: s["name"] for s in store.trace(queue.project_id, span()["traceId"])}
    assert stored[span()["spanId"]] == "first" and again.stats.spans_refused == 1


def test_a_dead_worker_of_this_host_is_taken_over_before_new_entries(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """A worker of this host that is gone (its default name, host and process id, names
    no running process) left entries pending: the worker started after it takes them
    over at once, and writes them before the newer entries, in queue order (the change
    refused, the first send kept); a live worker's are left to it."""
    alive = f"{socket.gethostname()}-{os.getpid()}"
    queue.send(span(spanId="2" * 16))
    _reads(client, store, alive, 1)
    _sent_in_three(queue)
    _reads(client, store, f"{socket.gethostname()}-{_ended_pid()}", 2)
    taking = drain(client, store, consumer="taking", batch_entries=1)
    stored = {s["spanId"]: s["name"] for s in store.trace(queue.project_id, span()["traceId"])}
    assert (stored, taking.stats.spans_refused) == ({span()["spanId"]: "first"}, 1)
    pending = client.xpending(stream_key(queue.project_id), GROUP)
    assert [(c["name"].decode(), c["pending"]) for c in pending["consumers"]] == [(alive, 1)]


def test_undecodable_entry_is_dead_lettered_after_attempts(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """An entry that keeps failing goes to the dead-letter stream with its reason."""
    queue.add({b"body": b"not ours"})
    queue.send(span())
    worker = Worker(client, store, WINDOW_S, block_ms=10, claim_idle_ms=0, max_attempts=3)
    for _ in range(5):
        worker.run_once(block=False)
    assert store.count(queue.project_id) == 1
    [(_, dead)] = client.xrange(dead_letter_key(queue.project_id))
    assert dead[b"reason"].startswith(b"undecodable entry")
    assert b"after 3 attempts" in dead[b"reason"]
    assert queue.length() == 0 and not client.exists(attempts_key(queue.project_id))


def test_database_down_does_not_count_against_entries(
    client: redis.Redis, queue: Queue, store: SpanStore, tmp_path: Path
) -> None:
    """While the database is unreachable nothing is acknowledged or counted; then it is stored."""
    queue.send(span())
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    down = Worker(
        client,
        SpanStore(Database(f"sqlite:///{blocker / 'x.db'}")),
        WINDOW_S,
        consumer="w",
        block_ms=10,
        claim_idle_ms=0,
    )
    for _ in range(3):
        with pytest.raises(StoreUnavailable):
            down.run_once(block=False)
    assert queue.length() == 1 and not client.exists(attempts_key(queue.project_id))
    drain(client, store, claim_idle_ms=0)
    assert store.count(queue.project_id) == 1 and queue.length() == 0


def test_entry_the_database_cannot_hold_is_dead_lettered_not_fatal(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """An entry whose rows the database refuses (a time past 64 bits, written by hand:
    the gateway refuses such spans) is retried, then dead-lettered; the rest is stored."""
    queue.add(_unstorable(queue.project_id))
    queue.send(span())
    worker = Worker(client, store, WINDOW_S, block_ms=10, claim_idle_ms=0, max_attempts=2)
    for _ in range(4):
        worker.run_once(block=False)
    assert store.count(queue.project_id) == 1
    [(_, dead)] = client.xrange(dead_letter_key(queue.project_id))
    assert b"rows refused by the database" in dead[b"reason"]


def test_texts_a_store_cannot_hold_whole_are_stored_as_it_can_and_found(
    client: redis.Redis, queue: Queue, store: SpanStore, database: Database
) -> None:
    """A NUL character in a span's name, session id or attribute key, a name, a key, a
    session and a user id of 10,000 characters (past what a PostgreSQL index entry
    holds): the request's every span is stored, none dead-lettered, and the filters
    find them by what was sent."""
    long = uuid.uuid4().hex * 313  # 10,016 characters that compress badly
    queue.send(
        span(name="plan " + long, attributes={"session.id": "s-" + long,
                                              "enduser.id": "e-" + long, "k" + long: "v"}),
        span(spanId="1" * 16, name="a\x00b", attributes={"session.id": "x\x00y", "k\x00": 1}),
        span(spanId="2" * 16, name="clean"),
        span(traceId="c" * 32, name="chat", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "m" + long,
            "gen_ai.conversation.id": "c-" + long, "user.id": long}),
    )  # fmt: skip
    drain(client, store)
    assert store.count(queue.project_id) == 4
    assert not client.exists(dead_letter_key(queue.project_id))
    stored = {s["spanId"]: s for s in store.trace(queue.project_id, span()["traceId"])}
    assert stored["1" * 16]["name"] == "a\ufffdb"  # the one character no store refuses
    assert stored[span()["spanId"]]["name"] == "plan " + long  # whole in the span itself
    summaries = TraceSummaries(database)
    for filters, trace in (
        (TraceFilter(span_name="plan " + long[:100]), span()["traceId"]),
        (TraceFilter(span_name="plan " + long), span()["traceId"]),
        (TraceFilter(attributes=(("k" + long, "v"),)), span()["traceId"]),
        (TraceFilter(attributes=(("k" + long, None),)), span()["traceId"]),
        (TraceFilter(session="s-" + long), span()["traceId"]),
        (TraceFilter(user=long), "c" * 32),
        (TraceFilter(user="e-" + long), span()["traceId"]),  # a span of no LLM convention
        (TraceFilter(session="c-" + long), "c" * 32),  # the view's conversation id
        (TraceFilter(model="m" + long), "c" * 32),
    ):
        found = summaries.page(queue.project_id, filters, 10, ends=False).traces
        assert [t.trace_id for t in found] == [trace], filters


def _unstorable(project_id: str) -> dict[bytes, bytes]:
    """An entry whose rows the database refuses: a start time past 64 bits."""
    request = proto_json.convert_spans(orjson.dumps({"spans": [span()]})).request
    request["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(
        spanId="1" * 16, startTimeUnixNano=str(2**64 - 1)
    )
    item = QueuedRequest(project_id, "otlp", int(time.time() * 1000), 1, orjson.dumps(request))
    return item.fields()


def test_a_part_that_fails_is_sorted_out_before_the_next_part_is_written(
    client: redis.Redis, queue: Queue, store: SpanStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A part is acknowledged while the next one is written, but a part whose write failed
    is written entry by entry first: queue order holds for the window."""
    monkeypatch.setattr("worker.loop.PART_SPANS", 2)
    monkeypatch.setattr("worker.loop.POSTGRES_PART_SPANS", 2)
    queue.send(span(name="first"))
    queue.add(_unstorable(queue.project_id))  # breaks the first part
    queue.send(span(name="second"), span(spanId="3" * 16))  # the second part
    worker = drain(client, store, max_attempts=1)
    stored = {s["spanId"]: s["name"] for s in store.trace(queue.project_id, span()["traceId"])}
    assert stored[span()["spanId"]] == "first" and len(stored) == 2
    assert (worker.stats.spans_refused, worker.stats.dead_lettered) == (1, 1)
    assert queue.length() == 0


def test_parts_are_decoded_while_the_writer_is_behind_up_to_parts_ahead(
    client: redis.Redis,
    queue: Queue,
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the first part's write is held up, the main thread decodes and hands over
    PARTS_AHEAD parts more, then waits: a slow write does not stop decoding at once,
    and no more than that is decoded ahead."""
    monkeypatch.setattr("worker.loop.PART_SPANS", 1)  # a part per entry
    monkeypatch.setattr("worker.loop.POSTGRES_PART_SPANS", 1)
    monkeypatch.setattr("worker.loop.PARTS_AHEAD", 3)
    decoded: list[Any] = []
    decode = steps.decode

    def counted(part: Any, pricer: Any, tokens: bool) -> Any:
        decoded.append(part)
        return decode(part, pricer, tokens)

    monkeypatch.setattr("worker.steps.decode", counted)
    for i in range(6):
        queue.send(span(spanId=f"{i + 1:016x}"))
    store = _HeldFirst(database, lambda: len(decoded), until=1 + 3)
    drain(client, store)
    assert store.decoded_meanwhile == 1 + 3
    assert store.count(queue.project_id) == 6 and queue.length() == 0


class _HeldFirst(SpanStore):
    """A span store whose first write waits until the main thread has decoded `until`
    parts, and a moment longer; it notes how many parts were decoded by then."""

    def __init__(self, db: Database, decoded: Any, until: int) -> None:
        super().__init__(db)
        self.decoded, self.until = decoded, until
        self.decoded_meanwhile: int | None = None

    def upsert(self, rows: list[Any], window_ms: int) -> list[Any]:
        if self.decoded_meanwhile is None:
            deadline = time.monotonic() + 10
            while self.decoded() < self.until and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)  # would one more part be decoded?
            self.decoded_meanwhile = self.decoded()
        return super().upsert(rows, window_ms)


class _StopAfter(SpanStore):
    """A span store that sets `stop` after `writes` batches (and fails after that, if asked)."""

    def __init__(self, db: Database, stop: Any, writes: int, then_fail: bool = False) -> None:
        super().__init__(db)
        self.stop, self.writes, self.then_fail = stop, writes, then_fail

    def upsert(self, rows: list[Any], window_ms: int) -> list[Any]:
        if self.writes == 0 and self.then_fail:
            self.stop.set()
            raise StoreUnavailable("the database went away")
        refused = super().upsert(rows, window_ms)
        self.writes -= 1
        if self.writes == 0 and not self.then_fail:
            self.stop.set()
        return refused


def test_batches_read_ahead_are_each_stored_once(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """`run` asks for the next batch while writing one: every entry once, none left pending."""
    for i in range(7):
        queue.send(span(spanId=f"{i + 1:016x}"))
    worker = drain(client, store, batch_entries=2)
    assert store.count(queue.project_id) == 7 and worker.stats.entries == 7
    assert queue.length() == 0
    assert client.xpending(stream_key(queue.project_id), GROUP)["pending"] == 0


def test_stopping_finishes_the_batches_in_hand(
    client: redis.Redis, queue: Queue, database: Database
) -> None:
    """Stopped once its first batch is written, the worker stores the batches it had in
    hand and leaves nothing pending (unread entries stay in the stream for the next
    worker). The stop is seen once the main thread next waits: by then it may have handed
    PARTS_AHEAD batches more to the writer and read one more ahead; each is stored."""
    for i in range(40):
        queue.send(span(spanId=f"{i + 1:016x}"))
    stop = threading.Event()
    store = _StopAfter(database, stop, writes=1)
    Worker(client, store, WINDOW_S, block_ms=10, batch_entries=2).run(stop)
    stored = store.count(queue.project_id)
    assert 2 <= stored <= 2 * (1 + PARTS_AHEAD + 1) and stored % 2 == 0
    assert client.xpending(stream_key(queue.project_id), GROUP)["pending"] == 0
    assert queue.length() == 40 - stored


def test_database_lost_with_a_batch_read_ahead(
    client: redis.Redis, queue: Queue, database: Database
) -> None:
    """The database fails while a batch was read ahead: both batches stay pending and are
    taken over later; every span is stored once. (The failure is seen once the main
    thread waits for the writer thread: by then it may have read one entry more.)"""
    for i in range(7):
        queue.send(span(spanId=f"{i + 1:016x}"))
    stop = threading.Event()
    failing = _StopAfter(database, stop, writes=1, then_fail=True)
    Worker(client, failing, WINDOW_S, block_ms=10, batch_entries=2, consumer="a").run(stop)
    assert failing.count(queue.project_id) == 2
    assert client.xpending(stream_key(queue.project_id), GROUP)["pending"] in (4, 5)
    store = SpanStore(database)
    drain(client, store, claim_idle_ms=0, consumer="b")
    assert store.count(queue.project_id) == 7 and queue.length() == 0


class _Recording(SpanStore):
    """A span store noting the thread of each write and its connection's checkpoint
    threshold."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.writes: list[tuple[str, int]] = []
        self.sizes: list[list[Any]] = []

    def upsert(self, rows: list[Any], window_ms: int) -> list[Any]:
        threshold = 0
        if self.db.sqlite_path is not None:
            with self.db.transaction() as tx:
                threshold = int((tx.query_one("PRAGMA wal_autocheckpoint") or (0,))[0])
        self.writes.append((threading.current_thread().name, threshold))
        self.sizes.append(rows.rows if isinstance(rows, Prepared) else rows)
        return super().upsert(rows, window_ms)


def test_run_writes_on_the_writer_thread_which_leaves_checkpoints_to_theirs(
    client: redis.Redis, queue: Queue, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within `run` batches are written on threads of their own (the next one decodes
    meanwhile), each started with its connection before the first write: one on SQLite,
    whose connection leaves the log's checkpoints to their thread; POSTGRES_WRITERS on
    PostgreSQL. The spans of one trace are written on one of them."""
    for i in range(5):
        queue.send(span(spanId=f"{i + 1:016x}"))
    store = _Recording(database)
    pinged: list[tuple[str, int]] = []
    ping = database.ping
    monkeypatch.setattr(
        database,
        "ping",
        lambda: pinged.append((threading.current_thread().name, len(store.writes))) or ping(),
    )
    drain(client, store, batch_entries=2)
    assert store.count(queue.project_id) == 5
    assert len(store.writes) == 3
    assert all(name == store.writes[0][0] for name, _ in store.writes)
    assert store.writes[0][0].startswith("spangate-writer")
    writers = POSTGRES_WRITERS if database.postgres else 1
    assert [count for _, count in pinged] == [0] * writers
    assert len({name for name, _ in pinged}) == writers
    assert store.writes[0][0] in {name for name, _ in pinged}
    if database.sqlite_path is not None:
        assert all(threshold > 1000 for _, threshold in store.writes)


def _traces_by_writer() -> list[str]:
    """A trace id for each PostgreSQL writer, in writer order (as the worker splits)."""
    ids: dict[int, str] = {}
    for n in itertools.count(1):
        ids.setdefault(hash(f"{n:032x}") % POSTGRES_WRITERS, f"{n:032x}")
        if len(ids) == POSTGRES_WRITERS:
            return [ids[writer] for writer in range(POSTGRES_WRITERS)]
    raise AssertionError("unreachable")


def test_on_postgres_a_part_is_split_between_writers_by_trace(
    client: redis.Redis, queue: Queue, postgres_database: Database
) -> None:
    """Each writer writes the rows of its traces of every part, in queue order (a later
    send of a span is judged after the first); an entry is acknowledged once every
    writer wrote its share, and one a writer refuses fails as a whole."""
    traces = _traces_by_writer()
    queue.send(*(span(traceId=trace, spanId="1" * 16, name="first") for trace in traces))
    unstorable = _unstorable(queue.project_id)
    request = orjson.loads(unstorable[b"body"])
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["traceId"] = traces[-1]  # refused by the last writer, the rest written
    spans.append({**spans[0], "traceId": traces[0], "startTimeUnixNano": "1795341600000000000"})
    queue.add({**unstorable, b"body": orjson.dumps(request), b"spans": b"2"})
    queue.send(*(span(traceId=trace, spanId="1" * 16, name="changed") for trace in traces))
    store = _Recording(postgres_database)
    worker = drain(client, store, max_attempts=1)
    assert len({name for name, _ in store.writes}) == POSTGRES_WRITERS
    for trace in traces:  # the changed sends came within the window: refused
        [stored] = [s for s in store.trace(queue.project_id, trace) if s["spanId"] == "1" * 16]
        assert stored["name"] == "first"
    assert worker.stats.dead_lettered == 1 and worker.stats.entries == 2
    [(_, dead)] = client.xrange(dead_letter_key(queue.project_id))
    assert b"rows refused by the database" in dead[b"reason"]
    assert queue.length() == 0


@pytest.mark.parametrize("store_database", ["database", "postgres_database"])
def test_a_part_is_prepared_on_the_decoding_thread(
    client: redis.Redis, queue: Queue, store_database: str, request: pytest.FixtureRequest
) -> None:
    """What a write needs of its rows that reads nothing stored (on PostgreSQL their
    traces and their summaries as new traces'; what they add to the indexes that find a
    trace, from the documents of tokens the C row builder made) is computed by the thread
    that decodes, and handed to the writers with the rows: their transactions hold
    statements only."""
    database: Database = request.getfixturevalue(store_database)
    preparing: list[tuple[str, bool]] = []
    written: list[Any] = []

    class Noting(SpanStore):
        def prepared(self, rows: list[SpanRow], facets: list[Facets] | None = None) -> Prepared:
            if rows:  # a writer's share may hold none of a part's rows
                preparing.append((threading.current_thread().name, facets is not None))
            return super().prepared(rows, facets)

        def upsert(self, rows: list[SpanRow] | Prepared, window_ms: int) -> list[SpanRow]:
            written.append(rows)
            return super().upsert(rows, window_ms)

    for i in range(4):
        queue.send(span(traceId=f"{i + 1:032x}", spanId=f"{i + 1:016x}"))
    drain(client, Noting(database), batch_entries=2)
    assert preparing and {name for name, _ in preparing} == {threading.current_thread().name}
    # the documents come with the rows: the C row builder's, else made on this thread
    assert all(given for _, given in preparing)
    assert written and all(isinstance(rows, Prepared) for rows in written)
    assert all((rows.copy is not None) == database.postgres for rows in written)
    assert all(rows.found is not None for rows in written)
    assert sum(len(rows.rows) for rows in written) == 4
    assert SpanStore(database).count(queue.project_id) == 4


def test_on_sqlite_each_write_may_wait_for_the_checkpoint_to_start_the_log_over(
    client: redis.Redis, queue: Queue, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer asks the checkpoints before each part (they hold it when the log is
    past its mark) and tells them after; PostgreSQL has neither."""
    for i in range(5):
        queue.send(span(spanId=f"{i + 1:016x}"))
    calls: list[str] = []
    store = _Recording(database)
    upsert = store.upsert
    monkeypatch.setattr(store, "upsert", lambda *a: calls.append("write") or upsert(*a))
    for name in ("before_write", "committed"):
        method = getattr(BackgroundCheckpoints, name)
        monkeypatch.setattr(
            BackgroundCheckpoints,
            name,
            lambda self, method=method, name=name: calls.append(name) or method(self),
        )
    drain(client, store, batch_entries=2)
    expected = ["before_write", "write", "committed"] * 3
    assert calls == (expected if database.sqlite_path is not None else ["write"] * 3)


def test_a_running_worker_acknowledges_its_last_batch_when_the_queue_goes_quiet(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """The batch on the writer thread is acknowledged without waiting for another one."""
    stop = threading.Event()
    worker = Worker(client, store, WINDOW_S, block_ms=50, batch_entries=2)
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    try:
        for i in range(3):
            queue.send(span(spanId=f"{i + 1:016x}"))
        deadline = time.monotonic() + 10
        while queue.length() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert queue.length() == 0 and store.count(queue.project_id) == 3
        assert client.xpending(stream_key(queue.project_id), GROUP)["pending"] == 0
    finally:
        stop.set()
        thread.join()


def test_a_batch_is_written_in_parts_of_about_part_spans(
    client: redis.Redis, queue: Queue, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries read at once are written in parts of at least PART_SPANS spans, each
    acknowledged once written: one part is decoded while the one before it is written.
    With nothing being written, the first part is of a fifth of that: the writer starts
    sooner."""
    monkeypatch.setattr("worker.loop.PART_SPANS", 10)
    monkeypatch.setattr("worker.loop.POSTGRES_PART_SPANS", 10)
    monkeypatch.setattr("spanqueue.consumer.FIRST_READ_ENTRIES", 20)
    queue.send(span(spanId="1" * 16), span(spanId="2" * 16))
    queue.add({b"project": b"garbage"})  # an entry that does not decode, in a part
    for i in range(3, 15):
        queue.send(span(spanId=f"{i:016x}"))
    store = _Recording(database)
    worker = drain(client, store, batch_entries=20, max_attempts=1)
    assert store.count(queue.project_id) == 14 and worker.stats.entries == 13
    assert [len(rows) for rows in store.sizes] == [2, 10, 2]  # 2, then 0+1+...+1, then 1+1
    assert worker.stats.dead_lettered == 1 and queue.length() == 0


@pytest.mark.parametrize(("batch_entries", "read"), [(50, [2, 3, 3, 1]), (2, [2, 2, 2, 2, 1])])
def test_reads_ask_for_about_read_spans_of_entries_the_size_of_the_last(
    client: redis.Redis,
    queue: Queue,
    store: SpanStore,
    monkeypatch: pytest.MonkeyPatch,
    batch_entries: int,
    read: list[int],
) -> None:
    """A first read asks for FIRST_READ_ENTRIES entries; each later one for about
    READ_SPANS spans in entries the size of those read last, at most batch_entries."""
    monkeypatch.setattr("spanqueue.consumer.FIRST_READ_ENTRIES", 2)
    monkeypatch.setattr("spanqueue.consumer.READ_SPANS", 6)
    for i in range(9):  # 2-span entries: 3 of them to a read
        queue.send(span(spanId=f"{2 * i + 1:016x}"), span(spanId=f"{2 * i + 2:016x}"))
    worker = Worker(client, store, WINDOW_S, block_ms=10, batch_entries=batch_entries)
    assert [worker.run_once(block=False) for _ in read] == read
    assert worker.run_once(block=False) == 0 and store.count(queue.project_id) == 18


def test_the_worker_command_shortens_the_gil_switch_interval_and_stops_the_gc(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While `spangate worker` runs its worker, a thread waiting for the GIL asks for it
    after SWITCH_INTERVAL_S (the writer thread waits less for the decoding main thread)
    and the cyclic garbage collector is off; afterwards, as before."""
    seen: list[tuple[float, bool]] = []

    def run(self: Worker, stop: Any = None, burst: bool = False) -> WorkerStats:
        seen.append((sys.getswitchinterval(), gc.isenabled()))
        return self.stats

    monkeypatch.setattr(Worker, "run", run)
    monkeypatch.setenv("SPANGATE_REDIS_URL", redis_url)
    monkeypatch.setenv("SPANGATE_DATABASE_URL", f"sqlite:///{tmp_path / 'db.sqlite'}")
    before = sys.getswitchinterval(), gc.isenabled()
    assert cli.main(["worker", "--burst"]) == 0
    assert seen == [(pytest.approx(SWITCH_INTERVAL_S), False)] and SWITCH_INTERVAL_S < before[0]
    assert (sys.getswitchinterval(), gc.isenabled()) == before


def test_with_the_gc_off_a_batch_leaves_no_cycles_behind(
    client: redis.Redis, queue: Queue, store: SpanStore
) -> None:
    """With the collector off (as the worker command runs), the worker collects after
    each batch: garbage cycles made while storing do not pile up (those of the parts
    still being written when the last batch was collected may stay)."""
    for i in range(10):
        queue.send(span(spanId=f"{i + 1:016x}"))

    class Cycle:
        def __init__(self) -> None:
            self.me = self

    class Littering(SpanStore):
        def upsert(self, rows: list[Any], window_ms: int) -> list[Any]:
            Cycle()
            return super().upsert(rows, window_ms)

    gc.collect()
    gc.disable()
    try:
        drain(client, Littering(store.db), batch_entries=1)
        assert len([o for o in gc.get_objects() if type(o) is Cycle]) <= PARTS_AHEAD + 1
    finally:
        gc.enable()
