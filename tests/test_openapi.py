"""The OpenAPI descriptions are kept true: schemathesis drives the running apps with them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from spangate.embedded_redis import free_port
from tests.processes import spawn, stop, wait_healthy

ROOT = Path(__file__).parents[1]


@schemathesis.serializer("application/x-ndjson")
def _ndjson(context: Any, value: Any) -> bytes:
    """NDJSON bodies are generated as text; anything else is sent as one JSON line (by the
    standard library, which also writes integers past 64 bits for the gateway to refuse)."""
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


GATEWAY = schemathesis.openapi.from_path(ROOT / "openapi" / "gateway.json")
SCORES = schemathesis.openapi.from_path(ROOT / "openapi" / "scores.json")


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """spangate serve (embedded Redis, SQLite) with an owner's key."""
    work = tmp_path_factory.mktemp("openapi")
    ports = {"ingest": free_port(), "api": free_port()}
    env = {"SPANGATE_INGEST_PORT": str(ports["ingest"]), "SPANGATE_API_PORT": str(ports["api"])}
    serve = spawn(["serve"], env, work)
    try:
        for name in ("ingest", "api"):
            wait_healthy(f"http://127.0.0.1:{ports[name]}/health/ready", serve)
        for argv in (
            ["users", "add", "o@x.io", "--role", "owner"],
            ["keys", "create", "--project", "api", "--user", "o@x.io"],
        ):
            done = spawn(argv, env, work)
            out, _ = done.communicate(timeout=60)
        key = out.decode().strip().splitlines()[-1]
        yield {
            "ingest": f"http://127.0.0.1:{ports['ingest']}",
            "api": f"http://127.0.0.1:{ports['api']}",
            "key": key,
        }
    finally:
        _, err = stop(serve)
        Path("/tmp/openapi_serve.err").write_bytes(err)


#: Not `negative_data_rejection`: the gateway answers a span that breaks a rule with 200 and
#: reports it in `errors` (only the envelope is a 400), which that check calls a failure.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
FAST = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@GATEWAY.parametrize()
@FAST
def test_gateway_matches_its_description(case: schemathesis.Case, running: dict[str, str]) -> None:
    """Every gateway answer has a documented status, content type and body shape."""
    case.call_and_validate(
        base_url=running["ingest"],
        checks=CHECKS,
        headers={"Authorization": f"Bearer {running['key']}"},
    )


@SCORES.parametrize()
@FAST
def test_scores_api_matches_its_description(
    case: schemathesis.Case, running: dict[str, str]
) -> None:
    """Every scores API answer has a documented status, content type and body shape."""
    case.call_and_validate(
        base_url=running["api"],
        checks=CHECKS,
        headers={"Authorization": f"Bearer {running['key']}"},
    )
