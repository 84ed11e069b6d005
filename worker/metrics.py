"""A worker's own Prometheus metrics, served by `spangate worker` on
SPANGATE_WORKER_METRICS_PORT.

Written a few times a batch (not a span), from the loop and the writer threads, so
prometheus_client's own metrics, which take a lock per change, cost nothing worth
counting here. One registry per worker, not the process-wide default.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
BATCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class WorkerMetrics:
    """Every metric a worker exports."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.spans_stored = Counter(
            "spangate_worker_spans_stored",
            "Spans stored (rate() of it: spans stored per second)",
            registry=self.registry,
        )
        self.spans_refused = Counter(
            "spangate_worker_spans_refused",
            "Spans refused after their 200 by the re-sending rule",
            registry=self.registry,
        )
        self.dead_letters = Counter(
            "spangate_worker_dead_letters",
            "Queue entries moved to the dead letters",
            registry=self.registry,
        )
        self.lag_seconds = Histogram(
            "spangate_worker_lag_seconds",
            "From a request's 200 to its spans stored, per request",
            buckets=LAG_BUCKETS,
            registry=self.registry,
        )
        self.batch_seconds = Histogram(
            "spangate_worker_batch_seconds",
            "Time to write one part of a batch (about 5,000 spans; 10,000 on PostgreSQL)",
            buckets=BATCH_BUCKETS,
            registry=self.registry,
        )
