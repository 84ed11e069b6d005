"""Rate limits, queue capacity and the in-flight byte budget, each from its real cause."""

from __future__ import annotations

import asyncio
import gzip
import ipaddress
import tracemalloc
from typing import Any

import orjson
import pytest
import redis

from collector.bodies import _INFLATE_SLACK, decode, inflated_bound
from collector.errors import GatewayError
from collector.inflight import InflightBudget
from service.client_address import client_ip
from service.settings import Settings
from spanqueue.layout import depth_key
from storage.database import Database
from storage.spans import SpanStore
from tests.collector.conftest import ADMISSIONS, Tenant, make_app, sent
from tests.proto_json.spans import span
from tests.redis_server import RedisServer
from worker.loop import Worker

TWO = orjson.dumps({"spans": [span(), span(spanId="1" * 16)]})


@pytest.mark.parametrize("admission", ADMISSIONS)
async def test_project_rate_limit_is_429_with_retry_after(
    settings: Settings, tenant: Tenant, admission: str
) -> None:
    """Past the project's burst, 429 RATE_LIMIT_EXCEEDED with retry_after = Retry-After,
    and nothing of the refused request is queued."""
    app = make_app(settings, rate_limit_project_rps=1.0, rate_limit_ip_rps=0.0)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        statuses = [
            (await client.post("/v1/spans", **sent(TWO, admission, tenant.auth())))
            for _ in range(3)
        ]
    assert [r.status_code for r in statuses] == [200, 200, 429]  # a burst of 2 s at 1 rps
    error = (await statuses[2].get_json())["error"]
    assert error["code"] == "RATE_LIMIT_EXCEEDED" and error["retry_after"] >= 1
    assert statuses[2].headers["Retry-After"] == str(error["retry_after"])
    assert len(tenant.queued()) == 2


@pytest.mark.parametrize("admission", ADMISSIONS)
@pytest.mark.parametrize(
    ("body", "second"),
    [(b"{", 400), (orjson.dumps({"spans": [span(name="")]}), 200)],
    ids=["unparsable", "all-rejected"],
)
async def test_rate_limit_answers_before_the_body(
    settings: Settings, tenant: Tenant, admission: str, body: bytes, second: int
) -> None:
    """Whichever way a request is admitted, a rate limit answers before what its body
    holds: a body that does not parse, or one with nothing to queue, still spends the
    limit and is refused 429 once over it."""
    app = make_app(settings, rate_limit_project_rps=1.0, rate_limit_ip_rps=0.0)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        first = await client.post("/v1/spans", **sent(TWO, admission, tenant.auth()))
        within = await client.post("/v1/spans", **sent(body, admission, tenant.auth()))
        over = await client.post("/v1/spans", **sent(body, admission, tenant.auth()))
    assert (first.status_code, within.status_code, over.status_code) == (200, second, 429)


@pytest.mark.parametrize("admission", ADMISSIONS)
async def test_ip_rate_limit_spans_projects(
    settings: Settings, tenant: Tenant, admission: str
) -> None:
    """The per-IP limit counts every project's requests from one address."""
    with redis.Redis.from_url(str(settings.redis_url)) as client_redis:
        for key in client_redis.scan_iter(match="spangate:ip:*"):  # an earlier test's count
            client_redis.delete(key)
    other = tenant.store.create_key("second-project", "owner@x.io").key
    app = make_app(settings, rate_limit_project_rps=0.0, rate_limit_ip_rps=1.0)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        first = await client.post("/v1/spans", **sent(TWO, admission, tenant.auth()))
        second = await client.post(
            "/v1/spans", **sent(TWO, admission, {"Authorization": f"Bearer {other}"})
        )
        third = await client.post("/v1/spans", **sent(TWO, admission, tenant.auth()))
    assert (first.status_code, second.status_code, third.status_code) == (200, 200, 429)


