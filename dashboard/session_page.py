"""A session as the conversation it was: each trace's input and output in time order,
with the session's totals. One view answers the page and its JSON
(`GET /api/v1/projects/{p}/sessions/{id}` → `{"sessionId", "traces": [...]}`, the
trace items as the trace list gives them)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from quart import Quart, render_template

from dashboard.explorer import Explorer, signed_in_project
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


class SessionView:
    """The single-session page (its JSON is dashboard/api.py's)."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer

    async def page(self, project: str, session_id: str) -> str:
        found = await signed_in_project(self.explorer, project)
        traces = await asyncio.to_thread(self.explorer.session, found, session_id)
        scores = await asyncio.to_thread(self.explorer.scores, found, traces)
        return await render_template(
            "session.html",
            project=found,
            session_id=session_id,
            traces=traces,
            scores=scores,
            totals=SessionTotals.of(traces),
        )


def install_session(app: Quart, explorer: Explorer) -> None:
    """Add the single-session page's route."""
    view = SessionView(explorer)
    app.add_url_rule(
        "/projects/<project>/sessions/<segment:session_id>",
        endpoint="session",
        view_func=view.page,
        methods=["GET"],
    )
