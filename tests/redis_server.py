"""A real redis-server for tests: the project's embedded one, or SPANGATE_REDIS_URL."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import redis

from spangate.embedded_redis import AOF_REWRITE_MIN_SIZE, free_port, redis_server_binary


class RedisServer:
    """A redis-server process owned by a test: it can be stopped and started again."""

    def __init__(
        self,
        directory: Path,
        port: int | None = None,
        extra: tuple[str, ...] = (),
        password: str | None = None,
    ) -> None:
        self.directory = directory
        self.port = port or free_port()
        self.extra = extra
        self.password = password
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                redis_server_binary(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                "--save",
                "",
                "--appendonly",
                "yes",
                # the embedded server's log rewrites, which the benchmarks measure
                "--auto-aof-rewrite-min-size",
                AOF_REWRITE_MIN_SIZE,
                "--maxmemory-policy",
                "noeviction",
                *(("--requirepass", self.password) if self.password else ()),
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                probe = redis.Redis.from_url(
                    self.url, password=self.password, socket_connect_timeout=0.2
                )
                if probe.ping():
                    return self
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None

    def crash(self) -> None:
        """SIGKILL: gone at once, as a machine that fails."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=30)
            self.process = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)


def shared_redis_url(directory: Path) -> tuple[str, RedisServer | None]:
    """SPANGATE_REDIS_URL when set, else a fresh embedded server (returned to stop later)."""
    url = os.environ.get("SPANGATE_REDIS_URL")
    if url:
        return url, None
    server = RedisServer(directory).start()
    return server.url, server
