"""Health routes: fixed, liveness, queue reachability, and readiness of every dependency."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from quart import Response, request
from redis.exceptions import RedisError

from collector.queue import SpanQueue
from service.web import check, check_database, json_response, readiness
from spanqueue.heartbeat import STALE_AFTER_S
from spanqueue.layout import WORKERS_KEY
from storage.database import Database


class NoWorkerAlive(Exception):
    """No worker has beaten within STALE_AFTER_S (spanqueue.heartbeat)."""


class Health:
    """The four health routes of the collector (no authentication)."""

    def __init__(self, queue: SpanQueue, db: Database) -> None:
        self.queue = queue
        self.db = db

    async def health(self) -> Response:
        """GET /health: fixed; checks nothing."""
        return json_response({"status": "ok"})

    async def live(self) -> Response:
        """GET /health/live: the process runs."""
        return json_response({"status": "live"})

    async def ingest(self) -> Response:
        """GET /health/ingest: 200 when the queue store answers (every master of a
        cluster, in state ok), else 503; a cluster's masters are listed."""
        queue, masters = await self._queue(every_master=True)
        ok = queue == "ok"
        body = {"status": "ok" if ok else "unavailable", "checks": {"queue": queue}}
        return json_response(self._with_masters(body, masters), 200 if ok else 503)

    async def ready(self) -> Response:
        """GET /health/ready: 200 only when the queue and the relational store answer (and,
        with `?workers=1`, some worker has beaten within STALE_AFTER_S). A
        cluster is ready while any master answers: one failing over stops only its own
        projects' ingest (which /health/ingest reports), and taking every collector out
        of service for it would stop everyone's."""
        (queue, masters), database = await asyncio.gather(
            self._queue(every_master=False), check_database(self.db)
        )
        checks = {"queue": queue, "database": database}
        if request.args.get("workers") == "1":
            checks["workers"] = await check(self._a_worker_beats)
        response = readiness(checks)
        body = self._with_masters(await response.get_json(), masters)
        return json_response(body, response.status_code)

    async def _a_worker_beats(self) -> None:
        """Raise unless some worker has beaten within STALE_AFTER_S."""
        since = int(time.time() * 1000) - STALE_AFTER_S * 1000
        found = await self.queue.client.execute(
            "ZRANGEBYSCORE", WORKERS_KEY, since, "+inf", "LIMIT", 0, 1, key=WORKERS_KEY
        )
        if not found:
            raise NoWorkerAlive()

    async def _queue(self, every_master: bool) -> tuple[str, dict[str, str]]:
        """The queue's check (service.web.check) and the masters' states as it saw them:
        `every_master` must answer (and a cluster be in state ok), or any one."""
        masters: dict[str, str] = {}

        async def probe() -> None:
            masters.update(await self.queue.masters())
            if every_master:
                await self.queue.all_answer(masters)
            elif "ok" not in masters.values():
                raise RedisError("no master of the queue store answers")

        return await check(probe), masters

    def _with_masters(self, body: dict[str, Any], masters: dict[str, str]) -> dict[str, Any]:
        """`body` with a cluster's masters and their states (as it is on one server)."""
        if not self.queue.client.clustered or not masters:
            return body
        return {**body, "cluster": {"masters": masters}}
