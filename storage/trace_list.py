"""The trace list's reads: pages of the per-trace summaries, sessions, one trace's.

The summaries are kept by the worker (storage/trace_summaries.py); these reads go
through the table's indexes only, whatever the size of the store.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import orjson

from genai import view_of
from storage import find_upgrade, newest_first, summary_genai, trace_walk
from storage.database import Database, Transaction
from storage.index_filters import name_tokens
from storage.trace_query import (
    NULLABLE,
    Cursor,
    TraceFilter,
    TraceOrder,
    driver_counts,
    driving_matches,
    page_query,
    tail_query,
)

__all__ = ["Cursor", "ListPage", "TraceFilter", "TraceOrder", "TraceSummaries", "TraceSummary"]


_NO_ENDS: tuple[None, None, None] = (None, None, None)


class TraceSummary(NamedTuple):
    """One trace as the list shows it (a named tuple: a page makes one a listed trace,
    and a frozen dataclass's took 2.2 us where this takes a tenth of it)."""

    trace_id: str
    root_name: str | None
    start_ns: int
    end_ns: int | None
    span_count: int
    error_count: int
    session_id: str | None
    received_ms: int
    sort_ns: int
    # the GenAI part, as stored (storage/summary_genai.py)
    llm_calls: int = 0
    models_text: str | None = None
    user_id: str | None = None
    model_usage: tuple[int | None, int | None, int | None, float | None] = (None,) * 4
    other_usage: tuple[int | None, int | None, int | None, float | None] = (None,) * 4
    first_llm: str | None = None
    last_llm: str | None = None
    first_root: str | None = None
    #: the input and output messages' text (at most PREVIEW_CHARS), read from the spans
    #: that give them when the summary is read (`summaries_of`)
    input: str | None = None
    output: str | None = None
    #: the question its first LLM call asked, where it is another message than `input`
    #: (a chat's turn: its call holds the conversation so far; genai/view.py's
    #: previews); "" where that message has no text (an image)
    asked: str | None = None

    @classmethod
    def of_row(
        cls, row: tuple[Any, ...], ends: tuple[str | None, str | None, str | None] = _NO_ENDS
    ) -> TraceSummary:
        """A summary from a row of _SELECT, with its input, output and asked `ends` (a
        page makes one a listed trace: one tuple, made by position)."""
        return tuple.__new__(
            cls,
            (
                *row[:9],
                row[9] or 0,
                row[10],
                row[11],
                _usage(*row[12:16]),
                _usage(*row[16:20]),
                row[20],
                row[21],
                row[22],
                *ends,
            ),
        )

    @property
    def question(self) -> str | None:
        """What the pages show as its input: the question its first LLM call asked (a
        chat's turn; None where it has no text), else its `input`."""
        return self.input if self.asked is None else self.asked or None

    @property
    def duration_ms(self) -> float | None:
        """From the earliest start to the latest end; None while no span has ended."""
        return None if self.end_ns is None else (self.end_ns - self.start_ns) / 1e6

    @property
    def usage(self) -> tuple[int | None, int | None, int | None, float | None]:
        """Input, output and total tokens and cost in USD: the model calls' sums, or the
        other spans' own when no model call reports any (storage/summary_genai.py)."""
        if any(value is not None for value in self.model_usage):
            return self.model_usage
        return self.other_usage

    @property
    def models(self) -> list[str]:
        """The distinct models of the trace's spans, sorted."""
        return summary_genai.models_of(self.models_text)


_KEYS_ASKED = 300  # (trace, span, day) triples in one query: 900 parameters


def summaries_of(
    tx: Transaction, project_id: str, rows: list[tuple[Any, ...]], ends: bool = True
) -> list[TraceSummary]:
    """The summaries of rows of _SELECT; with `ends`, each with its `input` and `output`:
    the first user message of the span that gives the input, the last output message of
    the one that gives the output (`previews`); the earliest root's where those LLM
    calls say none (an instrumentation that records no message content, under an agent
    span that records its input and output)."""
    of_row = TraceSummary.of_row
    if not ends:
        return [of_row(row) for row in rows]
    # each row's spans that give its input and its output (its first and last LLM
    # calls, or its earliest root when it has no LLM call), and its earliest root
    # (storage/summary_genai.py: a summary names each by its key)
    span_of = summary_genai.span_of
    spans: list[tuple[_Span, _Span, _Span]] = []
    for row in rows:
        trace_id, first, last, root = row[0], row[20], row[21], row[22]
        root_span = None if root is None else span_of(trace_id, root)
        if row[9]:
            first_span = None if first is None else span_of(trace_id, first)
            last_span = (
                first_span if last == first else None if last is None else span_of(trace_id, last)
            )
            spans.append((first_span, last_span, root_span))
        else:
            spans.append((root_span, root_span, root_span))
    wanted = {span for of_row_spans in spans for span in of_row_spans if span is not None}
    found: dict[Any, tuple[str | None, str | None, str | None]] = previews(
        tx, project_id, sorted(wanted)
    )
    summaries = []
    for row, (first, last, root) in zip(rows, spans, strict=True):
        # a span that gives no text falls back on the earliest root's
        given_root = found.get(root, _NO_ENDS)
        given_first = found.get(first, _NO_ENDS)
        given_last = given_first if last is first else found.get(last, _NO_ENDS)
        start = given_first[0] if given_first[0] is not None else given_root[0]
        end = given_last[1] if given_last[1] is not None else given_root[1]
        summaries.append(of_row(row, (start, end, given_first[2])))
    return summaries


#: A span (trace, span, start day), or None.
_Span = tuple[str, str, str] | None


_SPAN = "SELECT spans.trace_id, spans.span_id, spans.start_day, name, kind, attributes, events"
#: The span's GenAI type and its text's previews (NULL: none stored).
_STORED_PREVIEWS = (
    "SELECT spans.trace_id, spans.span_id, spans.start_day, spans.llm_type, x.previews"
)
#: The span's previews alone, as _STORED_PREVIEWS's rows without the type (once every
#: trace's ends have theirs, an end with none has no text).
_PREVIEWS = "SELECT x.trace_id, x.span_id, x.start_day, NULL, x.previews"
#: The span's text, if any, through span_texts' key (whose texts collate as "C" on
#: PostgreSQL: {exact} is that collation there).
_TEXT_OF_SPAN = "LEFT JOIN span_texts AS x ON " + " AND ".join(
    f"x.{column} = spans.{column}{{exact}}"
    for column in ("project_id", "trace_id", "span_id", "start_day")
)


Previews = dict[tuple[str, str, str], tuple[str | None, str | None, str | None]]


def previews(tx: Transaction, project_id: str, keys: list[tuple[str, str, str]]) -> Previews:
    """The input, output and asked previews of the spans (trace, span, start day) `keys` names
    (a trace's ends), as the worker stored them (storage/trace_texts.py); a span stored
    before texts had previews (until storage/find_upgrade.py gave the ends theirs) has
    them read from its attributes. A span of no GenAI type, or with no text once every
    end has previews, has none."""
    found: Previews = {}
    # once every end has them, span_texts is read alone
    stored_only = trace_walk.recorded(tx, find_upgrade.PREVIEWED)
    select = _PREVIEWS if stored_only else _STORED_PREVIEWS
    unread = []
    for trace_id, span_id, day, llm_type, stored in _spans(tx, project_id, keys, select):
        key = (trace_id, span_id, day)
        if stored is not None:
            found[key] = _ends(orjson.loads(stored))
        elif llm_type is not None:
            unread.append(key)
    for trace_id, span_id, day, name, kind, attributes, events in _spans(tx, project_id, unread):
        view = view_of(orjson.loads(attributes), lambda e=events: orjson.loads(e), name, kind)
        if view is not None:
            found[(trace_id, span_id, day)] = _ends(view.previews())
    return found


def _ends(previews: list[str | None]) -> tuple[str | None, str | None, str | None]:
    """Input, output and asked of a span's previews (GenAIView.previews: the asked
    where it is another message than the input, "" where it has no text; None where
    there is none, or none was stored: before it was kept)."""
    if len(previews) < 3:
        return previews[0], previews[1], None
    return previews[0], previews[1], previews[2] or ""


def _spans(
    tx: Transaction, project_id: str, keys: list[tuple[str, str, str]], select: str = _SPAN
) -> list[Any]:
    """The rows of `span_query`, a few hundred keys a query."""
    rows = []
    for at in range(0, len(keys), _KEYS_ASKED):
        rows += tx.query(*span_query(project_id, keys[at : at + _KEYS_ASKED], tx.postgres, select))
    return rows


def span_query(
    project_id: str, keys: list[tuple[str, str, str]], postgres: bool, select: str = _SPAN
) -> tuple[str, list[Any]]:
    """The query of the rows of the spans (trace, span, start day) `keys` names, each
    through the span table's key (on SQLite the keys' list drives a join: it seeks a
    row-value IN list by the project alone, a scan of its spans), and its parameters;
    `select`: _SPAN (the span's own columns), _STORED_PREVIEWS, or _PREVIEWS (the
    previews' table alone, through its key)."""
    listed = ", ".join("(?, ?, ?)" for _ in keys)
    values = [value for key in keys for value in key]
    table, alias, joined = "spans", "spans", ""
    if select == _STORED_PREVIEWS:
        joined = _TEXT_OF_SPAN.format(exact=' COLLATE "C"' if postgres else "")
    elif select == _PREVIEWS:
        table, alias = "span_texts AS x", "x"
    if postgres:
        return (
            f"{select} FROM {table} {joined} WHERE {alias}.project_id = ? AND "
            f"({alias}.trace_id, {alias}.span_id, {alias}.start_day) IN (VALUES {listed})",
            [project_id, *values],
        )
    return (
        f"WITH k (t, s, d) AS (VALUES {listed}) {select} FROM k CROSS JOIN {table} "
        f"ON {alias}.project_id = ? AND {alias}.trace_id = k.t AND {alias}.span_id = k.s "
        f"AND {alias}.start_day = k.d {joined}",
        [*values, project_id],
    )


def _usage(
    tokens_in: Any, tokens_out: Any, tokens: Any, cost: Any
) -> tuple[int | None, int | None, int | None, float | None]:
    return (
        None if tokens_in is None else int(tokens_in),
        None if tokens_out is None else int(tokens_out),
        None if tokens is None else int(tokens),
        None if cost is None else float(cost),
    )


_SELECT = (
    "SELECT trace_id, root_name, start_ns, end_ns, span_count, error_count, session_id, "
    f"received_ms, sort_ns, {', '.join(summary_genai.NAMES)} FROM trace_summaries "
    "WHERE project_id = ?"
)


def _driver(tx: Transaction, project_id: str, filters: TraceFilter) -> int | None:
    """The index filter that lets the fewest traces through, when it lets fewer than
    `driving_matches` through (storage/trace_query.py)."""
    bound = driving_matches(tx.postgres)
    counts = [
        ((tx.query_one(sql, params) or (bound,))[0], at)
        for at, sql, params in driver_counts(project_id, filters, tx.postgres)
    ]
    if not counts or min(counts)[0] >= bound:
        return None
    return min(counts)[1]


def _rows(
    tx: Transaction,
    project_id: str,
    filters: TraceFilter,
    limit: int,
    after: Cursor | None,
    order: TraceOrder,
    driver: int | None,
) -> list[Any]:
    """Up to `limit` + 1 rows of the summaries in `order` after `after`, the sort value
    last; when `after` is a cursor `before`, those before it, nearest first. The traces
    whose sort value is unknown come after the others (`tail_query`), so reading back
    from one of them reads the unknown before it, then the known ones from the last."""
    postgres = tx.postgres
    back = after is not None and after.before
    way = order.reversed if back else order
    in_tail = after is not None and after.value is None
    rows: list[Any] = []
    if back and in_tail:
        rows = tx.query(*tail_query(project_id, filters, limit + 1, after, way, postgres, driver))
    if len(rows) <= limit and not (in_tail and not back):
        known = None if in_tail else after
        asked = limit + 1 - len(rows)
        rows += tx.query(*page_query(project_id, filters, asked, known, way, postgres, driver))
    if len(rows) <= limit and order.sort in NULLABLE and not back:
        tail_after = after if in_tail else None
        asked = limit + 1 - len(rows)
        rows += tx.query(*tail_query(project_id, filters, asked, tail_after, way, postgres, driver))
    return rows


class ListPage(NamedTuple):
    """A page of the list: its traces, the next page's cursor (None: the last page) and
    the previous page's (None: the first page); and the cursor after which it begins,
    which opens it reading forward, as the export reads (None: the first page)."""

    traces: list[TraceSummary]
    next: Cursor | None
    previous: Cursor | None = None
    at: Cursor | None = None


class TraceSummaries:
    """Reads of the summaries: pages of the list, a session's traces."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def page(
        self,
        project_id: str,
        filters: TraceFilter,
        limit: int,
        after: Cursor | None = None,
        ends: bool = True,
        order: TraceOrder | None = None,
    ) -> ListPage:
        """Up to `limit` traces in `order` (newest first by default), after `after` (or
        the `limit` just before it, when it is a cursor `before`: the first page when
        nothing is before it); with the next page's cursor (None when this page is the
        last) and the previous page's (None on the first). `ends`: with their input and
        output."""
        order = order or (after.order if after is not None else TraceOrder())
        postgres = self.db.postgres
        with self.db.transaction() as tx:
            if postgres:  # every query of the list has an index path; a scan is a misguess
                tx.execute("SET LOCAL enable_seqscan = off")
                # a plan for the values given: a generic one (psycopg prepares a query
                # run five times) guesses a LIKE's and a filter's share blind
                tx.execute("SET LOCAL plan_cache_mode = force_custom_plan")
                # a page is a walk that stops at its limit: workers started for it cost
                # more than the walk (20-25 ms to start two, on a 7 ms walk)
                tx.execute("SET LOCAL max_parallel_workers_per_gather = 0")
            if filters.span_name and filters.span_name_tokens is None:
                tokens = name_tokens(tx, project_id, filters.span_name)
                filters = dataclasses.replace(filters, span_name_tokens=tokens)
            read = None
            documents = newest_first.applies(order, after)
            if documents and not postgres:
                read = newest_first.rows(tx, project_id, filters, limit + 1, after)
            driver = None if read is not None else _driver(tx, project_id, filters)
            if documents and postgres and driver is None:
                read = newest_first.walked(tx, project_id, filters, limit + 1, after)
            rows: list[Any] = []
            at = after
            if after is not None and after.before:
                rows = _rows(tx, project_id, filters, limit, after, order, driver)
                # a whole page before it, and more: that page, which `after` follows,
                # and which opens after the row before it; else the first page
                if len(rows) > limit:
                    at = Cursor(rows[limit][-1], rows[limit][0], order.sort, order.descending)
                    rows = rows[limit - 1 :: -1]
                else:
                    rows, after = [], None
                more = after is not None
            if after is None or not after.before:
                rows = (
                    read
                    if read is not None
                    else _rows(tx, project_id, filters, limit, after, order, driver)
                )
                more = len(rows) > limit
            rows = rows[:limit]
            traces = summaries_of(tx, project_id, [row[:-1] for row in rows], ends)
        later = earlier = None
        if more:
            later = Cursor(rows[-1][-1], rows[-1][0], order.sort, order.descending)
        if after is not None and rows:
            first = rows[0]
            earlier = Cursor(first[-1], first[0], order.sort, order.descending, before=True)
        return ListPage(traces, later, earlier, None if after is None else at)

    def recent_facets(self, project_id: str, traces: int) -> list[tuple[str | None, str | None]]:
        """The models (as stored) and user of the newest `traces` traces: the filter
        bar's facets, read through the list's index."""
        with self.db.transaction() as tx:
            rows = tx.query(
                "SELECT models, user_id FROM trace_summaries WHERE project_id = ? "
                "ORDER BY sort_ns DESC, trace_id DESC LIMIT ?",
                (project_id, traces),
            )
        return [(models, user) for models, user in rows]

    def get(self, project_id: str, trace_id: str) -> TraceSummary | None:
        """One trace's summary, or None when nothing of it is stored."""
        with self.db.transaction() as tx:
            row = tx.query_one(f"{_SELECT} AND trace_id = ?", (project_id, trace_id))
            if row is None:
                return None
            return summaries_of(tx, project_id, [row])[0]
