"""GET /metrics and request ids."""

from __future__ import annotations

from typing import Any

import orjson
import prometheus_client as prom
from quart.typing import TestClientProtocol as Client

from collector.app import create_app
from collector.metrics import Counts, Metrics
from collector.request_tags import RequestTags
from service.logs import request_id
from service.settings import Settings
from tests.collector.conftest import Tenant
from tests.proto_json.spans import span

BODY = orjson.dumps({"spans": [span(), span(spanId="1" * 16, name="")]})


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample in Prometheus text (labels in any order), 0 when absent."""
    for line in text.splitlines():
        series, _, value = line.rpartition(" ")
        metric, _, label_text = series.partition("{")
        found = dict(part.split("=", 1) for part in label_text.rstrip("}").split(",") if part)
        if metric == name and {k: v.strip('"') for k, v in found.items()} == labels:
            return float(value)
    return 0.0


async def test_metrics_count_requests_spans_refusals(client: Client, tenant: Tenant) -> None:
    """Requests by route and status, spans by outcome, refusals by code, queue depth,
    enqueue latency and in-flight bytes are exported in the Prometheus format."""
    await client.post("/v1/spans", data=BODY, headers=tenant.auth())
    await client.post("/v1/spans", data=BODY)  # 401
    response = await client.get("/metrics")
    text = (await response.get_data()).decode()
    assert response.status_code == 200 and response.content_type.startswith("text/plain")
    assert sample(text, "spangate_requests_total", route="/v1/spans", status="200") == 1
    assert sample(text, "spangate_requests_total", route="/v1/spans", status="401") == 1
    assert sample(text, "spangate_spans_total", route="spans", outcome="accepted") == 1
    assert sample(text, "spangate_spans_total", route="spans", outcome="rejected") == 1
    assert sample(text, "spangate_refusals_total", code="UNAUTHORIZED") == 1
    assert sample(text, "spangate_enqueue_seconds_count") == 1
    assert sample(text, "spangate_queue_depth_spans", project=tenant.project_id) == 0
    assert "spangate_inflight_bytes 0.0" in text
    assert tenant.key not in text


async def test_request_ids(client: Client, tenant: Tenant) -> None:
    """Every answer carries X-Request-Id: the client's when it is plain, else a new one."""
    given = await client.get("/health", headers={"X-Request-Id": "abc-123"})
    assert given.headers["X-Request-Id"] == "abc-123"
    made = await client.get("/health", headers={"X-Request-Id": "x" * 200})
    assert len(made.headers["X-Request-Id"]) == 16
    refused = await client.post("/v1/spans", data=BODY)
    assert refused.status_code == 401 and refused.headers["X-Request-Id"]


async def test_unmatched_answers_are_tagged_and_counted_unmatched(client: Client) -> None:
    """404 and 405 answers (made by the framework) carry a request id too, and are counted
    under `unmatched`; a HEAD of a GET route is counted under its route."""
    missing = await client.get("/nowhere", headers={"X-Request-Id": "r-404"})
    wrong_method = await client.get("/v1/spans", headers={"X-Request-Id": "r-405"})
    head = await client.head("/health")
    assert (missing.status_code, missing.headers["X-Request-Id"]) == (404, "r-404")
    assert (wrong_method.status_code, wrong_method.headers["X-Request-Id"]) == (405, "r-405")
    assert head.headers["X-Request-Id"]
    text = (await (await client.get("/metrics")).get_data()).decode()
    assert sample(text, "spangate_requests_total", route="unmatched", status="404") == 1
    assert sample(text, "spangate_requests_total", route="unmatched", status="405") == 1
    assert sample(text, "spangate_requests_total", route="/health", status="200") == 1
    assert sample(text, "spangate_requests_total", route="/v1/spans", status="405") == 0


def test_every_collector_route_is_a_plain_path(settings: Settings) -> None:
    """RequestTags labels requests by path: no route may have variables (nor /static)."""
    rules = [rule.rule for rule in create_app(settings).url_map.iter_rules()]
    assert "/v1/spans" in rules and all("<" not in rule for rule in rules)


