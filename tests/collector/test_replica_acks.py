"""SPANGATE_REDIS_REPLICA_ACKS: the 200 waits until replicas hold the entry (WAIT), on a
real master and a real replica; without them in time, 503 ENQUEUE_UNCONFIRMED."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from service.settings import Settings
from spanqueue.layout import stream_key
from tests.collector.conftest import ADMISSIONS, Tenant, make_app, sent
from tests.proto_json.spans import span
from tests.redis_server import RedisServer

BODY = orjson.dumps({"spans": [span()]})


@pytest.fixture
def master_and_replica(tmp_path: Path) -> Iterator[tuple[RedisServer, RedisServer]]:
    master = RedisServer(tmp_path / "master").start()
    replica = RedisServer(
        tmp_path / "replica", extra=("--replicaof", "127.0.0.1", str(master.port))
    ).start()
    client = master.client()
    deadline = time.monotonic() + 10
    while client.info("replication")["connected_slaves"] < 1:
        assert time.monotonic() < deadline, "the replica did not connect"
        time.sleep(0.05)
    client.close()
    yield master, replica
    replica.crash()
    master.stop()


@pytest.mark.parametrize("admission", ADMISSIONS)
async def test_the_200_waits_for_the_replica_and_503_without_it(
    settings: Settings,
    tenant: Tenant,
    master_and_replica: tuple[RedisServer, RedisServer],
    admission: str,
) -> None:
    master, replica = master_and_replica
    app = make_app(settings, redis_url=master.url, redis_replica_acks=1, enqueue_timeout_ms=1000)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        held = await client.post("/v1/spans", **sent(BODY, admission, tenant.auth()))
        assert held.status_code == 200
        on_replica = replica.client()
        assert on_replica.xlen(stream_key(tenant.project_id)) == 1  # held before the 200
        on_replica.close()
        replica.crash()
        alone = await client.post("/v1/spans", **sent(BODY, admission, tenant.auth()))
        assert alone.status_code == 503
        error = (await alone.get_json())["error"]
        assert error["code"] == "ENQUEUE_UNCONFIRMED"
        assert "0 of 1 replicas" in error["message"]


async def test_two_replicas_asked_of_one_is_503(
    settings: Settings, tenant: Tenant, master_and_replica: tuple[RedisServer, RedisServer]
) -> None:
    master, _ = master_and_replica
    app = make_app(settings, redis_url=master.url, redis_replica_acks=2, enqueue_timeout_ms=1000)
    async with app.test_app() as test_app:
        response = await test_app.test_client().post("/v1/spans", data=BODY, headers=tenant.auth())
    assert response.status_code == 503
    assert "1 of 2 replicas" in (await response.get_json())["error"]["message"]


async def test_a_refusal_at_admission_is_not_hidden_by_the_wait(
    settings: Settings, tenant: Tenant, master_and_replica: tuple[RedisServer, RedisServer]
) -> None:
    """A request the queue cap refuses is 503 QUEUE_NEAR_CAPACITY, not a WAIT failure."""
    master, _ = master_and_replica
    app = make_app(
        settings,
        redis_url=master.url,
        redis_replica_acks=1,
        queue_max_spans_per_project=1,
    )
    async with app.test_app() as test_app:
        client = test_app.test_client()
        first = await client.post("/v1/spans", **sent(BODY, "with-xadd", tenant.auth()))
        second = await client.post("/v1/spans", **sent(BODY, "with-xadd", tenant.auth()))
    assert first.status_code == 200
    assert (await second.get_json())["error"]["code"] == "QUEUE_NEAR_CAPACITY"
    master.client().delete(stream_key(tenant.project_id))
