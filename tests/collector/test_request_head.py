"""RequestHead: the ingest pipeline's headers, read from the ASGI scope in one pass."""

from __future__ import annotations

from werkzeug.datastructures import Headers
from werkzeug.sansio.request import Request

from collector.request_head import RequestHead


def scope(*headers: tuple[str, str]) -> dict[str, object]:
    return {
        "headers": [(name.lower().encode(), value.encode("latin-1")) for name, value in headers]
    }


def werkzeug_request(*headers: tuple[str, str]) -> Request:
    return Request("POST", "http", None, "", "/v1/spans", b"", Headers(list(headers)), None)


CASES = [
    (),
    (
        ("Authorization", "Bearer sgk_a"),
        ("Content-Length", "12"),
        ("Content-Type", "application/json"),
    ),
    (("content-length", "7"), ("transfer-encoding", "chunked")),
    (("Content-Length", "-3"),),
    (("Content-Encoding", "gzip"), ("Content-Encoding", "br"), ("Authorization", "Bearer b")),
    (
        ("Content-Type", "Application/X-Protobuf; charset=utf-8"),
        ("X-Forwarded-For", "1.2.3.4, 5.6.7.8"),
    ),
    (("Content-Encoding", ""), ("X-Other", "é")),
]


def test_same_values_as_werkzeug() -> None:
    """Each field is what werkzeug's request answers for the same headers: the first of
    a repeated header, no length for a chunked body, the media type lowercased."""
    for headers in CASES:
        head, request = RequestHead.of(scope(*headers)), werkzeug_request(*headers)
        assert head.authorization == request.headers.get("Authorization")
        assert head.content_encoding == request.headers.get("Content-Encoding")
        assert head.content_length == request.content_length
        assert head.content_type == (request.content_type or "")
        assert head.mimetype == request.mimetype
        assert head.forwarded_for == request.headers.get("X-Forwarded-For")


def test_latin1_values_decode_as_quart_decodes_them() -> None:
    """Quart decodes header bytes as latin-1; a key with such bytes reads the same here."""
    head = RequestHead.of({"headers": [(b"authorization", b"Bearer \xe9t\xe9")]})
    assert head.authorization == "Bearer été"
