"""The embedded redis-server runs with the settings its module promises."""

from __future__ import annotations

from pathlib import Path

import redis

from spangate.embedded_redis import EmbeddedRedis


def test_embedded_redis_keeps_the_queue_and_rewrites_its_log_rarely(tmp_path: Path) -> None:
    """AOF on and synced each second, nothing evicted, 1 GB of memory, and the log left to
    grow to 1 GB before a rewrite: read back from the running server."""
    server = EmbeddedRedis(tmp_path)
    client = redis.Redis.from_url(server.start(), decode_responses=True)
    try:
        settings = client.config_get("*")
        assert settings["appendonly"] == "yes"
        assert settings["appendfsync"] == "everysec"
        assert settings["maxmemory-policy"] == "noeviction"
        assert settings["maxmemory"] == str(1 << 30)
        assert settings["auto-aof-rewrite-min-size"] == str(1 << 30)
        assert settings["auto-aof-rewrite-percentage"] == "100"
    finally:
        client.close()
        server.stop()
