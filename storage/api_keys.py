"""API key material: generation, the stored hash and the display prefix.

Keys are 256 random bits, base64url, behind a recognisable `sgk_` prefix. Only the
SHA-256 of a key is stored: a fast hash is right for high-entropy secrets, and it keeps
lookups a single indexed equality.
"""

from __future__ import annotations

import hashlib
import secrets

KEY_PREFIX = "sgk_"
_SECRET_BYTES = 32
KEY_LENGTH = len(KEY_PREFIX) + 43  # token_urlsafe(32) is 43 characters
DISPLAY_PREFIX_LENGTH = 12


def new_key() -> str:
    """A fresh secret key, shown once and never stored."""
    return KEY_PREFIX + secrets.token_urlsafe(_SECRET_BYTES)


def key_hash(key: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def display_prefix(key: str) -> str:
    """The part of a key that may be shown in listings."""
    return key[:DISPLAY_PREFIX_LENGTH]


def looks_like_key(candidate: str) -> bool:
    """Cheap shape check, so garbage never costs a database round trip."""
    return len(candidate) == KEY_LENGTH and candidate.startswith(KEY_PREFIX)
