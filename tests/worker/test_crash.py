"""SIGKILL the worker mid-batch, restart it: every span the gateway acknowledged, exactly once."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import redis

from spanqueue.layout import stream_key
from storage.database import Database
from storage.schema import migrate
from storage.spans import SpanStore
from tests.processes import spawn
from tests.storage.acknowledged import REQUESTS, SPANS_PER_REQUEST, send_acknowledged


async def test_sigkill_mid_batch_then_restart_stores_everything_once(
    tmp_path: Path, redis_url: str
) -> None:
    """Spans acknowledged with 200 are all stored, none twice, across a SIGKILLed worker."""
    database_url = f"sqlite:///{tmp_path / 'spangate.db'}"
    db = Database(database_url)
    migrate(db)
    project_id, acknowledged = await send_acknowledged(db, redis_url, tmp_path)
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
