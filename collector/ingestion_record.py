"""The collector's part of the ingestion record (spanqueue.ingestion): one record per
authenticated ingest request.

A request that queues spans has its record written by the script that queues them
(collector.queue): no round trip of its own. Every other one (refused, or answered 200
with nothing to queue) is kept here and written with the others of its project every
FLUSH_EVERY_S, in one script call, without the request waiting: a flood of refused
requests costs a record each a few microseconds of the collector's time, and Redis one
call per project every FLUSH_EVERY_S. Records over MAX_PENDING waiting, or that Redis
does not take, are dropped and counted (`spangate_ingestion_records_dropped_total`):
the record must never stand in the way of an answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from redis.exceptions import RedisError

from collector.auth import authenticate, bearer_token
from collector.errors import GatewayError
from collector.queue import RecordArgs
from collector.redis_cluster import QueueLink
from collector.redis_link import Arg, Script
from collector.request_head import RequestHead
from proto_json import Conversion
from spanqueue.ingestion import MAX_REASONS, RECORDS, RequestRecord, day_of, reasons_of
from spanqueue.layout import minutes_key, requests_key
from storage.api_keys import display_prefix
from storage.verifier import KeyVerifier

log = logging.getLogger("spangate.collector")
FLUSH_EVERY_S = 0.05
MAX_PENDING = 10_000
#: Records in one script call at most.
RECORDS_PER_CALL = 500
_RECORDS = Script.of(RECORDS)
#: Each route's path, as the record names it.
PATHS = {
    "spans": "/v1/spans",
    "spans_batch": "/v1/spans/batch",
    "traces": "/v1/traces",
    "otlp": "/v1/otlp/v1/traces",
}


def record_keys(project_id: str, at_ms: int) -> tuple[str, str]:
    """The keys a record of the project at `at_ms` is written to: requests, minutes."""
    return requests_key(project_id), minutes_key(project_id, day_of(at_ms))


@dataclass(slots=True)  # not frozen: one a request, and frozen fields are set slowly
class Requester:
    """Who sent a request, where and when, as its record names them."""

    project_id: str
    route: str  # the path
    key_prefix: str
    at_ms: int


def requester(project_id: str, route: str, authorization: str | None) -> Requester:
    """An authenticated request of `route` as its record names it: now, with its key's
    prefix (never the key)."""
    key_prefix = display_prefix(bearer_token(authorization))
    return Requester(project_id, PATHS[route], key_prefix, int(time.time() * 1000))


def _answered(who: Requester, received: int, conversion: Conversion) -> RequestRecord:
    """The record of a request answered 200: its reasons, the rejected spans' and then
    the fields it ignored (what the answer's `ignored` names)."""
    reasons = [f"span {e.index}: {e.reason}" for e in conversion.errors[:MAX_REASONS]]
    reasons += [f"ignored: {path}" for path in conversion.ignored[: MAX_REASONS - len(reasons)]]
    return RequestRecord(
        who.at_ms,
        who.route,
        200,
        None,
        conversion.accepted,
        conversion.rejected,
        len(conversion.ignored),
        received,
        who.key_prefix,
        reasons_of(reasons) if reasons else "",
    )


def _refused(
    who: Requester, received: int, conversion: Conversion | None, error: Exception
) -> RequestRecord:
    """The record of a refused request: nothing accepted; every span of a parsed body
    rejected (None when the body was never parsed)."""
    if isinstance(error, GatewayError):
        status, code, message = error.status, error.code, error.message
    else:
        status, code, message = 500, "INTERNAL_ERROR", "the gateway could not complete it"
    return RequestRecord(
        who.at_ms,
        who.route,
        status,
        code,
        0,
        None if conversion is None else conversion.span_count,
        0 if conversion is None else len(conversion.ignored),
        received,
        who.key_prefix,
        reasons_of([message]),
    )


class RequestRecorder:
    """Writes the records of requests that queue nothing, in batches."""

    def __init__(self, client: QueueLink, dropped: Callable[[int], None]) -> None:
        self.client = client
        self.dropped = dropped
        self._pending: dict[tuple[str, str], list[RequestRecord]] = {}
        self._count = 0
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Future[None] | None = None

    def queued(self, who: Requester, received: int, conversion: Conversion) -> RecordArgs:
        """The record of a request whose spans are about to be queued, for the script
        that queues them (collector.queue)."""
        return record_keys(who.project_id, who.at_ms), _answered(who, received, conversion)

    def answered(self, who: Requester, received: int, conversion: Conversion) -> None:
        """Keep the record of a request answered 200 with nothing queued."""
        self.later(who.project_id, _answered(who, received, conversion))

    def refused(
        self, who: Requester, received: int, conversion: Conversion | None, error: Exception
    ) -> None:
        """Keep the record of a refused request (`error`: what it was refused with)."""
        self.later(who.project_id, _refused(who, received, conversion, error))

    async def refused_early(
        self,
        verifier: KeyVerifier,
        head: RequestHead,
        route: str,
        received: int,
        error: GatewayError,
    ) -> None:
        """Keep the record of a request refused for its headers, before authentication,
        when its key is valid (its answer stays the headers' refusal either way)."""
        try:
            identity = await authenticate(verifier, head.authorization)
        except GatewayError:
            return
        who = requester(identity.project_id, route, head.authorization)
        self.refused(who, received, None, error)

    def later(self, project_id: str, record: RequestRecord) -> None:
        """Keep `record` for the next batch (dropped when MAX_PENDING wait already)."""
        if self._count >= MAX_PENDING:
            self.dropped(1)
            return
        self._pending.setdefault(record_keys(project_id, record.at_ms), []).append(record)
        self._count += 1
        if self._timer is None and self._flushing is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_EVERY_S, self._start)

    def _start(self) -> None:
        self._timer = None
        self._flushing = asyncio.ensure_future(self.flush())
        self._flushing.add_done_callback(self._flushed)

    def _flushed(self, done: asyncio.Future[None]) -> None:
        self._flushing = None
        if not done.cancelled() and self._count and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_EVERY_S, self._start)

    async def flush(self) -> None:
        """Write every record kept so far."""
        pending, self._pending, self._count = self._pending, {}, 0
        calls = [
            self._write(keys, records[at : at + RECORDS_PER_CALL])
            for keys, records in pending.items()
            for at in range(0, len(records), RECORDS_PER_CALL)
        ]
        await asyncio.gather(*calls)

    async def _write(self, keys: tuple[str, str], records: list[RequestRecord]) -> None:
        args: list[Arg] = [value for record in records for value in record.field_values()]
        try:
            await self.client.evalsha(_RECORDS, keys, args)
        except (TimeoutError, RedisError, OSError) as e:
            self.dropped(len(records))
            log.debug("ingestion records dropped", extra={"error": str(e), "records": len(records)})

    async def close(self) -> None:
        """Write what is kept (at shutdown)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._flushing is not None:
            await asyncio.shield(self._flushing)
        await self.flush()
