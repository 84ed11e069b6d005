"""The worker tests' Redis client and a project of their own on it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from spanqueue.layout import STREAMS_KEY, stream_key


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_url)
    yield connection
    connection.close()


@pytest.fixture
def project_id(client: redis.Redis) -> Iterator[str]:
    """A new project's id; its keys deleted afterwards."""
    project = f"prj_{uuid.uuid4().hex[:12]}"
    yield project
    for key in client.scan_iter(match=f"spangate:{{{project}}}:*"):
        client.delete(key)
    client.srem(STREAMS_KEY, stream_key(project))
