"""The dashboard's JSON under /api/v1: the same session as the pages, never an API key.

The guard (dashboard/signin.py) has refused API keys and signed-out requests before any
of these runs; reads are open to every role of the project's organisation.
"""

from __future__ import annotations

import asyncio
from typing import Any

from quart import Quart, Response, request

from dashboard import params
from dashboard.errors import invalid
from dashboard.explorer import Explorer
from dashboard.genai_json import genai_json, totals_json
from dashboard.signin import current_session
from service.web import json_response
from storage.export import MAX_EXPORT_TRACES, as_csv
from storage.scores import Score


def score_json(score: Score) -> dict[str, Any]:
    """A score as the trace's JSON lists it."""
    return {
        "id": score.id,
        "name": score.name,
        "score": score.score,
        "comment": score.comment,
        "source": score.source,
        "spanId": score.span_id,
        "createdAt": score.created_at,
    }


class Api:
    """The read routes of /api/v1."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer

    async def projects(self) -> Response:
        user = current_session().user
        found = await asyncio.to_thread(self.explorer.projects, user)
        return json_response(
            {"projects": [{"name": p.name, "createdAt": p.created_at} for p in found]}
        )

    async def traces(self, project: str) -> Response:
        asked = params.list_query(request.args, params.DEFAULT_LIMIT, params.MAX_LIMIT)
        found = await asyncio.to_thread(self.explorer.project, current_session().user, project)
        page, cursor = await asyncio.to_thread(self.explorer.traces, found, asked)
        return json_response(
            {
                "traces": [params.summary_json(t) for t in page],
                "next": None if cursor is None else cursor.encode(),
            }
        )

    async def sessions(self, project: str) -> Response:
        filters, after, limit = params.session_query(request.args)
        found = await asyncio.to_thread(self.explorer.project, current_session().user, project)
        page, cursor = await asyncio.to_thread(self.explorer.sessions, found, filters, limit, after)
        return json_response(
            {
                "sessions": [params.session_json(s) for s in page],
                "next": None if cursor is None else cursor.encode(),
            }
        )

    async def session(self, project: str, session_id: str) -> Response:
        found = await asyncio.to_thread(self.explorer.project, current_session().user, project)
        traces = await asyncio.to_thread(self.explorer.session, found, session_id)
        return json_response(
            {"sessionId": session_id, "traces": [params.summary_json(t) for t in traces]}
        )

    async def trace(self, project: str, trace_id: str) -> Response:
        found = await asyncio.to_thread(self.explorer.project, current_session().user, project)
        detail = await asyncio.to_thread(self.explorer.trace, found, trace_id)
        return json_response(
            {
                "traceId": detail.trace_id,
                "spans": detail.spans,
                "scores": [score_json(score) for score in detail.scores],
                "totals": totals_json(detail.summary),
                "genai": genai_json(detail.spans, detail.costs),
            }
        )

    async def export(self, project: str) -> Response:
        args = request.args
        form = args.get("format", "json")
        if form not in ("csv", "json"):
            raise invalid("format must be csv or json")
        asked = params.list_query(args, MAX_EXPORT_TRACES, MAX_EXPORT_TRACES)
        found = await asyncio.to_thread(self.explorer.project, current_session().user, project)
        traces = await asyncio.to_thread(self.explorer.export, found, asked)
        disposition = {"Content-Disposition": f'attachment; filename="{found.name}-traces.{form}"'}
        if form == "json":
            return json_response(traces, headers=disposition)
        return Response(as_csv(traces), content_type="text/csv; charset=utf-8", headers=disposition)


def install_api(app: Quart, explorer: Explorer) -> None:
    """Add the /api/v1 routes."""
    api = Api(explorer)
    base = "/api/v1/projects"
    for rule, view in (
        (base, api.projects),
        (f"{base}/<project>/traces", api.traces),
        (f"{base}/<project>/traces/export", api.export),
        (f"{base}/<project>/traces/<trace_id>", api.trace),
        (f"{base}/<project>/sessions", api.sessions),
        (f"{base}/<project>/sessions/<segment:session_id>", api.session),
    ):
        app.add_url_rule(rule, endpoint=f"api_{view.__name__}", view_func=view, methods=["GET"])
