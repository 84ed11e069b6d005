"""A dashboard and a collector run as `spangate` runs them, for the browser tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from spangate.embedded_redis import free_port
from spanqueue.layout import STREAMS_KEY, stream_key
from tests.processes import spawn, stop, wait_healthy


@contextmanager
def dashboard_and_collector(
    root: Path, database_url: str, redis_url: str
) -> Iterator[dict[str, str]]:
    """`spangate dashboard` and `spangate collector` on that database and Redis, run in
    `root`, until the block ends: their base URLs (`app`, `ingest`)."""
    port, ingest_port = free_port(), free_port()
    env = {
        "SPANGATE_DATABASE_URL": database_url,
        "SPANGATE_DATA_DIR": str(root / "data"),
        "SPANGATE_APP_PORT": str(port),
        "SPANGATE_INGEST_PORT": str(ingest_port),
        "SPANGATE_REDIS_URL": redis_url,
    }
    processes = [spawn(["dashboard"], env, root), spawn(["collector"], env, root)]
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health/ready", processes[0])
        wait_healthy(f"http://127.0.0.1:{ingest_port}/health/ready", processes[1])
        yield {"app": f"http://127.0.0.1:{port}", "ingest": f"http://127.0.0.1:{ingest_port}"}
    finally:
        for process in processes:
            stop(process)


def forget_queue(redis_url: str, project_id: str) -> None:
    """Remove what the collector queued for a project in the shared test Redis (the
    worker tests drain every stream the set names)."""
    client = redis.Redis.from_url(redis_url)
    try:
        for key in client.scan_iter(match=f"spangate:{{{project_id}}}:*"):
            client.delete(key)
        client.srem(STREAMS_KEY, stream_key(project_id))
    finally:
        client.close()