@pytest.mark.parametrize("admission", ADMISSIONS)
async def test_queue_near_capacity_until_the_worker_drains(
    settings: Settings, tenant: Tenant, admission: str
) -> None:
    """At the project's queue capacity: 503 QUEUE_NEAR_CAPACITY; after the worker stores
    the queued spans, the depth is back to 0 and requests are accepted again."""
    app = make_app(settings, queue_max_spans_per_project=2)
    client_redis = redis.Redis.from_url(str(settings.redis_url))
    async with app.test_app() as test_app:
        client = test_app.test_client()

        async def post() -> Any:
            return await client.post("/v1/spans", **sent(TWO, admission, tenant.auth()))

        assert (await post()).status_code == 200
        assert int(client_redis.get(depth_key(tenant.project_id))) == 2
        full = await post()
        assert full.status_code == 503
        assert (await full.get_json())["error"]["code"] == "QUEUE_NEAR_CAPACITY"
        assert len(tenant.queued()) == 1
        db = Database(settings.database_url)
        Worker(client_redis, SpanStore(db), 1200, block_ms=10).run(burst=True)
        db.close()
        assert int(client_redis.get(depth_key(tenant.project_id))) == 0
        assert (await post()).status_code == 200
    client_redis.close()


@pytest.mark.parametrize("admission", ADMISSIONS)
async def test_unreadable_depth_is_queue_depth_unknown(
    settings: Settings, tenant: Tenant, admission: str
) -> None:
    """A depth Redis cannot read as a number gives 503 QUEUE_DEPTH_UNKNOWN, never a 500."""
    client_redis = redis.Redis.from_url(str(settings.redis_url))
    client_redis.set(depth_key(tenant.project_id), "not a number")
    async with make_app(settings).test_app() as test_app:
        response = await test_app.test_client().post(
            "/v1/spans", **sent(TWO, admission, tenant.auth())
        )
    client_redis.delete(depth_key(tenant.project_id))
    client_redis.close()
    assert response.status_code == 503
    assert (await response.get_json())["error"]["code"] == "QUEUE_DEPTH_UNKNOWN"
    assert tenant.queued() == []


async def test_inflight_budget_refuses_what_does_not_fit(
    settings: Settings, tenant: Tenant
) -> None:
    """A body that does not fit the in-flight budget is refused before it is buffered."""
    app = make_app(settings, max_inflight_bytes=100)
    async with app.test_app() as test_app:
        response = await test_app.test_client().post(
            "/v1/spans", data=TWO, headers=tenant.auth(**{"Content-Length": str(len(TWO))})
        )
    assert response.status_code == 503
    assert (await response.get_json())["error"]["code"] == "INFLIGHT_BYTES_EXHAUSTED"


