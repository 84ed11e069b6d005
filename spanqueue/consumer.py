"""Consuming: reading entries, taking over a dead worker's, acknowledging, dead letters.

Each stream has one consumer group (GROUP). An entry is acknowledged (XACK) and deleted
(XDEL, so Redis memory stays flat) only once the caller has stored it; a worker killed
mid-batch leaves its entries pending, and any worker takes them over (XAUTOCLAIM) once
they have been idle for `claim_idle_ms`; a worker whose write failed takes its own up
again as soon as it can (`read_own`). An entry that fails on its own is retried up
to `max_attempts` times, then moved with the reason to the project's dead-letter stream.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis

from spanqueue.ingestion import KEEP, DeadLetterNote
from spanqueue.layout import (
    GROUP,
    STREAMS_KEY,
    attempts_key,
    dead_letter_key,
    dead_notes_key,
    depth_key,
    project_of_stream,
)

log = logging.getLogger("spangate.worker")
#: Spans a read of new entries asks for, about (two of the worker's parts of 5,000 on
#: SQLite, so one part is written while the next is decoded; one part on PostgreSQL):
#: entries per read follow the size of the entries last read (up to `batch_entries`),
#: so large entries are read a few at a time (fifty 1,000-span entries were 40 MB parsed
#: before the first span was decoded) and small ones many at a time (a read of 50 1-span
#: entries made a 50-span transaction).
#: A first read, and a claim of stale entries, of sizes not known, ask for
#: FIRST_READ_ENTRIES.
READ_SPANS = 10_000
FIRST_READ_ENTRIES = 10
DISCOVER_EVERY_S = 2.0
#: In a Redis Cluster: streams read in one pipeline at most (one round trip a node),
#: each asked for a POLL_SHARE of the entries of a read; and how soon a stream that had
#: nothing is read again: FIRST_IDLE_S, doubling up to the block time.
POLL_STREAMS = 16
POLL_SHARE = 4
FIRST_IDLE_S = 0.01
#: What a queue that is a cluster raises while a node is down or its slots move.
UNAVAILABLE = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.TryAgainError,
    redis.exceptions.RedisClusterException,
)

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


@dataclass(frozen=True, slots=True)
class Entry:
    """One stream entry as read."""

    stream: str
    id: bytes
    fields: dict[bytes, bytes]

    @property
    def span_count(self) -> int:
        """The spans the entry says it holds (0 when it says nothing readable)."""
        try:
            return max(0, int(self.fields.get(b"spans", b"0")))
        except ValueError:
            return 0


#: Entries claimed in one XCLAIM when taking over a worker that is gone.
CLAIMED_AT_ONCE = 1000


def _gone_of_this_host(consumer: str) -> bool:
    """Whether a consumer's default name (`host-pid`, worker/loop.py) names this host
    and a process id that no process has."""
    host, _, pid = consumer.rpartition("-")
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):  # another user's, or past any process id
        return False
    return False


def _entries(reply: Any) -> list[Entry]:
    """The entries of an XREADGROUP's reply (streams and their entries, or None)."""
    return [
        Entry(stream.decode(), entry_id, fields)
        for stream, messages in reply or []
        for entry_id, fields in messages
    ]


