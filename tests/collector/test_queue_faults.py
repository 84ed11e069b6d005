"""The queue store failing for real: stopped, frozen, out of memory; and recovering."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import redis

from service.settings import Settings
from spanqueue.layout import STREAMS_KEY, depth_key, stream_key
from tests.collector.conftest import ADMISSIONS, Tenant, make_app, sent
from tests.proto_json.spans import span
from tests.redis_server import RedisServer

BODY = orjson.dumps({"spans": [span()]})


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "own-redis").start()
    yield server
    server.stop()


async def test_redis_down_is_fast_503_and_recovers(
    settings: Settings, tenant: Tenant, own_redis: RedisServer
) -> None:
    """Redis stopped: 503 ENQUEUE_UNCONFIRMED within the timeout; restarted: 200 again."""
    app = make_app(settings, redis_url=own_redis.url, enqueue_timeout_ms=2000)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        assert (await client.post("/v1/spans", data=BODY, headers=tenant.auth())).status_code == 200
        own_redis.stop()
        started = time.monotonic()
        down = await client.post("/v1/spans", data=BODY, headers=tenant.auth())
        elapsed = time.monotonic() - started
        assert down.status_code == 503
        assert (await down.get_json())["error"]["code"] == "ENQUEUE_UNCONFIRMED"
        assert elapsed < 2.0 + 1.0, "an unreachable queue must not hang past the timeout"
        own_redis.start()
        up = await client.post("/v1/spans", data=BODY, headers=tenant.auth())
        assert up.status_code == 200
    assert own_redis.client().xlen(stream_key(tenant.project_id)) == 2  # AOF kept the first


async def test_frozen_redis_is_enqueue_unconfirmed(
    settings: Settings, tenant: Tenant, own_redis: RedisServer
) -> None:
    """Redis not answering in time (DEBUG SLEEP) gives 503 ENQUEUE_UNCONFIRMED."""
    app = make_app(settings, redis_url=own_redis.url, enqueue_timeout_ms=300)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        await client.get("/health/ingest")  # connection established before the freeze
        freeze = asyncio.create_task(
            asyncio.to_thread(own_redis.client().execute_command, "DEBUG", "SLEEP", "1.5")
        )
        await asyncio.sleep(0.2)
        response = await client.post("/v1/spans", data=BODY, headers=tenant.auth())
        await freeze
        assert response.status_code == 503
        assert (await response.get_json())["error"]["code"] == "ENQUEUE_UNCONFIRMED"
        again = await client.post("/v1/spans", data=BODY, headers=tenant.auth())
        assert again.status_code == 200


@pytest.mark.parametrize("admission", ADMISSIONS)
@pytest.mark.parametrize("rate_limits", [True, False], ids=["limited", "unlimited"])
async def test_redis_out_of_memory_is_redis_memory_high(
    settings: Settings, tenant: Tenant, own_redis: RedisServer, admission: str, rate_limits: bool
) -> None:
    """Redis refusing writes for memory becomes 503 REDIS_MEMORY_HIGH with Retry-After:
    at the rate limit's write, or without limits at the XADD."""
    own_redis.client().config_set("maxmemory", "1")
    rps = 100.0 if rate_limits else 0.0
    app = make_app(
        settings, redis_url=own_redis.url, rate_limit_project_rps=rps, rate_limit_ip_rps=rps
    )
    async with app.test_app() as test_app:
        response = await test_app.test_client().post(
            "/v1/spans", **sent(BODY, admission, tenant.auth())
        )
    error = (await response.get_json())["error"]
    assert response.status_code == 503 and error["code"] == "REDIS_MEMORY_HIGH"
    assert response.headers["Retry-After"] == str(error["retry_after"])


