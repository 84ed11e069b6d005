"""Reading a project's ingestion record (spanqueue.ingestion) in one pipeline.

Every key read is under the project's hash tag, so on a Redis Cluster the pipeline
goes to one node. Entries that are not the record's own (written by hand) are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import redis

from spanqueue.ingestion import (
    LAG_SAMPLES,
    LAG_WINDOW_MS,
    DeadLetterNote,
    RefusedSpan,
    RequestRecord,
    day_of,
)
from spanqueue.layout import (
    dead_letter_key,
    dead_notes_key,
    depth_key,
    lag_key,
    minutes_key,
    refused_key,
    requests_key,
)

#: Dead-letter notes shown.
DEAD_NOTES_SHOWN = 10
#: Requests read beyond the `limit` asked for in the first round trip: records written
#: late (a refusal's up to 50 ms after later requests', a timeout's a minute after its
#: `at`) take places of the newest `limit` by stream order.
READ_AHEAD = 200
#: Entries a further round trip reads.
READ_MORE = 1000
#: How far a collector's clock may run ahead of the Redis clock that stamps a stream
#: entry's id: a record is written after its `at`, give or take this. A read goes this
#: far back in writes beyond the newest `limit` (all of a project's record at most).
CLOCK_SKEW_MS = 1_000
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class MinuteCounts:
    """Spans of one minute: accepted and rejected by the collector, refused after."""

    minute_ms: int
    accepted: int
    rejected: int
    refused: int


@dataclass(frozen=True, slots=True)
class IngestionView:
    """A project's ingestion record as read at one moment, newest first."""

    requests: tuple[RequestRecord, ...]
    refused: tuple[RefusedSpan, ...]
    dead_letters: int
    dead_notes: tuple[DeadLetterNote, ...]
    queue_depth: int
    lag_p50_ms: int | None
    lag_p95_ms: int | None
    #: the last `minutes` minutes asked for, oldest first, the current one last
    minutes: tuple[MinuteCounts, ...]


def percentile(values: Sequence[int], share: float) -> int | None:
    """The nearest-rank percentile of sorted `values` (None when there are none)."""
    if not values:
        return None
    return values[max(0, math.ceil(share * len(values)) - 1)]


def _entries(reply: Any, read: Callable[[dict[bytes, bytes]], T]) -> tuple[T, ...]:
    found = []
    for _, fields in reply or []:
        try:
            found.append(read(fields))
        except (KeyError, ValueError, UnicodeDecodeError):
            continue
    return tuple(found)


def _at(record: RequestRecord) -> int:
    return record.at_ms


def went_wrong(record: RequestRecord) -> bool:
    """Whether a request was refused, or had spans rejected."""
    return record.status != 200 or bool(record.rejected)


def _newest_requests(
    client: redis.Redis | redis.RedisCluster,
    key: str,
    limit: int,
    first: Any,
    wrong_only: bool = False,
) -> tuple[RequestRecord, ...]:
    """The `limit` requests of newest `at` (with `wrong_only`, of those `went_wrong`),
    newest first, from the stream's entries read newest written first (`first`: the
    first round trip's, limit + READ_AHEAD of them). A record is written after its
    `at`, and an entry written before another has an `at` before that one's id (give or
    take CLOCK_SKEW_MS): the read goes on while an entry written earlier could still be
    among the newest, or until the stream ends (about KEEP entries)."""
    page, asked = first or [], limit + READ_AHEAD
    records: list[RequestRecord] = []
    while True:
        read = _entries(page, RequestRecord.from_fields)
        records += filter(went_wrong, read) if wrong_only else read
        records.sort(key=_at, reverse=True)
        del records[limit:]
        if len(page) < asked:
            return tuple(records)
        oldest = page[-1][0].decode()
        written_ms = int(oldest.partition("-")[0])
        if len(records) == limit and written_ms + CLOCK_SKEW_MS < records[-1].at_ms:
            return tuple(records)
        asked = READ_MORE
        page = client.xrevrange(key, max=f"({oldest}", count=asked) or []


def _lags(samples: list[bytes], now_ms: int) -> list[int]:
    """The lags stored within LAG_WINDOW_MS of now, sorted."""
    lags = []
    for sample in samples:
        stored, _, lag = sample.partition(b":")
        try:
            if int(stored) >= now_ms - LAG_WINDOW_MS:
                lags.append(int(lag))
        except ValueError:
            continue
    return sorted(lags)


def _minutes(days: dict[int, dict[bytes, bytes]], now_ms: int, count: int) -> list[MinuteCounts]:
    """The `count` minutes ending with the one of `now_ms`, from the days' hashes."""
    counts: dict[int, dict[str, int]] = {}
    for day, fields in days.items():
        for field, value in fields.items():
            text = field.decode(errors="replace")
            if not text[:-1].isdigit():
                continue
            minute = day * 1440 + int(text[:-1])
            try:
                counts.setdefault(minute, {})[text[-1]] = int(value)
            except ValueError:
                continue
    last = now_ms // 60_000
    series = []
    for minute in range(last - count + 1, last + 1):
        seen = counts.get(minute, {})
        series.append(
            MinuteCounts(minute * 60_000, seen.get("a", 0), seen.get("r", 0), seen.get("f", 0))
        )
    return series


def read_ingestion(
    client: redis.Redis | redis.RedisCluster,
    project_id: str,
    limit: int,
    now_ms: int,
    minutes: int = 60,
    wrong_only: bool = False,
) -> IngestionView:
    """The project's record: at most `limit` requests (with `wrong_only`, of those that
    `went_wrong`) and refused spans, and the spans per minute of the last `minutes`
    minutes (at most a day)."""
    today = day_of(now_ms)
    days = sorted({today, day_of(now_ms - (minutes - 1) * 60_000)})
    reads: Any = client.pipeline(transaction=False)
    reads.xrevrange(requests_key(project_id), count=limit + READ_AHEAD)
    reads.xrevrange(refused_key(project_id), count=limit)
    reads.xlen(dead_letter_key(project_id))
    reads.xrevrange(dead_notes_key(project_id), count=DEAD_NOTES_SHOWN)
    reads.get(depth_key(project_id))
    reads.lrange(lag_key(project_id), 0, LAG_SAMPLES - 1)
    for day in days:
        reads.hgetall(minutes_key(project_id, day))
    requests, refused, dead, notes, depth, samples, *hashes = reads.execute()
    lags = _lags(samples, now_ms)
    try:
        queue_depth = max(0, int(depth or 0))
    except ValueError:
        queue_depth = 0
    return IngestionView(
        requests=_newest_requests(client, requests_key(project_id), limit, requests, wrong_only),
        refused=_entries(refused, RefusedSpan.from_fields),
        dead_letters=int(dead),
        dead_notes=_entries(notes, DeadLetterNote.from_fields),
        queue_depth=queue_depth,
        lag_p50_ms=percentile(lags, 0.5),
        lag_p95_ms=percentile(lags, 0.95),
        minutes=tuple(_minutes(dict(zip(days, hashes, strict=True)), now_ms, minutes)),
    )
