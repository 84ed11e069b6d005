"""The sessions list and a session (the conversation it was: each trace's input and
output in time order, with the session's totals), each a page and its JSON from one view:
`GET /api/v1/projects/{p}/sessions` and `.../sessions/{id}?limit&cursor` →
`{"sessionId", "traces": [...], "next"}`, the trace items as the trace list gives them,
a page of at most SESSION_TRACES_SHOWN; the totals are the session's summary's, whatever
page is shown."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from quart import render_template, request

from dashboard import params
from dashboard.explorer import IN_TIME, SESSION_TRACES_SHOWN, Explorer, signed_in_project
from dashboard.filter_bar import users_of
from dashboard.views import View
from storage.identity import Project
from storage.session_summaries import SessionCursor, SessionSummary
from storage.trace_list import Cursor, TraceSummary


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
            users=await asyncio.to_thread(
                users_of, self.explorer, context.project, request.args.get("user")
            ),
            next_query=None
            if cursor is None
            else urlencode([*kept, ("cursor", cursor.encode()), ("limit", limit)]),
            first_query=urlencode(kept) if context.asked.after is not None else None,
            ingest_url=self.ingest_url,
        )

    async def data(self, context: SessionsPage) -> dict[str, Any]:
        return {
            "sessions": [params.session_json(s) for s in context.sessions],
            "next": params.encoded(context.cursor),
        }


@dataclass(frozen=True, slots=True)
class SessionTraces:
    """A session's summary and a page of its traces, in time order."""

    project: Project
    session_id: str
    summary: SessionSummary
    traces: list[TraceSummary]
    after: Cursor | None
    cursor: Cursor | None


class Session(View[SessionTraces]):
    """`/projects/{p}/sessions/{id}` and its JSON."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer

    async def context(self, project: str, session_id: str) -> SessionTraces:
        args = request.args
        limit = params.limit_of(args, SESSION_TRACES_SHOWN, SESSION_TRACES_SHOWN)
        after = params.cursor_of(args, IN_TIME)
        found = await signed_in_project(self.explorer, project)
        summary, traces, cursor = await asyncio.to_thread(
            self.explorer.session, found, session_id, limit, after
        )
        return SessionTraces(found, session_id, summary, traces, after, cursor)

    async def page(self, context: SessionTraces) -> str:
        scores, failed = await asyncio.to_thread(
            self.explorer.beside, context.project, context.traces
        )
        sized = params.asked_limit(request.args)
        return await render_template(
            "session.html",
            project=context.project,
            session_id=context.session_id,
            traces=context.traces,
            scores=scores,
            failures=failed,
            totals=context.summary,
            next_query=None
            if context.cursor is None
            else urlencode([("cursor", context.cursor.encode()), *sized]),
            first_query=urlencode(sized) if context.after is not None else None,
        )

    async def data(self, context: SessionTraces) -> dict[str, Any]:
        return {
            "sessionId": context.session_id,
            "traces": [params.summary_json(t) for t in context.traces],
            "next": params.encoded(context.cursor),
        }
