"""The session secret, and the signed values the browser keeps in cookies.

A cookie holds a random token and its HMAC under the session secret: a forged or
altered cookie is refused before any lookup, and changing the secret signs everyone
out. The secret comes from SPANGATE_SESSION_SECRET or, by default, from a file in the
data directory made once (every dashboard process on one machine shares it; set the
variable to the same value on every machine).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path

SECRET_FILE = "session_secret"
SESSION_COOKIE = "spangate_session"
LOGIN_COOKIE = "spangate_login"  # the signed-out browser's id, for the login form's token


def session_secret(configured: str | None, data_dir: Path) -> bytes:
    """The configured secret, else the data directory's (created on first use, 0600)."""
    if configured is not None:
        return configured.encode()
    path = data_dir / SECRET_FILE
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_when_written(path)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_urlsafe(48))
    return path.read_bytes().strip()


def _read_when_written(path: Path) -> bytes:
    """Another process may have just created the file: wait for its contents."""
    for _ in range(200):
        text = path.read_bytes().strip()
        if text:
            return text
        time.sleep(0.01)
    raise OSError(f"{path} is empty: delete it, or set SPANGATE_SESSION_SECRET")


class Signer:
    """HMAC-SHA256 signatures under the session secret."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def mac(self, purpose: str, value: str) -> str:
        """A signature of `value` for one purpose (a session cookie, a login form)."""
        message = f"{purpose}\0{value}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def sign(self, value: str) -> str:
        """`value.signature`, for a cookie."""
        return f"{value}.{self.mac('cookie', value)}"

    def unsign(self, signed: str | None) -> str | None:
        """The value of a cookie `sign` made, or None for anything else."""
        if not signed or "." not in signed:
            return None
        value, signature = signed.rsplit(".", 1)
        # Compared as bytes: compare_digest refuses a str with non-ASCII characters.
        expected = self.mac("cookie", value).encode()
        return value if hmac.compare_digest(signature.encode(), expected) else None

    def login_token(self, browser_id: str) -> str:
        """The login form's CSRF token for a signed-out browser."""
        return self.mac("login", browser_id)
