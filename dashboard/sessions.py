"""The sessions list and a session (the conversation it was: each trace's input and
output in time order, with the session's totals), each a page and its JSON from one view:
`GET /api/v1/projects/{p}/sessions` and `.../sessions/{id}` → `{"sessionId", "traces":
[...]}`, the trace items as the trace list gives them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from quart import render_template, request

from dashboard import params
from dashboard.explorer import Explorer, signed_in_project
from dashboard.views import View
from storage.identity import Project
from storage.session_summaries import SessionCursor, SessionSummary
from storage.trace_list import TraceSummary


def _plus(total: float | None, value: float | None) -> float | None:
    return total if value is None else value if total is None else total + value


@dataclass(frozen=True, slots=True)
class SessionTotals:
    """What a session's traces add up to (tokens and cost: None when none is known)."""

    traces: int
    errors: int
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    start_ns: int
    end_ns: int

    @property
    def duration_ms(self) -> float:
        """From the first trace's start to the last one's end."""
        return (self.end_ns - self.start_ns) / 1e6

    @classmethod
    def of(cls, traces: list[TraceSummary]) -> SessionTotals:
        """The totals of a session's traces (at least one)."""
        tokens_in: float | None = None
        tokens_out: float | None = None
        cost: float | None = None
        for trace in traces:
            usage = trace.usage
            tokens_in, tokens_out = _plus(tokens_in, usage[0]), _plus(tokens_out, usage[1])
            cost = _plus(cost, usage[3])
        return cls(
            len(traces),
            sum(trace.error_count for trace in traces),
            None if tokens_in is None else int(tokens_in),
            None if tokens_out is None else int(tokens_out),
            cost,
            min(trace.start_ns for trace in traces),
            max(trace.end_ns or trace.start_ns for trace in traces),
        )


@dataclass(frozen=True, slots=True)
class SessionsPage:
    """A page of the sessions list as asked, and the next page's cursor."""

    project: Project
    asked: params.SessionQuery
    sessions: list[SessionSummary]
    cursor: SessionCursor | None


class SessionList(View[SessionsPage]):
    """`/projects/{p}/sessions` and its JSON."""

    def __init__(self, explorer: Explorer, ingest_url: str) -> None:
        self.explorer = explorer
        self.ingest_url = ingest_url

    async def context(self, project: str) -> SessionsPage:
        asked = params.session_query(request.args)
        found = await signed_in_project(self.explorer, project)
        listed, cursor = await asyncio.to_thread(self.explorer.sessions, found, asked)
        return SessionsPage(found, asked, listed, cursor)

    async def page(self, context: SessionsPage) -> str:
        kept = [(k, request.args.get(k, "")) for k in ("user", "from", "to")]
        kept = [(k, v) for k, v in kept if v]
        cursor, limit = context.cursor, str(context.asked.limit)
        return await render_template(
            "sessions.html",
            project=context.project,
            sessions=context.sessions,
            values=dict(kept),
            filtered=bool(kept),
            next_query=None
            if cursor is None
            else urlencode([*kept, ("cursor", cursor.encode()), ("limit", limit)]),
            first_query=urlencode(kept) if context.asked.after is not None else None,
            ingest_url=self.ingest_url,
        )

    async def data(self, context: SessionsPage) -> dict[str, Any]:
        return {
            "sessions": [params.session_json(s) for s in context.sessions],
            "next": None if context.cursor is None else context.cursor.encode(),
        }


@dataclass(frozen=True, slots=True)
class SessionTraces:
    """A session's traces, in time order."""

    project: Project
    session_id: str
    traces: list[TraceSummary]


class Session(View[SessionTraces]):
    """`/projects/{p}/sessions/{id}` and its JSON."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer

    async def context(self, project: str, session_id: str) -> SessionTraces:
        found = await signed_in_project(self.explorer, project)
        traces = await asyncio.to_thread(self.explorer.session, found, session_id)
        return SessionTraces(found, session_id, traces)

    async def page(self, context: SessionTraces) -> str:
        scores = await asyncio.to_thread(self.explorer.scores, context.project, context.traces)
        return await render_template(
            "session.html",
            project=context.project,
            session_id=context.session_id,
            traces=context.traces,
            scores=scores,
            totals=SessionTotals.of(context.traces),
        )

    async def data(self, context: SessionTraces) -> dict[str, Any]:
        return {
            "sessionId": context.session_id,
            "traces": [params.summary_json(t) for t in context.traces],
        }
