"""Scores given on a trace's page (source `ui`): members and above; viewers read them."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from quart import Response, request, url_for

from dashboard.errors import DashboardError
from dashboard.explorer import Explorer
from dashboard.params import json_object
from dashboard.signin import current_session, redirect_to
from dashboard.trace_page import score_json
from storage.scores import Score, ScoreStore, check_score


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text  # check_score says what is wrong with it


class TraceScores:
    """Give a score to a trace of the user's organisation."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer
        self.scores = ScoreStore(explorer.db)

    def _give(self, project: str, trace_id: str, fields: dict[str, Any]) -> Score:
        found = self.explorer.signed_in(project, "member", "viewers cannot give scores")
        trace = self.explorer.outline(found, trace_id)  # NotFound for a trace not stored
        new, problems = check_score({**fields, "trace_id": trace.trace_id, "source": "ui"})
        if new is None:
            message = "; ".join(f"{field}: {what}" for field, what in problems.items())
            raise DashboardError(400, "VALIDATION_ERROR", message)
        return self.scores.create_by_user(found.id, current_session().user.id, new)

    async def from_page(self, project: str, trace_id: str) -> Response:
        form = await request.form
        fields = {
            "name": form.get("name") or None,
            "score": _number(form.get("score", "")),
            "comment": form.get("comment") or None,
            "span_id": form.get("span_id") or None,
        }
        await asyncio.to_thread(self._give, project, trace_id, fields)
        return redirect_to(url_for("trace", project=project, trace_id=trace_id.lower()))

    async def from_api(self, project: str, trace_id: str) -> Response:
        body = await json_object()
        fields = {
            "name": body.get("name"),
            "score": body.get("score"),
            "comment": body.get("comment"),
            "span_id": body.get("spanId"),
        }
        score = await asyncio.to_thread(self._give, project, trace_id, fields)
        return Response(orjson.dumps(score_json(score)), 201, content_type="application/json")
