"""The dashboard's pages: projects, the trace list, a trace's waterfall, sessions.

Server-rendered, so every page works without JavaScript; the little script
(static/dashboard.js) only collapses subtrees and shows a span without a reload.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from quart import Quart, Response, render_template, request, url_for

from dashboard import params
from dashboard.explorer import Explorer, TraceOutline, signed_in_project
from dashboard.filter_bar import filter_bar, page_links
from dashboard.signin import current_session, redirect_to
from dashboard.waterfall import PAGE_ROWS, Row, Waterfall, lay_out
from dashboard.waterfall_html import rows_html
from storage.errors import NotFound
from storage.identity import Project


class Pages:
    """The HTML routes."""

    def __init__(self, explorer: Explorer, ingest_url: str) -> None:
        self.explorer = explorer
        self.ingest_url = ingest_url

    async def home(self) -> Response:
        return redirect_to(url_for("projects"), 302)

    async def projects(self) -> str:
        found = await asyncio.to_thread(self.explorer.projects, current_session().user)
        return await render_template("projects.html", projects=found)

    async def project(self, project: str) -> Response:
        found = await signed_in_project(self.explorer, project)
        return redirect_to(url_for("traces", project=found.name), 302)

    async def traces(self, project: str) -> str:
        asked = params.list_query(request.args, params.DEFAULT_LIMIT, params.MAX_LIMIT)
        found = await signed_in_project(self.explorer, project)
        page, cursor = await asyncio.to_thread(self.explorer.traces, found, asked)
        scores = await asyncio.to_thread(self.explorer.scores, found, page)
        return await render_template(
            "traces.html",
            project=found,
            traces=page,
            scores=scores,
            bar=await asyncio.to_thread(filter_bar, self.explorer, found, request.args, asked),
            links=page_links(request.args, asked, cursor),
            ingest_url=self.ingest_url,
        )

    def _waterfall(
        self, name: str, trace_id: str, span_id: str | None
    ) -> tuple[Project, TraceOutline, Waterfall, Row | None, dict[str, Any] | None, list[str]]:
        """The project, a trace's outline laid out, the row of the span `span_id` names,
        that span, whole, and the names of the project's datasets (one thread hop for
        the page: its parts are each a few ms)."""
        project = self.explorer.project(current_session().user, name)
        detail = self.explorer.outline(project, trace_id)
        waterfall = lay_out(detail.spans)
        chosen = waterfall.find(span_id) if span_id else None
        span, datasets = None, []
        if chosen is not None:
            span = self.explorer.span(project, detail.trace_id, chosen.span.span_id)
            datasets = self.explorer.dataset_names(project)
        return project, detail, waterfall, chosen, span, datasets

    async def trace(self, project: str, trace_id: str) -> str:
        found, detail, waterfall, chosen, span, datasets = await asyncio.to_thread(
            self._waterfall, project, trace_id, request.args.get("span")
        )
        pages = max(1, -(-len(waterfall) // PAGE_ROWS))
        chosen_page = 1 if chosen is None else chosen.position // PAGE_ROWS + 1
        page = request.args.get("page", str(chosen_page))  # a span's own page by default
        valid = page.isascii() and page.isdigit() and 1 <= int(page) <= pages
        number = int(page) if valid else 1
        first = (number - 1) * PAGE_ROWS
        stop = min(first + PAGE_ROWS, len(waterfall))
        selected = None if chosen is None else chosen.position
        return await render_template(
            "trace.html",
            project=found,
            detail=detail,
            waterfall=waterfall,
            first_row=first + 1,
            last_row=stop,
            rows_html=rows_html(waterfall, first, stop, selected, request.path, number),
            page=number,
            pages=pages,
            row=chosen,
            span=span,
            datasets=datasets,
            errors=[[at, span_id, at // PAGE_ROWS + 1] for at, span_id in waterfall.errors()],
        )

    async def span(self, project: str, trace_id: str, span_id: str) -> str:
        found, detail, _, chosen, span, datasets = await asyncio.to_thread(
            self._waterfall, project, trace_id, span_id
        )
        if chosen is None:
            raise NotFound(f"no span {span_id} in trace {trace_id}")
        return await render_template(
            "span_detail.html",
            project=found,
            detail=detail,
            row=chosen,
            span=span,
            datasets=datasets,
        )

    async def evaluations(self, project: str) -> str:
        found = await signed_in_project(self.explorer, project)
        return await render_template("evaluations.html", project=found)

    async def sessions(self, project: str) -> str:
        filters, after, limit = params.session_query(request.args)
        found = await signed_in_project(self.explorer, project)
        listed, cursor = await asyncio.to_thread(
            self.explorer.sessions, found, filters, limit, after
        )
        kept = [(k, request.args.get(k, "")) for k in ("user", "from", "to")]
        kept = [(k, v) for k, v in kept if v]
        return await render_template(
            "sessions.html",
            project=found,
            sessions=listed,
            values=dict(kept),
            filtered=bool(kept),
            next_query=None
            if cursor is None
            else urlencode([*kept, ("cursor", cursor.encode()), ("limit", str(limit))]),
            first_query=urlencode(kept) if after is not None else None,
            ingest_url=self.ingest_url,
        )


def install_pages(app: Quart, explorer: Explorer, ingest_url: str) -> None:
    """Add the page routes (each named for url_for)."""
    pages = Pages(explorer, ingest_url)
    base = "/projects/<project>"
    for rule, view in (
        ("/", pages.home),
        ("/projects", pages.projects),
        (base, pages.project),
        (f"{base}/traces", pages.traces),
        (f"{base}/traces/<trace_id>", pages.trace),
        (f"{base}/traces/<trace_id>/spans/<span_id>", pages.span),
        (f"{base}/sessions", pages.sessions),
        (f"{base}/evaluations", pages.evaluations),
    ):
        app.add_url_rule(rule, endpoint=view.__name__, view_func=view, methods=["GET"])
