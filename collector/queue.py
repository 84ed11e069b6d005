"""The collector's side of the queue (spanqueue): one XADD per request, and 200 only
after it returned.

The XADD runs in a script (spanqueue.producer), with the project's depth raised in the
same script and, for a small request, the request's admission checks in front
(collector.admission): one round trip to Redis for the whole request. Failures map to
the codes of docs/api.md: no answer in time (or no connection) is
ENQUEUE_UNCONFIRMED, Redis refusing for memory is REDIS_MEMORY_HIGH, any other error
reply is STORAGE_ERROR. With SPANGATE_REDIS_REPLICA_ACKS=N, a WAIT for N replicas
follows the script in the same round trip; fewer in time is ENQUEUE_UNCONFIRMED (the
entry may still be stored: a retry makes a duplicate, which the re-sending rules make
harmless).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from redis.exceptions import RedisError

from collector.admission import CHECKS, Checks, ip_checked_apart, verdict
from collector.errors import redis_refusal, unavailable
from collector.redis_cluster import QueueLink
from collector.redis_link import Arg, Script
from spanqueue.ingestion import RECORD, RECORD_ARGS, RequestRecord
from spanqueue.layout import STREAMS_KEY, QueuedRequest
from spanqueue.producer import ADD, REGISTER_EVERY_S, entry_args, entry_keys

CONNECT_TIMEOUT_S = 1.0
#: The share of SPANGATE_ENQUEUE_TIMEOUT_MS that WAIT may take, when replicas must hold
#: an entry before the 200 (SPANGATE_REDIS_REPLICA_ACKS), less WAIT_LATE_MS: Redis ends
#: a WAIT at its next timer tick after the timeout (10 a second by default).
WAIT_SHARE = 0.8
WAIT_LATE_MS = 100


#: A request's record and its keys (requests, minutes: collector.ingestion_record).
RecordArgs = tuple[tuple[str, str], RequestRecord]


def _refused(reply: Any) -> bool:
    """Whether the script refused the request at admission (it added nothing)."""
    return isinstance(reply, list) and bool(reply) and reply[0] != 0


def connect(url: str, timeout_s: float) -> QueueLink:
    """The collector's one Redis client (one server or a cluster): every call answered
    or failed within `timeout_s`, and connecting never waits longer than that either."""
    return QueueLink(url, timeout_s, min(CONNECT_TIMEOUT_S, timeout_s))


#: KEYS: depth, stream. ARGV: span count, then the entry's fields and values.
_ENQUEUE = Script.of(ADD + "add(KEYS[1], KEYS[2], 1)\nreturn 1")
#: The admission checks, then the entry: KEYS and ARGV as the checks take them, then
#: the stream (KEYS[4]), the span count (ARGV[7]) and the fields. Answers as the checks
#: do, or {0, depth} once the entry is added.
_ADMIT_AND_ENQUEUE = Script.of(CHECKS + ADD + "add(KEYS[3], KEYS[4], 7)\nreturn {0, depth}")
#: The same two with the request's record (spanqueue.ingestion) after the entry: its keys
#: (requests, minutes) after the others, its RECORD_ARGS arguments before the span count.
_ENQUEUE_RECORDED = Script.of(
    RECORD
    + ADD
    + f"add(KEYS[1], KEYS[2], {RECORD_ARGS + 1})\nrecord(KEYS[3], KEYS[4], 1)\nreturn 1"
)
_ADMIT_AND_ENQUEUE_RECORDED = Script.of(
    CHECKS
    + RECORD
    + ADD
    + f"add(KEYS[3], KEYS[4], {RECORD_ARGS + 7})\nrecord(KEYS[5], KEYS[6], 7)\nreturn {{0, depth}}"
)


class SpanQueue:
    """Producer side of the per-project streams."""

    def __init__(self, client: QueueLink, timeout_s: float, replica_acks: int = 0) -> None:
        self.client = client
        self.timeout_s = timeout_s
        self.replica_acks = replica_acks
        self._registered: dict[str, float] = {}  # stream -> when it was last registered

    async def enqueue(self, item: QueuedRequest, record: RecordArgs | None = None) -> None:
        """XADD the request's entry and raise the project's queue depth (and write its
        record, when given); returns once Redis confirmed them."""
        keys = entry_keys(item)
        if record is None:
            await self._run(_ENQUEUE, keys[1], keys, entry_args(item))
            return
        record_keys, fields = record
        args = (*fields.field_values(), *entry_args(item))
        await self._run(_ENQUEUE_RECORDED, keys[1], (*keys, *record_keys), args)

    async def admit_and_enqueue(
        self, item: QueuedRequest, checks: Checks, record: RecordArgs | None = None
    ) -> int:
        """Admit the request (collector.admission) and enqueue it in one script, with its
        record when given: the project's queue depth before it, once Redis confirmed;
        else admission's refusal (and no record written)."""
        _, stream = entry_keys(item)
        if self.client.clustered is not False:  # one server: nothing to await
            checks = await self._checked_apart(checks)
        if record is None:
            keys: tuple[Arg, ...] = (*checks.keys, stream)
            args: tuple[Arg, ...] = (*checks.args, *entry_args(item))
            return verdict(await self._run(_ADMIT_AND_ENQUEUE, stream, keys, args))
        record_keys, fields = record
        keys = (*checks.keys, stream, *record_keys)
        args = (*checks.args, *fields.field_values(), *entry_args(item))
        return verdict(await self._run(_ADMIT_AND_ENQUEUE_RECORDED, stream, keys, args))

    async def _checked_apart(self, checks: Checks) -> Checks:
        """In a cluster, the client address's rate limit, checked in a call of its own
        (its key lives in another slot than the project's); the checks left."""
        try:
            return await ip_checked_apart(self.client, checks)
        except (TimeoutError, RedisError) as e:
            raise redis_refusal(
                e, "QUEUE_DEPTH_UNKNOWN", "the client's rate limit cannot be read"
            ) from e

    async def _run(
        self, script: Script, stream: str, keys: Sequence[Arg], args: Sequence[Arg]
    ) -> Any:
        try:
            await self._register(stream)
            if not self.replica_acks:
                return await self.client.evalsha(script, keys, args)
            reply, acked = await self.client.evalsha_replicated(
                script, keys, args, self.replica_acks, self._wait_ms()
            )
        except TimeoutError as e:
            raise unavailable(
                "ENQUEUE_UNCONFIRMED", f"the queue did not confirm within {self.timeout_s:g} s"
            ) from e
        except RedisError as e:
            raise redis_refusal(e, "STORAGE_ERROR", "the queue store failed") from e
        if acked < self.replica_acks and not _refused(reply):
            raise unavailable(
                "ENQUEUE_UNCONFIRMED",
                f"the entry reached {acked} of {self.replica_acks} replicas within "
                f"{self._wait_ms()} ms",
            )
        return reply

    def _wait_ms(self) -> int:
        """How long WAIT may take: most of the timeout, leaving time for its answer."""
        return max(1, int(self.timeout_s * 1000 * WAIT_SHARE) - WAIT_LATE_MS)

    async def _register(self, stream: str) -> None:
        """Add the stream to the workers' set (spanqueue.producer says when)."""
        now, last = time.monotonic(), self._registered.get(stream)
        if last is None or now - last >= REGISTER_EVERY_S:
            await self.client.execute("SADD", STREAMS_KEY, stream, key=STREAMS_KEY)
            self._registered[stream] = now

    async def all_answer(self, masters: dict[str, str]) -> None:
        """Raise unless every master answered (`masters`, as `masters()` says) and a
        cluster's state is ok."""
        failed = [f"{node} {state}" for node, state in masters.items() if state != "ok"]
        if failed:
            raise RedisError("; ".join(failed))
        if await self.client.is_cluster():
            info = (await self.client.execute("CLUSTER", "INFO")).decode()
            if "cluster_state:ok" not in info:
                raise RedisError("the Redis Cluster's state is not ok")

    async def masters(self) -> dict[str, str]:
        """Each master ("host:port", the one server when it is no cluster) and whether it
        answers a PING: `ok`, or `unavailable: <ErrorType>`."""
        return {
            node: f"unavailable: {type(reply).__name__}"
            if isinstance(reply, BaseException)
            else "ok"
            for node, reply in (await self.client.each_master("PING")).items()
        }

    async def close(self) -> None:
        """Close the client's connections."""
        await self.client.close()
