"""ISO 8601 timestamps to Unix nanoseconds, keeping every fractional digit.

`datetime` stops at microseconds, so the fraction is read here and only the calendar
date goes through `datetime.date` (which validates it). Dates repeat heavily within a
batch, so their day numbers are memoised.
"""

from __future__ import annotations

import re
from datetime import date

from proto_json.errors import SpanRejected

# RFC 3339 profile of ISO 8601, plus the forms SDKs emit in practice: `T`, `t` or a
# space between date and time, `,` or `.` before the fraction, and an offset written
# `Z`, `+02:00` or `+0200`. A time without an offset is read as UTC.
_ISO = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:[.,]([0-9]{1,9}))?(?:([Zz])|([+-])([0-9]{2}):?([0-9]{2}))?",
    re.ASCII,
)
_UNIX_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_NANOS = 1_000_000_000
#: OTLP's fixed64 goes further, but no store here (SQLite, PostgreSQL BIGINT) holds an
#: unsigned 64-bit integer: a time the worker could not store is refused at the gateway
#: (2262-04-11T23:47:16.854775807Z), never acknowledged and then lost.
MAX_UNIX_NANO = 2**63 - 1
_FRACTION_SCALE: tuple[int, ...] = tuple(int(10 ** (9 - digits)) for digits in range(10))
_day_cache: dict[str, int] = {}
_DAY_CACHE_SIZE = 4096
# `YYYY-MM-DDTHH:MM:SS` (UTC, as written) -> its Unix nanoseconds; bounded, validated entries only
_second_cache: dict[str, int] = {}
_SECOND_CACHE_SIZE = 16384
_MAX_CACHED_SECONDS = MAX_UNIX_NANO // _NANOS - 1


def _epoch_day(text: str, field: str) -> int:
    day = _day_cache.get(text)
    if day is None:
        try:
            day = date(int(text[0:4]), int(text[5:7]), int(text[8:10])).toordinal()
        except ValueError as e:
            raise SpanRejected("INVALID_TIMESTAMP", f"{field} is not a calendar date") from e
        day -= _UNIX_EPOCH_ORDINAL
        if len(_day_cache) >= _DAY_CACHE_SIZE:
            _day_cache.clear()
        _day_cache[text] = day
    return day


def _parse(value: str, field: str) -> int:
    """The general path: every accepted form, every check; remembers the second it read."""
    m = _ISO.fullmatch(value)
    if m is None:
        raise SpanRejected("INVALID_TIMESTAMP", f"{field} is not an ISO 8601 timestamp")
    hour, minute, second = int(m[4]), int(m[5]), int(m[6])
    if hour > 23 or minute > 59 or second > 59:
        raise SpanRejected("INVALID_TIMESTAMP", f"{field} has an out-of-range time of day")
    seconds = _epoch_day(value[:10], field) * 86400 + hour * 3600 + minute * 60 + second
    if 0 <= seconds < _MAX_CACHED_SECONDS and value[10] == "T":
        if len(_second_cache) >= _SECOND_CACHE_SIZE:
            _second_cache.clear()
        _second_cache[value[:19]] = seconds * _NANOS
    if m[9] is not None:
        off_h, off_m = int(m[10]), int(m[11])
        if off_h > 23 or off_m > 59:
            raise SpanRejected("INVALID_TIMESTAMP", f"{field} has an out-of-range UTC offset")
        offset = off_h * 3600 + off_m * 60
        seconds -= offset if m[9] == "+" else -offset
    fraction = m[7]
    nanos = seconds * _NANOS
    if fraction is not None:
        nanos += int(fraction) * _FRACTION_SCALE[len(fraction)]
    if not 0 <= nanos <= MAX_UNIX_NANO:
        raise SpanRejected("INVALID_TIMESTAMP", f"{field} is outside 1970 to 2262-04-11")
    return nanos


def iso8601_to_unix_nano(value: object, field: str) -> int:
    """Nanoseconds since the Unix epoch for an ISO 8601 string; SpanRejected otherwise.

    Fast path for the form SDKs send (`2026-11-22T10:01:02.123456789Z`): spans of a batch
    share their seconds, so the `YYYY-MM-DDTHH:MM:SS` prefix is looked up among those the
    general path already validated, and only the fraction is read here.
    """
    if type(value) is not str:
        raise SpanRejected("INVALID_TIMESTAMP", f"{field} must be an ISO 8601 string")
    base = _second_cache.get(value[:19])
    if base is not None:
        tail = value[19:]
        if tail == "Z" or not tail:  # no offset at all is read as UTC too
            return base
        fraction = tail[1:-1]
        if (
            tail[0] == "."
            and tail[-1] == "Z"
            and 0 < len(fraction) <= 9
            and fraction.isdigit()
            and fraction.isascii()
        ):
            return base + int(fraction) * _FRACTION_SCALE[len(fraction)]
    return _parse(value, field)
