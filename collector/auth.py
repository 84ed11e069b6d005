"""Gateway authentication: `Authorization: Bearer <API_KEY>` and nothing else."""

from __future__ import annotations

from collector.errors import unauthorized, unavailable
from service.bearer import parse_bearer
from storage.identity import KeyIdentity
from storage.verifier import AuthUnavailable, KeyVerifier

MISSING = "Missing Authorization header"
MALFORMED = "Authorization header must be 'Bearer <API_KEY>'"
INVALID = "Invalid API key"


def bearer_token(header: str | None) -> str:
    """The key of a Bearer Authorization header's value; 401 when missing or malformed.

    X-API-Key is not read here: a request carrying the key only there is told the
    Authorization header is missing, as docs/api.md says.
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
