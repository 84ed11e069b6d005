"""The Redis Streams producer: one XADD per request, and 200 only after it returned.

Entries are never trimmed here (no MAXLEN): an unconsumed entry is an acknowledged
span. Failures map to the spec's codes: no answer in time (or no connection) is
ENQUEUE_UNCONFIRMED, Redis refusing for memory is REDIS_MEMORY_HIGH, any other error
reply is STORAGE_ERROR.
"""

from __future__ import annotations

import time

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from collector.errors import GatewayError, unavailable
from collector.redis_link import RedisLink
from storage.streams import STREAMS_KEY, QueuedRequest, depth_key, stream_key

CONNECT_TIMEOUT_S = 1.0
MEMORY_RETRY_AFTER_S = 5
#: How often a collector process re-adds a stream it writes to the workers' set.
REGISTER_EVERY_S = 60.0


def connect(url: str, timeout_s: float) -> RedisLink:
    """The collector's one Redis client: every call answered or failed within
    `timeout_s`, and connecting never waits longer than that either."""
    return RedisLink(url, timeout_s, min(CONNECT_TIMEOUT_S, timeout_s))


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

    def __init__(self, client: RedisLink, timeout_s: float) -> None:
        self.client = client
        self.timeout_s = timeout_s
        self._registered: dict[str, float] = {}  # stream -> when it was last registered

    async def enqueue(self, item: QueuedRequest) -> bytes:
        """XADD the request's entry, raising the project's queue depth in the same MULTI;
        its stream id once Redis confirmed both."""
        stream = stream_key(item.project_id)
        try:
            await self._register(stream)
            entry_id, _ = await self.client.transaction(
                ("XADD", stream, "*", *item.field_values()),
                ("INCRBY", depth_key(item.project_id), item.span_count),
            )
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
            await self.client.execute("SADD", STREAMS_KEY, stream)
            self._registered[stream] = now

    async def ping(self) -> None:
        """Raise unless Redis answers a PING within the timeout."""
        await self.client.execute("PING")

    async def close(self) -> None:
        """Close the client's connections."""
        await self.client.close()
