"""The queue worker: project streams in, span store rows out, at least once, crash-safe.

Each stream has one consumer group. An entry is acknowledged (XACK) and deleted (XDEL,
so Redis memory stays flat) only after the database committed its spans; a worker
killed mid-batch leaves its entries pending, and any worker takes them over (XAUTOCLAIM)
once they have been idle for `claim_idle_ms`. The re-sending rules make a redelivery
harmless; the re-sending window is applied by the span store as it writes
(storage/resend.py). An entry that fails on its own (it does not decode, or the database
refuses its rows) is retried up to `max_attempts` times, then moved with the reason to
the project's dead-letter stream. A database that is down is not the entry's fault: the
worker waits and retries without counting.

Within `run`, the entries read at once are written in parts of about PART_SPANS spans
on a writer thread while the next parts are decoded (the database layer lets go of the
GIL while SQLite writes), and acknowledged once written. Parts are written one at a
time, in order; a part the database refuses is written again entry by entry, on the
writer thread, before any part after it.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import redis

from storage.checkpoints import BackgroundCheckpoints
from storage.errors import StoreError, StoreUnavailable
from storage.resend import refused_counter
from storage.span_rows import SpanRow, rows_of_json
from storage.spans import SpanStore
from storage.streams import STREAMS_KEY, QueuedRequest, depth_key, project_of_stream

log = logging.getLogger("spangate.worker")
GROUP = "spangate-workers"
UNAVAILABLE_BACKOFF_S = 1.0
#: Spans per write: big enough that a transaction's own cost does not count, small
#: enough that one part is decoded while the one before it is written.
PART_SPANS = 5000
#: Parts handed to the writer thread and not yet acknowledged, besides the one being
#: decoded. One left the writer idle whenever a part took longer to decode than the one
#: before it took to write (writes take 18-45 ms, by the checkpoints they wait for).
PARTS_AHEAD = 2
#: Spans a read of new entries asks for, about: entries per read follow the size of the
#: entries last read (up to `batch_entries`), so large entries are read a few at a time
#: (fifty 1,000-span entries were 40 MB parsed before the first span was decoded) and
#: small ones many at a time (a read of 50 1-span entries made a 50-span transaction).
#: A first read, and a claim of stale entries, of sizes not known, ask for
#: FIRST_READ_ENTRIES.
READ_SPANS = 2 * PART_SPANS
FIRST_READ_ENTRIES = 10
#: The GIL's switch interval while `run` runs. The writer thread needs the GIL briefly
#: a few times a part (between its SQLite calls), while the main thread holds it through
#: whole entries (a 1,000-span entry is milliseconds of C). A thread waiting for the GIL
#: asks for it only after the switch interval, 5 ms by default: the writer sat idle.
SWITCH_INTERVAL_S = 0.0005
DISCOVER_EVERY_S = 2.0


def dead_letter_key(project_id: str) -> str:
    """Where a project's entries go when they keep failing."""
    return f"spangate:{{{project_id}}}:dead"


def attempts_key(project_id: str) -> str:
    """Failed attempts per entry id of a project's stream."""
    return f"spangate:{{{project_id}}}:attempts"


@dataclass
class WorkerStats:
    """What a worker did (cumulative)."""

    entries: int = 0
    spans_written: int = 0
    spans_refused: int = 0
    dead_lettered: int = 0


class _ReadAhead:
    """An XREADGROUP of new entries sent on a connection of its own, answer not read yet."""

    def __init__(self, worker: Worker, streams: list[str]) -> None:
        self._pool = worker.client.connection_pool
        self._connection: Any = self._pool.get_connection()
        send: Any = self._connection.send_command
        try:
            send(
                "XREADGROUP", "GROUP", GROUP, worker.consumer, "COUNT", worker.read_count,
                "STREAMS", *streams, *[">"] * len(streams),
            )  # fmt: skip
        except BaseException:
            self.close()
            raise

    def result(self) -> list[Entry]:
        """The entries read (none when the streams had nothing new)."""
        try:
            reply: Any = self._connection.read_response()
        except BaseException:
            self.close()
            raise
        self._pool.release(self._connection)
        self._connection = None
        # a map of streams (how redis-py's parsers hand over this reply) or a list of pairs
        by_stream = reply.items() if isinstance(reply, dict) else reply or []
        return [
            Entry(stream.decode(), entry_id, dict(zip(fields[::2], fields[1::2], strict=True)))
            for stream, messages in by_stream
            for entry_id, fields in messages
        ]

    def close(self) -> None:
        """Drop the connection (its answer unread); the entries stay pending."""
        if self._connection is not None:
            self._connection.disconnect()
            self._pool.release(self._connection)
            self._connection = None


