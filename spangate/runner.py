"""Serving one Quart app on Hypercorn until SIGTERM or SIGINT, then draining in-flight work."""

from __future__ import annotations

import asyncio
import logging
import signal

from hypercorn.asyncio import serve
from hypercorn.config import Config
from quart import Quart

GRACEFUL_TIMEOUT_S = 15.0


def hypercorn_config(host: str, port: int) -> Config:
    """Hypercorn settings shared by the collector and the sidecar."""
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.graceful_timeout = GRACEFUL_TIMEOUT_S
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # through spangate's JSON handler
    config.keep_alive_timeout = 75  # above common load balancer idle timeouts (60 s)
    return config


async def serve_until_signalled(app: Quart, config: Config) -> None:
    """Serve until SIGTERM/SIGINT; Hypercorn then finishes in-flight requests."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await serve(app, config, shutdown_trigger=stop.wait)


def run(app: Quart, host: str, port: int) -> None:
    """Blocking: serve `app` on host:port until signalled."""
    asyncio.run(serve_until_signalled(app, hypercorn_config(host, port)))
