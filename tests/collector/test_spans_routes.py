"""/v1/spans and /v1/spans/batch through the app, with the queue read back from Redis."""

from __future__ import annotations

import gzip
import zlib

import orjson
import pytest
from quart.typing import TestClientProtocol as Client

import proto_json
from collector.ingest import MAX_VALUES, OFFLOAD_BYTES
from service.settings import Settings
from tests.collector.conftest import Tenant, make_app
from tests.proto_json.spans import TRACE_ID, span

ONE = orjson.dumps({"spans": [span()]})


async def test_accepted_span_is_queued_as_canonical_otlp(client: Client, tenant: Tenant) -> None:
    """A 200 means the canonical form of the accepted spans is in the project's stream."""
    response = await client.post("/v1/spans", data=ONE, headers=tenant.auth())
    assert response.status_code == 200
    assert await response.get_json() == {"accepted": 1, "rejected": 0}
    [queued] = tenant.queued()
    assert queued.project_id == tenant.project_id and queued.route == "spans"
    assert queued.span_count == 1
    assert orjson.loads(queued.body) == proto_json.convert_spans(ONE).request


async def test_rejections_and_ignored_fields_in_answer(client: Client, tenant: Tenant) -> None:
    """Rejected spans are listed by index; dropped fields are counted and listed (10 max)."""
    extra = {f"x{i}": i for i in range(12)}
    body = orjson.dumps({"spans": [span(**extra), span(traceId="nope")], "meta": 1})
    response = await client.post("/v1/spans", data=body, headers=tenant.auth())
    answer = await response.get_json()
    assert response.status_code == 200
    assert (answer["accepted"], answer["rejected"]) == (1, 1)
    assert answer["errors"] == [
        {"index": 1, "error": "INVALID_TRACE_ID: traceId must be 32 hex characters"}
    ]
    assert answer["ignored"]["count"] == 13 and len(answer["ignored"]["fields"]) == 10
    assert answer["ignored"]["fields"][0] == "meta"
    assert tenant.queued()[0].span_count == 1


async def test_all_rejected_is_200_and_queues_nothing(client: Client, tenant: Tenant) -> None:
    """A 200 can reject every span; nothing reaches the queue then."""
    body = orjson.dumps({"spans": [span(name=""), span(spanId="x")]})
    response = await client.post("/v1/spans", data=body, headers=tenant.auth())
    assert response.status_code == 200
    assert (await response.get_json())["rejected"] == 2
    assert tenant.queued() == []


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{", "SERIALIZATION_ERROR"),
        (b"[]", "VALIDATION_ERROR"),
        (b'{"spans": 1}', "VALIDATION_ERROR"),
        (b"", "SERIALIZATION_ERROR"),
    ],
)
async def test_envelope_errors_are_400(
    client: Client, tenant: Tenant, body: bytes, code: str
) -> None:
    """A body that is not the route's envelope is 400 with the documented error body."""
    response = await client.post("/v1/spans", data=body, headers=tenant.auth())
    assert response.status_code == 400
    assert (await response.get_json())["error"]["code"] == code
    assert "retry_after" not in (await response.get_json())["error"]


async def test_span_cap_refuses_everything(settings: Settings, tenant: Tenant) -> None:
    """Over the span cap: 503 TOO_MANY_SPANS, the same on repeat, nothing queued."""
    app = make_app(settings, max_spans_per_request=2)
    body = orjson.dumps({"spans": [span(spanId=f"{i + 1:016x}") for i in range(3)]})
    async with app.test_app() as test_app:
        client = test_app.test_client()
        for _ in range(2):
            response = await client.post("/v1/spans", data=body, headers=tenant.auth())
            assert response.status_code == 503
            error = (await response.get_json())["error"]
            assert error["code"] == "TOO_MANY_SPANS" and "retry_after" not in error
            assert "Retry-After" not in response.headers
    assert tenant.queued() == []


