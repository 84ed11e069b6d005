"""Key verification for both apps: a small in-process cache in front of the store.

A hit costs no database round trip. Entries (found or not found) live KEY_CACHE_SECONDS,
so a role change or a revocation takes effect within that plus one lookup: well inside
the 5 seconds the design promises. Concurrent misses for one key share one lookup.
When the store cannot answer and the key is not cached, verification raises
AuthUnavailable (the gateway answers 503 AUTH_UNAVAILABLE); stale entries are never
served, because serving them would break the revocation promise.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable

from storage import api_keys
from storage.errors import StoreError
from storage.identity import KeyIdentity

KEY_CACHE_SECONDS = 2.0
KEY_CACHE_ENTRIES = 10_000


class AuthUnavailable(Exception):
    """Keys cannot be verified right now (the relational store does not answer)."""


Lookup = Callable[[str], KeyIdentity | None]


class KeyVerifier:
    """Verifies keys through `lookup` (a blocking store call, run in a thread)."""

    def __init__(
        self,
        lookup: Lookup,
        ttl: float = KEY_CACHE_SECONDS,
        max_entries: int = KEY_CACHE_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lookup = lookup
        self._ttl = ttl
        self._max_entries = max_entries
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, KeyIdentity | None]] = OrderedDict()
        self._pending: dict[str, asyncio.Future[KeyIdentity | None]] = {}

    async def verify(self, key: str) -> KeyIdentity | None:
        """The identity a key acts as now, None when unknown or revoked."""
        if not api_keys.looks_like_key(key):
            return None
        digest = api_keys.key_hash(key)
        entry = self._cache.get(digest)
        if entry is not None and entry[0] > self._clock():
            return entry[1]
        pending = self._pending.get(digest)
        if pending is None:
            pending = asyncio.ensure_future(self._fetch(digest))
            self._pending[digest] = pending
            pending.add_done_callback(lambda _: self._pending.pop(digest, None))
        return await asyncio.shield(pending)

    async def _fetch(self, digest: str) -> KeyIdentity | None:
        try:
            identity = await asyncio.to_thread(self._lookup, digest)
        except StoreError as e:
            raise AuthUnavailable(str(e)) from e
        self._cache[digest] = (self._clock() + self._ttl, identity)
        self._cache.move_to_end(digest)
        while len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)
        return identity
