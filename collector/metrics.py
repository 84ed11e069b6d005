"""The collector's own Prometheus metrics, served at GET /metrics.

One registry per app (not the process-wide default), so apps and tests stay apart.
Labels never carry a key: projects appear by their opaque id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from quart import Response

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """Every metric the collector exports."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._children: dict[tuple[Counter | Gauge, tuple[str, ...]], Any] = {}
        r = self.registry
        self.requests = Counter(
            "spangate_requests",
            "HTTP requests by route and status",
            ["route", "status"],
            registry=r,
        )
        self.spans = Counter(
            "spangate_spans",
            "Spans by route and outcome (accepted, rejected)",
            ["route", "outcome"],
            registry=r,
        )
        self.refusals = Counter(
            "spangate_refusals", "Refused requests by error code", ["code"], registry=r
        )
        self.enqueue_seconds = Histogram(
            "spangate_enqueue_seconds",
            "Time from XADD sent to Redis's confirmation",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=r,
        )
        self.queue_depth = Gauge(
            "spangate_queue_depth_spans",
            "Queued, not yet stored spans of a project (last seen)",
            ["project"],
            registry=r,
        )
        self.inflight_bytes = Gauge(
            "spangate_inflight_bytes", "Request body bytes held by requests in progress", registry=r
        )
        self.redis_memory_ratio = Gauge(
            "spangate_redis_memory_ratio", "Redis used_memory / maxmemory (last sample)", registry=r
        )

    def child(self, metric: Counter | Gauge, *labels: str) -> Any:
        """`metric.labels(*labels)`, looked up once: labels() takes a lock and builds its
        key on every call, several times a request."""
        key = (metric, labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def watch(self, inflight_bytes: Callable[[], float], memory_ratio: Callable[[], float]) -> None:
        """Gauges read at scrape time."""
        self.inflight_bytes.set_function(inflight_bytes)
        self.redis_memory_ratio.set_function(memory_ratio)

    async def endpoint(self) -> Response:
        """GET /metrics in the Prometheus text format."""
        return Response(generate_latest(self.registry), content_type=CONTENT_TYPE)
