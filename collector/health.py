"""Health routes: fixed, liveness, queue reachability, and readiness of every dependency."""

from __future__ import annotations

import asyncio

from quart import Response

from collector.queue import SpanQueue
from service.web import check, check_database, json_response, readiness
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
        """GET /health/ingest: 200 when the queue store answers, else 503."""
        queue = await check(self.queue.ping)
        ok = queue == "ok"
        return json_response(
            {"status": "ok" if ok else "unavailable", "checks": {"queue": queue}},
            200 if ok else 503,
        )

    async def ready(self) -> Response:
        """GET /health/ready: 200 only when the queue and the relational store answer."""
        queue, database = await asyncio.gather(check(self.queue.ping), check_database(self.db))
        return readiness({"queue": queue, "database": database})
