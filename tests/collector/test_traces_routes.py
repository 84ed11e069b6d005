"""/v1/traces (native or OTLP) and /v1/otlp/v1/traces, with their answer forms."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest
from quart.typing import TestClientProtocol as Client

import proto_json
from service.settings import Settings
from tests.collector.conftest import Tenant, make_app
from tests.proto_json.spans import TRACE_ID, otlp_body, otlp_span, span

EXAMPLE = (Path(__file__).parents[2] / "examples" / "otlp_trace_example.json").read_bytes()
NATIVE = orjson.dumps(
    {
        "traces": [
            {
                "traceId": TRACE_ID,
                "sessionId": "s1",
                "spans": [span(), span(spanId="1" * 16, name="")],
            },
        ]
    }
)


async def test_native_traces_answer(client: Client, tenant: Tenant) -> None:
    """A native body gets tracesAccepted/spansAccepted/spansRejected and per-trace errors."""
    response = await client.post("/v1/traces", data=NATIVE, headers=tenant.auth())
    assert response.status_code == 200
    assert await response.get_json() == {
        "tracesAccepted": 1,
        "spansAccepted": 1,
        "spansRejected": 1,
        "errors": [
            {
                "traceId": TRACE_ID,
                "spanErrors": [
                    {"index": 1, "error": "INVALID_NAME: name must be a non-empty string"}
                ],
            }
        ],
    }
    [queued] = tenant.queued()
    assert queued.route == "traces"
    assert b'"session.id"' in queued.body


async def test_otlp_body_on_traces_route_gets_otlp_answer(client: Client, tenant: Tenant) -> None:
    """An OTLP body on /v1/traces is converted and answered in the OTLP form."""
    response = await client.post("/v1/traces", data=EXAMPLE, headers=tenant.auth())
    assert response.status_code == 200
    assert await response.get_json() == {"partialSuccess": {"rejectedSpans": 0, "errorMessage": ""}}
    assert orjson.loads(tenant.queued()[0].body) == proto_json.convert_otlp(EXAMPLE).request


async def test_content_encoding_makes_native_answer_otlp(client: Client, tenant: Tenant) -> None:
    """With a Content-Encoding, /v1/traces answers in the OTLP form even for a native body."""
    response = await client.post(
        "/v1/traces",
        data=gzip.compress(NATIVE),
        headers=tenant.auth(**{"Content-Encoding": "gzip"}),
    )
    answer = await response.get_json()
    assert response.status_code == 200 and answer["partialSuccess"]["rejectedSpans"] == 1
    assert "INVALID_NAME" in answer["partialSuccess"]["errorMessage"]


@pytest.mark.parametrize("route", ["/v1/traces", "/v1/otlp/v1/traces"])
async def test_protobuf_refused_with_otlp_body(client: Client, tenant: Tenant, route: str) -> None:
    """application/x-protobuf gets 415 and an OTLP body saying to send JSON."""
    response = await client.post(
        route, data=b"\x0a\x00", headers=tenant.auth(**{"Content-Type": "application/x-protobuf"})
    )
    assert response.status_code == 415
    message = (await response.get_json())["partialSuccess"]["errorMessage"]
    assert "application/json" in message


async def test_otlp_route_partial_success(client: Client, tenant: Tenant) -> None:
    """Rejected spans are counted in partialSuccess with a message naming each one."""
    body = otlp_body(otlp_span(), otlp_span(spanId="1" * 16, traceId="xyz"))
    response = await client.post("/v1/otlp/v1/traces", data=body, headers=tenant.auth())
    partial = (await response.get_json())["partialSuccess"]
    assert response.status_code == 200 and partial["rejectedSpans"] == 1
    assert partial["errorMessage"].startswith("1 spans rejected: span 1: INVALID_TRACE_ID")
    assert tenant.queued()[0].route == "otlp"


async def test_a_body_without_resource_spans_is_answered_with_a_warning(
    client: Client, tenant: Tenant
) -> None:
    """A native body sent to the OTLP route holds no span OTLP reads: 200 (OTLP
    ignores unknown members), nothing queued, and the answer's errorMessage says so;
    an empty request says nothing."""
    native = orjson.dumps({"spans": [span()]})
    response = await client.post("/v1/otlp/v1/traces", data=native, headers=tenant.auth())
    partial = (await response.get_json())["partialSuccess"]
    assert response.status_code == 200 and partial["rejectedSpans"] == 0
    assert partial["errorMessage"] == "no span was found in the body; members ignored: spans"
    empty = await client.post("/v1/otlp/v1/traces", data=b"{}", headers=tenant.auth())
    assert (await empty.get_json())["partialSuccess"]["errorMessage"] == ""
    assert tenant.queued() == []
    # a native body answered in the OTLP form (it has a Content-Encoding) whose span has
    # a member the gateway ignores: the span is stored, and the answer says nothing else
    odd = {"traces": [{"traceId": TRACE_ID, "spans": [{**span(), "foo": 1}]}]}
    headers = tenant.auth(**{"Content-Encoding": "identity"})
    sent = await client.post("/v1/traces", data=orjson.dumps(odd), headers=headers)
    assert (await sent.get_json())["partialSuccess"] == {"rejectedSpans": 0, "errorMessage": ""}
    assert len(tenant.queued()) == 1


@pytest.mark.parametrize(
    ("body", "encoding", "status"),
    [
        (b"{not json", None, 400),
        (b'{"resourceSpans": 5}', None, 400),
        (b"garbage", "gzip", 400),
        (b"{}", "br", 400),
    ],
)
async def test_otlp_route_failures_have_otlp_body(
    client: Client, tenant: Tenant, body: bytes, encoding: str | None, status: int
) -> None:
    """Undecodable or unparseable OTLP-route bodies get 400 with the reason in errorMessage."""
    headers = tenant.auth(**({"Content-Encoding": encoding} if encoding else {}))
    response = await client.post("/v1/otlp/v1/traces", data=body, headers=headers)
    assert response.status_code == status
    assert set(await response.get_json()) == {"partialSuccess"}


async def test_otlp_envelope_error_on_traces_route_is_otlp_form(
    client: Client, tenant: Tenant
) -> None:
    """An OTLP body with a broken envelope on /v1/traces is answered in the OTLP form."""
    response = await client.post(
        "/v1/traces", data=b'{"resourceSpans": [1]}', headers=tenant.auth()
    )
    assert response.status_code == 400
    assert "VALIDATION_ERROR" in (await response.get_json())["partialSuccess"]["errorMessage"]


@pytest.mark.parametrize(
    "body",
    [
        b' {"resourceSpans": [{"scopeSpans": [' + b"[" * 300 + b"]" * 300,  # too deep
        b'{\n  "resourceSpans" : [{"x": 1,}]}',  # a trailing comma
    ],
)
async def test_an_otlp_body_that_does_not_parse_on_traces_route_is_otlp_form(
    client: Client, tenant: Tenant, body: bytes
) -> None:
    """A body that begins as OTLP's does but does not parse, on /v1/traces: 400 in the
    OTLP form, as the OTLP route answers it; a native one that does not parse keeps the
    gateway's."""
    response = await client.post("/v1/traces", data=body, headers=tenant.auth())
    assert response.status_code == 400
    assert "SERIALIZATION_ERROR" in (await response.get_json())["partialSuccess"]["errorMessage"]
    response = await client.post("/v1/traces", data=b'{"traces": [,]}', headers=tenant.auth())
    assert (await response.get_json())["error"]["code"] == "SERIALIZATION_ERROR"


async def test_otlp_route_oversize_is_413_otlp(settings: Settings, tenant: Tenant) -> None:
    """Over the size limit on the OTLP route: 413 with an OTLP body."""
    app = make_app(settings, max_body_bytes=100)
    async with app.test_app() as test_app:
        response = await test_app.test_client().post(
            "/v1/otlp/v1/traces", data=b"x" * 200, headers=tenant.auth(**{"Content-Length": "200"})
        )
    assert response.status_code == 413
    assert "PAYLOAD_TOO_LARGE" in (await response.get_json())["partialSuccess"]["errorMessage"]


async def test_empty_otlp_request_is_accepted(client: Client, tenant: Tenant) -> None:
    """An empty export request is a 200 that queues nothing."""
    response = await client.post("/v1/otlp/v1/traces", data=b"{}", headers=tenant.auth())
    assert response.status_code == 200 and tenant.queued() == []


async def test_auth_errors_keep_the_error_body_on_otlp_route(client: Client) -> None:
    """A 401 on the OTLP route uses the documented error object (only body failures are OTLP)."""
    response = await client.post("/v1/otlp/v1/traces", data=EXAMPLE)
    assert response.status_code == 401
    assert (await response.get_json())["error"]["code"] == "UNAUTHORIZED"
