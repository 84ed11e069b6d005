"""The worker's part of the ingestion record (spanqueue.ingestion): what became of the
spans of a 200 once the worker had them.

Written in the pipeline that acknowledges the entries (no round trip of its own): the
lag of each entry, from its 200 to its spans committed; each span the re-sending rule
refused, with its trace and span ids and the reason (never its content); and the
refused spans' count in the minute. At most KEEP refusals of a project a batch: older
ones would be trimmed at once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from spanqueue.consumer import Entry
from spanqueue.ingestion import (
    KEEP,
    LAG_SAMPLES,
    MINUTES_TTL_S,
    RefusedSpan,
    day_of,
    lag_sample,
    minute_field,
)
from spanqueue.layout import lag_key, minutes_key, project_of_stream, refused_key
from storage.span_rows import SpanRow
from worker.metrics import WorkerMetrics

RESEND_REASON = (
    "sent again with other content within the re-sending window of its first send; "
    "the first is kept"
)


def _received_ms(entry: Entry) -> int | None:
    try:
        return int(entry.fields[b"received_ms"])
    except (KeyError, ValueError):
        return None


class WorkerRecord:
    """Adds what the worker did with each batch to the ingestion record (when
    `recording`) and to its metrics (when it has them)."""

    def __init__(self, recording: bool = True, metrics: WorkerMetrics | None = None) -> None:
        self.recording = recording
        self.metrics = metrics

    def stored(self, done: Any, entries: Sequence[Entry], refused: Sequence[SpanRow]) -> None:
        """Entries whose spans were committed, and the rows refused among them: their
        lags and refusals written in `done` (a pipeline the caller executes)."""
        now_ms = int(time.time() * 1000)
        self._lags(done, entries, now_ms)
        if refused:
            self._refused(done, refused, now_ms)

    def _lags(self, done: Any, entries: Sequence[Entry], now_ms: int) -> None:
        by_project: dict[str, list[bytes]] = {}
        for entry in entries:
            received = _received_ms(entry)
            if received is None:
                continue
            if self.metrics is not None:
                self.metrics.lag_seconds.observe(max(0, now_ms - received) / 1000)
            by_project.setdefault(project_of_stream(entry.stream), []).append(
                lag_sample(now_ms, received)
            )
        if not self.recording:
            return
        for project_id, samples in by_project.items():
            key = lag_key(project_id)
            done.lpush(key, *samples[-LAG_SAMPLES:])
            done.ltrim(key, 0, LAG_SAMPLES - 1)

    def _refused(self, done: Any, refused: Sequence[SpanRow], now_ms: int) -> None:
        if self.metrics is not None:
            self.metrics.spans_refused.inc(len(refused))
        if not self.recording:
            return
        by_project: dict[str, list[SpanRow]] = {}
        for row in refused:
            by_project.setdefault(row.project_id, []).append(row)
        for project_id, rows in by_project.items():
            key = refused_key(project_id)
            for row in rows[-KEEP:]:
                note = RefusedSpan(now_ms, row.trace_id, row.span_id, RESEND_REASON)
                done.xadd(key, note.fields(), maxlen=KEEP, approximate=True)
            minutes = minutes_key(project_id, day_of(now_ms))
            done.hincrby(minutes, minute_field(now_ms, "f"), len(rows))
            done.expire(minutes, MINUTES_TTL_S)
