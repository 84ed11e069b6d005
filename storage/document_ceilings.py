"""What lets a page of the newest traces read an index's documents in their traces'
order, and on SQLite stop early (storage/newest_first.py reads them).

The documents of the worker's indexes (`trace_texts`, `trace_facets`: storage/
trace_texts.py, storage/trace_facets.py) are numbered in the order they are written,
and FTS5 reads a word's or a token's documents from the highest number down: newest
written first, which is not their traces' order. Each document is therefore written
with two numbers (schema migration 26):

* `sort_ns`: its trace's sort value (the summary's, storage/trace_summaries.py), which
  never changes while the trace has spans but where erasure or retention recounts the
  summary; the documents of such a trace are then made anew (`resorted`), as numbers
  above every other.
* `ceiling`: the highest sort value of any document numbered at or below it, so far as
  its trace's was no later than the clock when it was written: a document read with a
  ceiling under the sort value of a page's last trace has no document below it that
  the page could hold, but those whose sort value is above their own ceiling (a trace
  whose clock ran ahead of the store's: `ahead`, an index of those alone). A trace's
  start is earlier than when its spans are stored, but for a clock ahead; capping what
  enters the ceiling at the clock keeps one span dated next year from lifting every
  ceiling after it.

The documents stored before the columns existed have neither: `document_ceiling_floor`
holds the highest sort value of any summary then, their ceiling. PostgreSQL's documents
carry the sort value alone (its writers run at once, and a ceiling would need them one
at a time), the stored ones given theirs by the migration.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from storage.database import Transaction, arrays

_INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: The tables of documents that carry the numbers.
DOCUMENTS = ("trace_texts", "trace_facets")
#: Schema migration 26 (SQLite: PostgreSQL reads its documents otherwise).
SQLITE_MIGRATION = (
    *(f"ALTER TABLE {table} ADD COLUMN sort_ns BIGINT" for table in DOCUMENTS),
    *(f"ALTER TABLE {table} ADD COLUMN ceiling BIGINT" for table in DOCUMENTS),
    "CREATE TABLE document_ceiling_floor (ceiling BIGINT NOT NULL)",
    "INSERT INTO document_ceiling_floor "
    f"SELECT COALESCE(MAX(sort_ns), {_INT64_MIN}) FROM trace_summaries",
    *(
        f"CREATE INDEX {table}_ahead ON {table} (project_id, sort_ns) WHERE sort_ns > ceiling"
        for table in DOCUMENTS
    ),
)
#: Schema migration 26 on PostgreSQL: the sort values alone, of the documents stored too,
#: and an index in their order (storage/newest_first.py walks it).
POSTGRES_MIGRATION = (
    *(f"ALTER TABLE {table} ADD COLUMN sort_ns BIGINT" for table in DOCUMENTS),
    *(
        f"UPDATE {table} AS x SET sort_ns = s.sort_ns FROM trace_summaries AS s "
        "WHERE s.project_id = x.project_id AND s.trace_id = x.trace_id"
        for table in DOCUMENTS
    ),
    *(
        f"CREATE INDEX {table}_sorted ON {table} (project_id, sort_ns, trace_id)"
        for table in DOCUMENTS
    ),
)
#: A document's ceiling as read: its own, or the floor's for one stored before.
CEILING = "COALESCE({x}.ceiling, (SELECT ceiling FROM document_ceiling_floor))"
#: SQL of whether document `{x}` is above its own ceiling (the `ahead` index's rows).
AHEAD = "{x}.sort_ns > {x}.ceiling"
_ASKED = 500  # traces a query


def now_ns() -> int:
    """The clock a ceiling is capped at."""
    return time.time_ns()


def marked(
    tx: Transaction, table: str, rows: Sequence[tuple[str, ...]]
) -> tuple[int, list[tuple[object, ...]]]:
    """The highest number of `table`'s documents (0: none), and `rows` (project, trace,
    ..., written in this order into `table`, after the summaries of their traces) each
    with its trace's sort value and its ceiling. A trace without a summary (none is
    written so) takes the highest sort value: never under a ceiling, always found as
    `ahead`."""
    top = tx.query_one(
        f"SELECT COALESCE(MAX(x.id), 0), COALESCE((SELECT {CEILING.format(x='y')} FROM {table} "
        "AS y ORDER BY y.id DESC LIMIT 1), (SELECT ceiling FROM document_ceiling_floor)) "
        f"FROM {table} AS x"
    )
    number, ceiling = (0, None) if top is None else top
    if ceiling is None:
        ceiling = _INT64_MIN
    sorts = sort_values(tx, {(row[0], row[1]) for row in rows})
    clock = now_ns()
    out: list[tuple[object, ...]] = []
    for row in rows:
        sort_ns = sorts.get((row[0], row[1]), INT64_MAX)
        ceiling = max(ceiling, min(sort_ns, clock))
        out.append((*row, sort_ns, ceiling))
    return number, out


def sort_values(tx: Transaction, traces: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The summaries' sort values of these (project, trace), where they have one: each
    by the summaries' key (`trace_id IN` a list had either store walk the project's
    summaries, as many rows as it has)."""
    pairs = sorted(traces)
    if tx.postgres:
        rows = tx.query(
            "SELECT s.project_id, s.trace_id, s.sort_ns FROM unnest(?::text[], ?::text[]) "
            "AS k (project_id, trace_id) JOIN trace_summaries AS s "
            "ON s.project_id = k.project_id AND s.trace_id = k.trace_id",
            arrays(pairs) if pairs else [[], []],
        )
        return {(project, trace): sort_ns for project, trace, sort_ns in rows}
    found: dict[tuple[str, str], int] = {}
    for at in range(0, len(pairs), _ASKED):
        asked = pairs[at : at + _ASKED]
        rows = tx.query(
            f"WITH k (p, t) AS (VALUES {', '.join(['(?, ?)'] * len(asked))}) "
            "SELECT k.p, k.t, s.sort_ns FROM k CROSS JOIN trace_summaries AS s "
            "ON s.project_id = k.p AND s.trace_id = k.t",
            [value for pair in asked for value in pair],
        )
        found.update(((project, trace), sort_ns) for project, trace, sort_ns in rows)
    return found


