"""The agents page and its topology, over a bounded window of recent traces.

Computed on each view from the spans of the project's WINDOW_TRACES most recent traces
and of its WINDOW_TRACES most recent with an agent span (a convention's mark of one,
genai/conventions.py, found by the attribute index, storage/trace_facets.py: the
traces of a busy project's other traffic do not crowd the agents out; the recent ones
hold those written in another mixture of cases, which the view reads too), through
the summaries' index, and one query a few hundred traces reads their span outlines: a
view costs the same in a project of a thousand traces or a hundred million, and never
scans the project's spans. Older traces leave the picture, unless a time range
(`from`, `to`: the trace list's parameters) asks for the most recent of that range.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from quart import render_template, request, url_for

from dashboard.errors import invalid
from dashboard.explorer import Explorer
from dashboard.genai_json import agents_json
from dashboard.params import one, time_ns
from dashboard.topology import NODE_KINDS, agent_stats, topology
from dashboard.topology_svg import MAX_NODES, render
from dashboard.views import View
from genai.conventions import AGENT_MARKS
from storage.identity import Project
from storage.spans import SpanOutline, SpanStore
from storage.trace_list import TraceFilter, TraceSummary

WINDOW_TRACES = 1000
_NEWEST = attrgetter("sort_ns", "trace_id")


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
        page = self.explorer.summaries.page
        marked = dataclasses.replace(within, any_attribute=AGENT_MARKS)
        found = {
            trace.trace_id: trace
            for asked in (within, marked)
            for trace in page(project.id, asked, WINDOW_TRACES, ends=False).traces
        }
        recent = sorted(found.values(), key=_NEWEST, reverse=True)
        outlines = self.spans.outlines(project.id, list(found))
        return Window(project, recent, outlines)

    async def context(self, project: str) -> Window:
        args = request.args
        within = TraceFilter(from_ns=time_ns(args, "from"), to_ns=time_ns(args, "to"))
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
        kind, name = one(request.args, "kind"), one(request.args, "name", strip=False)
        if kind not in NODE_KINDS or not name:
            raise invalid(f"kind must be one of {', '.join(NODE_KINDS)}, with a name")
        window = await self.context(project)
        found, recent, traces = window.project, window.recent, window.traces
        through = topology(traces).nodes.get((kind, name), set())
        listed = [t for t in recent if t.trace_id in through]
        scores, failed = await asyncio.to_thread(self.explorer.beside, found, listed)
        return await render_template(
            "agent_traces.html",
            project=found,
            kind=kind,
            name=name,
            traces=listed,
            scores=scores,
            failures=failed,
        )
