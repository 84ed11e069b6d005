"""PostgreSQL crashes and comes back in the middle of a drain: the worker waits, with
its entries pending, and then stores every acknowledged span, once, without a restart."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import redis

from spanqueue.layout import GROUP, stream_key
from storage.database import CONNECT_TIMEOUT_S, Database
from storage.errors import StoreError
from storage.schema import migrate
from storage.spans import SpanStore
from tests.postgres_server import PostgresServer, server_binaries
from tests.processes import spawn
from tests.storage.acknowledged import REQUESTS, SPANS_PER_REQUEST, send_acknowledged


def _count(store: SpanStore, project_id: str) -> int:
    try:
        return store.count(project_id)
    except StoreError:  # the server is down
        return -1


async def test_postgres_crash_mid_drain_loses_nothing(tmp_path: Path, redis_url: str) -> None:
    if server_binaries() is None:
        pytest.skip("no PostgreSQL server binaries here to start a private server")
    server = PostgresServer().start()
    db = Database(server.url)
    try:
        migrate(db)
        project_id, acknowledged = await send_acknowledged(db, redis_url, tmp_path)
        assert acknowledged == REQUESTS * SPANS_PER_REQUEST
        store = SpanStore(db)
        env = {"SPANGATE_REDIS_URL": redis_url, "SPANGATE_DATABASE_URL": server.url}
        # its own entries left pending must be taken up again by itself, not after a
        # takeover's idle time (ten minutes here)
        worker = spawn(["worker", "--claim-idle-ms", "600000"], env, tmp_path)
        try:
            deadline = time.monotonic() + 60
            while _count(store, project_id) <= 0 and time.monotonic() < deadline:
                time.sleep(0.005)
            # paused while the server goes down, so that the crash lands mid-drain
            worker.send_signal(signal.SIGSTOP)
            time.sleep(0.2)  # what the server had in hand is committed or not by now
            assert 0 < _count(store, project_id) < acknowledged, "the crash must land mid-drain"
            server.crash()
            worker.send_signal(signal.SIGCONT)
            # longer than a transaction waits for a pooled connection: the worker meets
            # the database down, and keeps trying
            time.sleep(CONNECT_TIMEOUT_S + 1)
            assert worker.poll() is None, "the worker must not exit while PostgreSQL is down"
            server.start()
            deadline = time.monotonic() + 60
            while _count(store, project_id) < acknowledged and time.monotonic() < deadline:
                time.sleep(0.1)
            stored = _count(store, project_id)
        finally:
            worker.send_signal(signal.SIGTERM)
            _, err = worker.communicate(timeout=60)
        assert stored == acknowledged, err.decode()[-3000:]
        assert b"database unavailable; retrying" in err
        with db.transaction() as tx:
            [(distinct,)] = tx.query(
                "SELECT COUNT(*) FROM (SELECT DISTINCT trace_id, span_id FROM spans "
                "WHERE project_id = ?) AS d",
                (project_id,),
            )
            [(traces,)] = tx.query(
                "SELECT COUNT(*) FROM trace_summaries WHERE project_id = ?", (project_id,)
            )
        assert (distinct, traces) == (acknowledged, REQUESTS)
        queue = redis.Redis.from_url(redis_url)
        assert queue.xlen(stream_key(project_id)) == 0
        assert queue.xpending(stream_key(project_id), GROUP)["pending"] == 0
        queue.close()
    finally:
        db.close()
        server.stop()
