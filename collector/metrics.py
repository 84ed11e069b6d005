"""The collector's own Prometheus metrics, served at GET /metrics.

Values are plain numbers, written on the event loop's thread (the only one that counts:
conversions sent to a thread count nothing) and turned into Prometheus families only at
scrape time. prometheus_client's own metrics take a lock on every change, about
0.5-1.3 us each, and a 1-span request made five of them. The text is the one
prometheus_client writes for its counters (with their `_created` series), gauges and
histogram. One registry per app (not the process-wide default), so apps and tests stay
apart. Labels never carry a key: projects appear by their opaque id.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString
from quart import Response

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Labels = tuple[str, ...]


class Counts:
    """A counter (or a gauge) by label values."""

    __slots__ = ("name", "documentation", "label_names", "values", "created")

    def __init__(self, name: str, documentation: str, label_names: Labels) -> None:
        self.name = name
        self.documentation = documentation
        self.label_names = label_names
        self.values: dict[Labels, float] = {}
        self.created: dict[Labels, float] = {}

    def inc(self, labels: Labels, amount: float = 1) -> None:
        """Add `amount` (not negative) to the series of `labels`."""
        values = self.values
        if labels in values:
            values[labels] += amount
        else:
            values[labels] = amount
            self.created[labels] = time.time()

    def set(self, labels: Labels, value: float) -> None:
        """Set a gauge's series of `labels`."""
        self.values[labels] = value

    def counter(self) -> Metric:
        total = CounterMetricFamily(self.name, self.documentation, labels=self.label_names)
        for labels, value in self.values.items():
            total.add_metric(labels, value, created=self.created[labels])
        return total

    def gauge(self) -> Metric:
        family = GaugeMetricFamily(self.name, self.documentation, labels=self.label_names)
        for labels, value in self.values.items():
            family.add_metric(labels, value)
        return family


class Buckets:
    """A histogram without labels: `bounds` are its buckets' upper bounds, ascending."""

    def __init__(self, name: str, documentation: str, bounds: tuple[float, ...]) -> None:
        self.name = name
        self.documentation = documentation
        self.bounds = bounds
        self._le = [floatToGoString(b) for b in (*bounds, float("inf"))]  # type: ignore[no-untyped-call]
        self.counts = [0] * (len(bounds) + 1)  # the last one past every bound (+Inf)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    def families(self) -> Iterator[Metric]:
        cumulative, running = [], 0
        for le, count in zip(self._le, self.counts, strict=True):
            running += count
            cumulative.append((le, running))
        histogram = HistogramMetricFamily(self.name, self.documentation)
        histogram.add_metric([], cumulative, self.sum)
        yield histogram
        yield GaugeMetricFamily(f"{self.name}_created", self.documentation, value=self.created)


class Metrics:
    """Every metric the collector exports."""

    def __init__(self) -> None:
        self.requests = Counts(
            "spangate_requests", "HTTP requests by route and status", ("route", "status")
        )
        self.spans = Counts(
            "spangate_spans",
            "Spans by route and outcome (accepted, rejected)",
            ("route", "outcome"),
        )
        self.refusals = Counts("spangate_refusals", "Refused requests by error code", ("code",))
        self.enqueue_seconds = Buckets(
            "spangate_enqueue_seconds",
            "Time from XADD sent to Redis's confirmation",
            (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
        )
        self.queue_depth = Counts(
            "spangate_queue_depth_spans",
            "Queued, not yet stored spans of a project (last seen)",
            ("project",),
        )
        self.redis_node_errors = Counts(
            "spangate_redis_node_errors",
            "Failed calls to the queue store by node of a Redis Cluster (unreachable, "
            "silent, or an error reply other than a redirection)",
            ("node",),
        )
        self.records_dropped = Counts(
            "spangate_ingestion_records_dropped",
            "Records of the ingestion record not written (too many waiting, or Redis failed)",
            (),
        )
        self._read_at_scrape: list[tuple[str, str, Callable[[], float]]] = []
        self.registry = CollectorRegistry()
        self.registry.register(_Export(self))

    def watch(self, inflight_bytes: Callable[[], float], memory_ratio: Callable[[], float]) -> None:
        """Gauges read at scrape time."""
        self._read_at_scrape = [
            (
                "spangate_inflight_bytes",
                "Request body bytes held by requests in progress",
                inflight_bytes,
            ),
            (
                "spangate_redis_memory_ratio",
                "Redis used_memory / maxmemory (last sample)",
                memory_ratio,
            ),
        ]

    def families(self) -> Iterator[Metric]:
        """Every family, in the order they are written."""
        yield self.requests.counter()
        yield self.spans.counter()
        yield self.refusals.counter()
        yield from self.enqueue_seconds.families()
        yield self.queue_depth.gauge()
        yield self.redis_node_errors.counter()
        yield self.records_dropped.counter()
        for name, documentation, read in self._read_at_scrape:
            yield GaugeMetricFamily(name, documentation, value=read())

    async def endpoint(self) -> Response:
        """GET /metrics in the Prometheus text format."""
        return Response(generate_latest(self.registry), content_type=CONTENT_TYPE)


class _Export(Collector):
    """The registry's view of a Metrics."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        return self.metrics.families()
