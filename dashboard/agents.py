"""The agents page and its topology, over a bounded window of recent agent traces.

Computed on each view from the spans of the project's WINDOW_TRACES most recent traces
with an agent span (any convention's mark of one, genai/conventions.py: found by the
attribute index, storage/trace_facets.py, so the traces of a busy project's other
traffic do not crowd them out; their summaries give them through an index; one query
a few hundred traces reads their span outlines), so a view costs the same in a project
of a thousand traces or a hundred million: it never scans the project's spans. Older
traces leave the picture, unless a time range (`from`, `to`: the trace list's
parameters) asks for the most recent traces of that range instead.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from quart import render_template, request, url_for

from dashboard.errors import invalid
from dashboard.explorer import Explorer
from dashboard.genai_json import agents_json
from dashboard.params import time_ns
from dashboard.topology import NODE_KINDS, agent_stats, topology
from dashboard.topology_svg import MAX_NODES, render
from dashboard.views import View
from genai.conventions import AGENT_MARKS
from storage.identity import Project
from storage.spans import SpanOutline, SpanStore
from storage.trace_list import TraceFilter, TraceSummary

WINDOW_TRACES = 1000


@dataclass(frozen=True, slots=True)
class Window:
    """The project's most recent traces and their spans' outlines, by trace id."""

    project: Project
    recent: list[TraceSummary]
    traces: dict[str, list[SpanOutline]]


class Agents(View[Window]):
    """`/projects/{p}/agents` and its JSON, and the traces through one of its nodes."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer
        self.spans = SpanStore(explorer.db)

    def _window(self, name: str, within: TraceFilter) -> Window:
        project = self.explorer.signed_in(name)
        recent = self.explorer.summaries.page(project.id, within, WINDOW_TRACES, ends=False).traces
        outlines = self.spans.outlines(project.id, [t.trace_id for t in recent])
        return Window(project, recent, outlines)

    async def context(self, project: str) -> Window:
        args = request.args
        within = TraceFilter(
            from_ns=time_ns(args, "from"), to_ns=time_ns(args, "to"), any_attribute=AGENT_MARKS
        )
        return await asyncio.to_thread(self._window, project, within)

    async def page(self, context: Window) -> str:
        found = context.project
        given = {name: request.args.get(name, "") for name in ("from", "to")}
        drawn = topology(context.traces)
        linked: dict[str, Any] = {"project": found.name, **{k: v for k, v in given.items() if v}}
        return await render_template(
            "agents.html",
            project=found,
            window=len(context.recent),
            limit=WINDOW_TRACES,
            range=given,
            linked=linked,
            stats=agent_stats(context.traces),
            svg=render(drawn, url_for("agent_traces", **linked)),
            nodes=len(drawn.nodes),
            drawn_nodes=min(len(drawn.nodes), MAX_NODES),
        )

    async def data(self, context: Window) -> dict[str, Any]:
        return agents_json(context.traces, topology(context.traces))

    async def traces(self, project: str) -> str:
        kind, name = request.args.get("kind", ""), request.args.get("name", "")
        if kind not in NODE_KINDS or not name:
            raise invalid(f"kind must be one of {', '.join(NODE_KINDS)}, with a name")
        window = await self.context(project)
        found, recent, traces = window.project, window.recent, window.traces
        through = topology(traces).nodes.get((kind, name), set())
        listed = [t for t in recent if t.trace_id in through]
        scores = await asyncio.to_thread(self.explorer.scores, found, listed)
        return await render_template(
            "agent_traces.html", project=found, kind=kind, name=name, traces=listed, scores=scores
        )
