"""A body framed by both Content-Length and Transfer-Encoding, sent over a real socket
to each service served by Hypercorn: 400, the connection closed, nothing more answered."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator

import orjson
import pytest

from service.framing import FRAMING_MESSAGE, framing
from spangate.embedded_redis import free_port
from storage.database import Database
from storage.schema import migrate
from tests.processes import spawn, stop, wait_healthy

# The body is an empty chunked body by Transfer-Encoding, but 40 bytes by Content-Length:
# a proxy that framed it by Content-Length would take the hidden request for body.
HIDDEN = b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n"


def _smuggling(path: str) -> bytes:
    chunked = b"0\r\n\r\n"
    return (
        (
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(chunked) + len(HIDDEN)}\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode()
        + chunked
        + HIDDEN
    )


def _exchange(port: int, data: bytes) -> tuple[bytes, bool]:
    """Send `data` on one connection; what came back, and whether the server closed the
    connection (rather than falling silent for 3 s)."""
    with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
        sock.sendall(data)
        reply = b""
        try:
            while chunk := sock.recv(65536):
                reply += chunk
        except TimeoutError:
            return reply, False
    return reply, True


@pytest.fixture(scope="module")
def ports(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[dict[str, int]]:
    """The collector, the scores sidecar and the dashboard, each its own process."""
    root = tmp_path_factory.mktemp("framing")
    url = f"sqlite:///{root / 'spangate.db'}"
    db = Database(url)
    migrate(db)
    db.close()
    ports = {"collector": free_port(), "sidecar": free_port(), "dashboard": free_port()}
    env = {
        "SPANGATE_DATABASE_URL": url,
        "SPANGATE_DATA_DIR": str(root / "data"),
        "SPANGATE_REDIS_URL": redis_url,
        "SPANGATE_INGEST_PORT": str(ports["collector"]),
        "SPANGATE_API_PORT": str(ports["sidecar"]),
        "SPANGATE_APP_PORT": str(ports["dashboard"]),
    }
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for command, port in ports.items():
            processes.append(spawn([command], env, root))
            wait_healthy(f"http://127.0.0.1:{port}/health/live", processes[-1])
        yield ports
    finally:
        for process in processes:
            stop(process)


@pytest.mark.parametrize(
    ("service", "path", "error"),
    [
        ("collector", "/v1/spans", {"code": "SERIALIZATION_ERROR"}),
        ("sidecar", "/v1/scores", {"code": "INVALID_CONTENT_LENGTH", "details": {}}),
        ("dashboard", "/login", {"code": "VALIDATION_ERROR"}),
    ],
)
def test_both_framings_get_400_and_a_closed_connection(
    ports: dict[str, int], service: str, path: str, error: dict[str, object]
) -> None:
    """Content-Length with Transfer-Encoding: chunked is answered 400 with Connection:
    close, in the service's own error form and one of its codes, and the request hidden
    after the chunked body is never answered."""
    reply, closed = _exchange(ports[service], _smuggling(path))
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), reply
    assert orjson.loads(body)["error"] == {**error, "message": FRAMING_MESSAGE}
    assert b"connection: close" in head.lower()
    assert reply.count(b"HTTP/1.1 ") == 1, reply
    assert closed


def test_chunked_alone_keeps_the_connection(ports: dict[str, int]) -> None:
    """A chunked body without Content-Length is served as before: the request after it
    on the same connection is answered too."""
    chunked = b"POST /login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    last = b"GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    reply, closed = _exchange(ports["dashboard"], chunked + last)
    assert closed and reply.count(b"HTTP/1.1 ") == 2, reply
    assert b'{"status":"live"}' in reply


def test_the_guard_reads_both_framings_in_one_pass() -> None:
    """The guard's reading of a request's headers: each framing's value, or None."""
    assert framing([(b"content-length", b"5"), (b"transfer-encoding", b"chunked")]) == (
        b"5",
        b"chunked",
    )
    assert framing([(b"content-length", b"5"), (b"host", b"x")]) == (b"5", None)
    assert framing([(b"transfer-encoding", b"chunked"), (b"host", b"x")]) == (None, b"chunked")


@pytest.mark.parametrize(
    ("service", "path", "key"),
    [("collector", "/v1/spans", b"Authorization: Bearer sgk_bad"),
     ("sidecar", "/v1/scores", b"X-API-Key: sgk_bad")],
)  # fmt: skip
def test_an_answer_before_the_body_came_whole_says_the_connection_closes(
    ports: dict[str, int], service: str, path: str, key: bytes
) -> None:
    """A bad key is answered 401 before the body is read: with `Connection: close` (the
    server closes the connection, whose unread body would read as the next request), so
    that a client keeping connections alive sends its next request on a new one."""
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".encode()
    with socket.create_connection(("127.0.0.1", ports[service]), timeout=3) as sock:
        sock.sendall(head + key + b"\r\nContent-Length: 1000\r\n\r\n{")  # the rest never sent
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += sock.recv(65536)
    status, _, _ = reply.partition(b"\r\n")
    assert status.startswith(b"HTTP/1.1 401"), reply
    assert b"connection: close" in reply.partition(b"\r\n\r\n")[0].lower(), reply
