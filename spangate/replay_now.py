"""`spangate replay --now`: an example sent again as a new run of today.

Every trace and span id is replaced by a fresh one (the same old id gets the same new
one across the run's files, so a score still names its trace), and every time is moved
by one amount so that the run's latest time is now, keeping the spans' order and
durations. Without it, a second replay is refused by the re-sending rules, and an
example's fixed start sinks out of sight in a newest-first list.

Times are read and written with their nanosecond digits (ISO 8601 `startTime`,
`endTime`; OTLP's `…UnixNano` decimal strings).
"""

from __future__ import annotations

import dataclasses
import gzip
import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from spangate.replay import Outgoing

_IDS = {
    "traceId": 16, "trace_id": 16,
    "spanId": 8, "span_id": 8, "parentSpanId": 8, "parent_span_id": 8,
}  # fmt: skip
_ISO_TIMES = frozenset(("startTime", "endTime", "time", "timestamp"))
_NANO_TIMES = frozenset(("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano"))
_ISO = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)")


def _iso_ns(text: str) -> int | None:
    found = _ISO.fullmatch(text)
    if found is None:
        return None
    whole, fraction, zone = found.groups()
    moment = datetime.fromisoformat(whole + ("+00:00" if zone == "Z" else zone))
    return int(moment.timestamp()) * 10**9 + int((fraction or "0").ljust(9, "0"))


def _iso(ns: int) -> str:
    moment = datetime.fromtimestamp(ns // 10**9, UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{ns % 10**9:09d}Z"


def _walk(value: Any, visit: Callable[[str, Any], Any]) -> Any:
    """`value` with each member of each object replaced by visit(key, member)."""
    if isinstance(value, dict):
        return {k: visit(k, _walk(v, visit)) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(item, visit) for item in value]
    return value


def _time_ns(key: str, value: Any) -> int | None:
    if key in _NANO_TIMES and isinstance(value, str) and value.isdigit():
        return int(value)
    if key in _ISO_TIMES and isinstance(value, str):
        return _iso_ns(value)
    return None


@dataclasses.dataclass
class Renewal:
    """Fresh ids and one time shift, shared by every request of a run."""

    shift_ns: int = 0
    ids: dict[str, str] = dataclasses.field(default_factory=dict)

    def _id(self, old: str, size: int) -> str:
        new = self.ids.get(old.lower())
        if new is None:
            new = self.ids[old.lower()] = secrets.token_hex(size)
        return new

    def visit(self, key: str, value: Any) -> Any:
        size = _IDS.get(key)
        if size is not None and isinstance(value, str) and value:
            return self._id(value, size)
        ns = _time_ns(key, value)
        if ns is None:
            return value
        return str(ns + self.shift_ns) if key in _NANO_TIMES else _iso(ns + self.shift_ns)


def _documents(request: Outgoing) -> list[Any]:
    data = gzip.decompress(request.body) if request.gzipped else request.body
    if request.path.endswith("/batch"):
        return [orjson.loads(line) for line in data.splitlines() if line.strip()]
    return [orjson.loads(data)]


def _body(request: Outgoing, documents: list[Any]) -> bytes:
    if request.path.endswith("/batch"):
        data = b"\n".join(orjson.dumps(d) for d in documents) + b"\n"
    else:
        data = orjson.dumps(documents[0])
    return gzip.compress(data) if request.gzipped else data


def latest_ns(documents: list[Any]) -> int | None:
    """The latest time anywhere in the documents."""
    found: list[int] = []

    def note(key: str, value: Any) -> Any:
        ns = _time_ns(key, value)
        if ns is not None:
            found.append(ns)
        return value

    for document in documents:
        _walk(document, note)
    return max(found, default=None)


def renewed(requests: list[Outgoing], now_ns: int) -> list[Outgoing]:
    """The requests with fresh ids and times moved so that the latest is `now_ns`."""
    parsed = [_documents(request) for request in requests]
    latest = latest_ns([d for documents in parsed for d in documents])
    renewal = Renewal(0 if latest is None else now_ns - latest)
    return [
        dataclasses.replace(
            request, body=_body(request, [_walk(d, renewal.visit) for d in documents])
        )
        for request, documents in zip(requests, parsed, strict=True)
    ]
