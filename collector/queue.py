"""The Redis Streams producer: one XADD per request, and 200 only after it returned.

Entries are never trimmed here (no MAXLEN): an unconsumed entry is an acknowledged
span. Failures map to the spec's codes: no answer in time (or no connection) is
ENQUEUE_UNCONFIRMED, Redis refusing for memory is REDIS_MEMORY_HIGH, any other error
reply is STORAGE_ERROR.
"""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from collector.errors import GatewayError, unavailable
from storage.streams import STREAMS_KEY, QueuedRequest, depth_key, stream_key

CONNECT_TIMEOUT_S = 1.0
MEMORY_RETRY_AFTER_S = 5
#: How often a collector process re-adds a stream it writes to the workers' set.
REGISTER_EVERY_S = 60.0


def connect(url: str, timeout_s: float) -> aioredis.Redis:
    """A client that fails fast: one immediate retry (a pooled connection may be stale
    after a Redis restart), then the error; no backoff that would outlast the timeout."""
    return aioredis.Redis.from_url(
        url,
        socket_connect_timeout=min(CONNECT_TIMEOUT_S, timeout_s),
        socket_timeout=timeout_s + 1,
        retry=Retry(NoBackoff(), 1),
        health_check_interval=30,
    )


def refusal(error: BaseException, otherwise: str, message: str) -> GatewayError:
    """The 503 for a Redis failure: out of memory (also inside a script, where Redis
    reports it as a script error), unreachable or silent, else `otherwise`."""
    if isinstance(error, OutOfMemoryError) or "OOM command not allowed" in str(error):
        return unavailable(
            "REDIS_MEMORY_HIGH", "the queue store is out of memory", MEMORY_RETRY_AFTER_S
        )
    if isinstance(error, TimeoutError | RedisConnectionError | RedisTimeoutError):
        return unavailable("ENQUEUE_UNCONFIRMED", "the queue store is unreachable")
    return unavailable(otherwise, message)


class SpanQueue:
    """Producer side of the per-project streams."""

    def __init__(self, client: aioredis.Redis, timeout_s: float) -> None:
        self.client = client
        self.timeout_s = timeout_s
        self._registered: dict[str, float] = {}  # stream -> when it was last registered

    async def enqueue(self, item: QueuedRequest) -> bytes:
        """XADD the request's entry, raising the project's queue depth in the same MULTI;
        its stream id once Redis confirmed both."""
        stream = stream_key(item.project_id)
        try:
            async with asyncio.timeout(self.timeout_s):  # no extra task, unlike wait_for
                await self._register(stream)
                async with self.client.pipeline(transaction=True) as pipeline:
                    pipeline.xadd(stream, item.fields())  # type: ignore[arg-type]
                    pipeline.incrby(depth_key(item.project_id), item.span_count)
                    entry_id, _ = await pipeline.execute()
        except TimeoutError as e:
            raise unavailable(
                "ENQUEUE_UNCONFIRMED", f"the queue did not confirm within {self.timeout_s:g} s"
            ) from e
        except RedisError as e:
            raise refusal(e, "STORAGE_ERROR", "the queue store failed") from e
        return bytes(entry_id)

    async def _register(self, stream: str) -> None:
        """Add the stream to the workers' set before its first entry, and again every
        REGISTER_EVERY_S. Not in the MULTI: the set is no project's key (Cluster slots)."""
        now, last = time.monotonic(), self._registered.get(stream)
        if last is None or now - last >= REGISTER_EVERY_S:
            await self.client.sadd(STREAMS_KEY, stream)
            self._registered[stream] = now

    async def ping(self) -> None:
        """Raise unless Redis answers a PING within the timeout."""
        await asyncio.wait_for(self.client.ping(), self.timeout_s)

    async def close(self) -> None:
        """Close the client's connections."""
        await self.client.aclose()
