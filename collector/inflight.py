"""A budget of request-body bytes being processed at once, so memory stays bounded.

Each request reserves, before its body is read, what it may need: its Content-Length
(the whole body limit when it has none), plus the limit again when it is gzip (the
inflated copy). Over the budget: 503 INFLIGHT_BYTES_EXHAUSTED at once, before the body
is buffered. The collector runs on one event loop, so a plain counter is exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from collector.errors import unavailable


class InflightBudget:
    """Bytes reserved by requests in progress, against a fixed limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    @contextmanager
    def reserve(self, amount: int) -> Iterator[None]:
        """Hold `amount` bytes for the duration; 503 when they do not fit."""
        if self.used + amount > self.limit:
            raise unavailable(
                "INFLIGHT_BYTES_EXHAUSTED",
                f"the gateway is processing {self.used} bytes of requests; try again shortly",
            )
        self.used += amount
        try:
            yield
        finally:
            self.used -= amount
