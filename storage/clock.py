"""Wall-clock time as stored: ISO 8601 UTC with microseconds, sortable as text."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now_iso() -> str:
    """Now, as `2026-11-22T10:00:00.123456Z`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
