"""Serving one Quart app on Hypercorn until SIGTERM or SIGINT, then draining in-flight work."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Callable

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


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A socket bound with SO_REUSEPORT: several processes each bind their own on one port
    and the kernel spreads connections across them."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    return sock


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop's event loop where it is installed (a dependency except on Windows): the
    same coroutines, with the loop's own work (selecting, callbacks, transports) in C."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def run(app: Quart, host: str, port: int, reuse_port: bool = False) -> None:
    """Blocking: serve `app` on host:port until signalled (sharing the port if asked)."""
    config = hypercorn_config(host, port)
    sock = reuse_port_socket(host, port) if reuse_port else None
    if sock is not None:
        config.bind = [f"fd://{sock.fileno()}"]
    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            runner.run(serve_until_signalled(app, config))
    finally:
        if sock is not None:
            sock.close()
