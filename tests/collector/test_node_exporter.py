"""The OpenTelemetry JavaScript OTLP/HTTP exporter (JSON by default) against a real collector."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.collector.conftest import Tenant

PACKAGES = [
    "@opentelemetry/sdk-trace-base@^2",
    "@opentelemetry/exporter-trace-otlp-http@<1",
    "@opentelemetry/resources@^2",
]
SCRIPT = """
const { BasicTracerProvider, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const [url, key] = process.argv.slice(2);
const inner = new OTLPTraceExporter({ url, headers: { Authorization: `Bearer ${key}` } });
const results = [];
const exporter = {
  export(spans, done) { inner.export(spans, (r) => { results.push(r.code); done(r); }); },
  shutdown() { return inner.shutdown(); },
};
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'node-agent' }),
  spanProcessors: [new SimpleSpanProcessor(exporter)],
});
const tracer = provider.getTracer('node.sdk', '1.0.0');
const root = tracer.startSpan('plan', { kind: 1, attributes: { 'agent.name': 'planner' } });
root.end();
tracer.startSpan('llm', { attributes: { 'llm.tokens': 7 } }).end();
provider.forceFlush().then(() => provider.shutdown()).then(() => {
  console.log(JSON.stringify(results));
});
"""


@pytest.fixture(scope="module")
def node_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed on this machine")
    project = tmp_path_factory.mktemp("node-otel")
    (project / "package.json").write_text('{"name": "spangate-node-test", "private": true}')
    done = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--silent", *PACKAGES],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        pytest.skip(f"npm could not install the OpenTelemetry packages: {done.stderr[-300:]}")
    (project / "export.js").write_text(SCRIPT)
    return project


@pytest.fixture
def base_url(start_collector: Any) -> str:
    return str(start_collector().url)


@pytest.mark.parametrize("path", ["/v1/otlp/v1/traces", "/v1/traces"])
def test_javascript_exporter_succeeds(
    node_project: Path, base_url: str, tenant: Tenant, path: str
) -> None:
    """Both spans export successfully (result code 0) and reach the queue."""
    done = subprocess.run(
        ["node", "export.js", base_url + path, tenant.key],
        cwd=node_project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [0, 0]
    queued = tenant.queued()
    assert sum(item.span_count for item in queued) == 2
    assert all(b'"node-agent"' in item.body for item in queued)