@dataclass(frozen=True, slots=True)
class Entry:
    """One stream entry as read."""

    stream: str
    id: bytes
    fields: dict[bytes, bytes]


@dataclass
class _Decoded:
    entries: list[Entry] = field(default_factory=list)
    rows: list[list[SpanRow]] = field(default_factory=list)
    poison: list[tuple[Entry, str]] = field(default_factory=list)


@dataclass
class _Written:
    """What became of a part: the entries written, their spans, the rows the window
    refused; and the entries whose rows the database refused, with the reason."""

    entries: list[Entry] = field(default_factory=list)
    spans: int = 0
    refused: list[SpanRow] = field(default_factory=list)
    failed: list[tuple[Entry, str]] = field(default_factory=list)


def _decode(entries: list[Entry]) -> _Decoded:
    """Rows of each entry; the entries that do not decode, with the reason."""
    decoded = _Decoded()
    for entry in entries:
        try:
            item = QueuedRequest.from_fields(entry.fields)
            rows = rows_of_json(item.body, item.project_id, item.received_ms)
        except (KeyError, ValueError, TypeError, AttributeError, IndexError) as e:
            decoded.poison.append((entry, f"undecodable entry: {type(e).__name__}: {e}"))
            continue
        decoded.entries.append(entry)
        decoded.rows.append(rows)
    return decoded


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic GC during a batch: its data (parsed JSON, rows) is acyclic and freed by
    reference counting, but every parse would trigger collections that re-scan the whole
    batch held in memory (measured: parsing 4x slower). Collected once, afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
            gc.collect(1)


#: KEYS: stream, project depth, attempts hash. ARGV: group, then (entry id, spans) pairs.
#: The depth drops only for entries this call acknowledged, so two workers finishing
#: the same taken-over entry lower it once.
_ACK = """
local lowered = 0
for i = 2, #ARGV, 2 do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
    lowered = lowered + tonumber(ARGV[i + 1])
  end
  redis.call('XDEL', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[3], ARGV[i])
end
if lowered > 0 and redis.call('DECRBY', KEYS[2], lowered) < 0 then
  redis.call('SET', KEYS[2], 0)
end
return lowered
"""


def _span_count(entry: Entry) -> int:
    try:
        return max(0, int(entry.fields.get(b"spans", b"0")))
    except ValueError:
        return 0


def _parts(entries: list[Entry], spans: int, first: int) -> Iterator[list[Entry]]:
    """Consecutive entries, in parts of at least `spans` spans, the first of at least
    `first` (the last may have fewer)."""
    part: list[Entry] = []
    counted = 0
    for entry in entries:
        part.append(entry)
        counted += _span_count(entry)
        if counted >= first:
            yield part
            part, counted, first = [], 0, spans
    if part:
        yield part


