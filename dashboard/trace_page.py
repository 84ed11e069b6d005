"""A trace: its waterfall page (and one span's pane) and
`GET /api/v1/projects/{p}/traces/{trace_id}`, from one view.

Both forms share the request's project and trace; each then reads what it shows: the
page the spans' outlines (a big trace's page never reads every span whole), the JSON
every span whole with its costs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from quart import render_template, request

from dashboard.explorer import Explorer, TraceOutline, signed_in_project
from dashboard.failures import what_failed
from dashboard.genai_json import genai_json, totals_json
from dashboard.views import View
from dashboard.waterfall import ERROR, PAGE_ROWS, Row, Waterfall, lay_out
from dashboard.waterfall_html import rows_html
from genai import MODEL_TYPES
from genai.counting import Wrappers
from storage.errors import NotFound
from storage.identity import Project
from storage.scores import Score
from storage.spans import SpanOutline


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


@dataclass(frozen=True, slots=True)
class TraceAsked:
    """The trace a request names, in the signed-in user's project."""

    project: Project
    trace_id: str


@dataclass(frozen=True, slots=True)
class Laid:
    """A trace's outline laid out, the row of the span asked for, that span whole, and
    the names of the project's datasets (for "Add to dataset")."""

    detail: TraceOutline
    waterfall: Waterfall
    chosen: Row | None
    span: dict[str, Any] | None
    datasets: list[str]
    #: whether that span is a model call wrapping a provider call (genai/counting.py):
    #: `usage` when the call below reports usage, `call` when it reports none
    wrapper: str | None = None
    #: the trace's earliest error span (by start): (span id, name, what it says went
    #: wrong), for the header
    first_error: tuple[str, str, str] | None = None


#: A span's place by its start (ties by id), as the list finds a trace's earliest error.
_STARTED = attrgetter("start_ns", "span_id")


def unpriced(detail: TraceOutline, wrapping: Wrappers) -> int:
    """The trace's model calls that report tokens and have no cost: its cost leaves
    them out (a wrapper's usage is its provider call's, counted there)."""
    return sum(
        1
        for s in detail.spans
        if s.llm_type in MODEL_TYPES
        and s.span_id not in wrapping.usage
        and s.cost_usd is None
        and (s.input_tokens is not None or s.output_tokens is not None)
    )


def _wrapper(span: SpanOutline, found: Wrappers) -> str | None:
    """Whether `span` wraps a provider call, and of what (Laid.wrapper)."""
    if span.llm_type not in MODEL_TYPES:
        return None
    if span.span_id in found.usage:
        return "usage"
    return "call" if span.span_id in found.calls else None


class Trace(View[TraceAsked]):
    """`/projects/{p}/traces/{trace_id}` (and a span's pane), and the trace's JSON."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer

    async def context(self, project: str, trace_id: str) -> TraceAsked:
        return TraceAsked(await signed_in_project(self.explorer, project), trace_id)

    def _lay_out(self, asked: TraceAsked, span_id: str | None) -> Laid:
        """One thread hop for the page: its parts are each a few ms."""
        detail = self.explorer.outline(asked.project, asked.trace_id)
        waterfall = lay_out(detail.spans)
        chosen = waterfall.find(span_id) if span_id else None
        span, datasets, wrapper = None, [], None
        if chosen is not None:
            span = self.explorer.span(asked.project, detail.trace_id, chosen.span.span_id)
            datasets = self.explorer.dataset_names(asked.project)
            wrapper = _wrapper(chosen.span, waterfall.wrapping)
        first_error = None
        errors = [s for s in detail.spans if s.status_code == ERROR]
        if errors:  # the earliest, as the list shows it (dashboard/failures.py)
            earliest = min(errors, key=_STARTED)
            failed = self.explorer.span(asked.project, detail.trace_id, earliest.span_id)
            first_error = (failed["spanId"], failed["name"], what_failed(failed))
        return Laid(detail, waterfall, chosen, span, datasets, wrapper, first_error)

    async def page(self, context: TraceAsked) -> str:
        laid = await asyncio.to_thread(self._lay_out, context, request.args.get("span"))
        waterfall, chosen = laid.waterfall, laid.chosen
        pages = max(1, -(-len(waterfall) // PAGE_ROWS))
        chosen_page = 1 if chosen is None else chosen.position // PAGE_ROWS + 1
        page = request.args.get("page", str(chosen_page))  # a span's own page by default
        valid = page.isascii() and page.isdigit() and len(page) < 20 and 1 <= int(page) <= pages
        number = int(page) if valid else 1
        first = (number - 1) * PAGE_ROWS
        stop = min(first + PAGE_ROWS, len(waterfall))
        selected = None if chosen is None else chosen.position
        return await render_template(
            "trace.html",
            project=context.project,
            detail=laid.detail,
            waterfall=waterfall,
            first_row=first + 1,
            last_row=stop,
            rows_html=rows_html(waterfall, first, stop, selected, request.path, number),
            page=number,
            pages=pages,
            row=chosen,
            span=laid.span,
            datasets=laid.datasets,
            wrapper=laid.wrapper,
            errors=[[at, span_id, at // PAGE_ROWS + 1] for at, span_id in waterfall.errors()],
            unpriced=unpriced(laid.detail, waterfall.wrapping),
            first_error=laid.first_error,
        )

    async def data(self, context: TraceAsked) -> dict[str, Any]:
        detail = await asyncio.to_thread(self.explorer.trace, context.project, context.trace_id)
        return {
            "traceId": detail.trace_id,
            "spans": detail.spans,
            "scores": [score_json(score) for score in detail.scores],
            "totals": totals_json(detail.summary),
            "genai": genai_json(detail.spans, detail.costs),
        }

    async def span(self, project: str, trace_id: str, span_id: str) -> str:
        """`/projects/{p}/traces/{trace_id}/spans/{span_id}`: one span's pane."""
        asked = await self.context(project, trace_id)
        laid = await asyncio.to_thread(self._lay_out, asked, span_id)
        if laid.chosen is None:
            raise NotFound(f"no span {span_id} in trace {trace_id}")
        return await render_template(
            "span_detail.html",
            project=asked.project,
            detail=laid.detail,
            row=laid.chosen,
            span=laid.span,
            datasets=laid.datasets,
            wrapper=laid.wrapper,
        )
