"""The span store: bulk upserts by the re-sending rules (and the trace summaries in the
same transaction), and a trace's stored spans."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import orjson

from storage import (
    gin_pending,
    session_summaries,
    shared_texts,
    span_copy,
    trace_index,
    trace_summaries,
    trace_texts,
)
from storage.database import Database, Transaction
from storage.resend import (
    SQLITE_STORED_TRACES,
    Written,
    spans_repeat,
    sqlite_refusal,
    traces_asked,
    upsert,
    window_checks,
    wrote_nothing,
)
from storage.span_rows import SpanRow, utc_day
from storage.trace_facets import Facets

_TRACES_ASKED = 500  # trace ids in one query's IN list


class SpanOutline(NamedTuple):
    """A stored span as a waterfall draws it."""

    span_id: str
    parent_span_id: str | None
    name: str
    kind: str  # the SDK's kind
    status_code: int
    start_ns: int
    end_ns: int | None
    llm_type: str | None = None  # the GenAI view's (storage/span_genai.py)
    llm_name: str | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    total_tokens: int | None = None


_OUTLINE = (
    "span_id, parent_span_id, name, kind, status_code, start_ns, end_ns, llm_type, llm_name, "
    "model, input_tokens, output_tokens, cost_usd, total_tokens"
)


def stored_span(row: tuple[Any, ...], bodies: dict[str, str]) -> dict[str, Any]:
    """A stored span as the read side shows it (canonical members, SDK kind, session);
    `bodies`, the texts of its resource's and scope's keys (storage/shared_texts.py)."""
    (
        trace_id,
        span_id,
        parent,
        name,
        kind,
        code,
        message,
        start,
        end,
        session,
        attributes,
        events,
        links,
        extras,
        resource,
        scope,
    ) = row
    status: dict[str, Any] = {"code": code}
    if message:
        status["message"] = message
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "kind": kind,
        "status": status,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": None if end is None else str(end),
        "sessionId": session,
        "attributes": orjson.loads(attributes),
        "events": orjson.loads(events),
    }
    for member, text in (("links", links), ("extras", extras)):
        value = orjson.loads(text)
        if value:
            span[member] = value
    span["resource"] = orjson.loads(shared_texts.text_of(resource, bodies))
    span["scope"] = orjson.loads(shared_texts.text_of(scope, bodies))
    return span


def _stored_spans(tx: Transaction, project_id: str, rows: list[Any]) -> list[dict[str, Any]]:
    """`stored_span` of each row of a project's, their shared texts read in one query."""
    bodies = shared_texts.bodies(tx, project_id, (value for row in rows for value in row[14:16]))
    return [stored_span(row, bodies) for row in rows]


_SPAN_COLUMNS = (
    "trace_id, span_id, parent_span_id, name, kind, status_code, status_message, "
    "start_ns, end_ns, session_id, attributes, events, links, extras, resource, "
    "scope"
)


def first_errors_query(
    project_id: str, traces: Sequence[tuple[str, int, int]], postgres: bool
) -> tuple[str, list[object]]:
    """`SpanStore.first_errors`' read: the error rows of the traces (id, first start,
    latest start), through the span table's key, within the days of their starts; earliest
    first (on PostgreSQL the earliest alone: a seek a trace, whatever the planner
    thinks of the table's statistics, where the list's condition led it to walk the
    project's rows of those days)."""
    first = utc_day(min(start for _, start, _ in traces))
    last = utc_day(max(max(start, end) for _, start, end in traces))
    ids = [trace for trace, _, _ in traces]
    errors = "start_day >= ? AND start_day <= ? AND status_code = 2"
    if postgres:
        listed = ", ".join("(?)" for _ in traces)
        return (
            f"SELECT s.* FROM (VALUES {listed}) AS k (t) CROSS JOIN LATERAL "
            f"(SELECT {_SPAN_COLUMNS} FROM spans WHERE project_id = ? AND trace_id = k.t "
            f"AND {errors} ORDER BY start_ns, span_id, start_day LIMIT 1) AS s",
            [*ids, project_id, first, last],
        )
    return (
        f"SELECT {_SPAN_COLUMNS} FROM spans WHERE project_id = ? "
        f"AND trace_id IN ({', '.join('?' * len(traces))}) AND {errors} "
        "ORDER BY trace_id, start_ns, span_id, start_day",
        [project_id, *ids, first, last],
    )


