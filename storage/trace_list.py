"""The trace list's reads: pages of the per-trace summaries, sessions, one trace's.

The summaries are kept by the worker (storage/trace_summaries.py); these reads go
through the table's indexes only, whatever the size of the store.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, replace
from typing import Any

import orjson

from genai import GenAIView, view_of
from storage import summary_genai
from storage.database import Database, Transaction


@dataclass(frozen=True, slots=True)
class TraceSummary:
    """One trace as the list shows it."""

    trace_id: str
    root_name: str | None
    start_ns: int
    end_ns: int | None
    span_count: int
    error_count: int
    session_id: str | None
    received_ms: int
    sort_ns: int
    # the GenAI part, as stored (storage/summary_genai.py)
    llm_calls: int = 0
    models_text: str | None = None
    user_id: str | None = None
    model_usage: tuple[int | None, int | None, int | None, float | None] = (None,) * 4
    other_usage: tuple[int | None, int | None, int | None, float | None] = (None,) * 4
    first_llm: str | None = None
    last_llm: str | None = None
    first_root: str | None = None
    #: the input and output messages' text (at most PREVIEW_CHARS), read from the spans
    #: that give them when the summary is read (`conversation_ends`)
    input: str | None = None
    output: str | None = None

    @classmethod
    def of_row(cls, row: tuple[Any, ...]) -> TraceSummary:
        """A summary from a row of _SELECT."""
        genai = row[9:]
        return cls(
            trace_id=row[0],
            root_name=row[1],
            start_ns=row[2],
            end_ns=row[3],
            span_count=row[4],
            error_count=row[5],
            session_id=row[6],
            received_ms=row[7],
            sort_ns=row[8],
            llm_calls=genai[0] or 0,
            models_text=genai[1],
            user_id=genai[2],
            model_usage=_usage(genai[3:7]),
            other_usage=_usage(genai[7:11]),
            first_llm=genai[11],
            last_llm=genai[12],
            first_root=genai[13],
        )

    @property
    def duration_ms(self) -> float | None:
        """From the earliest start to the latest end; None while no span has ended."""
        return None if self.end_ns is None else (self.end_ns - self.start_ns) / 1e6

    @property
    def usage(self) -> tuple[int | None, int | None, int | None, float | None]:
        """Input, output and total tokens and cost in USD: the model calls' sums, or the
        other spans' own when no model call reports any (storage/summary_genai.py)."""
        if any(value is not None for value in self.model_usage):
            return self.model_usage
        return self.other_usage

    @property
    def models(self) -> list[str]:
        """The distinct models of the trace's spans, sorted."""
        return summary_genai.models_of(self.models_text)

    @property
    def input_span(self) -> str | None:
        """The key (storage/summary_genai.py) of the span whose input is the trace's:
        its first LLM call, or its earliest root when it has no LLM call."""
        return self.first_llm if self.llm_calls else self.first_root

    @property
    def output_span(self) -> str | None:
        """The key of the span whose output is the trace's: its last LLM call, or its
        earliest root."""
        return self.last_llm if self.llm_calls else self.first_root


_KEYS_ASKED = 300  # (trace, span, day) triples in one query: 900 parameters


def conversation_ends(
    tx: Transaction, project_id: str, traces: list[TraceSummary]
) -> list[TraceSummary]:
    """The traces with their `input` and `output`: the first user message of the span
    that gives the input, the last output message of the one that gives the output,
    read from their attributes (the worker stores no message)."""
    wanted = {
        (trace.trace_id, *summary_genai.span_of(key))
        for trace in traces
        for key in (trace.input_span, trace.output_span)
        if key is not None
    }
    views: dict[tuple[str, str, str], GenAIView | None] = {}
    for trace_id, span_id, day, name, kind, attributes, events in _spans(
        tx, project_id, sorted(wanted)
    ):
        views[(trace_id, span_id, day)] = view_of(
            orjson.loads(attributes), orjson.loads(events), name, kind
        )
    return [_with_ends(trace, views) for trace in traces]


_SPAN = (
    "SELECT trace_id, span_id, start_day, name, kind, attributes, events FROM spans "
    "WHERE project_id = ? AND "
)


def _spans(tx: Transaction, project_id: str, keys: list[tuple[str, str, str]]) -> list[Any]:
    """The rows of the spans (trace, span, start day) `keys` names, each through the
    span table's key: on PostgreSQL in one query a few hundred; on SQLite one query each
    (it seeks a row-value IN list by the project alone, a scan of its spans)."""
    if not tx.postgres:
        one = _SPAN + "trace_id = ? AND span_id = ? AND start_day = ?"
        return [row for key in keys for row in tx.query(one, (project_id, *key))]
    rows = []
    for at in range(0, len(keys), _KEYS_ASKED):
        chunk = keys[at : at + _KEYS_ASKED]
        rows += tx.query(
            _SPAN
            + "(trace_id, span_id, start_day) IN (VALUES "
            + ", ".join("(?, ?, ?)" for _ in chunk)
            + ")",
            (project_id, *(value for key in chunk for value in key)),
        )
    return rows


