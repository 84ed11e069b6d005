"""A worker's health from outside and inside: `spangate worker --check` and its metrics.

`--check` reads the heartbeats (spanqueue.heartbeat) and exits 0 when the worker asked
for is alive, 1 otherwise, with one line saying which: a container's health check. The
worker asked for is `--consumer NAME`, or, without it, any worker of this host (the
default names are `<host>-<pid>`, and `spangate serve`'s is `<host>-serve`).
"""

from __future__ import annotations

import logging
import socket
import sys
import time
from collections.abc import Callable

import redis
from prometheus_client import start_http_server

from service.settings import Settings
from spangate.embedded_redis import EmbeddedRedis
from spanqueue import heartbeat
from spanqueue.connect import queue_client
from worker.metrics import WorkerMetrics

log = logging.getLogger("spangate.worker")
CHECK_TIMEOUT_S = 5.0


def _beats(client: redis.Redis | redis.RedisCluster, consumer: str | None) -> list[str]:
    """A line for each worker alive that the check asks for."""
    now_ms = int(time.time() * 1000)
    if consumer is not None:
        found = heartbeat.last_beat(client, consumer)
        beats = [] if found is None else [found]
    else:
        beats = heartbeat.alive(client, now_ms, prefix=f"{socket.gethostname()}-")
    return [
        f"worker {b.consumer} alive: {b.state}, last beat {max(0, now_ms - b.at_ms) / 1000:.1f} s "
        f"ago, {b.spans_stored} spans stored"
        for b in beats
    ]


def check(settings: Settings, consumer: str | None) -> int:
    """`spangate worker --check`: 0 when the worker is alive, else 1."""
    url = settings.redis_url or EmbeddedRedis(settings.data_dir).running_url()
    who = f"worker {consumer}" if consumer else f"no worker of host {socket.gethostname()}"
    if url is None:
        print(f"{who}: no queue store runs here (SPANGATE_REDIS_URL is unset)", file=sys.stderr)
        return 1
    try:
        client = queue_client(url, socket_timeout=CHECK_TIMEOUT_S)
        try:
            lines = _beats(client, consumer)
        finally:
            client.close()
    except redis.RedisError as e:
        print(f"the queue store did not answer: {e}", file=sys.stderr)
        return 1
    if not lines:
        silent = f"{who} has not beaten" if consumer else f"{who} has beaten"
        print(f"{silent} within {heartbeat.STALE_AFTER_S} s", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


def serve_metrics(host: str, port: int, metrics: WorkerMetrics) -> Callable[[], None]:
    """Serve the worker's metrics at http://host:port/metrics (0: not at all); a call
    that stops serving them. A port taken is logged, and the worker runs without."""
    if port == 0:
        return lambda: None
    try:
        server, _ = start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as e:
        log.warning("worker metrics not served", extra={"port": port, "error": str(e)})
        return lambda: None
    log.info("worker metrics served", extra={"url": f"http://{host}:{port}/metrics"})
    return server.shutdown
