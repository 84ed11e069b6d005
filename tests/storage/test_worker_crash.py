"""SIGKILL the worker mid-batch, restart it: every span the gateway acknowledged, exactly once."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import orjson
import redis

from collector.app import create_app
from service.settings import Settings
from spanqueue.layout import stream_key
from storage.database import Database
from storage.identity import IdentityStore
from storage.schema import migrate
from storage.spans import SpanStore
from tests.processes import spawn
from tests.proto_json.spans import span

REQUESTS, SPANS_PER_REQUEST = 60, 200


def request_body(request_no: int) -> bytes:
    trace = f"{request_no + 1:032x}"
    return orjson.dumps(
        {
            "spans": [
                span(traceId=trace, spanId=f"{i + 1:016x}", attributes={"i": i, "pad": "x" * 100})
                for i in range(SPANS_PER_REQUEST)
            ]
        }
    )


async def test_sigkill_mid_batch_then_restart_stores_everything_once(
    tmp_path: Path, redis_url: str
) -> None:
    """Spans acknowledged with 200 are all stored, none twice, across a SIGKILLed worker."""
    database_url = f"sqlite:///{tmp_path / 'spangate.db'}"
    db = Database(database_url)
    migrate(db)
    identity = IdentityStore(db)
    identity.add_user("o@x.io", "owner")
    created = identity.create_key("crash", "o@x.io")
    project_id = identity.project("crash").id
    settings = Settings(data_dir=tmp_path, redis_url=redis_url, database_url=database_url)
    acknowledged = 0
    async with create_app(settings).test_app() as app:
        client = app.test_client()
        for n in range(REQUESTS):
            response = await client.post(
                "/v1/spans",
                data=request_body(n),
                headers={"Authorization": f"Bearer {created.key}"},
            )
            assert response.status_code == 200
            acknowledged += (await response.get_json())["accepted"]
    store = SpanStore(db)
    env = {"SPANGATE_REDIS_URL": redis_url, "SPANGATE_DATABASE_URL": database_url}
    first = spawn(["worker"], env, tmp_path)
    deadline = time.monotonic() + 60
    while store.count(project_id) == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    first.send_signal(signal.SIGKILL)
    first.wait()
    stored_at_kill = store.count(project_id)
    assert 0 < stored_at_kill < acknowledged, "the kill must land mid-drain"
    second = spawn(["worker", "--burst", "--claim-idle-ms", "0"], env, tmp_path)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err.decode()
    assert store.count(project_id) == acknowledged == REQUESTS * SPANS_PER_REQUEST
    with db.transaction() as tx:
        [(distinct,)] = tx.query(
            "SELECT COUNT(*) FROM (SELECT DISTINCT trace_id, span_id FROM spans "
            "WHERE project_id = ?) AS d",
            (project_id,),
        )
    assert distinct == acknowledged
    client_redis = redis.Redis.from_url(redis_url)
    assert client_redis.xlen(stream_key(project_id)) == 0
    client_redis.close()
    db.close()
