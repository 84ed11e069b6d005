"""Dashboard sessions, kept on the server: signing out (or expiry) ends one for good.

The browser holds a random token; only its SHA-256 is stored, with the user it signs
in and the session's CSRF token. A session is read with the user's role and
organisation as they are now, so a role change applies at the next request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from storage.clock import utc_now_iso
from storage.database import Database
from storage.identity import User

SESSION_LIFETIME_MS = 12 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class WebSession:
    """A signed-in browser: who it is now, and the token its writes must carry."""

    user: User
    csrf_token: str


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class WebSessions:
    """Start, look up and end sessions."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def start(self, user: User, now_ms: int) -> tuple[str, WebSession]:
        """A new session for `user`: the browser's token, and the session."""
        token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        with self.db.transaction() as tx:
            tx.execute("DELETE FROM web_sessions WHERE expires_ms <= ?", (now_ms,))
            tx.execute(
                "INSERT INTO web_sessions (token_hash, user_id, csrf_token, created_at, "
                "expires_ms) VALUES (?, ?, ?, ?, ?)",
                (_digest(token), user.id, csrf, utc_now_iso(), now_ms + SESSION_LIFETIME_MS),
            )
        return token, WebSession(user, csrf)

    def find(self, token: str, now_ms: int) -> WebSession | None:
        """The live session of a browser's token, or None."""
        with self.db.transaction() as tx:
            row = tx.query_one(
                "SELECT u.id, u.email, o.name, u.role, s.csrf_token FROM web_sessions s "
                "JOIN users u ON u.id = s.user_id JOIN organizations o ON o.id = u.org_id "
                "WHERE s.token_hash = ? AND s.expires_ms > ?",
                (_digest(token), now_ms),
            )
        return None if row is None else WebSession(User(*row[:4]), row[4])

    def end(self, token: str) -> None:
        """End a session: its token never signs in again."""
        with self.db.transaction() as tx:
            tx.execute("DELETE FROM web_sessions WHERE token_hash = ?", (_digest(token),))
