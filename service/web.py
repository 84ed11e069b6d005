"""What the apps (collector, scores sidecar, dashboard) share on the HTTP side: JSON
responses and dependency checks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import orjson
from quart import Quart, Response
from quart.wrappers.request import Body
from werkzeug.exceptions import HTTPException

from storage.database import Database
from storage.schema import migrate_when_reachable

JSON = "application/json"
CHECK_TIMEOUT_S = 2.0


async def whole_body(body: Body) -> bytes:
    """A request's body, whole (an awaitable for asyncio.wait_for, under the request's
    body timeout)."""
    data: bytes = await body
    return data


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response serialised with orjson."""
    return Response(orjson.dumps(body), status=status, headers=headers, content_type=JSON)


async def check(probe: Callable[[], Awaitable[object]]) -> str:
    """`ok`, or `unavailable: <ErrorType>` when the probe fails or takes over 2 s."""
    try:
        await asyncio.wait_for(probe(), CHECK_TIMEOUT_S)
    except Exception as e:  # any failure is the answer: the dependency is not usable
        return f"unavailable: {type(e).__name__}"
    return "ok"


async def check_database(db: Database) -> str:
    """Whether the relational store answers a trivial query."""
    return await check(lambda: asyncio.to_thread(db.ping))


def readiness(checks: dict[str, str]) -> Response:
    """200 `ready` when every check is ok, else 503 naming what failed."""
    ok = all(value == "ok" for value in checks.values())
    return json_response(
        {"status": "ready" if ok else "not ready", "checks": checks}, 200 if ok else 503
    )


def install_health(app: Quart, db: Database) -> None:
    """`/health` (fixed), `/health/live` (the process answers) and `/health/ready` (the
    database answers), for an app whose one dependency is the database."""

    async def health() -> Response:
        return json_response({"status": "ok"})

    async def live() -> Response:
        return json_response({"status": "live"})

    async def ready() -> Response:
        return readiness({"database": await check_database(db)})

    app.add_url_rule("/health", view_func=health, methods=["GET"])
    app.add_url_rule("/health/live", view_func=live, methods=["GET"])
    app.add_url_rule("/health/ready", view_func=ready, methods=["GET"])


def http_exception_parts(error: HTTPException) -> tuple[int, str, str, dict[str, str]]:
    """(status, CODE, message, headers to keep) for a framework HTTP error (404, 405...)."""
    status = error.code or 500
    code = (error.name or "error").upper().replace(" ", "_")
    message = {404: "no such route", 405: "method not allowed on this route"}.get(
        status, error.description or code
    )
    headers = {k: v for k, v in error.get_headers() if k.lower() == "allow"}
    return status, code, message, headers


class Background(Protocol):
    """A loop the app runs while serving, stopped (not cancelled) at shutdown."""

    async def run(self) -> None: ...
    async def stop(self) -> None: ...


BACKGROUND_STOP_S = 5.0


def install_lifespan(
    app: Quart,
    db: Database,
    log: logging.Logger,
    *closers: Callable[[], Awaitable[None]],
    background: Sequence[Background] = (),
) -> None:
    """Migrate in the background at start (retrying while the database is down, so the
    app serves health checks meanwhile) and run `background` loops; at the end stop the
    loops, cancel the migration if it still waits, close `closers`, then the database."""
    migration: list[asyncio.Task[None]] = []
    loops: list[asyncio.Task[None]] = []

    @app.before_serving
    async def open_clients() -> None:
        migration.append(asyncio.create_task(migrate_when_reachable(db, log)))
        loops.extend(asyncio.create_task(loop.run()) for loop in background)

    @app.after_serving
    async def close_clients() -> None:
        for loop in background:
            await loop.stop()
        if loops:
            await asyncio.wait(loops, timeout=BACKGROUND_STOP_S)
        for task in migration + loops:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for close in closers:
            await close()
        await asyncio.to_thread(db.close)
