"""The collector as a real Hypercorn process: streaming limits and graceful shutdown."""

from __future__ import annotations

import re
import signal
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from tests.collector.conftest import Tenant
from tests.proto_json.spans import span

BODY = orjson.dumps({"spans": [span()]})


@pytest.fixture
def collector(start_collector: Any) -> tuple[str, object]:
    running = start_collector(SPANGATE_MAX_BODY_BYTES="65536")
    return running.url, running.process


def test_real_server_accepts_spans(collector: tuple[str, object], tenant: Tenant) -> None:
    """Over real HTTP the collector answers 200 and the span is queued."""
    base, _ = collector
    response = httpx.post(base + "/v1/spans", content=BODY, headers=tenant.auth())
    assert response.status_code == 200 and response.json() == {"accepted": 1, "rejected": 0}
    assert len(tenant.queued()) == 1


def test_chunked_body_over_limit_is_bare_413(collector: tuple[str, object], tenant: Tenant) -> None:
    """A body with no Content-Length that grows past the limit is 413 without an error object."""
    base, _ = collector

    def chunks() -> Iterator[bytes]:
        for _ in range(20):
            yield b" " * 8192

    response = httpx.post(base + "/v1/spans", content=chunks(), headers=tenant.auth())
    assert response.status_code == 413 and response.content == b""
    assert tenant.queued() == []


def test_a_stalled_body_is_408_and_releases_its_bytes(start_collector: Any, tenant: Tenant) -> None:
    """A body that stops arriving is answered 408 REQUEST_TIMEOUT once the body timeout
    has passed, and the bytes it announced are free again: a request that needs them
    is accepted."""
    running = start_collector(
        SPANGATE_MAX_BODY_BYTES="65536", SPANGATE_MAX_INFLIGHT_BYTES="100000",
        SPANGATE_BODY_TIMEOUT_S="1",
    )  # fmt: skip
    port = int(running.url.rsplit(":", 1)[1])
    head = (
        f"POST /v1/spans HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {tenant.key}\r\n"
        "Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + BODY[:10])
        waiting = httpx.post(  # the stalled one holds 60,000 of the 100,000 bytes
            running.url + "/v1/spans", content=BODY + b" " * 50_000, headers=tenant.auth()
        )
        reply = _response(sock)
    assert waiting.status_code == 503
    assert waiting.json()["error"]["code"] == "INFLIGHT_BYTES_EXHAUSTED"
    assert reply.startswith(b"HTTP/1.1 408")
    assert orjson.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "REQUEST_TIMEOUT"
    again = httpx.post(
        running.url + "/v1/spans", content=BODY + b" " * 50_000, headers=tenant.auth()
    )
    assert again.status_code == 200
    assert len(tenant.queued()) == 1


def _response(sock: socket.socket) -> bytes:
    """One HTTP response read off a socket: its head and its Content-Length of body."""
    reply = b""
    while b"\r\n\r\n" not in reply or len(reply.split(b"\r\n\r\n", 1)[1]) < int(
        re.search(rb"(?i)content-length: (\d+)", reply)[1]  # type: ignore[index]
    ):
        chunk = sock.recv(65536)
        assert chunk, reply
        reply += chunk
    return reply


def test_sigterm_finishes_in_flight_request(collector: tuple[str, object], tenant: Tenant) -> None:
    """SIGTERM while a request is half sent: that request still completes, then exit 0."""
    base, process = collector
    port = int(base.rsplit(":", 1)[1])
    head = (
        f"POST /v1/spans HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {tenant.key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + BODY[:10])
        process.send_signal(signal.SIGTERM)  # type: ignore[attr-defined]
        sock.sendall(BODY[10:])
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 200")
    assert process.wait(timeout=30) == 0  # type: ignore[attr-defined]
    assert len(tenant.queued()) == 1


def test_served_on_uvloop_where_installed() -> None:
    """The apps are served on uvloop's event loop (a dependency on this platform)."""
    import uvloop

    from spangate.runner import loop_factory

    loop = loop_factory()()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()
