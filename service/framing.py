"""Refusing a request whose body is framed two ways, before any app reads it.

A request with both Content-Length and Transfer-Encoding is the shape of request
smuggling: a proxy in front may frame the body by one header while the server frames it
by the other, so that what one of them takes for the body's end starts a hidden second
request. Hypercorn (through h11) reads such a body as chunked and keeps the connection
open, and has no setting that refuses it. RFC 9112 (section 6.1) lets a server handle it
as an error provided it closes the connection afterwards: every app is wrapped in this
guard, which answers 400 with `Connection: close` so that nothing more is read from, or
answered on, that connection.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Scope = dict[str, Any]
Call = Any  # an ASGI receive or send callable

_BODY = (
    b'{"error": {"code": "BAD_REQUEST", "message": '
    b'"Content-Length and Transfer-Encoding must not both be sent"}}'
)
_HEADERS = [
    (b"content-type", b"application/json"),
    (b"content-length", str(len(_BODY)).encode()),
    (b"connection", b"close"),
]


def framed_twice(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether a request's headers (ASGI: lowercase names) carry both body framings."""
    names = {name.lower() for name, _ in headers}
    return b"content-length" in names and b"transfer-encoding" in names


class FramingGuard:
    """ASGI middleware: 400 and a closed connection for a body framed two ways."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Call, send: Call) -> None:
        if scope["type"] == "http" and framed_twice(scope["headers"]):
            await send({"type": "http.response.start", "status": 400, "headers": _HEADERS})
            await send({"type": "http.response.body", "body": _BODY})
            return
        await self.app(scope, receive, send)
