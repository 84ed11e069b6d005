"""Workers' heartbeats: how a container's health check, the collector's readiness and
an operator tell that a worker is alive.

A running worker beats every BEAT_EVERY_S from its loop (so a worker stuck in a write
stops beating): its heartbeat key (spanqueue.layout.heartbeat_key) holds what it last
did and expires STALE_AFTER_S later, and its name is scored with the time in
WORKERS_KEY, so that readers find the workers without scanning the keyspace. A worker
that stops cleanly removes both. Names silent for FORGET_AFTER_S leave WORKERS_KEY.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any

import redis

from spanqueue.layout import WORKERS_KEY, heartbeat_key

log = logging.getLogger("spangate.worker")
BEAT_EVERY_S = 5.0
#: A worker whose last beat is older than this is not alive (its longest write, a part
#: of 10,000 spans waiting on a slow database, stays well within it).
STALE_AFTER_S = 60
FORGET_AFTER_S = 86_400


@dataclass(frozen=True, slots=True)
class Beat:
    """What a worker said at its last beat."""

    consumer: str
    host: str
    pid: int
    at_ms: int
    state: str  # running, or what it waits for: database unavailable, queue unavailable
    entries: int
    spans_stored: int

    @classmethod
    def of_json(cls, text: bytes) -> Beat:
        """A beat read back (ValueError or TypeError when it is not one)."""
        fields: dict[str, Any] = json.loads(text)
        return cls(**fields)


def beat(client: redis.Redis | redis.RedisCluster, now: Beat) -> None:
    """Write a beat (RedisError when the queue store does not take it)."""
    beats: Any = client.pipeline(transaction=False)
    beats.set(heartbeat_key(now.consumer), json.dumps(asdict(now)), ex=STALE_AFTER_S)
    beats.zadd(WORKERS_KEY, {now.consumer: now.at_ms})
    beats.zremrangebyscore(WORKERS_KEY, 0, now.at_ms - FORGET_AFTER_S * 1000)
    beats.execute()


def stopped(client: redis.Redis | redis.RedisCluster, consumer: str) -> None:
    """A worker stopping cleanly: it is no longer alive."""
    client.delete(heartbeat_key(consumer))
    client.zrem(WORKERS_KEY, consumer)


def alive(client: redis.Redis | redis.RedisCluster, now_ms: int, prefix: str = "") -> list[Beat]:
    """The workers alive (a beat within STALE_AFTER_S) whose names start with `prefix`."""
    names: Any = client.zrangebyscore(WORKERS_KEY, now_ms - STALE_AFTER_S * 1000, "+inf")
    found = []
    for name in names:
        consumer = name.decode()
        if consumer.startswith(prefix) and (one := last_beat(client, consumer)) is not None:
            found.append(one)
    return found


def last_beat(client: redis.Redis | redis.RedisCluster, consumer: str) -> Beat | None:
    """The worker's last beat, None when it has not beaten within STALE_AFTER_S."""
    text: Any = client.get(heartbeat_key(consumer))
    if text is None:
        return None
    try:
        return Beat.of_json(text)
    except (ValueError, TypeError):
        return None


class Pulse:
    """A worker's heartbeats, written from its loop (a failed one is logged, not raised:
    the next is due BEAT_EVERY_S later)."""

    def __init__(self, client: redis.Redis | redis.RedisCluster, consumer: str) -> None:
        self.client = client
        self.consumer = consumer
        self._due = 0.0  # time.monotonic() of the next beat

    def beat_if_due(self, state: str, entries: int, spans_stored: int) -> None:
        """Beat, unless the last beat is under BEAT_EVERY_S old."""
        now = time.monotonic()
        if now < self._due:
            return
        self._due = now + BEAT_EVERY_S
        at_ms = int(time.time() * 1000)
        now_beat = Beat(
            self.consumer, socket.gethostname(), os.getpid(), at_ms, state, entries, spans_stored
        )
        try:
            beat(self.client, now_beat)
        except redis.RedisError as e:
            log.warning("heartbeat not written", extra={"error": str(e)})

    def stop(self) -> None:
        """A clean stop: the worker is no longer alive, at once."""
        try:
            stopped(self.client, self.consumer)
        except redis.RedisError as e:
            log.warning("heartbeat not removed", extra={"error": str(e)})