class ReadAhead:
    """An XREADGROUP of new entries sent on a connection of its own, answer not read yet
    (one server: a cluster's streams are polled, Consumer._poll)."""

    def __init__(self, queue: Consumer, streams: list[str]) -> None:
        self._pool = cast(redis.Redis, queue.client).connection_pool  # one server only
        self._connection: Any = self._pool.get_connection()
        send: Any = self._connection.send_command
        try:
            send(
                "XREADGROUP", "GROUP", GROUP, queue.consumer, "COUNT", queue.read_count,
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


class Consumer:
    """One worker's reading of every project stream, as consumer `consumer` of GROUP."""

    def __init__(
        self,
        client: redis.Redis | redis.RedisCluster,
        consumer: str,
        *,
        batch_entries: int,
        block_ms: int,
        claim_idle_ms: int,
        max_attempts: int,
    ) -> None:
        self.client = client
        self.consumer = consumer
        self.batch_entries = batch_entries
        #: entries asked for when their sizes are not known: a first read, a claim
        self.unsized_count = min(batch_entries, FIRST_READ_ENTRIES)
        self.read_count = self.unsized_count  # entries the next read asks
        self.block_ms = block_ms
        self.claim_idle_ms = claim_idle_ms
        self.max_attempts = max_attempts
        self.streams: list[str] = []
        self.discovered_at = 0.0
        self._ack_script: Any = client.register_script(_ACK)
        #: a cluster: one read cannot span slots, so streams are polled (`_poll`)
        self.clustered = isinstance(client, redis.RedisCluster)
        self._idle: dict[str, tuple[float, float]] = {}  # stream -> (next read, wait)

    def discover(self, force: bool = False) -> list[str]:
        """The streams to read (found again every DISCOVER_EVERY_S), each with its group;
        `force`: found now, and every stream of a cluster read at the next poll."""
        if force:
            self._idle.clear()
        if force or self.discovery_due():
            members: Any = self.client.smembers(STREAMS_KEY)
            found = sorted(member.decode() for member in members)
            for stream in set(found) - set(self.streams):
                try:
                    self.client.xgroup_create(stream, GROUP, id="0", mkstream=True)
                except redis.ResponseError as e:
                    if "BUSYGROUP" not in str(e):  # another key type in the stream's place
                        log.error("cannot read stream", extra={"stream": stream, "error": str(e)})
                        found.remove(stream)
            self.streams = found
            self._idle = {stream: self._idle[stream] for stream in found if stream in self._idle}
            self.discovered_at = time.monotonic()
        return self.streams

    def discovery_due(self) -> bool:
        return time.monotonic() - self.discovered_at > DISCOVER_EVERY_S

    def forget_streams(self) -> None:
        """Find every stream again at the next read (one lost its group)."""
        self.streams, self.discovered_at = [], 0.0

    def read_new(self, streams: list[str], block: bool) -> list[Entry]:
        """New entries of `streams`, waiting up to block_ms for some when `block`."""
        if not streams:
            if block:
                time.sleep(self.block_ms / 1000)
            return []
        if self.clustered:
            return self._poll(streams, block)
        reply: Any = self.client.xreadgroup(
            GROUP,
            self.consumer,
            dict.fromkeys(streams, ">"),
            count=self.read_count,
            block=self.block_ms if block else None,
        )
        return _entries(reply)

    def read_own(self, streams: list[str]) -> list[Entry]:
        """Entries delivered to this consumer and not yet acknowledged (left pending when
        a write failed): taken up again at once when the database is back, rather than
        after claim_idle_ms."""
        if not streams:
            return []
        if self.clustered:
            reads = self._read_each(streams, "0", self.unsized_count)
            entries = [entry for _, reply in reads for entry in _entries(reply)]
        else:
            entries = _entries(
                self.client.xreadgroup(
                    GROUP, self.consumer, dict.fromkeys(streams, "0"), count=self.unsized_count
                )
            )
        # without fields: an entry deleted since (acknowledged by a worker that took it over)
        return [entry for entry in entries if entry.fields]

    def _read_each(self, streams: list[str], start: str, count: int) -> list[tuple[str, Any]]:
        """In a cluster: an XREADGROUP of each stream, in one pipeline; each reply."""
        reads: Any = self.client.pipeline(transaction=False)
        for stream in streams:
            reads.xreadgroup(GROUP, self.consumer, {stream: start}, count=count)
        return list(zip(streams, reads.execute(), strict=True))

    def _poll(self, streams: list[str], block: bool) -> list[Entry]:
        """In a cluster, new entries: the streams whose turn has come are read, the
        longest waiting first, POLL_STREAMS at a time (a pipeline each), until some have
        entries. A stream that had nothing waits before its next turn, the longer the
        longer it stays idle (up to block_ms), so thousands of idle projects cost a read
        each a second or so, not a loop. With `block` and nothing found, wait for the
        next stream's turn and look once more."""
        for sweep in range(2 if block else 1):
            now = time.monotonic()
            turns = sorted((self._idle.get(stream, (0.0, 0.0))[0], stream) for stream in streams)
            due = [stream for at, stream in turns if at <= now]
            for at in range(0, len(due), POLL_STREAMS):
                entries = self._read_turns(due[at : at + POLL_STREAMS], now)
                if entries:
                    return entries
            if block and sweep == 0:
                later = [at for at, _ in turns if at > now]
                wait = min(later, default=now + self.block_ms / 1000) - time.monotonic()
                time.sleep(min(max(0.0, wait), self.block_ms / 1000))
        return []

    def _read_turns(self, streams: list[str], now: float) -> list[Entry]:
        """New entries of `streams` (one pipeline); each idle one's next turn set."""
        count = max(1, self.read_count // POLL_SHARE)
        entries: list[Entry] = []
        for stream, reply in self._read_each(streams, ">", count):
            found = _entries(reply)
            if found:
                self._idle.pop(stream, None)
            else:
                wait = self._idle.get(stream, (0.0, 0.0))[1]
                wait = min(self.block_ms / 1000, max(FIRST_IDLE_S, wait * 2))
                self._idle[stream] = (now + wait, wait)
            entries += found
        return entries

    def read_ahead(self) -> ReadAhead:
        """The next read of new entries, sent now and answered when asked for."""
        return ReadAhead(self, self.streams)

    def size_reads(self, entries: Sequence[Entry]) -> None:
        """Entries per read of new entries, from the size of these (READ_SPANS)."""
        per_entry = max(1, sum(entry.span_count for entry in entries) // len(entries))
        self.read_count = max(1, min(self.batch_entries, READ_SPANS // per_entry))

    def take_over_dead(self, streams: list[str]) -> int:
        """Make this consumer's the entries pending under a consumer of this host that
        is gone (named by default, `host-pid`, and no process has that id), at once
        rather than after claim_idle_ms: a worker started again after a crash then
        writes them before newer entries, in queue order. A consumer of another name or
        host is left to `claim`. The entries taken."""
        taken = 0
        asked: Any = self.client.pipeline(transaction=False)  # one round trip, many streams
        for stream in streams:
            asked.xpending(stream, GROUP)
        for stream, summary in zip(streams, asked.execute(raise_on_error=False), strict=True):
            if isinstance(summary, Exception):  # no group: nothing pending
                continue
            for held in summary.get("consumers") or []:
                name = held["name"].decode()
                if name != self.consumer and _gone_of_this_host(name):
                    taken += self._take_over(stream, name)
        if taken:
            log.info("took over the entries of a worker that is gone", extra={"entries": taken})
        return taken

    def _take_over(self, stream: str, consumer: str) -> int:
        """Every entry pending under `consumer` in `stream`, claimed for this one. Each
        claim asks that the entries be idle at least as long as when they were listed:
        one that another worker taking them over too claimed meanwhile is left to it."""
        taken = 0
        while True:
            pending: Any = self.client.xpending_range(
                stream, GROUP, min="-", max="+", count=CLAIMED_AT_ONCE, consumername=consumer
            )
            ids = [entry["message_id"] for entry in pending]
            if not ids:
                return taken
            idle = min(entry["time_since_delivered"] for entry in pending)
            claimed: Any = self.client.xclaim(stream, GROUP, self.consumer, idle, ids, justid=True)
            taken += len(claimed)
            if len(claimed) < len(ids):  # another took some: what is left is its
                return taken

    def claim(self, streams: list[str]) -> list[Entry]:
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

    def acknowledge(self, entries: Sequence[Entry], pipeline: Any = None) -> None:
        """XACK, XDEL and lower the project's queue depth, per entry exactly once (in
        `pipeline`, when given, for the caller to execute)."""
        by_stream: dict[str, list[Entry]] = {}
        for entry in entries:
            by_stream.setdefault(entry.stream, []).append(entry)
        done = pipeline if pipeline is not None else self.client.pipeline(transaction=False)
        for stream, stream_entries in by_stream.items():
            project = project_of_stream(stream)
            args: list[Any] = [GROUP]
            for entry in stream_entries:
                args += (entry.id, entry.span_count)
            keys = [stream, depth_key(project), attempts_key(project)]
            if self.clustered:  # a node may not have the script (a replica just promoted)
                done.execute_command("EVAL", _ACK, len(keys), *keys, *args)
            else:
                self._ack_script(keys=keys, args=args, client=done)
        if pipeline is None and by_stream:
            done.execute()

    def failed(self, entry: Entry, reason: str) -> bool:
        """Count a failed attempt at `entry`; at max_attempts, move it to the dead-letter
        stream (True)."""
        attempts: Any = self.client.hincrby(
            attempts_key(project_of_stream(entry.stream)), entry.id.decode(), 1
        )
        if attempts >= self.max_attempts:
            self._dead_letter(entry, f"{reason} (after {attempts} attempts)")
            return True
        log.warning(
            "queue entry failed; will retry",
            extra={"entry": entry.id.decode(), "attempt": attempts, "reason": reason},
        )
        return False

    def _dead_letter(self, entry: Entry, reason: str) -> None:
        project = project_of_stream(entry.stream)
        now_ms = int(time.time() * 1000)
        moved: dict[Any, Any] = {
            **entry.fields,
            b"reason": reason.encode(),
            b"stream_id": entry.id,
            b"failed_ms": str(now_ms),
        }
        # the ingestion record's note: the entry's id, spans and reason, not its body
        note = DeadLetterNote(now_ms, entry.id.decode(), entry.span_count, reason)
        move = self.client.pipeline(transaction=True)
        move.xadd(dead_letter_key(project), moved)
        move.xadd(dead_notes_key(project), note.fields(), maxlen=KEEP, approximate=True)  # type: ignore[arg-type]
        self.acknowledge([entry], move)
        move.execute()
        log.error(
            "queue entry dead-lettered",
            extra={"project": project, "entry": entry.id.decode(), "reason": reason},
        )
