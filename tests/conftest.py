"""Shared fixtures: a real database per test (SQLite always, PostgreSQL when configured)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from storage.database import Database
from storage.schema import migrate
from tests.postgres_server import postgres_schema
from tests.redis_server import shared_redis_url

POSTGRES_URL = os.environ.get("SPANGATE_TEST_POSTGRES_URL", "")
BACKENDS = ["sqlite", "postgres"] if POSTGRES_URL else ["sqlite"]


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL: a SQLite file, or a PostgreSQL schema of its own."""
    backend = getattr(request, "param", "sqlite")
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'spangate.db'}"
        return
    with postgres_schema(POSTGRES_URL) as url:
        yield url


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    """A migrated Database on `database_url`."""
    db = Database(database_url)
    migrate(db)
    try:
        yield db
    finally:
        db.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that uses a database once per configured backend."""
    if "database_url" in metafunc.fixturenames:
        metafunc.parametrize("database_url", BACKENDS, indirect=True)


@contextmanager
def migrated_postgres() -> Iterator[Database]:
    """A migrated PostgreSQL database in a schema of its own, dropped after; the test is
    skipped where SPANGATE_TEST_POSTGRES_URL is unset (CI sets it when PostgreSQL
    answers)."""
    if not POSTGRES_URL:
        pytest.skip("SPANGATE_TEST_POSTGRES_URL is not set: no PostgreSQL here")
    with postgres_schema(POSTGRES_URL) as url:
        db = Database(url)
        migrate(db)
        try:
            yield db
        finally:
            db.close()


@pytest.fixture(scope="module")
def postgres_database() -> Iterator[Database]:
    """A migrated PostgreSQL database (`migrated_postgres`) shared by a module's tests."""
    with migrated_postgres() as db:
        yield db


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real redis-server for the session (or SPANGATE_REDIS_URL)."""
    url, server = shared_redis_url(tmp_path_factory.mktemp("redis"))
    yield url
    if server is not None:
        server.stop()
