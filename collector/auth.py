"""Gateway authentication: `Authorization: Bearer <API_KEY>` and nothing else."""

from __future__ import annotations

from typing import Protocol

from collector.errors import unauthorized, unavailable
from storage.identity import KeyIdentity
from storage.verifier import AuthUnavailable, KeyVerifier


class Headers(Protocol):
    """What the scores API reads of request headers (werkzeug's Headers, or a dict)."""

    def get(self, key: str) -> str | None: ...


MISSING = "Missing Authorization header"
MALFORMED = "Authorization header must be 'Bearer <API_KEY>'"
INVALID = "Invalid API key"


def parse_bearer(value: str) -> str | None:
    """The key of an `Authorization: Bearer <key>` value (scheme in any case); None when
    the value is not that. Shared by the gateway and the scores API."""
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token


def bearer_token(header: str | None) -> str:
    """The key of a Bearer Authorization header's value; 401 when missing or malformed.

    X-API-Key is not read here: a request carrying the key only there is told the
    Authorization header is missing, as the spec says.
    """
    if header is None:
        raise unauthorized(MISSING)
    token = parse_bearer(header)
    if token is None:
        raise unauthorized(MALFORMED)
    return token


async def authenticate(verifier: KeyVerifier, authorization: str | None) -> KeyIdentity:
    """Who a request with this Authorization header acts as; 401 for any key problem,
    503 when keys cannot be checked."""
    token = bearer_token(authorization)
    try:
        identity = await verifier.verify(token)
    except AuthUnavailable as e:
        raise unavailable("AUTH_UNAVAILABLE", "API keys cannot be verified right now") from e
    if identity is None:
        raise unauthorized(INVALID)
    return identity