async def test_a_small_gzip_body_reserves_what_it_can_inflate_to(
    settings: Settings, tenant: Tenant
) -> None:
    """A gzip body reserves the most it can inflate to, not the whole body limit: a
    small one fits a budget under the limit; a body of unknown length does not."""
    app = make_app(settings, max_inflight_bytes=settings.max_body_bytes // 2)
    packed = gzip.compress(TWO)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        headers = {"Content-Encoding": "gzip", "Content-Length": str(len(packed))}
        response = await client.post("/v1/spans", data=packed, headers=tenant.auth(**headers))
        assert response.status_code == 200
        response = await client.post(
            "/v1/spans", data=packed, headers=tenant.auth(**{"Content-Encoding": "gzip"})
        )
    assert response.status_code == 503  # unannounced: the limit, and its inflated copy
    assert len(tenant.queued()) == 1


@pytest.mark.parametrize("codings", [["gzip"], ["gzip", "gzip"]])
def test_the_inflated_bound_holds_for_a_gzip_bomb(codings: list[str]) -> None:
    """The most of zeros gzip packs, inflated layer by layer: what inflating it holds
    at its peak (tracemalloc) is within the bound, which stays at twice the limit."""
    data = packed = bytes(2_000_000)
    for _ in codings:
        packed = gzip.compress(packed, compresslevel=9)
    limit = 10 * len(data)
    tracemalloc.start()
    try:
        assert decode(packed, codings, limit) == data
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert 2 * len(data) <= peak <= inflated_bound(len(packed), codings, limit)
    assert inflated_bound(len(packed), codings, 100) == (2 * 101 + _INFLATE_SLACK) * len(codings)


def test_inflight_budget_counts_and_releases() -> None:
    """Reservations add up while held and are released afterwards, also on errors."""
    budget = InflightBudget(100)
    with budget.reserve(60, "a"):
        with pytest.raises(GatewayError):
            with budget.reserve(41, "b"):
                pass
        with budget.reserve(40, "b"):
            assert budget.used == 100
    with pytest.raises(ZeroDivisionError), budget.reserve(100, "a"):
        raise ZeroDivisionError
    assert budget.used == 0 and budget.held == {}


def test_a_project_holds_at_most_half_the_budget_while_it_holds_any() -> None:
    """A project holding bytes may not take more than half the budget, so the others
    still get theirs; one holding nothing may reserve whatever fits."""
    budget = InflightBudget(100)
    with budget.reserve(30, "a"):
        with pytest.raises(GatewayError) as refused:
            with budget.reserve(25, "a"):
                pass
        assert refused.value.code == "INFLIGHT_BYTES_EXHAUSTED"
        with budget.reserve(20, "a"), budget.reserve(50, "b"):
            assert budget.held == {"a": 50, "b": 50}
    with budget.reserve(90, "a"):
        assert budget.used == 90
    assert budget.held == {}


def test_client_ip_trusts_only_configured_proxies() -> None:
    """X-Forwarded-For is believed only from trusted proxies, rightmost untrusted hop."""
    proxies = (ipaddress.ip_network("10.0.0.0/8"),)
    assert client_ip("203.0.113.9", "1.2.3.4", ()) == "203.0.113.9"
    assert client_ip("203.0.113.9", "1.2.3.4", proxies) == "203.0.113.9"
    assert client_ip("10.0.0.5", "1.2.3.4, 198.51.100.7, 10.0.0.9", proxies) == "198.51.100.7"
    assert client_ip("10.0.0.5", "10.0.0.7", proxies) == "10.0.0.5"
    assert client_ip(None, None, ()) == "unknown"


async def test_sampled_memory_pressure_is_redis_memory_high(
    settings: Settings, tenant: Tenant
) -> None:
    """Over the memory ratio (Redis's own maxmemory, for real): 503 REDIS_MEMORY_HIGH with
    Retry-After before the body is read; back under it, accepted again."""
    server = RedisServer(settings.data_dir / "memory-redis").start()
    try:
        client_redis = server.client()
        used = int(client_redis.info("memory")["used_memory"])
        client_redis.config_set("maxmemory", str(int(used / 0.5)))  # about 50% used
        app = make_app(settings, redis_url=server.url, redis_memory_high_ratio=0.3)
        async with app.test_app() as test_app:
            client = test_app.test_client()
            refused = await _until(client, tenant, 503)
            client_redis.config_set("maxmemory", "0")
            accepted = await _until(client, tenant, 200)
        error = (await refused.get_json())["error"]
        assert error["code"] == "REDIS_MEMORY_HIGH"
        assert refused.headers["Retry-After"] == str(error["retry_after"])
        assert accepted.status_code == 200
    finally:
        server.stop()


async def _until(client: Any, tenant: Tenant, status: int) -> Any:
    """Post until the answer has `status` (the sampler runs once a second); 10 s at most."""
    for _ in range(100):
        response = await client.post("/v1/spans", data=TWO, headers=tenant.auth())
        if response.status_code == status:
            return response
        await asyncio.sleep(0.1)
    raise AssertionError(f"never answered {status}")


@pytest.mark.parametrize("size", [0, 1, 2**18 - 1, 2**18, 2**18 + 1, 3 * 2**18, 2_000_000])
@pytest.mark.parametrize("content", ["zeros", "random"])
def test_gunzip_gives_back_every_byte_whatever_its_pieces(size: int, content: str) -> None:
    """Inflated a piece at a time, a body comes back whole: of any size around a piece's,
    the most compressible (whose input runs out before its output) and the least, in
    one gzip member or two, with the zero padding some senders add."""
    import random

    data = bytes(size) if content == "zeros" else random.Random(size).randbytes(size)
    packed = gzip.compress(data)
    assert decode(packed, ["gzip"], size) == data
    half = size // 2
    two = gzip.compress(data[:half]) + gzip.compress(data[half:]) + bytes(8)
    assert decode(two, ["gzip"], size) == data
    with pytest.raises(GatewayError) as refused:
        decode(packed, ["gzip"], size - 1) if size else decode(packed[:-4], ["gzip"], 1)
    assert refused.value.code in ("DECOMPRESSED_PAYLOAD_TOO_LARGE", "SERIALIZATION_ERROR")
