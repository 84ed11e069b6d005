"""`Authorization: Bearer <key>` values, as the gateway and the scores API read them."""

from __future__ import annotations

from typing import Protocol


class Headers(Protocol):
    """What is read of request headers (werkzeug's Headers, or a dict)."""

    def get(self, key: str) -> str | None: ...


def parse_bearer(value: str) -> str | None:
    """The key of an `Authorization: Bearer <key>` value (scheme in any case); None when
    the value is not that."""
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token
