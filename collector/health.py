"""Health routes: fixed, liveness, queue reachability, and readiness of every dependency."""

from __future__ import annotations

import asyncio
from typing import Any

from quart import Response
from redis.exceptions import RedisError

from collector.queue import SpanQueue
from service.web import CHECK_TIMEOUT_S, check, check_database, json_response, readiness
from storage.database import Database


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
        queue = await check(self.queue.ping)
        ok = queue == "ok"
        body: dict[str, Any] = {
            "status": "ok" if ok else "unavailable",
            "checks": {"queue": queue},
        }
        return json_response(await self._with_masters(body), 200 if ok else 503)

    async def ready(self) -> Response:
        """GET /health/ready: 200 only when the queue and the relational store answer. A
        cluster is ready while any master answers: one failing over stops only its own
        projects' ingest (which /health/ingest reports), and taking every collector out
        of service for it would stop everyone's."""
        queue, database = await asyncio.gather(check(self._some_master), check_database(self.db))
        response = readiness({"queue": queue, "database": database})
        body = await self._with_masters(await response.get_json())
        return json_response(body, response.status_code)

    async def _some_master(self) -> None:
        masters = await self.queue.masters()
        if "ok" not in masters.values():
            raise RedisError("no master of the queue store answers")

    async def _with_masters(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` with a cluster's masters and their states (as it is on one server)."""
        try:
            if not self.queue.client.clustered:
                return body
            masters = await asyncio.wait_for(self.queue.masters(), CHECK_TIMEOUT_S)
        except (RedisError, TimeoutError, OSError):
            return body
        return {**body, "cluster": {"masters": masters}}