def resorted(
    tx: Transaction, traces: Iterable[tuple[str, str]]
) -> tuple[set[tuple[str, str]], set[tuple[str, str, str]]]:
    """Of these (project, trace), whose summaries were just recounted, those whose
    documents of tokens carry another sort value than the summary's (or none), and the
    (project, trace, day) of their texts that do: to be made anew on SQLite (their
    ceilings with them). PostgreSQL's, which have no ceiling, take the summary's where
    they are (none is returned)."""
    asked = sorted(set(traces))
    if tx.postgres:
        for table in DOCUMENTS if asked else ():
            tx.execute(
                f"UPDATE {table} AS x SET sort_ns = s.sort_ns FROM trace_summaries AS s, "
                "unnest(?::text[], ?::text[]) AS asked (project_id, trace_id) "
                "WHERE x.project_id = asked.project_id AND x.trace_id = asked.trace_id "
                "AND s.project_id = x.project_id AND s.trace_id = x.trace_id "
                "AND x.sort_ns IS DISTINCT FROM s.sort_ns",
                arrays(asked),
            )
        return set(), set()
    facets, days = set[tuple[str, str]](), set[tuple[str, str, str]]()
    differs = (
        "x.sort_ns IS NOT (SELECT s.sort_ns FROM trace_summaries AS s "
        "WHERE s.project_id = x.project_id AND s.trace_id = x.trace_id)"
    )
    for project, trace in asked:
        key = (project, trace)
        if tx.query_one(
            f"SELECT 1 FROM trace_facets AS x WHERE x.project_id = ? AND x.trace_id = ? "
            f"AND {differs} LIMIT 1",
            key,
        ):
            facets.add(key)
        days.update(
            (project, trace, day)
            for (day,) in tx.query(
                "SELECT DISTINCT x.start_day FROM trace_texts AS x WHERE x.project_id = ? "
                f"AND x.trace_id = ? AND {differs}",
                key,
            )
        )
    return facets, days
