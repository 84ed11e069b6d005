"""The trace list's query: its filters, its sort and the keyset cursor that pages it.

Every filter narrows the per-trace summaries (storage/trace_summaries.py), or the
worker's indexes beside them (storage/trace_index.py: span names, attributes, the
LLM text), never the spans. Each sort has an index of the summaries that holds the
rows in its order (schema migration 13), so a page is a walk of that index from the
cursor; the traces whose sort value is unknown (no cost, no tokens, no end) come after
all the others in either order: a page is first read among the known values, then,
when those run out, among the unknown ones by trace id (`tail_query`).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

import orjson

from genai.prices import least_settled_at
from storage import summary_genai
from storage.index_filters import any_case, index_queries, like
from storage.storable import MAX_ID_CHARS, id_text

#: Whether a trace's model calls report any usage: else its other spans' own counts
#: (TraceSummary.usage does the same in Python).
_MODEL_USAGE_KNOWN = (
    "(input_tokens IS NOT NULL OR output_tokens IS NOT NULL OR total_tokens IS NOT NULL "
    "OR cost_usd IS NOT NULL)"
)
COST = f"(CASE WHEN {_MODEL_USAGE_KNOWN} THEN cost_usd ELSE other_cost_usd END)"
TOKENS = f"(CASE WHEN {_MODEL_USAGE_KNOWN} THEN total_tokens ELSE other_total_tokens END)"
INPUT_TOKENS = f"(CASE WHEN {_MODEL_USAGE_KNOWN} THEN input_tokens ELSE other_input_tokens END)"
OUTPUT_TOKENS = f"(CASE WHEN {_MODEL_USAGE_KNOWN} THEN output_tokens ELSE other_output_tokens END)"
DURATION = "(end_ns - start_ns)"
#: The sorts, by their name in the query string: the expression each orders by (the
#: same text as its index's, which is how SQLite matches an index on an expression).
SORTS = {"start": "sort_ns", "duration": DURATION, "cost": COST, "tokens": TOKENS}
NULLABLE = frozenset(("duration", "cost", "tokens"))
#: The range of the store's integers (times, durations, token counts).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: Less than any value of a sort (SQLite: every number is above NULL and this).
_LEAST = INT64_MIN


def fits_int64(value: object) -> bool:
    """Whether a value is an integer the store can hold (a cursor's, read from a client,
    may be any JSON number)."""
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


@dataclass(frozen=True, slots=True)
class ScoreCondition:
    """A score the trace must have: by name, and `op` (`>=` or `<=`) `value` when set."""

    name: str
    op: str | None = None
    value: float | None = None


@dataclass(frozen=True, slots=True)
class TraceFilter:
    """What the list may be narrowed to (every condition set must hold)."""

    name: str | None = None  # a substring of the root span's name, any case
    errors_only: bool = False  # traces with at least one span whose status is error
    session: str | None = None
    span_name: str | None = None  # a substring of any span's name, any case
    #: the tokens of the project's span names that hold `span_name`, when read before
    #: (storage/index_filters.py: `name_tokens`; None: the query reads them)
    span_name_tokens: tuple[int, ...] | None = None
    user: str | None = None
    model: str | None = None  # one of the trace's models
    from_ns: int | None = None  # the trace's start, at or after
    to_ns: int | None = None  # the trace's start, before
    min_duration_ns: int | None = None
    max_duration_ns: int | None = None
    min_cost_usd: float | None = None
    min_tokens: int | None = None
    #: (key, value): some span has the attribute with that value as a string; (key,
    #: None): some span has it
    attributes: tuple[tuple[str, str | None], ...] = ()
    #: (key, value) pairs: some span has one of them (the agents page's window)
    any_attribute: tuple[tuple[str, str], ...] = ()
    words: tuple[str, ...] = ()  # each found in the trace's LLM text
    scores: tuple[ScoreCondition, ...] = ()


@dataclass(frozen=True, slots=True)
class TraceOrder:
    """The list's order: by one of SORTS, descending or not."""

    sort: str = "start"
    descending: bool = True

    @property
    def reversed(self) -> TraceOrder:
        """The same sort the other way."""
        return TraceOrder(self.sort, not self.descending)


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a page of the list ends: the next page starts after this trace, whose
    sort value was `value` (None: among the traces with none) in the order named; or,
    `before`, where a page begins: the previous page ends before this trace."""

    value: int | float | None
    trace_id: str
    sort: str = "start"
    descending: bool = True
    before: bool = False

    @property
    def order(self) -> TraceOrder:
        """The order this cursor pages."""
        return TraceOrder(self.sort, self.descending)

    def encode(self) -> str:
        """The opaque text a client passes back."""
        fields = [self.sort, self.descending, self.value, self.trace_id]
        text = orjson.dumps([*fields, True] if self.before else fields)
        return base64.urlsafe_b64encode(text).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        """The cursor `encode` wrote; ValueError for anything else."""
        try:
            raw = base64.urlsafe_b64decode(text.encode() + b"=" * (-len(text) % 4))
            sort, descending, value, trace_id, *before = orjson.loads(raw)
        except (binascii.Error, UnicodeError, ValueError, TypeError) as e:
            raise ValueError("cursor is not one this list gave") from e
        valid = (
            isinstance(sort, str)  # before `in`: a list or an object is unhashable
            and sort in SORTS
            and isinstance(descending, bool)
            and isinstance(trace_id, str)
            and "\0" not in trace_id  # no id holds one (PostgreSQL's text cannot)
            and before in ([], [True])
            # a cost is a float, every other sort's value an integer the store holds
            and (value is None or (type(value) is float if sort == "cost" else fits_int64(value)))
            and (value is not None or sort in NULLABLE)
        )
        if not valid:
            raise ValueError("cursor is not one this list gave")
        return cls(value, trace_id, sort, descending, bool(before))


SELECT_SUMMARY = (
    "SELECT trace_id, root_name, start_ns, end_ns, span_count, error_count, session_id, "
    f"received_ms, sort_ns, {', '.join(summary_genai.NAMES)}"
)


def _model_condition(postgres: bool) -> str:
    exact = (
        "models::jsonb @> jsonb_build_array(?::text)"
        if postgres
        else "EXISTS (SELECT 1 FROM json_each(models) WHERE value = ?)"
    )
    return f"models LIKE ? ESCAPE '\\' AND {exact}"


def _score_condition(score: ScoreCondition) -> tuple[str, list[object]]:
    sql = (
        "EXISTS (SELECT 1 FROM scores AS sc WHERE sc.project_id = ?1 "
        "AND sc.trace_id = trace_summaries.trace_id AND sc.name = ?"
    )
    if score.op is None:
        return sql + ")", [score.name]
    return sql + f" AND sc.score {score.op} ?)", [score.name, score.value]


_PLAIN = (  # (field, SQL of the condition on a set value)
    ("session", "session_id = ?"),
    ("user", "user_id = ?"),
    ("from_ns", "start_ns >= ? AND sort_ns >= ?"),  # sort_ns >= start_ns: for the index
    ("to_ns", "start_ns < ?"),
)
#: The bounds: field, the sort whose expression it bounds, the condition. Under another
#: sort the expression is written `+(…)`, which no index matches: SQLite otherwise
#: reads every trace in the bounds through the bound's index and sorts them, where
#: walking the sort's index finds a page of them in a few rows.
_BOUNDS = (
    ("min_duration_ns", "duration", ">="),
    ("max_duration_ns", "duration", "<="),
    ("min_cost_usd", "cost", ">="),
    ("min_tokens", "tokens", ">="),
)


def where(
    project_id: str,
    filters: TraceFilter,
    postgres: bool,
    driver: int | None = None,
    sort: str = "start",
) -> tuple[list[str], list[object]]:
    """The conditions on trace_summaries of `filters` (the project is `?1`, its first
    parameter, given by the caller) and their parameters, in order; but the index query
    `driver`, which the caller joins instead (`_source`)."""
    conditions, params = list[str](), list[object]()
    if filters.name:
        holds, pattern = any_case("root_name", filters.name, postgres)
        conditions.append(holds)
        params += pattern
    if filters.errors_only:
        conditions.append("error_count > 0")
    for field, sql in _PLAIN:
        value = getattr(filters, field)
        if value is not None:
            conditions.append(sql)
            # an id compared as stored (storage/storable.py)
            params += [id_text(value) if isinstance(value, str) else value] * sql.count("?")
    bounds = [(f, b, op, v) for f, b, op in _BOUNDS if (v := getattr(filters, f)) is not None]
    for _, bounded, op, value in bounds:
        conditions.append(f"{'' if bounded == sort else '+'}{SORTS[bounded]} {op} ?")
        # a cost bound is on the cost as shown: the sum stored, settled (genai/prices.py)
        params.append(least_settled_at(value) if bounded == "cost" else value)
    if filters.model is not None:
        conditions.append(_model_condition(postgres))
        model = filters.model[:MAX_ID_CHARS]  # as the GenAI view reads one
        params += [like(orjson.dumps(model).decode()), model]
    for at, found in enumerate(index_queries(project_id, filters, postgres)):
        if at != driver:
            conditions.append(found.exists)
            params += found.exists_params
    for score in filters.scores:
        sql, values = _score_condition(score)
        conditions.append(sql)
        params += values
    return conditions, params


def numbered(sql: str, params: list[object], project_id: str) -> tuple[str, list[object]]:
    """SQL whose `?1` is the project and whose bare `?`s take `params` in order, as
    plain `?`s on both dialects."""
    out, values, taken = [], list[object](), iter(params)
    parts = sql.split("?")
    out.append(parts[0])
    for part in parts[1:]:
        if part.startswith("1"):
            values.append(project_id)
            part = part[1:]
        else:
            values.append(next(taken))
        out.append("?" + part)
    return "".join(out), values


#: An index filter that lets fewer traces than this through drives the page (its traces
#: are read, then sorted), instead of the sort's index walked until a page of them is
#: found: few matches are then a few seeks, not a walk of the project's summaries.
DRIVING_MATCHES = 5000
#: PostgreSQL's: a walked trace costs it more than SQLite (a probe of another index
#: per row, not a set lookup), and a GIN index is read whole by a count. Below it the
#: planner's guesses were the trouble: a rare word's traces were hashed against every
#: summary of the project (the span texts' ids collate as "C", the summaries' key not,
#: so it could not seek the summaries by the matches).
DRIVING_MATCHES_POSTGRES = 500


def driving_matches(postgres: bool) -> int:
    """The bound under which an index filter drives the page, by dialect."""
    return DRIVING_MATCHES_POSTGRES if postgres else DRIVING_MATCHES


def driver_counts(
    project_id: str, filters: TraceFilter, postgres: bool
) -> list[tuple[int, str, list[object]]]:
    """For each index filter that may drive the page (by its position among
    `index_queries`), a query of how many traces it lets through, counted up to
    `driving_matches`."""
    return [
        (
            at,
            *numbered(
                # rows, not distinct traces: a bounded read of the index, no sort (a
                # trace with several rows only makes walking likelier)
                f"SELECT COUNT(*) FROM ({found.matches or found.query} LIMIT ?) AS c",
                [*found.query_params, driving_matches(postgres)],
                project_id,
            ),
        )
        for at, found in enumerate(index_queries(project_id, filters, postgres))
        if found.counted or not postgres
    ]


def _source(
    project_id: str, filters: TraceFilter, postgres: bool, driver: int | None
) -> tuple[str, list[object]]:
    """The FROM clause: the summaries, or the `driver` index query's traces joined to
    them, that query read first (SQLite's CROSS JOIN keeps the order given)."""
    if driver is None:
        return "trace_summaries", []
    sql, params, *_ = index_queries(project_id, filters, postgres)[driver]
    # PostgreSQL: the summaries' key collates by default, the span texts' ids as "C"
    join, matched = (
        ("JOIN", 'm.matched COLLATE "default"') if postgres else ("CROSS JOIN", "m.matched")
    )
    return (
        f"(SELECT DISTINCT trace_id AS matched FROM ({sql}) AS d) AS m {join} "
        "trace_summaries ON trace_summaries.project_id = ?1 "
        f"AND trace_summaries.trace_id = {matched}",
        params,
    )


def page_query(
    project_id: str,
    filters: TraceFilter,
    limit: int,
    after: Cursor | None,
    order: TraceOrder | None = None,
    postgres: bool = False,
    driver: int | None = None,
) -> tuple[str, list[object]]:
    """The SQL and parameters of a page of the list among the traces whose sort value
    is known (every trace, sorting by start): in `order`, through the sort's index (or
    from the index query `driver`); the sort value is the row's last column."""
    order = order or TraceOrder()
    key = SORTS[order.sort]
    source, params = _source(project_id, filters, postgres, driver)
    conditions, values = where(project_id, filters, postgres, driver, order.sort)
    params += values
    if order.sort in NULLABLE:
        # SQLite seeks past the NULLs of an index on an expression only by a bound
        conditions.append(f"{key} IS NOT NULL" if postgres else f"{key} >= {_LEAST}")
    if after is not None and after.value is not None:
        beyond = "<" if order.descending else ">"
        conditions.append(f"({key} {beyond} ? OR ({key} = ? AND trace_id {beyond} ?))")
        params += [after.value, after.value, after.trace_id]
    way = "DESC" if order.descending else "ASC"
    sql = (
        f"{SELECT_SUMMARY}, {key} FROM {source} WHERE trace_summaries.project_id = ?1"
        + "".join(f" AND {c}" for c in conditions)
        + f" ORDER BY {key} {way}, trace_id {way} LIMIT ?"
    )
    return numbered(sql, [*params, limit], project_id)


def tail_query(
    project_id: str,
    filters: TraceFilter,
    limit: int,
    after: Cursor | None,
    order: TraceOrder,
    postgres: bool = False,
    driver: int | None = None,
) -> tuple[str, list[object]]:
    """The SQL and parameters of a page among the traces whose sort value is unknown
    (after all the others, in either order), by trace id, after `after` when it is one
    of them."""
    key = SORTS[order.sort]
    source, params = _source(project_id, filters, postgres, driver)
    conditions, values = where(project_id, filters, postgres, driver, order.sort)
    params += values
    conditions.append(f"{key} IS NULL")
    beyond, way = ("<", "DESC") if order.descending else (">", "ASC")
    if after is not None and after.value is None:
        conditions.append(f"trace_id {beyond} ?")
        params.append(after.trace_id)
    sql = (
        f"{SELECT_SUMMARY}, NULL FROM {source} WHERE trace_summaries.project_id = ?1"
        + "".join(f" AND {c}" for c in conditions)
        + f" ORDER BY {key} {way}, trace_id {way} LIMIT ?"
    )
    return numbered(sql, [*params, limit], project_id)
