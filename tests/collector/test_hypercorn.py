"""The collector as a real Hypercorn process: streaming limits and graceful shutdown."""

from __future__ import annotations

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
