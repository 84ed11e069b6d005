"""A budget of request-body bytes being processed at once, so memory stays bounded.

Each request reserves, before its body is read, what it may need: its Content-Length
(the whole body limit when it has none), plus, when it is gzip, what inflating it holds
(collector/bodies.py's `inflated_bound`: twice the most it can inflate to, 1,032 times
its length, at most the limit). Over the budget: 503 INFLIGHT_BYTES_EXHAUSTED at once,
before the body is buffered. The collector runs on one event loop, so a plain counter is exact.

A project holds at most half of the budget (HOLDER_SHARE) while it holds anything:
one key's requests (slow uploads announcing large bodies, say) cannot take the whole
budget and turn every other project away. A project holding nothing may always
reserve what fits the budget, so a lone large request is never refused by its share.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from collector.errors import unavailable

#: The part of the budget one project may hold while it holds anything.
HOLDER_SHARE = 0.5


class InflightBudget:
    """Bytes reserved by requests in progress, against a fixed limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.held: dict[str, int] = {}  # by project, those holding any

    @contextmanager
    def reserve(self, amount: int, holder: str) -> Iterator[None]:
        """Hold `amount` bytes for `holder` (a project) for the duration; 503 when they
        do not fit the budget, or the holder's share of it."""
        if self.used + amount > self.limit:
            raise unavailable(
                "INFLIGHT_BYTES_EXHAUSTED",
                f"the gateway is processing {self.used} bytes of requests; try again shortly",
            )
        held = self.held.get(holder, 0)
        if held and held + amount > self.limit * HOLDER_SHARE:
            raise unavailable(
                "INFLIGHT_BYTES_EXHAUSTED",
                f"this project's requests in progress hold {held} bytes, its share of the "
                "gateway's; try again shortly",
            )
        self.used += amount
        self.held[holder] = held + amount
        try:
            yield
        finally:
            self.used -= amount
            left = self.held[holder] - amount
            if left:
                self.held[holder] = left
            else:
                del self.held[holder]