async def test_streams_are_registered_for_the_workers(
    settings: Settings, tenant: Tenant, own_redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream's first entry registers it in the set the workers read; a set that was
    lost is written again (here at once: REGISTER_EVERY_S set to 0)."""
    app = make_app(settings, redis_url=own_redis.url)
    redis_client = own_redis.client()
    registered = {stream_key(tenant.project_id).encode()}
    async with app.test_app() as test_app:
        client = test_app.test_client()
        assert (await client.post("/v1/spans", data=BODY, headers=tenant.auth())).status_code == 200
        assert redis_client.smembers(STREAMS_KEY) == registered
        redis_client.delete(STREAMS_KEY)
        monkeypatch.setattr("collector.queue.REGISTER_EVERY_S", 0.0)
        assert (await client.post("/v1/spans", data=BODY, headers=tenant.auth())).status_code == 200
    assert redis_client.smembers(STREAMS_KEY) == registered


@pytest.mark.parametrize("admission", ADMISSIONS)
async def test_redis_error_reply_is_storage_error(
    settings: Settings, tenant: Tenant, admission: str
) -> None:
    """Redis answering the XADD with an error (WRONGTYPE) is 503 STORAGE_ERROR, never a
    500, and the project's queue depth is not raised."""
    client = redis.Redis.from_url(str(settings.redis_url))
    client.set(stream_key(tenant.project_id), "a string where the stream should be")
    try:
        async with make_app(settings).test_app() as test_app:
            response = await test_app.test_client().post(
                "/v1/spans", **sent(BODY, admission, tenant.auth())
            )
        assert client.get(depth_key(tenant.project_id)) is None
    finally:
        client.delete(stream_key(tenant.project_id))
        client.close()
    assert response.status_code == 503
    assert (await response.get_json())["error"]["code"] == "STORAGE_ERROR"


async def test_one_round_trip_for_a_small_request(
    settings: Settings, tenant: Tenant, own_redis: RedisServer
) -> None:
    """A small plain request is admitted and queued by one script call, its ingestion
    record included (a second XADD in that script); a compressed one is admitted by a
    call of its own first. Counted by Redis itself."""
    app = make_app(settings, redis_url=own_redis.url)
    redis_client = own_redis.client()

    def calls() -> dict[str, int]:
        stats = redis_client.info("commandstats")
        names = ("evalsha", "exec", "xadd", "incrby")
        return {name: stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in names}

    async with app.test_app() as test_app:
        client = test_app.test_client()
        await client.post("/v1/spans", **sent(BODY, "with-xadd", tenant.auth()))  # registers
        redis_client.config_resetstat()
        small = await client.post("/v1/spans", **sent(BODY, "with-xadd", tenant.auth()))
        after_small = calls()
        compressed = await client.post("/v1/spans", **sent(BODY, "first", tenant.auth()))
        after_compressed = calls()
    assert (small.status_code, compressed.status_code) == (200, 200)
    assert after_small == {"evalsha": 1, "exec": 0, "xadd": 2, "incrby": 1}
    assert after_compressed == {"evalsha": 3, "exec": 0, "xadd": 4, "incrby": 2}
    assert redis_client.xlen(stream_key(tenant.project_id)) == 3
    assert redis_client.get(depth_key(tenant.project_id)) == b"3"


async def test_logs_never_hold_a_key_or_a_body(
    settings: Settings, tenant: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    """Refusals and failures are logged without the key or the body."""
    import logging

    from service.logs import JsonFormatter

    caplog.set_level(logging.DEBUG)
    marker = b'"name":"secret-payload-marker"'
    body = orjson.dumps({"spans": [span(name="secret-payload-marker"), span(traceId="x")]})
    assert marker in body
    async with make_app(settings, max_spans_per_request=1).test_app() as test_app:
        client = test_app.test_client()
        await client.post("/v1/spans", data=body, headers=tenant.auth())
        wrong = "Bearer " + tenant.key[:-1] + "x"
        await client.post("/v1/spans", data=body, headers={"Authorization": wrong})
        await client.post("/v1/spans", data=body, headers={"X-API-Key": tenant.key})
    formatted = "\n".join(JsonFormatter().format(record) for record in caplog.records)
    assert "request refused" in formatted
    assert tenant.key not in formatted and tenant.key[:-1] not in formatted
    assert "secret-payload-marker" not in formatted
