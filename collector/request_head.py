"""The request headers an ingest request is judged by, read in one pass.

Every `request.headers.get(...)` through Quart's proxies costs 1.5-4 us, and an ingest
request asked for about ten of them (`content_length` alone reads two headers, each
time it is read). `RequestHead.of` walks the ASGI scope's headers once instead: names
there are lowercase bytes, values are decoded as latin-1 as Quart decodes them, and
the first of a repeated header wins, as in werkzeug's `Headers.get`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from werkzeug.sansio.utils import get_content_length

_WANTED = frozenset(
    (
        b"authorization",
        b"content-encoding",
        b"content-length",
        b"content-type",
        b"transfer-encoding",
        b"x-forwarded-for",
    )
)


@dataclass(slots=True)
class RequestHead:
    """What the ingest pipeline reads of a request's headers."""

    authorization: str | None = None
    content_encoding: str | None = None
    content_length: int | None = None
    content_type: str = ""
    forwarded_for: str | None = None

    @property
    def mimetype(self) -> str:
        """The media type of Content-Type, lowercase, without parameters."""
        return self.content_type.partition(";")[0].strip().lower()

    @classmethod
    def of(cls, scope: Mapping[str, Any]) -> RequestHead:
        """The head of the request whose ASGI scope this is."""
        found: dict[bytes, str] = {}
        for name, value in scope["headers"]:
            if name in _WANTED and name not in found:
                found[name] = value.decode("latin-1")
        if not found:
            return cls()
        get = found.get
        return cls(
            get(b"authorization"),
            get(b"content-encoding"),
            get_content_length(get(b"content-length"), get(b"transfer-encoding")),
            get(b"content-type", ""),
            get(b"x-forwarded-for"),
        )
