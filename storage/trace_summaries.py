"""The per-trace summary the trace list reads: kept by the worker, read by the dashboard.

Listing a project's recent traces from its spans would group every span of the project
on each view. Instead the span store recomputes the summary of each trace a batch
touched, from that trace's stored rows, inside the transaction that wrote them
(`refresh`); on PostgreSQL, a stored trace that only gained rows has them added to its
summary instead (`merged`), which gives the same. A summary is therefore exactly what
is stored, whatever the re-sending rules did: a refused send changes nothing, a
replaced span changes its values, a span stored again on another day counts twice (it
is two stored spans). The list then reads only summaries, through an index, whatever
the size of the store.

Order: newest first by `sort_ns`, the trace's start as it was when the trace was first
stored. It never changes afterwards (the shown start may still move earlier, when a root
span arrives after its children), so a cursor (sort_ns, trace id) never skips or repeats
a trace while spans keep arriving.
"""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter

from storage import summary_genai
from storage.database import Transaction, arrays
from storage.resend import STORED_TRACES_ASKED, left_by, traces_asked
from storage.span_rows import SpanRow

#: The columns every version of the table has had (the spans stored before it existed
#: got their summaries in these).
_BASE_COLUMNS = (
    "project_id, trace_id, sort_ns, start_ns, end_ns, span_count, error_count, root_name, "
    "session_id, received_ms"
)
COLUMNS = ", ".join((_BASE_COLUMNS, *summary_genai.NAMES))
#: Their PostgreSQL types, in order.
COLUMN_TYPES = (
    "text",
    "text",
    "bigint",
    "bigint",
    "bigint",
    "bigint",
    "bigint",
    "text",
    "text",
    "bigint",
    *(kind for _, kind in summary_genai.COLUMNS),
)
#: The earliest of a trace's roots, whose name is the trace's: by start, then span id
#: and start day, which the key makes unique (`_summary_of` orders them the same way).
_EARLIEST = "ORDER BY {r}.start_ns, {r}.span_id, {r}.start_day LIMIT 1"
#: Of span rows `{s}`, how many are errors.
_ERRORS = "SUM(CASE WHEN {s}status_code = 2 THEN 1 ELSE 0 END)"
#: Spans of the traces `{where}` names, one summary row each (the earliest root span
#: names the trace; with none stored yet it has no name): the base columns' values.
_BASE_AGGREGATE = (
    "SELECT s.project_id, s.trace_id, MIN(s.start_ns), MIN(s.start_ns), MAX(s.end_ns), "
    f"COUNT(*), {_ERRORS.format(s='s.')}, "
    "(SELECT r.name FROM spans r WHERE r.project_id = s.project_id "
    "AND r.trace_id = s.trace_id AND r.parent_span_id IS NULL "
    f"{_EARLIEST.format(r='r')}), "
    "MIN(s.session_id), MAX(s.received_ms)"
)
_GROUPED = " FROM spans s WHERE {where} GROUP BY s.project_id, s.trace_id"


#: The wrappers (genai/counting.py) of the traces `{where}` names (formatted with `s` as
#: `c.`): each parent of a model call, and whether a call below it reports usage, the
#: calls' own and then, up through model calls, what their calls below report.
_WRAPPERS = (
    "WITH RECURSIVE up (project_id, trace_id, span_id, reported) AS ("
    "SELECT c.project_id, c.trace_id, c.parent_span_id, "
    f"CASE WHEN {summary_genai.REPORTS.format(c='c.')} THEN 1 ELSE 0 END "
    "FROM spans c WHERE {where} AND "
    + summary_genai.WRAPPING.format(c="c.")
    + " UNION SELECT p.project_id, p.trace_id, p.parent_span_id, 1 FROM up JOIN spans p "
    "ON p.project_id = up.project_id AND p.trace_id = up.trace_id AND p.span_id = up.span_id "
    "WHERE up.reported = 1 AND " + summary_genai.WRAPPING.format(c="p.") + ") "
)
#: Each wrapper once, joined to its rows.
_WRAPPED = (
    "LEFT JOIN (SELECT project_id, trace_id, span_id, MAX(reported) AS reported FROM up "
    "GROUP BY project_id, trace_id, span_id) AS w "
    "ON w.project_id = s.project_id AND w.trace_id = s.trace_id AND w.span_id = s.span_id"
)


