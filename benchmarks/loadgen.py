"""A small closed-loop HTTP/1.1 load generator on asyncio streams (loopback only).

Each connection sends one request, reads the whole response, and repeats until the
deadline: bounded in time and in connections, and it stops by itself.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class LoadResult:
    """What one run of the generator saw."""

    seconds: float
    statuses: Counter[int] = field(default_factory=Counter)

    @property
    def ok(self) -> int:
        return self.statuses[200]

    @property
    def requests_per_second(self) -> float:
        return self.ok / self.seconds


def build_request(path: str, body: bytes, headers: dict[str, str]) -> bytes:
    """The raw bytes of one keep-alive POST."""
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        f"Content-Length: {len(body)}",
        "Content-Type: application/json",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bool]:
    """One request and its response; (status, whether the server keeps the connection)."""
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    length, keep = 0, True
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"connection" and value.strip().lower() == b"close":
            keep = False
    await reader.readexactly(length)
    return int(head[9:12]), keep


async def _connection(port: int, request: bytes, deadline: float, statuses: Counter[int]) -> None:
    """A closed loop; reconnects when the server ends a keep-alive connection."""
    while time.perf_counter() < deadline:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            keep = True
            while keep and time.perf_counter() < deadline:
                status, keep = await _exchange(reader, writer, request)
                statuses[status] += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            statuses[0] += 1  # the server dropped the connection mid-exchange
        finally:
            writer.close()


async def _run(port: int, request: bytes, seconds: float, connections: int) -> LoadResult:
    statuses: Counter[int] = Counter()
    start = time.perf_counter()
    deadline = start + seconds
    await asyncio.gather(
        *(_connection(port, request, deadline, statuses) for _ in range(connections))
    )
    return LoadResult(time.perf_counter() - start, statuses)


def load(port: int, request: bytes, seconds: float, connections: int = 8) -> LoadResult:
    """Drive 127.0.0.1:port with `connections` closed loops for `seconds`."""
    return asyncio.run(_run(port, request, seconds, connections))


def load_together(
    ports: list[int], request: bytes, seconds: float, connections: int = 8
) -> list[LoadResult]:
    """Drive several servers at once, `connections` closed loops each, from one loop."""

    async def run_all() -> list[LoadResult]:
        return list(
            await asyncio.gather(*(_run(port, request, seconds, connections) for port in ports))
        )

    return asyncio.run(run_all())
