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

from dashboard.errors import invalid
from dashboard.explorer import Explorer
from dashboard.params import Args, ListQuery, asked_limit, kept_params, one
from storage.export import MAX_EXPORT_TRACES
from storage.identity import Project
from storage.summary_genai import models_of
from storage.trace_list import Cursor, ListPage

FACET_TRACES = 10_000
FACET_TTL_S = 30.0
#: The time presets: label, span in milliseconds (None: all time). A link says
#: `preset=<label>`, and each view of it starts the range then: a shared link or an
#: open tab (a live one) shows the last 15 minutes, not those of when it was made.
PRESETS = (("15 min", 15 * 60_000), ("1 h", 3_600_000), ("24 h", 86_400_000),
           ("7 d", 7 * 86_400_000), ("All", None))  # fmt: skip
_PRESET_SPANS = dict(PRESETS)
#: A preset as a link may spell it (any case, with or without its space: `all`, `1 H`,
#: `1h`), to its label.
_PRESET_LABELS = {label.lower().replace(" ", ""): label for label, _ in PRESETS}


def _preset_key(asked: str) -> str:
    return asked.lower().replace(" ", "")


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
    models: list[tuple[str, int | None]]
    users: list[tuple[str, int | None]]
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


def with_asked(choices: list[tuple[str, int]], asked: str | None) -> list[tuple[str, int | None]]:
    """A picker's choices and their counts, with the value asked for among them (its
    count unknown: None) where the newest traces counted lack it, so that the picker
    shows the filter the page applies, and keeps it when the form is sent again."""
    found: list[tuple[str, int | None]] = list(choices)
    if asked and all(name != asked for name, _ in choices):
        found.append((asked, None))
    return found


def users_of(
    explorer: Explorer, project: Project, asked: str | None
) -> list[tuple[str, int | None]]:
    """The user picker's choices: the project's users, with their trace counts."""
    return with_asked(_facets_of(explorer, project)[1], asked)


def _query(pairs: list[tuple[str, str]], **changed: str | None) -> str:
    kept = [(k, v) for k, v in pairs if k not in changed]
    return urlencode(kept + [(k, v) for k, v in changed.items() if v is not None])


def _paged(pairs: list[tuple[str, str]], cursor: Cursor | None, limit: str) -> str | None:
    """The query string of the page a cursor opens (None: no cursor, no such page)."""
    return None if cursor is None else _query(pairs, cursor=cursor.encode(), limit=limit)


def _preset(args: Args) -> str | None:
    """The preset a request asks for: the label of one of PRESETS, and no `from` or `to`
    of its own (a range typed in wins). None for two (`resolved` refuses them; the page
    that says so draws its bar)."""
    asked = args.getlist("preset")
    label = _PRESET_LABELS.get(_preset_key(asked[0])) if len(asked) == 1 else None
    if label is None or args.get("from") or args.get("to"):
        return None
    return label


def resolved(args: Args, checked: bool = True) -> Args:
    """The request's parameters with its preset's range as `from`, from now; 400 for a
    preset that is none of PRESETS, or given twice (when `checked`)."""
    if checked:
        asked = one(args, "preset")
        if asked and _preset_key(asked) not in _PRESET_LABELS:
            raise invalid(f"preset must be one of {', '.join(_PRESET_SPANS)}")
    label = _preset(args)
    span_ms = None if label is None else _PRESET_SPANS[label]
    if span_ms is None:
        return args
    given = args.copy()
    given["from"] = str(int(time.time() * 1000) - span_ms)
    return given


def filter_bar(explorer: Explorer, project: Project, args: Args, asked: ListQuery) -> FilterBar:
    """The bar of a request whose list query is `asked`."""
    pairs = kept_params(args)
    linked = pairs + asked_limit(args)
    chosen = _preset(args) or ("All" if not args.get("from") and not args.get("to") else None)
    presets = [
        Link(label, _query(linked, **{"from": None, "to": None, "preset": label}), label == chosen)
        for label, _ in PRESETS
    ]
    counted_models, counted_users = _facets_of(explorer, project)
    single = {name: args.get(name, "") for name, _ in pairs if name not in ("attr", "score")}
    if chosen is not None and chosen != "All":
        single["preset"] = chosen
    single.update(asked_limit(args))
    return FilterBar(
        values=single,
        attributes=args.getlist("attr"),
        scores=args.getlist("score"),
        presets=presets,
        models=with_asked(counted_models, single.get("model")),
        users=with_asked(counted_users, single.get("user")),
        filtered="preset" in single or any(k not in ("sort", "order") for k, _ in pairs),
    )


@dataclass(frozen=True, slots=True)
class PageLinks:
    """The query strings of the page's links: next page, previous and first page (None:
    this is the first), export, the sortable columns' headers, and the live view's (the
    newest page)."""

    next: str | None
    previous: str | None
    first: str | None
    export: str
    sorts: dict[str, Link]
    live: str
    is_live: bool
    caption: str


def page_links(args: Args, asked: ListQuery, listed: ListPage) -> PageLinks:
    """The links of a page of the list."""
    preset = _preset(args)
    pairs = kept_params(args) + ([("preset", preset)] if preset else []) + asked_limit(args)
    limit = str(asked.limit)
    sorts = {}
    for header, sort in SORTED_COLUMNS.items():
        current = asked.order.sort == sort
        way = "asc" if current and asked.order.descending else "desc"
        arrow = (" ▼" if asked.order.descending else " ▲") if current else ""
        sorts[header] = Link(header + arrow, _query(pairs, sort=sort, order=way), current)
    return PageLinks(
        next=_paged(pairs, listed.next, limit),
        previous=_paged(pairs, listed.previous, limit),
        first=_query(pairs, limit=limit) if listed.previous is not None else None,
        export=_query(  # the page shown, read forward: a preset's range as the page drew it
            kept_params(resolved(args, checked=False)),
            cursor=None if listed.at is None else listed.at.encode(),
            limit=str(min(asked.limit, MAX_EXPORT_TRACES)),
        ),
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