def aggregate(where: str, postgres: bool) -> str:
    """The summary rows (every column) of the traces `where` names, from their spans.
    `where` is a template of the spans' prefix `{s}`, which the statement holds twice:
    its parameters are given twice, unless numbered (`?N`, SQLite)."""
    genai = ", ".join(
        summary_genai.aggregates(
            "s.", postgres, "w.span_id IS NULL", "(w.span_id IS NULL OR w.reported = 0)"
        )
    )
    wrappers = _WRAPPERS.format(where=where.format(s="c."))
    grouped = (
        f" FROM spans s {_WRAPPED} WHERE {where.format(s='s.')} GROUP BY s.project_id, s.trace_id"
    )
    return f"{wrappers}{_BASE_AGGREGATE}, {genai}{grouped}"


_KEEP_SORT = ", ".join(
    f"{column} = excluded.{column}"
    for column in COLUMNS.split(", ")
    if column not in ("project_id", "trace_id", "sort_ns")
)
_SET_ALL = f"sort_ns = excluded.sort_ns, {_KEEP_SORT}"


def refresh_statement(where: str, update: str = _KEEP_SORT, postgres: bool = True) -> str:
    """The statement that makes the summaries of the traces `where` names anew from
    their stored spans, setting `update` on those that have one."""
    return (
        f"INSERT INTO trace_summaries ({COLUMNS}) {aggregate(where, postgres)} "
        f"ON CONFLICT (project_id, trace_id) DO UPDATE SET {update}"
    )


SQLITE_TRACES = (
    "{s}project_id = ?1 AND {s}trace_id IN ("
    + ", ".join(f"?{n}" for n in range(2, STORED_TRACES_ASKED + 2))
    + ")"
)
_SQLITE_REFRESH = refresh_statement(SQLITE_TRACES, postgres=False)
#: The summaries of the spans stored before the table existed (an upgrade): its columns
#: as they were then.
BACKFILL_SUMMARIES = (
    f"INSERT INTO trace_summaries ({_BASE_COLUMNS}) {_BASE_AGGREGATE}"
    + _GROUPED.format(where="1 = 1")
)
_ONE_TRACE = "{s}project_id = ? AND {s}trace_id = ?"
_RECOUNT = {
    postgres: refresh_statement(_ONE_TRACE, _SET_ALL, postgres) for postgres in (False, True)
}
_REFRESH_ONE = {
    postgres: refresh_statement(_ONE_TRACE, postgres=postgres) for postgres in (False, True)
}


def refresh(tx: Transaction, project_id: str, trace_id: str) -> None:
    """The summary of a trace made anew from its stored spans, keeping its order."""
    tx.execute(_REFRESH_ONE[tx.postgres], (project_id, trace_id) * 2)


_NOTHING_LEFT = (
    "DELETE FROM trace_summaries WHERE project_id = ? AND trace_id = ? AND NOT EXISTS "
    "(SELECT 1 FROM spans WHERE project_id = ? AND trace_id = ?)"
)


def recount(tx: Transaction, project_id: str, trace_ids: set[str]) -> None:
    """The summaries of traces some of whose spans were erased, made anew from what is
    left (none for a trace with nothing left). A summary is updated where it is, never
    deleted and inserted anew while its trace has spans: a transaction waiting for its
    lock (storage/span_copy.py) then locks it as updated, where it would find it gone."""
    for trace_id in sorted(trace_ids):
        tx.execute(_RECOUNT[tx.postgres], (project_id, trace_id) * 2)
        tx.execute(_NOTHING_LEFT, (project_id, trace_id, project_id, trace_id))


