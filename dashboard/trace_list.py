"""The trace list: its page and `GET /api/v1/projects/{p}/traces` from one parse of the
filters (dashboard/params.py), and the export of the page the list shows."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from quart import Response, redirect, render_template, request, url_for
from quart.typing import ResponseReturnValue

from dashboard import params
from dashboard.errors import DashboardError, invalid
from dashboard.explorer import Explorer, signed_in_project, stored_trace_id
from dashboard.filter_bar import filter_bar, page_links, resolved
from dashboard.views import View
from service.web import json_response
from storage.export import MAX_EXPORT_TRACES, as_csv
from storage.identity import Project
from storage.trace_list import ListPage, TraceFilter, TraceOrder

#: A trace id written as a UUID (logs may), which is its 32 hex digits with dashes.
_AS_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def _trace_id_of(text: str) -> str | None:
    """The trace id `text` is (spaces around it aside; as is, or as a UUID), as stored;
    None if it is none."""
    text = text.strip()
    return stored_trace_id(text.replace("-", "") if _AS_UUID.fullmatch(text) else text)


#: What the page's links start from when its filters could not be read.
_UNFILTERED = params.ListQuery(TraceFilter(), TraceOrder(), None, params.DEFAULT_LIMIT)


@dataclass(frozen=True, slots=True)
class TracePage:
    """A page of the list: what was asked of it, its traces and the cursors of the
    pages beside it."""

    project: Project
    asked: params.ListQuery
    listed: ListPage


class TraceList(View[TracePage]):
    """`/projects/{p}/traces` and its JSON."""

    def __init__(self, explorer: Explorer, ingest_url: str) -> None:
        self.explorer = explorer
        self.ingest_url = ingest_url

    async def context(self, project: str) -> TracePage:
        args = resolved(request.args)
        asked = params.list_query(args, params.DEFAULT_LIMIT, params.MAX_LIMIT)
        found = await signed_in_project(self.explorer, project)
        return TracePage(found, asked, await asyncio.to_thread(self.explorer.traces, found, asked))

    async def html(self, **parts: str) -> ResponseReturnValue:
        """The page; a bad filter value is the page with its filter bar as typed and
        the message (400), to be corrected there. A trace id given as the root span's
        name (pasted from a log) goes to its trace, where the project has it."""
        asked = request.args.getlist("q")
        pasted = _trace_id_of(asked[0]) if len(asked) == 1 else None  # twice: a 400 below
        if pasted is not None:
            found = await signed_in_project(self.explorer, parts["project"])
            if await asyncio.to_thread(self.explorer.summaries.get, found.id, pasted):
                return redirect(url_for("trace", project=found.name, trace_id=pasted), 303)
        try:
            return await super().html(**parts)
        except DashboardError as e:
            if e.code != "VALIDATION_ERROR":
                raise
            found = await signed_in_project(self.explorer, parts["project"])
            return await self._render(found, _UNFILTERED, ListPage([], None), e.message), 400

    async def page(self, context: TracePage) -> str:
        return await self._render(context.project, context.asked, context.listed, None)

    async def _render(
        self, found: Project, asked: params.ListQuery, listed: ListPage, error: str | None
    ) -> str:
        traces = listed.traces
        scores, failed = await asyncio.to_thread(self.explorer.beside, found, traces)
        return await render_template(
            "traces.html",
            project=found,
            traces=traces,
            scores=scores,
            failures=failed,
            bar=await asyncio.to_thread(filter_bar, self.explorer, found, request.args, asked),
            links=page_links(request.args, asked, listed),
            ingest_url=self.ingest_url,
            error=error,
            max_export=MAX_EXPORT_TRACES,
        )

    async def data(self, context: TracePage) -> dict[str, Any]:
        return {
            "traces": [params.summary_json(t) for t in context.listed.traces],
            "next": params.encoded(context.listed.next),
            "previous": params.encoded(context.listed.previous),
        }

    async def export(self, project: str) -> Response:
        """`GET /api/v1/projects/{p}/traces/export`: the list's page, with its spans."""
        args = resolved(request.args)
        form = params.one(args, "format") or "json"
        if form not in ("csv", "json"):
            raise invalid("format must be csv or json")
        asked = params.list_query(args, MAX_EXPORT_TRACES, MAX_EXPORT_TRACES)
        found = await signed_in_project(self.explorer, project)
        traces = await asyncio.to_thread(self.explorer.export, found, asked)
        disposition = {"Content-Disposition": f'attachment; filename="{found.name}-traces.{form}"'}
        if form == "json":
            return json_response(traces, headers=disposition)
        return Response(as_csv(traces), content_type="text/csv; charset=utf-8", headers=disposition)