def _with_ends(
    trace: TraceSummary, views: dict[tuple[str, str, str], GenAIView | None]
) -> TraceSummary:
    def view(key: str | None) -> GenAIView | None:
        return None if key is None else views.get((trace.trace_id, *summary_genai.span_of(key)))

    first, last = view(trace.input_span), view(trace.output_span)
    return replace(
        trace,
        input=None if first is None else first.input_preview,
        output=None if last is None else last.output_preview,
    )


def _usage(values: tuple[Any, ...]) -> tuple[int | None, int | None, int | None, float | None]:
    tokens = [None if v is None else int(v) for v in values[:3]]
    cost = None if values[3] is None else float(values[3])
    return (tokens[0], tokens[1], tokens[2], cost)


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a page of the list ends: the next page starts after this trace."""

    sort_ns: int
    trace_id: str

    def encode(self) -> str:
        """The opaque text a client passes back."""
        return base64.urlsafe_b64encode(f"{self.sort_ns}:{self.trace_id}".encode()).decode()

    @classmethod
    def decode(cls, text: str) -> Cursor:
        """The cursor `encode` wrote; ValueError for anything else."""
        try:
            sort_ns, trace_id = base64.urlsafe_b64decode(text.encode()).decode().split(":")
            return cls(int(sort_ns), trace_id)
        except (binascii.Error, UnicodeError, ValueError) as e:
            raise ValueError("cursor is not one this list gave") from e


@dataclass(frozen=True, slots=True)
class TraceFilter:
    """What the list may be narrowed to."""

    name: str | None = None  # a substring of the root span's name, any case
    errors_only: bool = False  # traces with at least one span whose status is error
    session: str | None = None


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One session (the `session.id` of its spans) as the sessions list shows it."""

    session_id: str
    traces: int
    start_ns: int
    end_ns: int | None


_SELECT = (
    "SELECT trace_id, root_name, start_ns, end_ns, span_count, error_count, session_id, "
    f"received_ms, sort_ns, {', '.join(summary_genai.NAMES)} FROM trace_summaries "
    "WHERE project_id = ?"
)


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _where(filters: TraceFilter) -> tuple[str, list[object]]:
    sql, params = "", list[object]()
    if filters.name:
        sql += " AND LOWER(root_name) LIKE ? ESCAPE '\\'"
        params.append(_like(filters.name))
    if filters.errors_only:
        sql += " AND error_count > 0"
    if filters.session is not None:
        sql += " AND session_id = ?"
        params.append(filters.session)
    return sql, params


def page_query(
    project_id: str, filters: TraceFilter, limit: int, after: Cursor | None
) -> tuple[str, list[object]]:
    """The SQL and parameters of a page of the list: newest first, through an index."""
    where, params = _where(filters)
    if after is not None:
        where += " AND (sort_ns < ? OR (sort_ns = ? AND trace_id < ?))"
        params += [after.sort_ns, after.sort_ns, after.trace_id]
    sql = f"{_SELECT}{where} ORDER BY sort_ns DESC, trace_id DESC LIMIT ?"
    return sql, [project_id, *params, limit]


class TraceSummaries:
    """Reads of the summaries: pages of the list, a session's traces, the sessions."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def page(
        self,
        project_id: str,
        filters: TraceFilter,
        limit: int,
        after: Cursor | None = None,
        ends: bool = True,
    ) -> tuple[list[TraceSummary], Cursor | None]:
        """Up to `limit` traces, newest first, after `after`; and the next page's cursor
        (None when this page is the last). `ends`: with their input and output."""
        sql, params = page_query(project_id, filters, limit + 1, after)
        with self.db.transaction() as tx:
            rows = tx.query(sql, params)
            traces = [TraceSummary.of_row(row) for row in rows[:limit]]
            if ends:
                traces = conversation_ends(tx, project_id, traces)
        last = traces[-1] if len(rows) > limit else None
        return traces, None if last is None else Cursor(last.sort_ns, last.trace_id)

    def of_session(self, project_id: str, session_id: str, limit: int) -> list[TraceSummary]:
        """The first `limit` traces of a session, in time order."""
        with self.db.transaction() as tx:
            rows = tx.query(
                f"{_SELECT} AND session_id = ? ORDER BY sort_ns, trace_id LIMIT ?",
                (project_id, session_id, limit),
            )
            return conversation_ends(tx, project_id, [TraceSummary.of_row(row) for row in rows])

    def sessions(self, project_id: str, limit: int) -> list[SessionSummary]:
        """The `limit` sessions whose latest trace is most recent, most recent first."""
        with self.db.transaction() as tx:
            rows = tx.query(
                "SELECT session_id, COUNT(*), MIN(start_ns), MAX(end_ns) FROM trace_summaries "
                "WHERE project_id = ? AND session_id IS NOT NULL GROUP BY session_id "
                "ORDER BY MAX(sort_ns) DESC, session_id LIMIT ?",
                (project_id, limit),
            )
        return [SessionSummary(*row) for row in rows]

    def get(self, project_id: str, trace_id: str) -> TraceSummary | None:
        """One trace's summary, or None when nothing of it is stored."""
        with self.db.transaction() as tx:
            row = tx.query_one(f"{_SELECT} AND trace_id = ?", (project_id, trace_id))
            if row is None:
                return None
            return conversation_ends(tx, project_id, [TraceSummary.of_row(row)])[0]