class Worker:
    """Drains every project stream into the span store."""

    def __init__(
        self,
        client: redis.Redis,
        store: SpanStore,
        window_s: int,
        *,
        consumer: str | None = None,
        batch_entries: int = 1000,
        block_ms: int = 1000,
        claim_idle_ms: int = 30_000,
        max_attempts: int = 5,
    ) -> None:
        self.client = client
        self.store = store
        self.consumer = consumer or f"{socket.gethostname()}-{os.getpid()}"
        self.batch_entries = batch_entries
        #: entries asked for when their sizes are not known: a first read, a claim
        self.unsized_count = min(batch_entries, FIRST_READ_ENTRIES)
        self.read_count = self.unsized_count  # entries the next read asks
        self.block_ms = block_ms
        self.claim_idle_ms = claim_idle_ms
        self.max_attempts = max_attempts
        self.stats = WorkerStats()
        self._ack_script: Any = client.register_script(_ACK)
        self.window_ms = window_s * 1000
        self._streams: list[str] = []
        self._discovered_at = 0.0
        self._ahead: _ReadAhead | None = None
        self._reading_ahead = False
        self._checkpoints: BackgroundCheckpoints | None = None
        self._writer: ThreadPoolExecutor | None = None
        self._writing: deque[Future[_Written]] = deque()  # parts handed over, in order

    # -- streams and groups -----------------------------------------------------------

    def _discover(self, force: bool = False) -> list[str]:
        if force or time.monotonic() - self._discovered_at > DISCOVER_EVERY_S:
            members: Any = self.client.smembers(STREAMS_KEY)
            found = sorted(member.decode() for member in members)
            for stream in set(found) - set(self._streams):
                try:
                    self.client.xgroup_create(stream, GROUP, id="0", mkstream=True)
                except redis.ResponseError as e:
                    if "BUSYGROUP" not in str(e):  # another key type in the stream's place
                        log.error("cannot read stream", extra={"stream": stream, "error": str(e)})
                        found.remove(stream)
            self._streams = found
            self._discovered_at = time.monotonic()
        return self._streams

    def _read_new(self, streams: list[str], block: bool) -> list[Entry]:
        if not streams:
            if block:
                time.sleep(self.block_ms / 1000)
            return []
        reply: Any = self.client.xreadgroup(
            GROUP,
            self.consumer,
            dict.fromkeys(streams, ">"),
            count=self.read_count,
            block=self.block_ms if block else None,
        )
        return [
            Entry(stream.decode(), entry_id, fields)
            for stream, messages in reply or []
            for entry_id, fields in messages
        ]

    def _size_reads(self, entries: list[Entry]) -> None:
        """Entries per read of new entries, from the size of these (READ_SPANS)."""
        per_entry = max(1, sum(map(_span_count, entries)) // len(entries))
        self.read_count = max(1, min(self.batch_entries, READ_SPANS // per_entry))

    def _claim(self, streams: list[str]) -> list[Entry]:
        """Entries left pending by any consumer (a dead one) for longer than claim_idle_ms."""
        claimed: list[Entry] = []
        for stream in streams:
            reply: Any = self.client.xautoclaim(
                stream,
                GROUP,
                self.consumer,
                self.claim_idle_ms,
                start_id="0-0",
                count=self.unsized_count,
            )
            claimed.extend(
                Entry(stream, entry_id, fields)
                for entry_id, fields in reply[1]
                if fields is not None
            )
        return claimed

    # -- one batch ----------------------------------------------------------------------

    def _acknowledge(self, entries: list[Entry], pipeline: Any = None) -> None:
        """XACK, XDEL and lower the project's queue depth, per entry exactly once."""
        by_stream: dict[str, list[Entry]] = {}
        for entry in entries:
            by_stream.setdefault(entry.stream, []).append(entry)
        done = pipeline if pipeline is not None else self.client.pipeline(transaction=False)
        for stream, stream_entries in by_stream.items():
            project = project_of_stream(stream)
            args: list[Any] = [GROUP]
            for entry in stream_entries:
                args += (entry.id, _span_count(entry))
            self._ack_script(
                keys=[stream, depth_key(project), attempts_key(project)], args=args, client=done
            )
        if pipeline is None and by_stream:
            done.execute()

    def _dead_letter(self, entry: Entry, reason: str) -> None:
        project = project_of_stream(entry.stream)
        moved: dict[Any, Any] = {
            **entry.fields,
            b"reason": reason.encode(),
            b"stream_id": entry.id,
            b"failed_ms": str(int(time.time() * 1000)),
        }
        move = self.client.pipeline(transaction=True)
        move.xadd(dead_letter_key(project), moved)
        self._acknowledge([entry], move)
        move.execute()
        self.stats.dead_lettered += 1
        log.error(
            "queue entry dead-lettered",
            extra={"project": project, "entry": entry.id.decode(), "reason": reason},
        )

    def _failed(self, entry: Entry, reason: str) -> None:
        attempts: Any = self.client.hincrby(
            attempts_key(project_of_stream(entry.stream)), entry.id.decode(), 1
        )
        if attempts >= self.max_attempts:
            self._dead_letter(entry, f"{reason} (after {attempts} attempts)")
        else:
            log.warning(
                "queue entry failed; will retry",
                extra={"entry": entry.id.decode(), "attempt": attempts, "reason": reason},
            )

    def _store(self, rows: list[SpanRow]) -> list[SpanRow]:
        """Write rows by the re-sending rules (on the writer thread); the refused ones."""
        if self._checkpoints is not None:
            self._checkpoints.before_write()
        refused = self.store.upsert(rows, self.window_ms)
        if self._checkpoints is not None:
            self._checkpoints.committed()
        return refused

    def _write(self, decoded: _Decoded) -> _Written:
        """Write a part (on the writer thread). When the database refuses it, one entry's
        rows broke it: each entry is then written on its own, before any later part, so
        that queue order holds for the window. StoreUnavailable propagates."""
        rows = [row for entry_rows in decoded.rows for row in entry_rows]
        try:
            return _Written(decoded.entries, len(rows), self._store(rows))
        except StoreUnavailable:
            raise
        except StoreError:
            pass
        written = _Written()
        for entry, entry_rows in zip(decoded.entries, decoded.rows, strict=True):
            try:
                refused = self._store(entry_rows)
            except StoreUnavailable:
                raise
            except StoreError as e:
                written.failed.append((entry, f"rows refused by the database: {e}"))
                continue
            written.entries.append(entry)
            written.spans += len(entry_rows)
            written.refused.extend(refused)
        return written

    def _stored(self, written: _Written) -> None:
        """Entries whose rows were written: acknowledged, their refused spans logged and
        counted (in Redis too, in the same pipeline); entries refused: failed."""
        for entry, reason in written.failed:
            self._failed(entry, reason)
        if not written.entries:
            return
        refused = written.refused
        done = self.client.pipeline(transaction=False)
        self.stats.spans_written += written.spans - len(refused)
        self.stats.spans_refused += len(refused)
        by_project: dict[str, int] = {}
        for row in refused:
            by_project[row.project_id] = by_project.get(row.project_id, 0) + 1
            log.info(
                "changed span refused within the re-sending window",
                extra={"project": row.project_id, "trace_id": row.trace_id, "span_id": row.span_id},
            )
        for project_id, count in by_project.items():
            done.incrby(refused_counter(project_id), count)
        self._acknowledge(written.entries, done)
        done.execute()
        self.stats.entries += len(written.entries)

    def process(self, entries: list[Entry]) -> None:
        """Store a batch; acknowledge what was stored. StoreUnavailable propagates.

        Within `run` the batch is written on the writer thread while the next one is
        decoded, and acknowledged once written (`_written`); otherwise before returning.
        """
        with _gc_paused():
            self._process(entries)

    def _process(self, entries: list[Entry]) -> None:
        # nothing being written: a small first part, for the writer to start on it sooner
        first = PART_SPANS if self._writing else PART_SPANS // 5
        parts = list(_parts(entries, PART_SPANS, first))
        for number, part in enumerate(parts, start=1):
            decoded = _decode(part)
            for entry, reason in decoded.poison:
                self._failed(entry, reason)
            if number == len(parts):
                self._read_ahead()  # Redis prepares the next batch while the database writes
            if self._writer is None:
                self._stored(self._write(decoded))
                continue
            self._writing.append(self._writer.submit(self._write, decoded))
            while len(self._writing) > PARTS_AHEAD:  # acknowledged while the rest are written
                self._stored(self._next_written())

    def _written(self) -> None:
        """Wait for every part handed to the writer and acknowledge them, in order.
        StoreUnavailable propagates, that part's entries left pending; a part after it is
        acknowledged when next waited for, if it was written."""
        while self._writing:
            self._stored(self._next_written())

    def _next_written(self) -> _Written:
        """The oldest part handed to the writer, once written."""
        return self._writing.popleft().result()

    # -- the loop -------------------------------------------------------------------------

    def _read_ahead(self) -> None:
        """Within `run`, ask for the next batch of new entries before writing this one.

        Not when stream discovery is due: that step rediscovers streams and takes over
        stale entries (XAUTOCLAIM) first, so neither waits while the queue is busy.
        """
        due = time.monotonic() - self._discovered_at > DISCOVER_EVERY_S
        if self._reading_ahead and self._ahead is None and self._streams and not due:
            self._ahead = _ReadAhead(self, self._streams)

    def _drop_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead.close()
            self._ahead = None

    def run_once(self, block: bool = True) -> int:
        """One step: claim stale entries or read new ones, and process them; entries seen."""
        if self._ahead is not None:
            ahead, self._ahead = self._ahead, None
            entries = ahead.result()
        else:
            streams = self._discover()
            entries = self._claim(streams) or self._read_new(streams, block=False)
            if not entries and block:
                self._written()  # not left unacknowledged while this step waits
                entries = self._read_new(streams, block=True)
        if entries:
            self._size_reads(entries)
            self.process(entries)
        else:
            self._written()
        return len(entries)

    def _finish(self) -> None:
        """Stopping: store the batch read ahead, and wait for the one being written. A
        database or queue failing now leaves their entries pending, taken over later."""
        try:
            if self._ahead is not None:
                self.run_once(block=False)
            self._written()
        except (StoreUnavailable, redis.ConnectionError) as e:
            log.warning("stopped with entries pending", extra={"error": str(e)})

    def _stop_writer(self) -> None:
        """Let the writer thread finish what it writes (unacknowledged when run ends on an
        error: its entries stay pending), then end it with its connection."""
        writer, self._writer = self._writer, None
        self._writing.clear()
        if writer is not None:
            writer.submit(self.store.db.release_thread)
            writer.shutdown(wait=True)

    def run(self, stop: threading.Event | None = None, burst: bool = False) -> WorkerStats:
        """Until `stop` is set (or, in burst mode, until nothing is left to do)."""
        stop = stop or threading.Event()
        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        self._discover(force=True)
        self._reading_ahead = True
        if self.store.db.sqlite_path is not None:
            self._checkpoints = BackgroundCheckpoints(self.store.db)
            self._checkpoints.start()
        self._writer = ThreadPoolExecutor(
            1,
            thread_name_prefix="spangate-writer",
            initializer=None if self._checkpoints is None else self._checkpoints.adopt_writer,
        )
        # the thread started, its connection open, before the first part: started lazily,
        # it waited 40 ms for the GIL behind the decoding of the next part (an error here
        # is met again by the first write)
        self._writer.submit(self.store.db.ping)
        try:
            while not stop.is_set():
                try:
                    seen = self.run_once(block=not burst)
                except (StoreUnavailable, redis.ConnectionError) as e:
                    self._drop_ahead()  # its entries stay pending: taken over later
                    what = "database" if isinstance(e, StoreUnavailable) else "queue"
                    log.warning(f"{what} unavailable; retrying", extra={"error": str(e)})
                    stop.wait(UNAVAILABLE_BACKOFF_S)
                    continue
                except redis.ResponseError as e:
                    if "NOGROUP" not in str(e):
                        raise
                    # a stream was deleted (and maybe written again) since it was found:
                    # find every stream again, creating the groups that are missing
                    self._drop_ahead()
                    log.warning("a stream lost its consumer group", extra={"error": str(e)})
                    self._streams, self._discovered_at = [], 0.0
                    continue
                if burst and seen == 0:
                    self._discover(force=True)
                    if self.run_once(block=False) == 0:
                        break
            self._reading_ahead = False
            self._finish()
        finally:
            self._reading_ahead = False
            self._drop_ahead()
            self._stop_writer()
            sys.setswitchinterval(switch_interval)
            if self._checkpoints is not None:
                self._checkpoints.stop()
                self._checkpoints = None
        return self.stats
