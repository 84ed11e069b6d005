"""Redis memory pressure, sampled: REDIS_MEMORY_HIGH before Redis itself starts refusing.

Once a second the collector reads INFO memory; while used_memory / maxmemory is at or
over SPANGATE_REDIS_MEMORY_HIGH_RATIO, ingest requests get 503 REDIS_MEMORY_HIGH with
Retry-After before their body is read. Checking costs nothing per request. No maxmemory
(0) means no ratio: only Redis's own OOM answer applies then. A failed sample keeps
the last verdict; the queue check of each request reports an unreachable Redis anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from redis.exceptions import RedisError

from collector.errors import MEMORY_RETRY_AFTER_S, unavailable
from collector.redis_cluster import QueueLink

SAMPLE_EVERY_S = 1.0
log = logging.getLogger("spangate.collector")


def info_fields(text: bytes) -> dict[str, str]:
    """The `name:value` lines of an INFO reply."""
    fields = {}
    for line in text.decode().splitlines():
        name, colon, value = line.partition(":")
        if colon and not name.startswith("#"):
            fields[name] = value
    return fields


class MemoryWatch:
    """The sampled memory verdict of the queue store."""

    def __init__(self, client: QueueLink, ratio: float) -> None:
        self.client = client
        self.ratio = ratio
        self.high = False
        self.used_ratio = 0.0
        self._stopping = asyncio.Event()

    async def sample(self) -> None:
        """Read INFO memory once (of every master of a cluster: the fullest counts) and
        update the verdict."""
        replies = list((await self.client.each_master("INFO", "memory")).values())
        answers = [reply for reply in replies if not isinstance(reply, BaseException)]
        if not answers:  # the last verdict stands
            raise replies[0]
        ratios = [0.0]
        for answer in answers:
            info = info_fields(answer)
            maximum = int(info.get("maxmemory", 0))
            if maximum > 0:
                ratios.append(int(info.get("used_memory", 0)) / maximum)
        self.used_ratio = max(ratios)
        high = self.used_ratio >= self.ratio
        if high != self.high:
            log.warning(
                "redis memory high" if high else "redis memory back to normal",
                extra={"used_ratio": round(self.used_ratio, 3)},
            )
        self.high = high

    async def run(self) -> None:
        """Sample until stop(): never cancelled mid-command (a redis-py command cancelled
        half-way can leave the client's close waiting)."""
        while not self._stopping.is_set():
            with contextlib.suppress(RedisError, OSError, TimeoutError):
                await asyncio.wait_for(self.sample(), SAMPLE_EVERY_S * 2)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), SAMPLE_EVERY_S)

    async def stop(self) -> None:
        """Ask run() to end after its current sample."""
        self._stopping.set()

    def check(self) -> None:
        """Raise 503 REDIS_MEMORY_HIGH while the last sample was over the ratio."""
        if self.high:
            raise unavailable(
                "REDIS_MEMORY_HIGH",
                f"the queue store is {self.used_ratio:.0%} full; try again shortly",
                MEMORY_RETRY_AFTER_S,
            )
