"""Dashboard passwords: argon2id hashes, and sign-in checks throttled per email and
per client address.

After MAX_FAILURES failed attempts for one email within FAILURE_WINDOW_MS, every attempt
for it (a right password too) is refused until the oldest failure leaves the window;
after MAX_FAILURES_PER_IP failed attempts from one client address, whatever the emails,
so is every attempt from that address (one password cannot be tried against many
emails). The address limit is higher: many people may share an address behind NAT.
An attempt is counted as failed before its password is checked (and forgiven if it
was right), so attempts made in parallel cannot slip past the limit. Unknown emails are
counted and checked against a dummy hash like known ones, so neither the answer nor its
time says whether an email has an account.
"""

from __future__ import annotations

import functools

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from storage.database import Database, Transaction
from storage.errors import NotFound, StoreError
from storage.identity import User, end_sessions, normalise_email

MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024  # hashing is costly: a megabyte "password" is not one
MAX_FAILURES = 5
MAX_FAILURES_PER_IP = 20
FAILURE_WINDOW_MS = 15 * 60 * 1000
_HASHER = PasswordHasher()  # argon2id with the library's (RFC 9106 low-memory) settings


@functools.cache
def _dummy_hash() -> str:
    """A hash to check unknown emails against (made on first use: hashing takes time)."""
    return _HASHER.hash("not the password of anyone")


class InvalidCredentials(StoreError):
    """The email has no account, or the password is not its password."""


class TooManyAttempts(StoreError):
    """Too many failed sign-ins for this email, or from this address, lately;
    `retry_after_s` until the next try."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__("too many failed sign-in attempts lately; try again later")
        self.retry_after_s = retry_after_s


def check_password(password: str) -> str:
    """The password, or ValueError saying what is wrong with it."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValueError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise ValueError(f"a password may have at most {MAX_PASSWORD_LENGTH} characters")
    return password


def _user_row(tx: Transaction, email: str) -> tuple[User, str | None] | None:
    row = tx.query_one(
        "SELECT u.id, u.email, o.name, u.role, u.password_hash FROM users u "
        "JOIN organizations o ON o.id = u.org_id WHERE u.email = ?",
        (email,),
    )
    return None if row is None else (User(row[0], row[1], row[2], row[3]), row[4])


def _check_limit(tx: Transaction, column: str, value: str, most: int, now_ms: int) -> None:
    """TooManyAttempts when `most` failures within the window have this `column` value
    (`email` or `client_ip`, never text from a request), after forgetting older ones."""
    since = now_ms - FAILURE_WINDOW_MS
    tx.execute(f"DELETE FROM login_failures WHERE {column} = ? AND at_ms <= ?", (value, since))
    failures = [
        at
        for (at,) in tx.query(
            f"SELECT at_ms FROM login_failures WHERE {column} = ? ORDER BY at_ms", (value,)
        )
    ]
    if len(failures) >= most:
        oldest = failures[-most]
        raise TooManyAttempts(max(1, -(-(oldest + FAILURE_WINDOW_MS - now_ms) // 1000)))


class Passwords:
    """Setting passwords and checking sign-ins."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def set_password(self, email: str, password: str) -> User:
        """Store the hash of a new password for a user, ending every dashboard session
        signed in with the old one; NotFound when there is no such user."""
        digest = _HASHER.hash(check_password(password))
        with self.db.transaction() as tx:
            found = _user_row(tx, normalise_email(email))
            if found is None:
                raise NotFound(f"no user {email.strip().lower()}")
            tx.execute("UPDATE users SET password_hash = ? WHERE id = ?", (digest, found[0].id))
            end_sessions(tx, found[0].id)
        return found[0]

    def _reserve_attempt(
        self, email: str, client_ip: str | None, now_ms: int
    ) -> tuple[User, str | None] | None:
        """Count this attempt as failed, unless a limit is reached (TooManyAttempts)."""
        with self.db.transaction(immediate=True) as tx:
            _check_limit(tx, "email", email, MAX_FAILURES, now_ms)
            if client_ip is not None:
                _check_limit(tx, "client_ip", client_ip, MAX_FAILURES_PER_IP, now_ms)
            tx.execute(
                "INSERT INTO login_failures (email, client_ip, at_ms) VALUES (?, ?, ?)",
                (email, client_ip, now_ms),
            )
            return _user_row(tx, email)

    def sign_in(self, email: str, password: str, now_ms: int, client_ip: str | None = None) -> User:
        """The user whose email and password these are, signing in from `client_ip`;
        InvalidCredentials or TooManyAttempts otherwise."""
        try:
            email = normalise_email(email)
        except ValueError:
            email = email.strip().lower()[:320]
        found = self._reserve_attempt(email, client_ip, now_ms)
        digest = found[1] if found is not None else None
        try:
            _HASHER.verify(digest or _dummy_hash(), password[:MAX_PASSWORD_LENGTH])
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            raise InvalidCredentials("invalid email or password") from None
        if found is None or digest is None:
            raise InvalidCredentials("invalid email or password")
        with self.db.transaction() as tx:
            tx.execute("DELETE FROM login_failures WHERE email = ?", (email,))
            if _HASHER.check_needs_rehash(digest):
                tx.execute(
                    "UPDATE users SET password_hash = ? WHERE id = ?",
                    (_HASHER.hash(password), found[0].id),
                )
        return found[0]
