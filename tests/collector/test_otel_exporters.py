"""Real OpenTelemetry Python exporters pointed at a real collector process."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from opentelemetry.exporter.otlp.common.http import Compression
from opentelemetry.exporter.otlp.json.http.trace_exporter import (
    OTLPSpanExporter as JsonSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as ProtobufSpanExporter,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Status, StatusCode

from tests.collector.conftest import Tenant
from tests.proto_json import protobuf


class Recording(SpanExporter):
    """Wraps an exporter and keeps the result of each export."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.results: list[SpanExportResult] = []

    def export(self, spans):  # type: ignore[no-untyped-def]
        result = self.inner.export(spans)
        self.results.append(result)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()


@pytest.fixture
def base_url(start_collector: Any) -> str:
    return str(start_collector().url)


def emit(exporter: SpanExporter) -> Recording:
    """A small agent trace through a real TracerProvider; every span exported at once."""
    recording = Recording(exporter)
    provider = TracerProvider(resource=Resource.create({"service.name": "agent-app"}))
    provider.add_span_processor(SimpleSpanProcessor(recording))
    tracer = provider.get_tracer("agent.sdk", "0.6.0")
    with tracer.start_as_current_span("plan", kind=SpanKind.SERVER) as root:
        root.set_attribute("agent.name", "planner")
        with tracer.start_as_current_span("llm", kind=SpanKind.CLIENT) as child:
            child.set_attribute("llm.tokens", 42)
            child.set_attribute("llm.temperature", 0.2)
            child.set_attribute("tags", ["a", "b"])
            child.add_event("retry", {"attempt": 1})
            child.set_status(Status(StatusCode.ERROR, "rate limited"))
    provider.shutdown()
    return recording


@pytest.mark.parametrize("path", ["/v1/otlp/v1/traces", "/v1/traces"])
@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
def test_json_exporter_succeeds_and_spans_are_queued(
    base_url: str, tenant: Tenant, path: str, compression: Compression
) -> None:
    """The OTLP/JSON HTTP exporter exports successfully; its spans reach the queue intact."""
    exporter = JsonSpanExporter(
        endpoint=base_url + path,
        compression=compression,
        headers={"Authorization": f"Bearer {tenant.key}"},
    )
    recording = emit(exporter)
    assert recording.results == [SpanExportResult.SUCCESS, SpanExportResult.SUCCESS]
    queued = tenant.queued()
    assert sum(item.span_count for item in queued) == 2
    spans = {}
    for item in queued:
        request = orjson.loads(item.body)
        protobuf.parse(request)
        [resource_spans] = request["resourceSpans"]
        assert {"key": "service.name", "value": {"stringValue": "agent-app"}} in (
            resource_spans["resource"]["attributes"]
        )
        for span in resource_spans["scopeSpans"][0]["spans"]:
            spans[span["name"]] = span
    assert spans["plan"]["kind"] == 2 and spans["llm"]["kind"] == 3
    assert spans["llm"]["parentSpanId"] == spans["plan"]["spanId"]
    assert spans["llm"]["status"] == {"code": 2, "message": "rate limited"}
    assert spans["llm"]["events"][0]["name"] == "retry"
    assert {"key": "llm.tokens", "value": {"intValue": "42"}} in spans["llm"]["attributes"]


def test_protobuf_exporter_gets_a_clear_refusal(base_url: str, tenant: Tenant) -> None:
    """The stock protobuf exporter is refused (415, asking for JSON): no crash, no 500."""
    exporter = ProtobufSpanExporter(
        endpoint=base_url + "/v1/traces", headers={"Authorization": f"Bearer {tenant.key}"}
    )
    recording = emit(exporter)
    assert recording.results == [SpanExportResult.FAILURE, SpanExportResult.FAILURE]
    assert tenant.queued() == []
    import httpx

    answer = httpx.post(
        base_url + "/v1/traces",
        content=b"\x0a\x00",
        headers={"Authorization": f"Bearer {tenant.key}", "Content-Type": "application/x-protobuf"},
    )
    assert answer.status_code == 415
    assert "OTLP/JSON" in answer.json()["partialSuccess"]["errorMessage"]


def test_deflate_exporter_is_refused_clearly(base_url: str, tenant: Tenant) -> None:
    """deflate (which this exporter offers) is not gzip: refused with a reason, nothing queued."""
    exporter = JsonSpanExporter(
        endpoint=base_url + "/v1/otlp/v1/traces",
        compression=Compression.DEFLATE,
        headers={"Authorization": f"Bearer {tenant.key}"},
    )
    assert emit(exporter).results == [SpanExportResult.FAILURE, SpanExportResult.FAILURE]
    assert tenant.queued() == []
