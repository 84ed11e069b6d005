"""Scores authentication: Authorization first; X-API-Key only when there is no Authorization.

When an Authorization header is present at all, X-API-Key is ignored, even when the
Authorization value is malformed: a malformed Authorization is 401 whatever X-API-Key
holds. A key acts with its creator's current role; scores need member or higher.
"""

from __future__ import annotations

from scores_sidecar.errors import ApiError, unauthorized
from service.bearer import Headers, parse_bearer
from storage.identity import ROLE_RANK, KeyIdentity
from storage.verifier import AuthUnavailable, KeyVerifier

MINIMUM_ROLE = "member"


def api_key(headers: Headers) -> str:
    """The key the request presents; 401 when it presents none or a malformed one."""
    authorization = headers.get("Authorization")
    if authorization is not None:
        token = parse_bearer(authorization)
        if token is None:
            raise unauthorized("Authorization header must be 'Bearer <API_KEY>'")
        return token
    key = headers.get("X-API-Key")
    if key is None or not key.strip():
        raise unauthorized("Missing API key: send Authorization: Bearer <API_KEY>")
    return key.strip()


async def authorize(verifier: KeyVerifier, headers: Headers) -> KeyIdentity:
    """The identity of a key allowed to create scores."""
    key = api_key(headers)
    try:
        identity = await verifier.verify(key)
    except AuthUnavailable as e:
        raise ApiError(500, "INTERNAL_ERROR", "the API could not complete the request") from e
    if identity is None:
        raise unauthorized("Invalid API key")
    if ROLE_RANK[identity.role] < ROLE_RANK[MINIMUM_ROLE]:
        raise ApiError(
            403,
            "AUTHORIZATION_FAILED",
            f"the key acts as {identity.role}; creating a score needs member or higher",
            {"role": identity.role, "required": MINIMUM_ROLE},
        )
    return identity