async def test_the_request_id_is_set_for_the_requests_logs() -> None:
    """While the app runs, service.logs' request id is the one the answer carries."""
    seen: list[str | None] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(request_id.get())
        await send({"type": "http.response.start", "status": 204, "headers": [(b"a", b"1")]})
        await send({"type": "http.response.body", "body": b""})

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    tags = RequestTags(app, Metrics(), {"/x": frozenset({"GET"})})
    scope = {"type": "http", "path": "/x", "method": "GET", "headers": [(b"x-request-id", b"q1")]}
    await tags(scope, None, send)
    assert seen == ["q1"]
    assert sent[0]["headers"] == [(b"a", b"1"), (b"x-request-id", b"q1")]
    assert sent[1] == {"type": "http.response.body", "body": b""}


def test_metrics_text_is_prometheus_clients_own() -> None:
    """The plain counts export the text prometheus_client's own metrics would, for the
    same changes (bucket bounds included: a value on a bound counts in that bucket)."""
    ours = Metrics()
    ours.watch(lambda: 12, lambda: 0.25)
    registry = prom.CollectorRegistry()
    requests = prom.Counter(*ours_spec(ours.requests), registry=registry)
    spans = prom.Counter(*ours_spec(ours.spans), registry=registry)
    refusals = prom.Counter(*ours_spec(ours.refusals), registry=registry)
    bounds = ours.enqueue_seconds.bounds
    enqueue = prom.Histogram(
        ours.enqueue_seconds.name,
        ours.enqueue_seconds.documentation,
        buckets=bounds,
        registry=registry,
    )
    depth = prom.Gauge(*ours_spec(ours.queue_depth), registry=registry)
    node_errors = prom.Counter(*ours_spec(ours.redis_node_errors), registry=registry)
    dropped = prom.Counter(*ours_spec(ours.records_dropped), registry=registry)
    prom.Gauge(
        "spangate_inflight_bytes",
        "Request body bytes held by requests in progress",
        registry=registry,
    ).set(12)
    prom.Gauge(
        "spangate_redis_memory_ratio",
        "Redis used_memory / maxmemory (last sample)",
        registry=registry,
    ).set(0.25)
    for route, status in [("/v1/spans", "200"), ("/v1/spans", "200"), ("unmatched", "404")]:
        ours.requests.inc((route, status))
        requests.labels(route, status).inc()
    for outcome, amount in [("accepted", 3), ("rejected", 0), ("accepted", 2)]:
        ours.spans.inc(("spans", outcome), amount)
        spans.labels("spans", outcome).inc(amount)
    ours.refusals.inc(("UNAUTHORIZED",))
    refusals.labels("UNAUTHORIZED").inc()
    for seconds in (0.0001, 0.0005, 0.001, 0.7, 2.5, 9.0):
        ours.enqueue_seconds.observe(seconds)
        enqueue.observe(seconds)
    for project, value in [("p1", 7), ("p2", 1), ("p1", 3)]:
        ours.queue_depth.set((project,), value)
        depth.labels(project).set(value)
    for node in ("10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.1:6379"):
        ours.redis_node_errors.inc((node,))
        node_errors.labels(node).inc()
    ours.records_dropped.inc((), 2)
    dropped.inc(2)

    def without_created(text: bytes) -> list[str]:
        return [line for line in text.decode().splitlines() if "_created" not in line]

    assert without_created(prom.generate_latest(ours.registry)) == without_created(
        prom.generate_latest(registry)
    )
    created = [
        line
        for line in prom.generate_latest(ours.registry).decode().splitlines()
        if "_created{" in line or line.startswith("spangate_enqueue_seconds_created ")
    ]
    assert len(created) == 2 + 2 + 1 + 2 + 1  # one per series of each counter, the histogram's


def ours_spec(counts: Counts) -> tuple[str, str, tuple[str, ...]]:
    """A family's name, help and label names, to make prometheus_client's own."""
    return counts.name, counts.documentation, counts.label_names
