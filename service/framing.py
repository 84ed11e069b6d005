"""Refusing a request whose body is framed two ways, before any app reads it; and
closing, in so many words, a connection whose request was answered before its body
came whole.

A request with both Content-Length and Transfer-Encoding is the shape of request
smuggling: a proxy in front may frame the body by one header while the server frames it
by the other, so that what one of them takes for the body's end starts a hidden second
request. Hypercorn (through h11) reads such a body as chunked and keeps the connection
open, and has no setting that refuses it. RFC 9112 (section 6.1) lets a server handle it
as an error provided it closes the connection afterwards: every app is wrapped in this
guard, which answers 400 with `Connection: close` so that nothing more is read from, or
answered on, that connection.

An app may answer before it has read a request's body (a 401 for a bad key, a 415, a
429): Hypercorn then closes the connection once the answer is sent, since the rest of
the body would be read as the next request. An answer that said nothing of it left a
client that keeps connections alive to send its next request on a closed one, and see
it fail unanswered (an exporter's spurious error): the guard adds `Connection: close`
to an answer given before the body came whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

Scope = dict[str, Any]
Call = Any  # an ASGI receive or send callable

FRAMING_MESSAGE = "Content-Length and Transfer-Encoding must not both be sent"


def _refusal(code: str, details: bool) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The 400's headers and body: `{"error": {"code", "message"}}`, with `details`
    (empty) where the app's errors carry them."""
    error: dict[str, object] = {"code": code, "message": FRAMING_MESSAGE}
    if details:
        error["details"] = {}
    body = orjson.dumps({"error": error})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    return headers, body


def framing(headers: Iterable[tuple[bytes, bytes]]) -> tuple[bytes | None, bytes | None]:
    """A request's Content-Length and Transfer-Encoding values (ASGI: lowercase names;
    None when absent), in one pass."""
    length = chunked = None
    for name, value in headers:
        if name == b"content-length":
            length = value
        elif name == b"transfer-encoding":
            chunked = value
    return length, chunked


_CLOSE = (b"connection", b"close")


class FramingGuard:
    """ASGI middleware: 400 and a closed connection for a body framed two ways; and
    `Connection: close` on an answer given before the request's body came whole."""

    def __init__(self, app: Any, code: str, details: bool = False) -> None:
        """`code`: the app's own code for a body it cannot read (`details`: its errors
        carry a `details` member)."""
        self.app = app
        self.headers, self.body = _refusal(code, details)

    async def __call__(self, scope: Scope, receive: Call, send: Call) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length, chunked = framing(scope["headers"])
        if chunked is None and (length is None or not length.strip(b" 0")):  # no body
            await self.app(scope, receive, send)
            return
        if length is not None and chunked is not None:
            await send({"type": "http.response.start", "status": 400, "headers": self.headers})
            await send({"type": "http.response.body", "body": self.body})
            return
        whole = False

        async def received() -> dict[str, Any]:
            nonlocal whole
            message: dict[str, Any] = await receive()
            if not message.get("more_body"):  # the body's end, or the client gone
                whole = True
            return message

        async def answered(message: dict[str, Any]) -> None:
            if not whole and message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), _CLOSE]
            await send(message)

        await self.app(scope, received, answered)
