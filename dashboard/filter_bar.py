"""The trace list page's filter bar and links: what the template shows, made from the
request's parameters (the state lives in the URL, so a link is shareable).

Facets (the models and users of the project, with their trace counts) are counted
over the newest FACET_TRACES traces, read through the list's index, so a page view
costs the same at any size of the store; kept FACET_TTL_S seconds per project.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from urllib.parse import urlencode

from dashboard.explorer import Explorer
from dashboard.params import Args, ListQuery, kept_params
from storage.export import MAX_EXPORT_TRACES
from storage.identity import Project
from storage.summary_genai import models_of
from storage.trace_list import Cursor

FACET_TRACES = 10_000
FACET_TTL_S = 30.0
#: The time presets: label, span in milliseconds (None: all time).
PRESETS = (("15 min", 15 * 60_000), ("1 h", 3_600_000), ("24 h", 86_400_000),
           ("7 d", 7 * 86_400_000), ("All", None))  # fmt: skip
#: The sortable columns: header, sort.
SORTED_COLUMNS = {"Start": "start", "Duration": "duration", "Tokens": "tokens", "Cost": "cost"}
_facets: dict[str, tuple[float, list[tuple[str, int]], list[tuple[str, int]]]] = {}


@dataclass(frozen=True, slots=True)
class Link:
    """A link of the bar: its label, its query string, whether it is the current one."""

    label: str
    query: str
    current: bool = False


@dataclass(frozen=True, slots=True)
class FilterBar:
    """The bar's fields as the request gave them, its presets and facets."""

    values: dict[str, str]
    attributes: list[str]
    scores: list[str]
    presets: list[Link]
    models: list[tuple[str, int]]
    users: list[tuple[str, int]]
    filtered: bool


def _facets_of(explorer: Explorer, project: Project) -> tuple[list[tuple[str, int]], ...]:
    cached = _facets.get(project.id)
    if cached is not None and time.monotonic() - cached[0] < FACET_TTL_S:
        return cached[1], cached[2]
    models: Counter[str] = Counter()
    users: Counter[str] = Counter()
    for models_text, user in explorer.summaries.recent_facets(project.id, FACET_TRACES):
        models.update(models_of(models_text))
        if user is not None:
            users[user] += 1
    found = (sorted(models.items()), sorted(users.items()))
    _facets[project.id] = (time.monotonic(), *found)
    return found


def _query(pairs: list[tuple[str, str]], **changed: str | None) -> str:
    kept = [(k, v) for k, v in pairs if k not in changed]
    return urlencode(kept + [(k, v) for k, v in changed.items() if v is not None])


def filter_bar(explorer: Explorer, project: Project, args: Args, asked: ListQuery) -> FilterBar:
    """The bar of a request whose list query is `asked`."""
    pairs = kept_params(args)
    now_ms = int(time.time() * 1000)
    current_from = args.get("from", "")
    presets = []
    for label, span_ms in PRESETS:
        start = None if span_ms is None else str(now_ms - span_ms)
        chosen = args.get("preset", "") == label or (span_ms is None and not current_from)
        query = _query(pairs, **{"from": start, "to": None, "preset": label})
        presets.append(Link(label, query, chosen))
    models, users = _facets_of(explorer, project)
    single = {name: args.get(name, "") for name, _ in pairs if name not in ("attr", "score")}
    return FilterBar(
        values=single,
        attributes=args.getlist("attr"),
        scores=args.getlist("score"),
        presets=presets,
        models=models,
        users=users,
        filtered=any(k not in ("sort", "order") for k, _ in pairs),
    )


@dataclass(frozen=True, slots=True)
class PageLinks:
    """The query strings of the page's links: next page, first page, export, the
    sortable columns' headers, and the live view's (the newest page)."""

    next: str | None
    first: str | None
    export: str
    sorts: dict[str, Link]
    live: str
    is_live: bool
    caption: str


def page_links(args: Args, asked: ListQuery, cursor: Cursor | None) -> PageLinks:
    """The links of a page of the list."""
    preset = args.get("preset", "")
    pairs = kept_params(args) + ([("preset", preset)] if preset else [])
    limit = str(asked.limit)
    sorts = {}
    for header, sort in SORTED_COLUMNS.items():
        current = asked.order.sort == sort
        way = "asc" if current and asked.order.descending else "desc"
        arrow = (" ▼" if asked.order.descending else " ▲") if current else ""
        sorts[header] = Link(header + arrow, _query(pairs, sort=sort, order=way), current)
    after = args.get("cursor", "")
    return PageLinks(
        next=None if cursor is None else _query(pairs, cursor=cursor.encode(), limit=limit),
        first=_query(pairs, limit=limit) if asked.after is not None else None,
        export=_query(pairs, cursor=after or None, limit=str(min(asked.limit, MAX_EXPORT_TRACES))),
        sorts=sorts,
        live=_query(pairs, live=None if args.get("live") else "1"),
        is_live=bool(args.get("live")) and asked.after is None,
        caption=_CAPTIONS[asked.order.sort][asked.order.descending],
    )


#: The table's caption for each sort and order.
_CAPTIONS = {
    "start": {True: "Newest first", False: "Oldest first"},
    "duration": {True: "Slowest first", False: "Fastest first"},
    "cost": {
        True: "Costliest first (no known cost last)",
        False: "Cheapest first (no known cost last)",
    },
    "tokens": {
        True: "Most tokens first (none known last)",
        False: "Fewest tokens first (none known last)",
    },
}