class Prepared(NamedTuple):
    """A batch of rows, with what writing them needs that reads nothing stored
    (`SpanStore.prepared`)."""

    rows: list[SpanRow]
    #: PostgreSQL's: the rows' traces and summaries as new traces' (storage/span_copy.py)
    copy: span_copy.Batch | None
    #: what the rows add to the indexes that find a trace (storage/trace_index.py)
    found: trace_index.IndexRows | None


class SpanStore:
    """Spans in the relational database (same database as identity and scores)."""

    def __init__(self, db: Database, find_index: bool = True) -> None:
        self.db = db
        #: whether writes keep the indexes that find a trace (storage/trace_index.py) and
        #: the session summaries: off only to measure what they cost, on a store
        #: migrated to before them (benchmarks/bench_worker.py --find-index)
        self.find_index = find_index

    def prepared(self, rows: list[SpanRow], facets: list[Facets] | None = None) -> Prepared:
        """`rows` with what `upsert` needs of them that reads nothing stored, for a thread
        other than the writer's to compute: on PostgreSQL their traces, and their
        summaries as new traces'; what they add to the indexes that find a trace
        (`facets`: their traces' documents of tokens, when the row builder made them)."""
        return Prepared(
            rows,
            span_copy.Batch.of(rows) if self.db.postgres else None,
            trace_index.index_rows(rows, facets) if self.find_index else None,
        )

    def upsert(self, rows: list[SpanRow] | Prepared, window_ms: int) -> list[SpanRow]:
        """Write a batch (rows, or `prepared` rows) in one transaction by the re-sending
        rules (storage/resend.py), in queue order, and the summaries of its traces; the
        rows the window refused. A transaction that met another writer's is run again
        (`Database.retried`)."""
        return self.db.retried(lambda tx: self.write(tx, rows, window_ms), immediate=True)

    def write(
        self, tx: Transaction, rows: list[SpanRow] | Prepared, window_ms: int
    ) -> list[SpanRow]:
        """`upsert` within `tx`, a transaction of this store's database (on SQLite, one
        that took the write lock at its start: `transaction(immediate=True)`)."""
        batch = rows if isinstance(rows, Prepared) else self.prepared(rows)
        if batch.copy is not None:
            written = span_copy.write(tx, batch.copy, window_ms)
        else:
            written = self._write_sqlite(tx, batch.rows, window_ms)
        shared_texts.write(tx, batch.rows)
        if batch.found is not None:
            traces = batch.copy.traces if batch.copy is not None else ()
            met = trace_index.unchanged(batch.rows, written)
            left_out = written.refused + met
            trace_index.write(tx, batch.found, batch.rows, left_out, traces)
            session_summaries.refresh_stale(tx)
            if tx.postgres:
                gin_pending.merge(tx)
        return [batch.rows[at] for at in written.refused]

    def _write_sqlite(self, tx: Transaction, rows: list[SpanRow], window_ms: int) -> Written:
        """The rows written by the rules; the positions of those the window refused, and
        (keeping the indexes that find a trace) of those that wrote nothing."""
        stored = {
            trace
            for asked in traces_asked(rows)
            for (trace,) in tx.query(SQLITE_STORED_TRACES, asked)
        }
        repeats = spans_repeat(rows)
        checked = window_checks(rows, stored, repeats)
        # only a checked row can meet a stored row of its span and replace it
        replacing = [at for at, check in enumerate(checked) if check] if self.find_index else []
        kept = {}
        if replacing:
            kept = trace_index.stored_before(tx, [rows[at] for at in replacing])
            trace_index.note_replaced(tx, [rows[at] for at in replacing], kept, window_ms)
        before = tx.total_changes()
        skipped = tx.executemany(upsert(window_ms), rows, sqlite_refusal(window_ms), checked)
        # an upsert of the same content changes no row: when every row not refused
        # changed one, none met a stored row of its content
        wrote_all = tx.total_changes() - before == len(rows) - len(skipped)
        if replacing:
            refused = set(skipped)
            written = [rows[at][:4] for at in replacing if at not in refused]
            trace_texts.forget_previews(tx, written)
        trace_summaries.refresh_sqlite(tx, rows, stored, skipped, window_ms, repeats)
        met = [] if wrote_all else wrote_nothing(rows, set(skipped), kept, window_ms)
        return Written(skipped, met)

    def trace(self, project_id: str, trace_id: str) -> list[dict[str, Any]]:
        """Every stored span of a trace, by start time."""
        with self.db.transaction() as tx:
            rows = tx.query(
                f"SELECT {_SPAN_COLUMNS} FROM spans WHERE project_id = ? AND trace_id = ? "
                "ORDER BY start_ns, span_id, start_day",
                (project_id, trace_id.lower()),
            )
            return _stored_spans(tx, project_id, rows)

    def first_errors(
        self, project_id: str, traces: Sequence[tuple[str, int, int]]
    ) -> dict[str, dict[str, Any]]:
        """Of each trace (id, the first and the latest start of its spans, in ns), its
        earliest error span, by trace id (none for a trace without one). One read of
        the traces' rows by their key, within the days their starts fall on."""
        if not traces:
            return {}
        earliest: dict[str, Any] = {}
        with self.db.transaction() as tx:
            for first in range(0, len(traces), _TRACES_ASKED):
                asked = traces[first : first + _TRACES_ASKED]
                for row in tx.query(*first_errors_query(project_id, asked, tx.postgres)):
                    earliest.setdefault(row[0], row)
            found = _stored_spans(tx, project_id, list(earliest.values()))
        return {span["traceId"]: span for span in found}

    def texts(self, project_id: str, trace_id: str) -> list[tuple[str, str, str, str, str]]:
        """Each span of a trace as the text a search looks in, unparsed: (span id, name,
        status message, attributes JSON, events JSON)."""
        with self.db.transaction() as tx:
            rows = tx.query(
                "SELECT span_id, name, COALESCE(status_message, ''), attributes, events "
                "FROM spans WHERE project_id = ? AND trace_id = ?",
                (project_id, trace_id.lower()),
            )
        return [tuple(row) for row in rows]

    def costs(self, project_id: str, trace_id: str) -> dict[str, tuple[float | None, str | None]]:
        """The cost in USD each span of a trace was given as it was stored, and where it
        came from (storage/span_genai.py), by span id (its earliest start day's row)."""
        with self.db.transaction() as tx:
            rows = tx.query(
                "SELECT span_id, cost_usd, cost_source FROM spans WHERE project_id = ? "
                "AND trace_id = ? ORDER BY start_day DESC",
                (project_id, trace_id.lower()),
            )
        return {span_id: (cost, source) for span_id, cost, source in rows}

    def outline(self, project_id: str, trace_id: str) -> list[SpanOutline]:
        """Every stored span of a trace by start time, without its attributes, events,
        links, resource or scope (what a waterfall draws: nothing to parse)."""
        with self.db.transaction() as tx:
            rows = tx.query(
                f"SELECT {_OUTLINE} FROM spans WHERE project_id = ? AND trace_id = ? "
                "ORDER BY start_ns, span_id, start_day",
                (project_id, trace_id.lower()),
            )
        return list(map(SpanOutline._make, rows))

    def outlines(self, project_id: str, trace_ids: list[str]) -> dict[str, list[SpanOutline]]:
        """The outlines of several traces' spans, by trace, each by start time."""
        found: dict[str, list[SpanOutline]] = {}
        for at in range(0, len(trace_ids), _TRACES_ASKED):
            asked = trace_ids[at : at + _TRACES_ASKED]
            with self.db.transaction() as tx:
                rows = tx.query(
                    f"SELECT trace_id, {_OUTLINE} FROM spans WHERE project_id = ? AND trace_id IN "
                    f"({', '.join('?' * len(asked))}) ORDER BY trace_id, start_ns, span_id",
                    (project_id, *asked),
                )
            for trace_id, *outline in rows:
                found.setdefault(trace_id, []).append(SpanOutline(*outline))
        return found

    def span(self, project_id: str, trace_id: str, span_id: str) -> list[dict[str, Any]]:
        """The stored rows of one span (two when it was stored on two start days)."""
        with self.db.transaction() as tx:
            rows = tx.query(
                f"SELECT {_SPAN_COLUMNS} FROM spans WHERE project_id = ? AND trace_id = ? "
                "AND span_id = ? ORDER BY start_day",
                (project_id, trace_id.lower(), span_id.lower()),
            )
            return _stored_spans(tx, project_id, rows)

    def count(self, project_id: str) -> int:
        """Stored spans of a project."""
        with self.db.transaction() as tx:
            row = tx.query_one("SELECT COUNT(*) FROM spans WHERE project_id = ?", (project_id,))
        return int(row[0]) if row else 0