def refresh_staged(tx: Transaction, stage: str, new: bool, changed: list[tuple[str, str]]) -> None:
    """PostgreSQL: recompute, from what is stored, the summaries of the traces new to the
    store among the rows staged in table `stage` (`known` false; when `new`), and of the
    stored traces with a row replaced (`changed`, project and trace); storage/span_copy.py
    holds their locks. A new trace takes its order from what is stored too: its summary,
    inserted first as its lock, counted rows the window may have refused. The other
    stored traces' summaries were added to as their rows were inserted (`merged`)."""
    if new:
        traces = f"SELECT project_id, trace_id FROM {stage} WHERE NOT known"
        tx.execute(refresh_statement(f"({{s}}project_id, {{s}}trace_id) IN ({traces})", _SET_ALL))
    if changed:
        traces = "SELECT * FROM unnest(?::text[], ?::text[])"
        statement = refresh_statement(f"({{s}}project_id, {{s}}trace_id) IN ({traces})")
        tx.execute(statement, arrays(changed) * 2)


def merged(rows: str) -> str:
    """PostgreSQL: a statement, for a WITH clause, that adds the span rows of relation
    `rows` to their traces' summaries: rows being inserted by the same statement, of
    traces that have a summary. A summary is then what the aggregate of the stored rows
    would give, without reading the trace's other rows, which a long trace sent in many
    requests would make cost its length each time; only a root among `rows` has the
    trace's stored roots read, for the earliest's name. The statement sees the span
    table as it was before it. A row it replaces is not accounted for, nor whether a
    model call it adds is a wrapper or makes one (genai/counting.py): those traces'
    summaries must be recomputed after it (`refresh_staged`)."""
    roots = (
        'SELECT root.name FROM (SELECT r.start_ns, r.span_id COLLATE "C" AS span_id, '
        'r.start_day COLLATE "C" AS start_day, r.name '
        "FROM spans AS r WHERE r.project_id = added.project_id "
        "AND r.trace_id = added.trace_id AND r.parent_span_id IS NULL "
        'UNION ALL SELECT n.start_ns, n.span_id COLLATE "C", n.start_day COLLATE "C", n.name '
        f"FROM {rows} AS n "
        "WHERE n.project_id = added.project_id AND n.trace_id = added.trace_id "
        f"AND n.parent_span_id IS NULL) AS root {_EARLIEST.format(r='root')}"
    )
    genai = ", ".join(
        f"{aggregate} AS {name}"
        for aggregate, name in zip(
            summary_genai.aggregates("", True), summary_genai.NAMES, strict=True
        )
    )
    return (
        "UPDATE trace_summaries AS summary SET "
        "start_ns = LEAST(summary.start_ns, added.start_ns), "
        "end_ns = GREATEST(summary.end_ns, added.end_ns), "
        "span_count = summary.span_count + added.spans, "
        "error_count = summary.error_count + added.errors, "
        f"root_name = CASE WHEN added.rooted THEN ({roots}) ELSE summary.root_name END, "
        "session_id = LEAST(summary.session_id, added.session_id), "
        "received_ms = GREATEST(summary.received_ms, added.received_ms), "
        f"{', '.join(summary_genai.merge_sets())} "
        "FROM (SELECT project_id, trace_id, MIN(start_ns) AS start_ns, MAX(end_ns) AS end_ns, "
        f"COUNT(*) AS spans, {_ERRORS.format(s='')} AS errors, "
        "MIN(session_id) AS session_id, MAX(received_ms) AS received_ms, "
        f"bool_or(parent_span_id IS NULL) AS rooted, {genai} FROM {rows} "
        "GROUP BY project_id, trace_id) AS added "
        "WHERE summary.project_id = added.project_id AND summary.trace_id = added.trace_id"
    )


