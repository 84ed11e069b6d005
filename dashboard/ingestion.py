"""The ingestion page and its JSON: what became of the project's recent requests.

Read from the queue store (spanqueue.ingestion_read), one pipeline a view, on a thread
(the client is redis-py's, made at first use and closed when the app stops). Every role
of the project's organisation reads it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime
from typing import Any

import redis
from quart import Response, render_template, request

from dashboard import params
from dashboard.errors import DashboardError, invalid
from dashboard.explorer import Explorer, signed_in_project
from dashboard.ingestion_chart import render
from service.web import json_response
from spanqueue.connect import queue_client
from spanqueue.ingestion_read import IngestionView, read_ingestion
from storage.identity import Project

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
#: The chart's windows, in minutes.
WINDOWS = {"hour": 60, "day": 1440}
SOCKET_TIMEOUT_S = 2.0


def iso_ms(at_ms: int) -> str:
    """A time in ms as ISO 8601 UTC, to the millisecond."""
    moment = datetime.fromtimestamp(at_ms / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ingestion_json(view: IngestionView) -> dict[str, Any]:
    """`GET /api/v1/projects/{p}/ingestion` (the names are a contract)."""
    return {
        "requests": [
            {
                "at": iso_ms(r.at_ms),
                "route": r.route,
                "status": r.status,
                "code": r.code,
                "accepted": r.accepted,
                "rejected": r.rejected,
                "ignored": r.ignored,
                "bytes": r.body_bytes,
                "keyPrefix": r.key_prefix,
            }
            for r in view.requests
        ],
        "refused": [
            {"at": iso_ms(s.at_ms), "traceId": s.trace_id, "spanId": s.span_id, "reason": s.reason}
            for s in view.refused
        ],
        "deadLetters": view.dead_letters,
        "queueDepth": view.queue_depth,
        "lagMs": {"p50": view.lag_p50_ms, "p95": view.lag_p95_ms},
    }


class Ingestion:
    """The ingestion routes, on the queue store at `redis_url` (None: not configured)."""

    def __init__(self, explorer: Explorer, redis_url: str | None) -> None:
        self.explorer = explorer
        self.redis_url = redis_url
        self._client: redis.Redis | redis.RedisCluster | None = None
        self._lock = threading.Lock()

    def _queue(self) -> redis.Redis | redis.RedisCluster:
        if self.redis_url is None:
            raise DashboardError(
                503, "QUEUE_UNAVAILABLE", "no queue store is configured (SPANGATE_REDIS_URL)"
            )
        with self._lock:
            if self._client is None:
                self._client = queue_client(self.redis_url, SOCKET_TIMEOUT_S)
            return self._client

    def _read(self, project: Project, limit: int, minutes: int, wrong_only: bool) -> IngestionView:
        try:
            now_ms = int(time.time() * 1000)
            return read_ingestion(self._queue(), project.id, limit, now_ms, minutes, wrong_only)
        except redis.RedisError as e:
            raise DashboardError(
                503, "QUEUE_UNAVAILABLE", "the queue store is not answering; try again"
            ) from e

    async def page(self, project: str) -> str:
        window = params.one(request.args, "window") or "hour"
        if window not in WINDOWS:
            raise invalid(f"window must be one of {', '.join(WINDOWS)}")
        limit = params.limit_of(request.args, DEFAULT_LIMIT, MAX_LIMIT)
        wrong_only = _wrong_only(request.args)
        found = await signed_in_project(self.explorer, project)
        view = await asyncio.to_thread(self._read, found, limit, WINDOWS[window], wrong_only)
        return await render_template(
            "ingestion.html",
            project=found,
            view=view,
            window=window,
            wrong_only=wrong_only,
            chart=render(view.minutes),
        )

    async def api(self, project: str) -> Response:
        limit = params.limit_of(request.args, DEFAULT_LIMIT, MAX_LIMIT)
        wrong_only = _wrong_only(request.args)
        found = await signed_in_project(self.explorer, project)
        view = await asyncio.to_thread(self._read, found, limit, WINDOWS["hour"], wrong_only)
        return json_response(ingestion_json(view))

    async def close(self) -> None:
        """Close the client (when the app stops)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            await asyncio.to_thread(client.close)


def _wrong_only(args: params.Args) -> bool:
    """`problems=1`: only the requests refused or with spans rejected."""
    value = params.one(args, "problems")
    if value not in ("", "0", "1"):
        raise invalid("problems must be 1 or 0")
    return value == "1"
