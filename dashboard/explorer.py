"""What the dashboard reads, for one signed-in user: their organisation's projects only.

Another organisation's project is NotFound, exactly like a project that does not exist,
so the answer never confirms it is there. Synchronous (the routes call in on a thread),
but for `signed_in_project`, which does that for the routes.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from dashboard.errors import require_role
from dashboard.failures import failures
from dashboard.params import ListQuery, SessionQuery
from dashboard.signin import current_session
from storage.database import Database
from storage.datasets import DatasetStore
from storage.errors import NotFound
from storage.export import export_traces
from storage.identity import IdentityStore, Project, Role, User
from storage.scores import Score, ScoreStore
from storage.session_summaries import (
    SessionCursor,
    SessionSummary,
    session_summary,
    sessions_page,
)
from storage.spans import SpanOutline, SpanStore
from storage.trace_list import (
    Cursor,
    ListPage,
    TraceFilter,
    TraceOrder,
    TraceSummaries,
    TraceSummary,
)

_TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")
#: A page of a session's traces (its page, its JSON): at most, and unless asked fewer.
SESSION_TRACES_SHOWN = 1000
IN_TIME = TraceOrder("start", descending=False)
#: A trace's place by its start as it is now.
_STARTED = attrgetter("start_ns", "trace_id")


@dataclass(frozen=True, slots=True)
class TraceDetail:
    """A trace's stored spans (by start), whole, and its scores."""

    trace_id: str
    spans: list[dict[str, Any]]
    scores: list[Score]
    summary: TraceSummary | None = None
    costs: dict[str, tuple[float | None, str | None]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TraceOutline:
    """A trace as its page shows it: the spans' outlines, its scores and summary."""

    trace_id: str
    spans: list[SpanOutline]
    scores: list[Score]
    summary: TraceSummary | None


def stored_trace_id(text: str) -> str | None:
    """A trace id (32 hex digits, in either case) in its stored form; None for what
    cannot be one."""
    return text.lower() if _TRACE_ID.fullmatch(text) else None


def _trace_id(text: str) -> str:
    """A trace id in its stored form; NotFound for what cannot be one."""
    stored = stored_trace_id(text)
    if stored is None:
        raise NotFound(f"no trace {text}")
    return stored


async def signed_in_project(
    explorer: Explorer, name: str, least: Role | None = None, refusal: str = ""
) -> Project:
    """`explorer.signed_in(name, least, refusal)`, on a thread."""
    return await asyncio.to_thread(explorer.signed_in, name, least, refusal)


class Explorer:
    """Reads scoped to the user's organisation."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.identity = IdentityStore(db)
        self.summaries = TraceSummaries(db)

    def projects(self, user: User) -> list[Project]:
        """The projects of the user's organisation, by name."""
        return self.identity.list_projects(user.org)

    def project(self, user: User, name: str) -> Project:
        """The user's organisation's project of that name; NotFound else."""
        project = self.identity.project(name)
        if project.org != user.org:
            raise NotFound(f"no project {name}")
        return project

    def signed_in(self, name: str, least: Role | None = None, refusal: str = "") -> Project:
        """The signed-in user's organisation's project of that name (NotFound else); when
        `least` is given, 403 with `refusal` unless the user's role is that or above."""
        user = current_session().user
        project = self.project(user, name)
        if least is not None:
            require_role(user, least, refusal)
        return project

    def traces(self, project: Project, asked: ListQuery) -> ListPage:
        """A page of the trace list as asked, with the next and previous pages' cursors."""
        return self.summaries.page(
            project.id, asked.filters, asked.limit, asked.after, order=asked.order
        )

    def scores(self, project: Project, traces: list[TraceSummary]) -> dict[str, list[Score]]:
        """The scores of the traces of a page, by trace id."""
        return ScoreStore(self.db).for_traces(project.id, [t.trace_id for t in traces])

    def beside(
        self, project: Project, traces: list[TraceSummary]
    ) -> tuple[dict[str, list[Score]], dict[str, str]]:
        """What a table of traces shows beside their summaries, by trace id: their
        scores, and what went wrong first in those with errors (dashboard/failures.py)."""
        return self.scores(project, traces), failures(SpanStore(self.db), project.id, traces)

    def trace(self, project: Project, trace_id: str) -> TraceDetail:
        """A trace's spans and scores; NotFound when nothing of it is stored."""
        trace_id = _trace_id(trace_id)
        store = SpanStore(self.db)
        spans = store.trace(project.id, trace_id)
        if not spans:
            raise NotFound(f"no trace {trace_id}")
        return TraceDetail(
            trace_id,
            spans,
            ScoreStore(self.db).for_trace(project.id, trace_id),
            self.summaries.get(project.id, trace_id),
            store.costs(project.id, trace_id),
        )

    def outline(self, project: Project, trace_id: str) -> TraceOutline:
        """What a trace's page shows of it; NotFound when nothing of it is stored."""
        trace_id = _trace_id(trace_id)
        spans = SpanStore(self.db).outline(project.id, trace_id)
        if not spans:
            raise NotFound(f"no trace {trace_id}")
        return TraceOutline(
            trace_id,
            spans,
            ScoreStore(self.db).for_trace(project.id, trace_id),
            self.summaries.get(project.id, trace_id),
        )

    def span(self, project: Project, trace_id: str, span_id: str) -> dict[str, Any]:
        """One span of a trace, whole (its first start day's row); NotFound else."""
        rows = SpanStore(self.db).span(project.id, trace_id, span_id)
        if not rows:
            raise NotFound(f"no span {span_id} in trace {trace_id}")
        return rows[0]

    def dataset_names(self, project: Project) -> list[str]:
        """The names of the project's datasets (for "Add to dataset")."""
        return [dataset.name for dataset in DatasetStore(self.db).list(project.id)]

    def sessions(
        self, project: Project, asked: SessionQuery
    ) -> tuple[list[SessionSummary], SessionCursor | None]:
        """A page of the project's sessions, latest activity first, and the next's cursor."""
        return sessions_page(self.db, project.id, asked.filters, asked.limit, asked.after)

    def session(
        self, project: Project, session_id: str, limit: int, after: Cursor | None
    ) -> tuple[SessionSummary, list[TraceSummary], Cursor | None]:
        """A session's summary, and a page of its traces in time order with the next
        page's cursor; NotFound for a session with none.

        Pages follow each trace's start as first stored (the list's `start`, which never
        moves, so that no page skips or repeats a trace while spans arrive); a session
        whose traces fit on one page, as nearly all do, is in order of their starts as
        they are now (a root sent after its children moves its trace's start earlier)."""
        summary = session_summary(self.db, project.id, session_id)
        if summary is None:
            raise NotFound(f"no session {session_id}")
        listed = self.summaries.page(
            project.id, TraceFilter(session=session_id), limit, after, order=IN_TIME
        )
        traces = listed.traces
        if after is None and listed.next is None:
            traces = sorted(traces, key=_STARTED)
        return summary, traces, listed.next

    def export(self, project: Project, asked: ListQuery) -> list[dict[str, Any]]:
        """The page of the list `asked` names (at most 100 traces), with their spans."""
        return export_traces(
            self.db, project.id, asked.filters, asked.limit, asked.after, asked.order
        )
