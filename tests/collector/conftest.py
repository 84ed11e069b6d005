"""Collector fixtures: the real app on a real Redis and a real SQLite file."""

from __future__ import annotations

import dataclasses
import gzip
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from quart import Quart
from quart.typing import TestClientProtocol as Client

from collector.app import create_app
from service.settings import Settings
from spangate.embedded_redis import free_port
from spanqueue.layout import STREAMS_KEY, QueuedRequest, stream_key
from storage.database import Database
from storage.identity import IdentityStore
from storage.schema import migrate
from tests.processes import spawn, wait_healthy


@pytest.fixture
def settings(tmp_path: Path, redis_url: str) -> Settings:
    return Settings(
        data_dir=tmp_path, redis_url=redis_url, database_url=f"sqlite:///{tmp_path / 'spangate.db'}"
    )


@dataclasses.dataclass
class Tenant:
    """A project with an owner's key, plus a way to read the project's queue."""

    key: str
    project_id: str
    store: IdentityStore
    redis_url: str

    def auth(self, **headers: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}", **headers}

    def queued(self) -> list[QueuedRequest]:
        client = redis.Redis.from_url(self.redis_url)
        try:
            entries = client.xrange(stream_key(self.project_id))
        finally:
            client.close()
        return [QueuedRequest.from_fields(fields) for _, fields in entries]


@pytest.fixture
def tenant(settings: Settings) -> Iterator[Tenant]:
    db = Database(settings.database_url)
    migrate(db)
    store = IdentityStore(db)
    store.add_user("owner@x.io", "owner")
    created = store.create_key(f"p{id(db)}", "owner@x.io")
    project_id = store.project(created.project).id
    yield Tenant(created.key, project_id, store, str(settings.redis_url))
    client = redis.Redis.from_url(str(settings.redis_url))
    client.delete(stream_key(project_id))
    client.srem(STREAMS_KEY, stream_key(project_id))
    client.close()
    db.close()


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[Quart]:
    application = create_app(settings)
    async with application.test_app() as test_app:
        yield test_app  # type: ignore[misc]


@pytest.fixture
def client(app: Quart) -> Client:
    return app.test_client()


#: The two ways a request is admitted (collector.ingest): a small plain body with its
#: Content-Length is admitted by the script that queues it, one round trip; any other
#: (here gzip, which the test client sends without a length) is admitted before it is read.
ADMISSIONS = ("with-xadd", "first")


def sent(body: bytes, admission: str, headers: dict[str, str]) -> dict[str, Any]:
    """`client.post` arguments sending `body` so that it is admitted as `admission` says."""
    if admission == "with-xadd":
        return {"data": body, "headers": {**headers, "Content-Length": str(len(body))}}
    return {"data": gzip.compress(body), "headers": {**headers, "Content-Encoding": "gzip"}}


def make_app(settings: Settings, **changes: Any) -> Quart:
    return create_app(dataclasses.replace(settings, **changes))


@dataclasses.dataclass
class Running:
    """A collector running as a real process (Hypercorn)."""

    url: str
    process: subprocess.Popen[bytes]


@pytest.fixture
def start_collector(tmp_path: Path, redis_url: str, tenant: Tenant) -> Iterator[Any]:
    """Starts `spangate collector` processes on the test's Redis and database."""
    started: list[Running] = []

    def start(**env: str) -> Running:
        port = free_port()
        base_env = {
            "SPANGATE_REDIS_URL": redis_url,
            "SPANGATE_INGEST_PORT": str(port),
            "SPANGATE_DATABASE_URL": f"sqlite:///{tmp_path / 'spangate.db'}",
        }
        process = spawn(["collector"], {**base_env, **env}, tmp_path)
        running = Running(f"http://127.0.0.1:{port}", process)
        started.append(running)
        wait_healthy(running.url + "/health/ready", process)
        return running

    yield start
    for running in started:
        if running.process.poll() is None:
            running.process.terminate()
        running.process.communicate()
