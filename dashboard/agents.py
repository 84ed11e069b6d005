"""The agents page and its topology, over a bounded window of recent traces.

Computed on each view from the spans of the project's WINDOW_TRACES most recent traces
(their summaries give them through an index; one query a few hundred traces reads
their span outlines), so a view costs the same in a project of a thousand traces or a
hundred million: it never scans the project's spans. Older traces leave the picture.
"""

from __future__ import annotations

import asyncio

from quart import Quart, Response, render_template, request, url_for

from dashboard.errors import invalid
from dashboard.explorer import Explorer
from dashboard.genai_json import agents_json
from dashboard.topology import NODE_KINDS, agent_stats, topology
from dashboard.topology_svg import render
from service.web import json_response
from storage.identity import Project
from storage.spans import SpanOutline, SpanStore
from storage.trace_list import TraceFilter, TraceSummary

WINDOW_TRACES = 1000


class Agents:
    """The agents routes."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer
        self.spans = SpanStore(explorer.db)

    def _window(
        self, name: str
    ) -> tuple[Project, list[TraceSummary], dict[str, list[SpanOutline]]]:
        project = self.explorer.signed_in(name)
        recent, _ = self.explorer.summaries.page(
            project.id, TraceFilter(), WINDOW_TRACES, ends=False
        )
        return project, recent, self.spans.outlines(project.id, [t.trace_id for t in recent])

    async def page(self, project: str) -> str:
        found, recent, traces = await asyncio.to_thread(self._window, project)
        graph = topology(traces)
        return await render_template(
            "agents.html",
            project=found,
            window=len(recent),
            limit=WINDOW_TRACES,
            stats=agent_stats(traces),
            svg=render(graph, url_for("agent_traces", project=found.name)),
        )

    async def api(self, project: str) -> Response:
        """`GET /api/v1/projects/{project}/agents`: the page's data as JSON."""
        _, _, traces = await asyncio.to_thread(self._window, project)
        return json_response(agents_json(traces, topology(traces)))

    async def traces(self, project: str) -> str:
        kind, name = request.args.get("kind", ""), request.args.get("name", "")
        if kind not in NODE_KINDS or not name:
            raise invalid(f"kind must be one of {', '.join(NODE_KINDS)}, with a name")
        found, recent, traces = await asyncio.to_thread(self._window, project)
        through = topology(traces).nodes.get((kind, name), set())
        listed = [t for t in recent if t.trace_id in through]
        scores = await asyncio.to_thread(self.explorer.scores, found, listed)
        return await render_template(
            "agent_traces.html", project=found, kind=kind, name=name, traces=listed, scores=scores
        )


def install_agents(app: Quart, explorer: Explorer) -> None:
    """Add the agents page and the traces through one of its nodes."""
    routes = Agents(explorer)
    base = "/projects/<project>/agents"
    app.add_url_rule(base, endpoint="agents", view_func=routes.page, methods=["GET"])
    app.add_url_rule(
        f"{base}/traces", endpoint="agent_traces", view_func=routes.traces, methods=["GET"]
    )
    app.add_url_rule(
        "/api/v1/projects/<project>/agents",
        endpoint="api_agents",
        view_func=routes.api,
        methods=["GET"],
    )
