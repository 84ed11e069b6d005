"""The store's exceptions; driver errors never leave storage/ unwrapped."""

from __future__ import annotations


class StoreError(Exception):
    """A store operation failed; the message is safe to show an operator."""


class StoreUnavailable(StoreError):
    """The database cannot be reached (or failed in a way worth retrying)."""


class StoreRefused(StoreError):
    """A value the database cannot hold (a NUL character in PostgreSQL's text, an index
    key past its size): the same again fails the same way."""


class WriteConflict(StoreError):
    """Another transaction wrote the same rows first (a key, a deadlock): the
    transaction was rolled back, and is worth running again."""


class NotFound(StoreError):
    """A named user, project or key does not exist."""


class Conflict(StoreError):
    """The operation contradicts what is stored (a duplicate, another organisation)."""


class NotAllowed(StoreError):
    """The acting user's role does not allow the operation."""
