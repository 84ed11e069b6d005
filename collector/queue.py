"""The Redis Streams producer: one XADD per request, and 200 only after it returned.

The XADD runs in a script, with the project's depth raised in the same script and, for
a small request, the request's admission checks in front (collector.admission): one
round trip to Redis for the whole request.

Entries are never trimmed here (no MAXLEN): an unconsumed entry is an acknowledged
span. Failures map to the spec's codes: no answer in time (or no connection) is
ENQUEUE_UNCONFIRMED, Redis refusing for memory is REDIS_MEMORY_HIGH, any other error
reply is STORAGE_ERROR.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from redis.exceptions import RedisError

from collector.admission import CHECKS, Checks, verdict
from collector.errors import redis_refusal, unavailable
from collector.redis_link import Arg, RedisLink, Script
from storage.streams import STREAMS_KEY, QueuedRequest, depth_key, stream_key

CONNECT_TIMEOUT_S = 1.0
#: How often a collector process re-adds a stream it writes to the workers' set.
REGISTER_EVERY_S = 60.0


def connect(url: str, timeout_s: float) -> RedisLink:
    """The collector's one Redis client: every call answered or failed within
    `timeout_s`, and connecting never waits longer than that either."""
    return RedisLink(url, timeout_s, min(CONNECT_TIMEOUT_S, timeout_s))


#: Adds an entry and raises its project's depth by its span count, in a script: in a
#: MULTI, an XADD failing at EXEC (WRONGTYPE) would leave the depth raised for an entry
#: never added, and the project refused QUEUE_NEAR_CAPACITY for spans it never queued.
_ADD = """
local function add(depth_key, stream, count_at)
  redis.call('XADD', stream, '*', unpack(ARGV, count_at + 1))
  redis.call('INCRBY', depth_key, ARGV[count_at])
end
"""
#: KEYS: depth, stream. ARGV: span count, then the entry's fields and values.
_ENQUEUE = Script.of(_ADD + "add(KEYS[1], KEYS[2], 1)\nreturn 1")
#: The admission checks, then the entry: KEYS and ARGV as the checks take them, then
#: the stream (KEYS[4]), the span count (ARGV[7]) and the fields. Answers as the checks
#: do, or {0, depth} once the entry is added.
_ADMIT_AND_ENQUEUE = Script.of(CHECKS + _ADD + "add(KEYS[3], KEYS[4], 7)\nreturn {0, depth}")


class SpanQueue:
    """Producer side of the per-project streams."""

    def __init__(self, client: RedisLink, timeout_s: float) -> None:
        self.client = client
        self.timeout_s = timeout_s
        self._registered: dict[str, float] = {}  # stream -> when it was last registered

    async def enqueue(self, item: QueuedRequest) -> None:
        """XADD the request's entry and raise the project's queue depth; returns once
        Redis confirmed both."""
        stream = stream_key(item.project_id)
        keys = (depth_key(item.project_id), stream)
        await self._run(_ENQUEUE, stream, keys, (item.span_count, *item.field_values()))

    async def admit_and_enqueue(self, item: QueuedRequest, checks: Checks) -> int:
        """Admit the request (collector.admission) and enqueue it in one script: the
        project's queue depth before it, once Redis confirmed; else admission's refusal."""
        stream = stream_key(item.project_id)
        keys = (*checks.keys, stream)
        args = (*checks.args, item.span_count, *item.field_values())
        return verdict(await self._run(_ADMIT_AND_ENQUEUE, stream, keys, args))

    async def _run(
        self, script: Script, stream: str, keys: Sequence[Arg], args: Sequence[Arg]
    ) -> Any:
        try:
            await self._register(stream)
            return await self.client.evalsha(script, keys, args)
        except TimeoutError as e:
            raise unavailable(
                "ENQUEUE_UNCONFIRMED", f"the queue did not confirm within {self.timeout_s:g} s"
            ) from e
        except RedisError as e:
            raise redis_refusal(e, "STORAGE_ERROR", "the queue store failed") from e

    async def _register(self, stream: str) -> None:
        """Add the stream to the workers' set before its first entry, and again every
        REGISTER_EVERY_S. Not in the script: the set is no project's key (Cluster slots)."""
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
