"""Health routes: fixed, liveness, queue reachability, and readiness of every dependency."""

from __future__ import annotations

import asyncio

from quart import Response

from collector.answers import json_response
from collector.queue import SpanQueue
from storage.database import Database

CHECK_TIMEOUT_S = 2.0


async def _check_queue(queue: SpanQueue) -> str:
    try:
        await asyncio.wait_for(queue.ping(), CHECK_TIMEOUT_S)
    except Exception as e:  # any failure is the answer: the queue is not usable
        return f"unavailable: {type(e).__name__}"
    return "ok"


async def _check_database(db: Database) -> str:
    try:
        await asyncio.wait_for(asyncio.to_thread(db.ping), CHECK_TIMEOUT_S)
    except Exception as e:  # any failure is the answer: the store is not usable
        return f"unavailable: {type(e).__name__}"
    return "ok"


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
        queue = await _check_queue(self.queue)
        ok = queue == "ok"
        return json_response(
            {"status": "ok" if ok else "unavailable", "checks": {"queue": queue}},
            200 if ok else 503,
        )

    async def ready(self) -> Response:
        """GET /health/ready: 200 only when the queue and the relational store answer."""
        queue, database = await asyncio.gather(_check_queue(self.queue), _check_database(self.db))
        checks = {"queue": queue, "database": database}
        ok = all(value == "ok" for value in checks.values())
        return json_response(
            {"status": "ready" if ok else "not ready", "checks": checks}, 200 if ok else 503
        )
