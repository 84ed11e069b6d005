"""The trace list's reads: pages of the per-trace summaries, sessions, one trace's.

The summaries are kept by the worker (storage/trace_summaries.py); these reads go
through the table's indexes only, whatever the size of the store.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from storage import summary_genai
from storage.database import Database


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
    root_input: str | None = None
    root_output: str | None = None

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
            root_input=genai[13],
            root_output=genai[14],
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
    def input(self) -> str | None:
        """The first LLM call's first user message, or the earliest root's input when
        the trace has no LLM call."""
        return summary_genai.untagged(self.first_llm if self.llm_calls else self.root_input)

    @property
    def output(self) -> str | None:
        """The last LLM call's output, or the earliest root's output without one."""
        return summary_genai.untagged(self.last_llm if self.llm_calls else self.root_output)


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
        self, project_id: str, filters: TraceFilter, limit: int, after: Cursor | None = None
    ) -> tuple[list[TraceSummary], Cursor | None]:
        """Up to `limit` traces, newest first, after `after`; and the next page's cursor
        (None when this page is the last)."""
        sql, params = page_query(project_id, filters, limit + 1, after)
        with self.db.transaction() as tx:
            rows = tx.query(sql, params)
        traces = [TraceSummary.of_row(row) for row in rows[:limit]]
        last = traces[-1] if len(rows) > limit else None
        return traces, None if last is None else Cursor(last.sort_ns, last.trace_id)

    def of_session(self, project_id: str, session_id: str, limit: int) -> list[TraceSummary]:
        """The first `limit` traces of a session, in time order."""
        with self.db.transaction() as tx:
            rows = tx.query(
                f"{_SELECT} AND session_id = ? ORDER BY sort_ns, trace_id LIMIT ?",
                (project_id, session_id, limit),
            )
        return [TraceSummary.of_row(row) for row in rows]

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
        return None if row is None else TraceSummary.of_row(row)
