"""The embedded redis-server runs with the settings its module promises."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import redis

from spangate import embedded_redis
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


def test_a_server_left_running_is_shut_down_and_its_port_and_queue_taken_over(
    tmp_path: Path,
) -> None:
    """A server of the directory still answering when the lock is free (its starter died
    without stopping it) is shut down before a new one starts, on its port, with what it
    had queued: two servers never write one append-only file."""
    left = EmbeddedRedis(tmp_path)
    url = left.start()
    redis.Redis.from_url(url).xadd("stream", {"span": "kept"})
    assert left._lock is not None and left.process is not None
    left._lock.close()  # as when the process that started it is gone
    left._lock = None
    server = EmbeddedRedis(tmp_path)
    try:
        assert server.start() == url
        assert left.process.wait(timeout=30) == 0  # shut down, not killed
        assert server.process is not None and server.process.pid != left.process.pid
        entries = redis.Redis.from_url(url).xrange("stream")
        assert [fields for _, fields in entries] == [{b"span": b"kept"}]
    finally:
        server.stop()


def test_a_killed_server_is_started_again_on_its_port_with_its_queue(tmp_path: Path) -> None:
    """keep_running: nothing while the server runs; once it is killed, it is started
    again on its port, and every entry it confirmed is there."""
    server = EmbeddedRedis(tmp_path)
    url = server.start()
    try:
        client = redis.Redis.from_url(url)
        ids = [client.xadd("stream", {"n": str(n)}) for n in range(1000)]
        assert server.keep_running() is None and server.process is not None
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=30)
        assert server.keep_running() == -signal.SIGKILL
        assert [entry for entry, _ in redis.Redis.from_url(url).xrange("stream")] == ids
    finally:
        server.stop()


def test_a_server_started_again_takes_the_port_its_directory_recorded(tmp_path: Path) -> None:
    """After its starter stopped it, or died and took it along, the next start of the
    directory's server listens where the directory's other processes (a collector and a
    worker run apart read the URL once) look for it, with what it had confirmed."""
    first = EmbeddedRedis(tmp_path)
    url = first.start()
    redis.Redis.from_url(url).xadd("stream", {"span": "kept"})
    first.stop()
    again = EmbeddedRedis(tmp_path)
    try:
        assert again.start() == url
        assert again.process is not None
        again.process.send_signal(signal.SIGKILL)  # as when its starter is killed
        again.process.wait(timeout=30)
        assert again._lock is not None
        again._lock.close()
        again._lock = None
        third = EmbeddedRedis(tmp_path)
        try:
            assert third.start() == url
            entries = redis.Redis.from_url(url).xrange("stream")
            assert [fields for _, fields in entries] == [{b"span": b"kept"}]
        finally:
            third.stop()
    finally:
        again.stop()


def test_the_port_is_kept_when_clients_were_connected_as_the_server_died(
    tmp_path: Path,
) -> None:
    """A worker and a dashboard connected when the server's starter is killed (the
    server then closes their connections first, which leaves them waiting on its port
    in the kernel): the next start still takes the recorded port, where they reconnect."""
    first = EmbeddedRedis(tmp_path)
    url = first.start()
    connected = [redis.Redis.from_url(url) for _ in range(3)]
    for client in connected:
        client.ping()
    assert first.process is not None and first._lock is not None
    first.process.send_signal(signal.SIGKILL)
    first.process.wait(timeout=30)
    first._lock.close()
    first._lock = None
    again = EmbeddedRedis(tmp_path)
    try:
        assert again.start() == url
        assert all(client.ping() for client in connected)  # reconnected where they were
    finally:
        again.stop()
        for client in connected:
            client.close()


def test_a_process_using_anothers_server_starts_it_when_that_one_is_gone(
    tmp_path: Path,
) -> None:
    """A process that found the directory's server running (another started it) does
    not adopt it while that process lives; once it is gone, and its server with it,
    it starts the server itself, on its port, with what was queued."""
    owner = EmbeddedRedis(tmp_path)
    url = owner.start()
    redis.Redis.from_url(url).xadd("stream", {"span": "kept"})
    user = EmbeddedRedis(tmp_path)
    assert user.start() == url and user.process is None
    try:
        assert not user.adopt()  # its owner runs it
        assert owner.process is not None and owner._lock is not None
        owner.process.send_signal(signal.SIGTERM)  # as when its process dies
        owner.process.wait(timeout=30)
        owner._lock.close()
        owner._lock = None
        assert user.adopt() and user.process is not None
        assert not user.adopt()  # now its own
        entries = redis.Redis.from_url(url).xrange("stream")
        assert [fields for _, fields in entries] == [{b"span": b"kept"}]
    finally:
        user.stop()
        owner.stop()


def test_a_server_left_running_and_still_loading_is_shut_down_first(tmp_path: Path) -> None:
    """A server of the directory left running, still loading its append-only file (it
    answers LOADING), is shut down too before a new one starts: it runs, and would
    write the same file."""
    import subprocess
    import time

    from spangate.embedded_redis import free_port, redis_server_binary

    directory = tmp_path / "redis"
    directory.mkdir()
    command = b"*3\r\n$3\r\nSET\r\n$%d\r\n%b\r\n$5\r\nvalue\r\n"
    with open(directory / "appendonly.aof", "wb") as log:  # a few seconds to load
        for chunk in range(300):
            keys = (b"k%d" % (chunk * 10_000 + n) for n in range(10_000))
            log.write(b"".join(command % (len(key), key) for key in keys))
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    (directory / "redis.url").write_text(url)
    left = subprocess.Popen(
        [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--dir",
         str(directory), "--appendonly", "yes", "--save", ""],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        while True:  # until it answers, and answers that it loads
            try:
                redis.Redis.from_url(url, socket_timeout=1).ping()
                raise AssertionError("loaded before the test could see it loading")
            except redis.BusyLoadingError:
                break
            except redis.ConnectionError:
                time.sleep(0.01)
        server = EmbeddedRedis(tmp_path)
        try:
            assert server.start() == url
            assert left.poll() is not None  # shut down before the new one started
            assert redis.Redis.from_url(url).dbsize() == 3_000_000
        finally:
            server.stop()
    finally:
        left.kill()
        left.wait()


def _log_size(server: EmbeddedRedis) -> int:
    return (server.dir / "appendonly.aof").stat().st_size


def _rewritten(url: str) -> None:
    client = redis.Redis.from_url(url, decode_responses=True)
    deadline = time.monotonic() + 30
    while True:
        info = client.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    client.close()


def test_a_log_of_what_is_no_longer_queued_is_rewritten_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server started on an append-only file mostly of entries since deleted (spans
    stored and acknowledged) rewrites it, keeping what is queued; one whose file holds
    what is queued leaves it as it is."""
    monkeypatch.setattr(embedded_redis, "COMPACT_LOG_OVER", 1 << 20)
    server = EmbeddedRedis(tmp_path)
    url = server.start()
    try:
        client = redis.Redis.from_url(url)
        for _ in range(40):  # 4 MB written, then deleted, as the worker does
            ids = [client.xadd("stream", {"span": "x" * 1000}) for _ in range(100)]
            client.xdel("stream", *ids)
        kept = client.xadd("stream", {"span": "kept"})
        client.close()
        server.stop()
        assert _log_size(server) > 4_000_000
        url = server.start()
        _rewritten(url)
        assert _log_size(server) < 100_000
        entries = redis.Redis.from_url(url).xrange("stream")
        assert entries == [(kept, {b"span": b"kept"})]

        client = redis.Redis.from_url(url)
        for _ in range(30):  # 3 MB queued
            client.xadd("stream", {"span": "y" * 1000 * 100})
        client.close()
        server.stop()
        before = _log_size(server)
        assert before > 3_000_000
        url = server.start()
        _rewritten(url)
        assert _log_size(server) == before
    finally:
        server.stop()
