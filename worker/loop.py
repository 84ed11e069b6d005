"""The queue worker: project streams in, span store rows out, at least once, crash-safe.

The queue's side of it (reading, taking over a dead worker's entries, acknowledging,
dead letters) is spanqueue.consumer's; this is the write pipeline. An entry is
acknowledged only after the database committed its spans. The re-sending rules make a
redelivery harmless; the re-sending window is applied by the span store as it writes
(storage/resend.py). An entry that fails on its own (it does not decode, or the
database refuses its rows) counts as a failed attempt; a database that is down is not
the entry's fault: the worker waits and retries without counting.

Within `run`, the entries read at once are written in parts of about PART_SPANS spans
(POSTGRES_PART_SPANS on PostgreSQL) on a writer thread while the next parts are decoded
(the database layer lets go of the GIL while the database writes), and acknowledged
once written. Parts are written one at a time, in order; a part the database refuses is
written again entry by entry, on the writer thread, before any part after it.

On PostgreSQL there are POSTGRES_WRITERS writer threads, each with its own connection
(so its own server process): a part's rows are split between them by trace, and each
writes its share of every part, in order. The rules are per span, so judging each
trace's rows in queue order is judging the queue in order. A part is acknowledged once
every writer wrote its share; an entry refused by one writer fails as a whole (what
another writer committed of it is met again as a redelivery: harmless). The decoding
thread also prepares each share for the store (SpanStore.prepared: its traces, their
summaries as new traces'), so that a writer's transaction holds statements only: its
server process, with the traces' summaries locked, waited on the writer's Python
between them for a fifth of its time before (sampled from pg_stat_activity), half as
long after.

The process-wide settings a worker process wants are set by the command that starts
it (`spangate worker`): the GIL's switch interval at SWITCH_INTERVAL_S, and the cyclic
garbage collector off. A batch's data (parsed JSON, rows) is acyclic and freed by
reference counting, but every parse would trigger collections that re-scan the whole
batch held in memory (measured: parsing 4x slower). With the collector off, the worker
collects the young generations after each batch and everything every FULL_GC_EVERY.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import redis

from genai.prices import Pricer
from spanqueue import heartbeat
from spanqueue.consumer import UNAVAILABLE, Consumer, Entry, ReadAhead
from spanqueue.layout import refused_counter
from storage.checkpoints import BackgroundCheckpoints
from storage.errors import StoreError, StoreUnavailable
from storage.retention import make_partitions
from storage.span_rows import SpanRow
from storage.spans import Prepared, SpanStore
from worker import steps
from worker.record import WorkerRecord
from worker.steps import Decoded, Written

log = logging.getLogger("spangate.worker")
UNAVAILABLE_BACKOFF_S = 1.0
#: Spans per write: big enough that a transaction's own cost does not count, small
#: enough that one part is decoded while the one before it is written.
PART_SPANS = 5000
#: The same on PostgreSQL, whose writer waits on the server a few times a part (locks,
#: COPY, commit) and gets the GIL back after each: parts of 10,000 stored 45,100-46,400
#: spans/s against 38,200-42,400 with 5,000 (bench_worker --database, 100,000 spans, two
#: runs each, alternated), while SQLite showed no difference (ratios 1.42-1.52 against
#: 1.48-1.50).
POSTGRES_PART_SPANS = 10_000
#: Writer threads (connections) on PostgreSQL, a part's traces split between them. One
#: writer's server process worked 55% of the time, waiting on the disk for the rest: two
#: stored 79,500-89,500 spans/s against 69,900-70,600 with one (1,000,000 spans into
#: PostgreSQL by one worker, two runs each, alternated).
POSTGRES_WRITERS = 2
#: Parts handed to the writer thread and not yet acknowledged, besides the one being
#: decoded. One left the writer idle whenever a part took longer to decode than the one
#: before it took to write (writes take 18-45 ms, by the checkpoints they wait for).
PARTS_AHEAD = 2
#: The GIL's switch interval for a worker process. The writer thread needs the GIL briefly
#: a few times a part (between its SQLite calls), while the main thread holds it through
#: whole entries (a 1,000-span entry is milliseconds of C). A thread waiting for the GIL
#: asks for it only after the switch interval, 5 ms by default: the writer sat idle.
SWITCH_INTERVAL_S = 0.0005
#: How often a running worker makes the span partitions of the days ahead; and how soon
#: it tries again when that failed.
PARTITIONS_EVERY_S = 3600.0
PARTITIONS_RETRY_S = 60.0
#: Batches between full collections when the command turned the collector off.
FULL_GC_EVERY = 100


@dataclass
class WorkerStats:
    """What a worker did (cumulative)."""

    entries: int = 0
    spans_written: int = 0
    spans_refused: int = 0
    dead_lettered: int = 0


class Worker:
    """Drains every project stream into the span store."""

    def __init__(
        self,
        client: redis.Redis | redis.RedisCluster,
        store: SpanStore,
        window_s: int,
        *,
        consumer: str | None = None,
        batch_entries: int = 1000,
        block_ms: int = 1000,
        claim_idle_ms: int = 30_000,
        max_attempts: int = 5,
        pricer: Pricer | None = None,
        record: WorkerRecord | None = None,
    ) -> None:
        self.client = client
        #: the ingestion record's part written with each batch, and the metrics
        self.record = record or WorkerRecord()
        self.metrics = self.record.metrics
        self.store = store
        self.pricer = pricer or Pricer()
        self.queue = Consumer(
            client,
            consumer or f"{socket.gethostname()}-{os.getpid()}",
            batch_entries=batch_entries,
            block_ms=block_ms,
            claim_idle_ms=claim_idle_ms,
            max_attempts=max_attempts,
        )
        self.stats = WorkerStats()
        self.window_ms = window_s * 1000
        self._ahead: ReadAhead | None = None
        self._reading_ahead = False
        self._checkpoints: BackgroundCheckpoints | None = None
        self._writers: list[ThreadPoolExecutor] = []
        # parts handed over, in order: each with its entries and a future a writer's share
        self._writing: deque[tuple[list[Entry], list[Future[Written]]]] = deque()
        self._batches = 0
        self._partitions_due = 0.0  # time.monotonic() of the next make_partitions
        # entries pending under this consumer's name: left by a failed write, or by a
        # worker of the same name that stopped (looked for when run starts)
        self._own_pending = False
        self._pulse = heartbeat.Pulse(client, self.queue.consumer)
        self._state = "running"  # what its heartbeat says

    def _failed(self, entry: Entry, reason: str) -> None:
        if self.queue.failed(entry, reason):
            self.stats.dead_lettered += 1
            if self.metrics is not None:
                self.metrics.dead_letters.inc()

    def _store(self, rows: list[SpanRow] | Prepared) -> list[SpanRow]:
        """Write rows by the re-sending rules (on the writer thread); the refused ones."""
        if self._checkpoints is not None:
            self._checkpoints.before_write()
        started = time.perf_counter()
        refused = self.store.upsert(rows, self.window_ms)
        if self.metrics is not None:
            self.metrics.batch_seconds.observe(time.perf_counter() - started)
        if self._checkpoints is not None:
            self._checkpoints.committed()
        return refused

    def _write(self, decoded: Decoded) -> Written:
        """Write a part, or a writer's share of one (on the writer thread). When the
        database refuses it, one entry's rows broke it: each entry is then written on its
        own, before any later part, so that queue order holds for the window.
        StoreUnavailable propagates."""
        spans = sum(map(len, decoded.rows))  # none: a writer's share with nothing of a part
        rows = decoded.prepared
        if rows is None:
            rows = decoded.prepared_for(self.store)
        try:
            return Written(decoded.entries, spans, self._store(rows) if spans else [])
        except StoreUnavailable:
            raise
        except StoreError:
            pass
        written = Written()
        for entry, entry_rows in zip(decoded.entries, decoded.rows, strict=True):
            try:
                refused = self._store(entry_rows) if entry_rows else []
            except StoreUnavailable:
                raise
            except StoreError as e:
                written.failed.append((entry, f"rows refused by the database: {e}"))
                continue
            written.entries.append(entry)
            written.spans += len(entry_rows)
            written.refused.extend(refused)
        return written

    def _stored(self, written: Written) -> None:
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
        self.record.stored(done, written.entries, refused)
        if self.metrics is not None:
            self.metrics.spans_stored.inc(written.spans - len(refused))
        self.queue.acknowledge(written.entries, done)
        done.execute()
        self.stats.entries += len(written.entries)

    def process(self, entries: list[Entry]) -> None:
        """Store a batch; acknowledge what was stored. StoreUnavailable propagates.

        Within `run` the batch is written on the writer thread while the next one is
        decoded, and acknowledged once written (`_written`); otherwise before returning.
        """
        self._process(entries)
        if not gc.isenabled():  # turned off by the command that started the worker
            self._batches += 1
            gc.collect(2 if self._batches % FULL_GC_EVERY == 0 else 1)

    def _process(self, entries: list[Entry]) -> None:
        spans = POSTGRES_PART_SPANS if self.store.db.postgres else PART_SPANS
        # nothing being written: a small first part, for the writer to start on it sooner
        first = spans if self._writing else spans // 5
        parts = list(steps.parts(entries, spans, first))
        for number, part in enumerate(parts, start=1):
            decoded = steps.decode(part, self.pricer, self.store.find_index)
            for entry, reason in decoded.poison:
                self._failed(entry, reason)
            if number == len(parts):
                self._read_ahead()  # Redis prepares the next batch while the database writes
            if not self._writers:
                self._stored(self._write(decoded))
                continue
            shares = steps.shares(decoded, len(self._writers))
            for share in shares:  # here, not in the writer's transaction
                share.prepared = share.prepared_for(self.store)
            self._writing.append(
                (
                    decoded.entries,
                    [w.submit(self._write, s) for w, s in zip(self._writers, shares, strict=True)],
                )
            )
            while len(self._writing) > PARTS_AHEAD:  # acknowledged while the rest are written
                self._stored(self._next_written())

    def _written(self) -> None:
        """Wait for every part handed to the writer and acknowledge them, in order.
        StoreUnavailable propagates, that part's entries left pending; a part after it is
        acknowledged when next waited for, if it was written."""
        while self._writing:
            self._stored(self._next_written())

    def _next_written(self) -> Written:
        """The oldest part handed to the writer, once written."""
        entries, shares = self._writing.popleft()
        return steps.merged(entries, [share.result() for share in shares])

    # -- the loop -------------------------------------------------------------------------

    def _read_ahead(self) -> None:
        """Within `run`, ask for the next batch of new entries before writing this one.

        Not when stream discovery is due: that step rediscovers streams and takes over
        stale entries (XAUTOCLAIM) first, so neither waits while the queue is busy. Nor
        while entries of this consumer are left pending (`read_own`): they were queued
        before any new one, and the re-sending rules judge sends in queue order.
        """
        queue = self.queue
        if self._reading_ahead and self._ahead is None and queue.streams and not queue.clustered:
            if not queue.discovery_due() and not self._own_pending:
                self._ahead = queue.read_ahead()

    def _drop_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead.close()
            self._ahead = None

    def run_once(self, block: bool = True) -> int:
        """One step: take up entries a failed write left here, or claim stale entries, or
        read new ones; and process them. The entries seen."""
        if self._ahead is not None:
            ahead, self._ahead = self._ahead, None
            entries = ahead.result()
        elif self._own_pending:  # before any new entry: they were queued first
            self._written()  # nothing of them still in hand, which a read would give again
            entries = self.queue.read_own(self.queue.discover())
            self._own_pending = bool(entries)
        else:
            streams = self.queue.discover()
            entries = self.queue.claim(streams) or self.queue.read_new(streams, block=False)
            if not entries and block:
                self._written()  # not left unacknowledged while this step waits
                entries = self.queue.read_new(streams, block=True)
        if entries:
            self.queue.size_reads(entries)
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
        except (StoreUnavailable, *UNAVAILABLE) as e:
            log.warning("stopped with entries pending", extra={"error": str(e)})

    def _stop_writers(self) -> None:
        """Let the writer threads finish what they write (unacknowledged when run ends on
        an error: its entries stay pending), then end them with their connections."""
        writers, self._writers = self._writers, []
        self._writing.clear()
        for writer in writers:
            writer.submit(self.store.db.release_thread)
        for writer in writers:
            writer.shutdown(wait=True)

    def _make_partitions(self) -> None:
        """Every PARTITIONS_EVERY_S: the span table's partitions of the days ahead
        (storage/retention.py). Until they exist, rows go to the default partition: a
        failure here is logged and tried again a minute later."""
        now = time.monotonic()
        if now < self._partitions_due:
            return
        try:
            made = make_partitions(self.store.db)
        except StoreError as e:
            log.warning("could not make the span partitions", extra={"error": str(e)})
            self._partitions_due = now + PARTITIONS_RETRY_S
            return
        if made:
            log.info("span partitions made", extra={"partitions": made})
        self._partitions_due = now + PARTITIONS_EVERY_S

    def run(self, stop: threading.Event | None = None, burst: bool = False) -> WorkerStats:
        """Until `stop` is set (or, in burst mode, until nothing is left to do)."""
        stop = stop or threading.Event()
        # a worker of this host that is gone left entries that were queued before any
        # new one: taken over as this consumer's own, they are written first
        self.queue.take_over_dead(self.queue.discover(force=True))
        self._own_pending = True
        self._reading_ahead = True
        if self.store.db.sqlite_path is not None:
            self._checkpoints = BackgroundCheckpoints(self.store.db)
            self._checkpoints.start()
        self._writers = [
            ThreadPoolExecutor(
                1,
                thread_name_prefix=f"spangate-writer-{number}",
                initializer=None if self._checkpoints is None else self._checkpoints.adopt_writer,
            )
            for number in range(POSTGRES_WRITERS if self.store.db.postgres else 1)
        ]
        # the threads started, their connections open, before the first part: started
        # lazily, a writer waited 40 ms for the GIL behind the decoding of the next part
        # (an error here is met again by the first write)
        for writer in self._writers:
            writer.submit(self.store.db.ping)
        try:
            while not stop.is_set():
                self._make_partitions()
                self._pulse.beat_if_due(self._state, self.stats.entries, self.stats.spans_written)
                try:
                    seen = self.run_once(block=not burst)
                    self._state = "running"
                except (StoreUnavailable, *UNAVAILABLE) as e:
                    self._drop_ahead()  # its entries stay pending: taken up again later
                    self._own_pending = True
                    what = "database" if isinstance(e, StoreUnavailable) else "queue"
                    self._state = f"{what} unavailable"
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
                    self.queue.forget_streams()
                    continue
                if burst and seen == 0:
                    self.queue.discover(force=True)
                    if self.run_once(block=False) == 0:
                        break
            self._reading_ahead = False
            self._finish()
        finally:
            self._reading_ahead = False
            self._drop_ahead()
            self._stop_writers()
            self._pulse.stop()
            if self._checkpoints is not None:
                self._checkpoints.stop()
                self._checkpoints = None
        return self.stats
