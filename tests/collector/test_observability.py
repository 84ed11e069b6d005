"""GET /metrics and request ids."""

from __future__ import annotations

import orjson
from quart.typing import TestClientProtocol as Client

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