async def test_attribute_cap_refuses_everything(settings: Settings, tenant: Tenant) -> None:
    """Over the attribute cap: 503 TOO_MANY_ATTRIBUTES, nothing queued."""
    app = make_app(settings, max_attributes_per_request=3)
    body = orjson.dumps(
        {
            "spans": [
                span(attributes={"a": 1, "b": 2}),
                span(spanId="1" * 16, attributes={"c": 3, "d": 4}),
            ]
        }
    )
    async with app.test_app() as test_app:
        response = await test_app.test_client().post("/v1/spans", data=body, headers=tenant.auth())
    assert response.status_code == 503
    assert (await response.get_json())["error"]["code"] == "TOO_MANY_ATTRIBUTES"
    assert tenant.queued() == []


async def test_attribute_values_are_capped_counting_those_in_arrays(
    client: Client, tenant: Tenant
) -> None:
    """An array of a million short values is 2 MB sent and 17 MB written canonical: a
    request over MAX_VALUES attribute values (counting those inside arrays and maps),
    or whose canonical form grew past twice its body and GROWTH_SLACK (arrays nested
    deep), is 503 TOO_MANY_ATTRIBUTES saying so, on every repeat, nothing queued; real
    spans near the body's limit (long texts, embedding vectors) are accepted. (An OTLP
    body writes each value at its canonical size: it cannot grow.)"""
    over = [0] * MAX_VALUES  # with the top-level value: one over
    nested = {"m": [{"k": [0] * (MAX_VALUES // 2)}, [0] * (MAX_VALUES // 2)]}
    for route, body in (
        ("/v1/spans", {"spans": [span(attributes={"a": over})]}),
        ("/v1/spans", {"spans": [span(attributes=nested)]}),
        (
            "/v1/traces",
            {"traces": [{"traceId": TRACE_ID, "spans": [span(attributes={"a": over})]}]},
        ),
    ):
        for _ in range(2):
            response = await client.post(route, data=orjson.dumps(body), headers=tenant.auth())
            assert response.status_code == 503, route
            answer = await response.get_json()
            assert answer["error"]["code"] == "TOO_MANY_ATTRIBUTES"
            assert f"over {MAX_VALUES:,} attribute values" in answer["error"]["message"]
    assert tenant.queued() == []
    deep: object = 0
    for _ in range(31):
        deep = [deep]
    nested = {"spans": [span(attributes={f"k{n}": deep for n in range(23_999)})]}
    response = await client.post("/v1/spans", data=orjson.dumps(nested), headers=tenant.auth())
    assert response.status_code == 503  # 1.7 MB sent, 22 MB stored: over twice and 8 MB
    assert "over twice its size" in (await response.get_json())["error"]["message"]
    assert tenant.queued() == []
    # what real spans send at the body's limit grows far less: long texts, embeddings
    texts = {"spans": [span(spanId=f"{n:016x}", attributes={"t": "w" * 9000}) for n in range(1000)]}
    vectors = {"spans": [span(spanId=f"{n:016x}", attributes={
        "embedding.embeddings.0.embedding.vector": [0.0123456789 * k for k in range(1536)]})
        for n in range(400)]}  # fmt: skip
    for body in (texts, vectors):
        data = orjson.dumps(body)
        assert len(data) > 8_000_000
        response = await client.post("/v1/spans", data=data, headers=tenant.auth())
        assert response.status_code == 200
    at_cap = {"spans": [span(attributes={"a": over[1:]})]}
    response = await client.post("/v1/spans", data=orjson.dumps(at_cap), headers=tenant.auth())
    assert response.status_code == 503  # 2 MB sent, 17 MB stored: over twice and 8 MB
    assert len(tenant.queued()) == 2


async def test_gzip_body_accepted(client: Client, tenant: Tenant) -> None:
    """Content-Encoding gzip is inflated before parsing."""
    response = await client.post(
        "/v1/spans", data=gzip.compress(ONE), headers=tenant.auth(**{"Content-Encoding": "gzip"})
    )
    assert response.status_code == 200 and (await response.get_json())["accepted"] == 1


async def test_gzip_bomb_is_413_decompressed(settings: Settings, tenant: Tenant) -> None:
    """A body that inflates past the limit is 413 DECOMPRESSED_PAYLOAD_TOO_LARGE."""
    app = make_app(settings, max_body_bytes=64 * 1024)
    bomb = gzip.compress(b"{" + b" " * (50 * 1024 * 1024) + b"}", compresslevel=9)
    assert len(bomb) < 64 * 1024
    async with app.test_app() as test_app:
        response = await test_app.test_client().post(
            "/v1/spans", data=bomb, headers=tenant.auth(**{"Content-Encoding": "gzip"})
        )
    assert response.status_code == 413
    assert (await response.get_json())["error"]["code"] == "DECOMPRESSED_PAYLOAD_TOO_LARGE"


@pytest.mark.parametrize("data", [b"not gzip at all", gzip.compress(ONE)[:-8], zlib.compress(ONE)])
async def test_broken_gzip_is_400(client: Client, tenant: Tenant, data: bytes) -> None:
    """Bytes that are not (whole) gzip are 400 SERIALIZATION_ERROR."""
    response = await client.post(
        "/v1/spans", data=data, headers=tenant.auth(**{"Content-Encoding": "gzip"})
    )
    assert response.status_code == 400
    assert (await response.get_json())["error"]["code"] == "SERIALIZATION_ERROR"


@pytest.mark.parametrize("route", ["/v1/spans", "/v1/spans/batch"])
async def test_unsupported_encoding_is_415(client: Client, tenant: Tenant, route: str) -> None:
    """A Content-Encoding other than gzip or identity is 415 on the spans routes."""
    response = await client.post(route, data=ONE, headers=tenant.auth(**{"Content-Encoding": "br"}))
    assert response.status_code == 415
    assert (await response.get_json())["error"]["code"] == "UNSUPPORTED_CONTENT_ENCODING"
    identity = await client.post(
        route,
        data=orjson.dumps(span()) if "batch" in route else ONE,
        headers=tenant.auth(**{"Content-Encoding": "identity"}),
    )
    assert identity.status_code == 200


async def test_content_length_over_limit_is_413_with_error(
    settings: Settings, tenant: Tenant
) -> None:
    """A Content-Length over the limit is 413 PAYLOAD_TOO_LARGE before the body is read."""
    app = make_app(settings, max_body_bytes=100)
    async with app.test_app() as test_app:
        response = await test_app.test_client().post(
            "/v1/spans", data=b"x" * 101, headers=tenant.auth(**{"Content-Length": "101"})
        )
    assert response.status_code == 413
    assert (await response.get_json())["error"]["code"] == "PAYLOAD_TOO_LARGE"


async def test_ndjson_batch(client: Client, tenant: Tenant) -> None:
    """The batch route takes one span per line and answers like /v1/spans."""
    body = b"\n".join([orjson.dumps(span()), b"", b"{bad", orjson.dumps(span(spanId="1" * 16))])
    response = await client.post(
        "/v1/spans/batch",
        data=body,
        headers=tenant.auth(**{"Content-Type": "application/x-ndjson"}),
    )
    answer = await response.get_json()
    assert response.status_code == 200
    assert (answer["accepted"], answer["rejected"]) == (2, 1)
    assert answer["errors"] == [
        {"index": 1, "error": "SERIALIZATION_ERROR: line 3 is not valid JSON"}
    ]
    assert tenant.queued()[0].route == "spans_batch"


async def test_large_body_converted_off_loop_same_result(client: Client, tenant: Tenant) -> None:
    """A body above the offload size is converted in a thread with the same outcome."""
    spans = [span(spanId=f"{i + 1:016x}", attributes={"pad": "x" * 600}) for i in range(2000)]
    body = orjson.dumps({"spans": spans})
    assert len(body) > OFFLOAD_BYTES
    response = await client.post("/v1/spans", data=body, headers=tenant.auth())
    assert (await response.get_json()) == {"accepted": 2000, "rejected": 0}
    assert orjson.loads(tenant.queued()[0].body) == proto_json.convert_spans(body).request