def refresh_sqlite(
    tx: Transaction,
    rows: list[SpanRow],
    stored_traces: set[str],
    skipped: list[int],
    window_ms: int,
    repeats: bool = True,
) -> None:
    """The summaries of the traces of `rows`, just written in `tx` (`skipped`: the
    positions of those the window refused; `repeats`: whether a span comes twice).

    A trace with no stored row before the batch (not in `stored_traces`) holds exactly
    the batch's rows that were written: its summary is computed from them here, which
    costs a quarter of reading them back. The others are recomputed from what is stored.
    """
    fresh = summaries_of_written(rows, stored_traces, skipped, window_ms, repeats)
    if fresh:
        tx.executemany(_UPSERT_VALUES, fresh)
    if stored_traces:
        older = [row for row in rows if row.trace_id in stored_traces]
        for asked in traces_asked(older):
            tx.execute(_SQLITE_REFRESH, asked)


_UPSERT_VALUES = (
    f"INSERT INTO trace_summaries ({COLUMNS}) VALUES ({', '.join('?' * len(COLUMN_TYPES))}) "
    f"ON CONFLICT (project_id, trace_id) DO UPDATE SET {_KEEP_SORT}"
)
_ERROR = 2


def summaries_of_written(
    rows: list[SpanRow],
    stored_traces: set[str],
    skipped: list[int],
    window_ms: int,
    repeats: bool = True,
) -> list[tuple[object, ...]]:
    """Summary rows (in `COLUMNS` order) of the traces of `rows` not in `stored_traces`,
    as the upsert leaves them: a span's row is the first one written for its key, or a
    later one that replaced it (storage/resend.py: of other content, or the same
    received earlier); refused rows are not written."""
    if skipped or repeats:
        fresh = _as_stored(rows, stored_traces, set(skipped), window_ms)
    else:
        fresh = [row for row in rows if row.trace_id not in stored_traces]
    runs = [(trace, list(spans)) for trace, spans in groupby(fresh, _TRACE_KEY)]
    if len(runs) > len({trace for trace, _ in runs}):  # a trace's rows are not together
        traces: dict[tuple[str, str], list[SpanRow]] = {}
        for trace, spans in runs:
            traces.setdefault(trace, []).extend(spans)
        runs = list(traces.items())
    return [_summary_of(project, trace, spans) for (project, trace), spans in runs]


_TRACE_KEY = itemgetter(0, 1)  # project, trace


def _as_stored(
    rows: list[SpanRow], stored_traces: set[str], refused: set[int], window_ms: int
) -> list[SpanRow]:
    """The rows of fresh traces that the batch leaves stored, one a key."""
    fresh = ((at, row) for at, row in enumerate(rows) if row.trace_id not in stored_traces)
    return left_by(fresh, refused, window_ms)[0]


def _summary_of(project_id: str, trace_id: str, spans: list[SpanRow]) -> tuple[object, ...]:
    ends = [row.end_ns for row in spans if row.end_ns is not None]
    roots = [
        (row.start_ns, row.span_id, row.start_day, row.name)
        for row in spans
        if row.parent_span_id is None
    ]
    sessions = [row.session_id for row in spans if row.session_id is not None]
    start = min(map(_START, spans))
    described = any(row.llm_type is not None or row.user_id is not None for row in spans)
    genai = summary_genai.summary_of if described else summary_genai.plain_summary
    return (
        project_id,
        trace_id,
        start,
        start,
        max(ends) if ends else None,
        len(spans),
        list(map(_STATUS, spans)).count(_ERROR),
        min(roots)[3] if roots else None,
        min(sessions) if sessions else None,
        max(map(_RECEIVED, spans)),
        *genai(spans),
    )


_START, _STATUS, _RECEIVED = itemgetter(9), itemgetter(7), itemgetter(19)
