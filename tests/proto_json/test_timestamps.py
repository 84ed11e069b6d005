"""ISO 8601 to Unix nanoseconds."""

from __future__ import annotations

from datetime import datetime

import pytest

from proto_json.errors import SpanRejected
from proto_json.timestamps import iso8601_to_unix_nano

BASE = 1795341600 * 10**9  # 2026-11-22T10:00:00Z


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("2026-11-22T10:00:00Z", BASE),
        ("2026-11-22T10:00:00.123456789Z", BASE + 123456789),
        ("2026-11-22T10:00:00.1Z", BASE + 100_000_000),
        ("2026-11-22T10:00:00.000000001Z", BASE + 1),
        ("2026-11-22T12:00:00.5+02:00", BASE + 500_000_000),
        ("2026-11-22T05:30:00-0430", BASE),
        ("2026-11-22t10:00:00z", BASE),
        ("2026-11-22 10:00:00,25Z", BASE + 250_000_000),
        ("2026-11-22T10:00:00", BASE),
        ("1970-01-01T00:00:00Z", 0),
        ("2024-02-29T00:00:00Z", 1709164800 * 10**9),
        ("2262-04-11T23:47:16.854775807Z", 2**63 - 1),
    ],
)
def test_accepted_forms(text: str, nanos: int) -> None:
    """Each accepted ISO 8601 form gives the exact nanosecond count, offsets applied."""
    assert iso8601_to_unix_nano(text, "startTime") == nanos


def test_fast_and_general_paths_agree() -> None:
    """The cached-second fast path returns what the general parser returns."""
    first = iso8601_to_unix_nano("2031-01-02T03:04:05.987654321Z", "t")  # general, fills cache
    again = iso8601_to_unix_nano("2031-01-02T03:04:05.987654321Z", "t")  # fast path
    other = iso8601_to_unix_nano("2031-01-02T03:04:05.5+00:00", "t")  # cached second, offset
    expected = int(datetime.fromisoformat("2031-01-02T03:04:05+00:00").timestamp()) * 10**9
    assert first == again == expected + 987654321
    assert other == expected + 500_000_000


@pytest.mark.parametrize(
    "text",
    [
        "2026-02-30T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-11-22T24:00:00Z",
        "2026-11-22T10:60:00Z",
        "2026-11-22T10:00:60Z",
        "2026-11-22T10:00:00.1234567890Z",
        "2026-11-22T10:00:00+24:00",
        "2026-11-22",
        "1969-12-31T23:59:59Z",
        "2600-01-01T00:00:00Z",
        "2262-04-12T00:00:00Z",
        "2026-11-22T10:00:00.Z",
        "2026-11-22T10:00:00.１２Z",
        "2026-11-22T10:00:00.1_2Z",
        " 2026-11-22T10:00:00Z",
        "",
    ],
)
def test_refused_forms(text: str) -> None:
    """Impossible dates, times, offsets, precision and ranges are refused, not guessed."""
    iso8601_to_unix_nano("2026-11-22T10:00:00Z", "t")  # make the fast path eligible
    with pytest.raises(SpanRejected, match="^INVALID_TIMESTAMP: startTime"):
        iso8601_to_unix_nano(text, "startTime")


@pytest.mark.parametrize("value", [None, 1795341600, 1.5, ["2026-11-22T10:00:00Z"], {}])
def test_non_strings_refused(value: object) -> None:
    """A timestamp that is not a string is a span error, never a TypeError."""
    with pytest.raises(SpanRejected, match="must be an ISO 8601 string"):
        iso8601_to_unix_nano(value, "startTime")
