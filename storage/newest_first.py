"""A page of the newest traces (the list's default order) that an index filter lets
through, read from that filter's documents: on SQLite newest written first, on
PostgreSQL by their sort values (`walked`, below).

The walk storage/trace_query.py would otherwise make checks each trace of the sort's
index (for an attribute 1 trace in 20 has, about 1,000 of them for a page of 50), and
driving the page from the index reads every match first. Here FTS5 gives the filter's
documents from the newest written down, each with its ceiling (storage/
document_ceilings.py); a document's trace is a candidate when the page's other
conditions hold, and the read stops at the first document whose ceiling is below the
sort value of the page's last candidate: no document below it holds a trace the page
could list, but those whose trace's sort value is above their own ceiling (a clock
ahead), which their own index gives. Exact, and it reads about as many documents as
the page lists, whatever the size of the store.

It gives up, and the page is read as storage/trace_query.py plans it, after STREAMED
documents, or where more than AHEAD documents ahead of their ceilings could hold
traces of the page.

PostgreSQL's documents carry their trace's sort value and an index in that order, and
writers run at once (a ceiling would need them one at a time): a filter too common to
drive the page walks that index, each document joined to its summary (`walk_query`).
"""

from __future__ import annotations

import heapq
from typing import Any, NamedTuple

from storage.database import Transaction
from storage.document_ceilings import AHEAD as AHEAD_OF_CEILING
from storage.document_ceilings import CEILING
from storage.index_filters import Documents, index_queries
from storage.trace_query import SELECT_SUMMARY, Cursor, TraceFilter, TraceOrder, numbered, where

#: The most documents a page reads from its filter's index before giving up.
STREAMED = 1000
#: The most documents ahead of their ceilings a page checks one by one.
AHEAD = 64


def applies(order: TraceOrder, after: Cursor | None) -> bool:
    """Whether a page in `order` after `after` may be read from documents: newest
    first, forward."""
    forward = after is None or not after.before
    return order.sort == "start" and order.descending and forward


def walk_query(
    project_id: str, filters: TraceFilter, wanted: int, after: Cursor | None
) -> tuple[str, list[object]] | None:
    """PostgreSQL: the query of up to `wanted` summaries' rows (storage/trace_query.py's,
    the sort value last), newest first after `after`, read by a walk of the first index
    filter's documents in the order of their index by sort value and trace, each joined
    to its summary and checked there (`walked`); and every such trace of the last one's
    sort value (`tied`): the documents' ids collate in their own way ("C" for the
    texts'), which need not be the summaries'. None when no index filter has such
    documents."""
    queries = index_queries(project_id, filters, postgres=True)
    readable = [(at, q.documents) for at, q in enumerate(queries) if q.documents is not None]
    if not readable:
        return None
    at, documents = readable[0]
    conditions, params = _conditions(project_id, filters, True, at, after)
    matched = (
        "SELECT DISTINCT ON (d.doc_sort, d.doc_trace) d.doc_trace, d.doc_sort "
        "FROM (SELECT x.trace_id AS doc_trace, x.sort_ns AS doc_sort FROM "
        f"{documents.table} AS x WHERE x.project_id = ?1 AND {documents.match}) AS d "
        "JOIN trace_summaries ON trace_summaries.project_id = ?1 "
        'AND trace_summaries.trace_id = d.doc_trace COLLATE "default"'
        + "".join(f" AND {condition}" for condition in conditions)
    )
    found = 'SELECT doc_trace COLLATE "default" FROM'
    return numbered(
        f"WITH walked AS ({matched} ORDER BY d.doc_sort DESC, d.doc_trace DESC LIMIT ?), "
        f"tied AS ({matched} AND d.doc_sort = (SELECT MIN(doc_sort) FROM walked)) "
        f"{SELECT_SUMMARY}, sort_ns FROM trace_summaries WHERE project_id = ?1 AND trace_id IN "
        f"({found} walked UNION {found} tied) ORDER BY sort_ns DESC, trace_id DESC LIMIT ?",
        [*documents.params, *params, wanted, *documents.params, *params, wanted],
        project_id,
    )


def walked(
    tx: Transaction, project_id: str, filters: TraceFilter, wanted: int, after: Cursor | None
) -> list[Any] | None:
    """PostgreSQL: up to `wanted` summaries' rows by `walk_query`, for an index filter
    too common to drive the page (storage/trace_list.py), where a walk of the summaries
    checked each by a seek of its documents; None when no index filter has documents
    read so."""
    query = walk_query(project_id, filters, wanted, after)
    if query is None:
        return None
    # the documents' sort index, not their GIN index (whose matches would all be read
    # and sorted): the filter lets many traces through
    tx.execute("SET LOCAL enable_bitmapscan = off")
    rows = tx.query(*query)
    tx.execute("SET LOCAL enable_bitmapscan = on")
    return rows


class _Candidates:
    """The traces a page may list, the best `wanted` kept (a heap: the last on top)."""

    def __init__(self, wanted: int) -> None:
        self.wanted = wanted
        self.best: list[tuple[int, str]] = []
        self.taken: set[str] = set()

    def take(self, trace_id: str, sort_ns: int | None) -> None:
        """A document's trace, with its sort value where the page may list it."""
        if sort_ns is None or trace_id in self.taken:
            return
        self.taken.add(trace_id)
        heapq.heappush(self.best, (sort_ns, trace_id))
        if len(self.best) > self.wanted:
            heapq.heappop(self.best)

    def beyond(self, ceiling: int) -> bool:
        """Whether no trace whose sort value is at most `ceiling` can be on the page."""
        return len(self.best) == self.wanted and ceiling < self.best[0][0]


class Plan(NamedTuple):
    """A page's read of one filter's documents: the project, the documents, and the
    page's other conditions on trace_summaries (SQL) with their parameters."""

    project_id: str
    documents: Documents
    conditions: str
    params: list[object]

    def _listed(self, alias: str) -> str:
        """SQL of the sort value of document `alias`'s trace where the page's conditions
        let the page list it, else NULL."""
        return (
            f"(SELECT CASE WHEN {self.conditions} THEN sort_ns END FROM trace_summaries "
            f"WHERE project_id = ?1 AND trace_id = {alias}.trace_id AND {alias}.project_id = ?1)"
        )

    def read_query(self) -> tuple[str, list[object]]:
        """The filter's documents newest first, at most STREAMED: each one's number,
        trace, ceiling, and its trace's sort value where the page may list it."""
        fts, documents = self.documents.fts, self.documents
        return numbered(
            f"SELECT d.id, d.trace_id, d.c, {self._listed('d')} FROM (SELECT x.id AS id, "
            f"x.trace_id AS trace_id, x.project_id AS project_id, {CEILING.format(x='x')} AS c "
            f"FROM (SELECT rowid AS r FROM {fts} WHERE {fts} MATCH {documents.match} "
            f"ORDER BY rowid DESC LIMIT ?) AS f CROSS JOIN {documents.table} AS x "
            "ON x.id = f.r) AS d",
            [*self.params, *documents.params, STREAMED],
            self.project_id,
        )

    def _near(self) -> str:
        return (
            f"FROM {self.documents.table} AS x WHERE x.project_id = ?1 "
            f"AND {AHEAD_OF_CEILING.format(x='x')} AND x.sort_ns >= ?"
        )

    def ahead_count_query(self, least: int) -> tuple[str, list[object]]:
        """How many documents have a sort value above their ceiling and at least `least`
        (counted up to AHEAD + 1): those below where the read stopped, and those above,
        which it read (a bound on the rows the index gives, where one on those below
        alone walked every document ahead written since)."""
        return numbered(
            f"SELECT COUNT(*) FROM (SELECT 1 {self._near()} LIMIT ?)",
            [least, AHEAD + 1],
            self.project_id,
        )

    def ahead_query(self, least: int) -> tuple[str, list[object]]:
        """Those of them the filter matches: each one's trace, and its sort value where
        the page may list it."""
        fts = self.documents.fts
        return numbered(
            f"SELECT x.trace_id, {self._listed('x')} {self._near()} AND EXISTS "
            f"(SELECT 1 FROM {fts} WHERE {fts} MATCH {self.documents.match} AND rowid = x.id)",
            [*self.params, least, *self.documents.params],
            self.project_id,
        )


def _conditions(
    project_id: str, filters: TraceFilter, postgres: bool, at: int, after: Cursor | None
) -> tuple[list[str], list[object]]:
    """The page's conditions on trace_summaries but index filter `at`'s, which its
    documents answer, and the cursor's; their parameters."""
    conditions, params = where(project_id, filters, postgres, driver=at)
    if after is not None:
        conditions.append(
            "(trace_summaries.sort_ns < ? OR (trace_summaries.sort_ns = ? "
            "AND trace_summaries.trace_id < ?))"
        )
        params += [after.value, after.value, after.trace_id]
    return conditions, params


def plan(
    project_id: str, filters: TraceFilter, after: Cursor | None, at: int, documents: Documents
) -> Plan:
    """SQLite: the read of the documents of index filter `at` (of `index_queries`)."""
    conditions, params = _conditions(project_id, filters, False, at, after)
    return Plan(project_id, documents, " AND ".join(conditions) or "1", params)


def summaries_query(project_id: str, traces: list[str]) -> tuple[str, list[object]]:
    """The rows of these traces' summaries (storage/trace_query.py's, the sort value
    last), in no order: an ORDER BY had SQLite walk the project's sort index."""
    return (
        f"{SELECT_SUMMARY}, sort_ns FROM trace_summaries WHERE project_id = ? AND trace_id IN "
        f"({', '.join('?' * len(traces))})",
        [project_id, *traces],
    )


def rows(
    tx: Transaction, project_id: str, filters: TraceFilter, wanted: int, after: Cursor | None
) -> list[Any] | None:
    """Up to `wanted` summaries' rows (storage/trace_query.py's, the sort value last),
    newest first after `after`; None when no index filter's documents can be read so,
    or the read gave up."""
    queries = index_queries(project_id, filters, postgres=False)
    readable = [(at, q.documents) for at, q in enumerate(queries) if q.documents is not None]
    if not readable or wanted <= 0:
        return None
    read = plan(
        project_id, filters, after, *(readable[0] if len(readable) == 1 else _fewest(tx, readable))
    )
    candidates = _Candidates(wanted)
    stop = _read(tx, read, candidates)
    if stop is False:
        return None
    if stop is not None:
        ahead = _ahead(tx, read, candidates.best[0][0])
        if ahead is None:
            return None
        for trace_id, sort_ns in ahead:
            candidates.take(trace_id, sort_ns)
    if not candidates.best:
        return []
    found = tx.query(*summaries_query(project_id, [trace for _, trace in candidates.best]))
    return sorted(found, key=lambda row: (row[-1], row[0]), reverse=True)


def _read(tx: Transaction, read: Plan, candidates: _Candidates) -> int | None | bool:
    """Read the filter's documents newest first into `candidates`; the number of the
    document the read stopped at (its ceiling under the page's last), None when it read
    them all, False when it gave up after STREAMED."""
    count = 0
    for doc_id, trace_id, ceiling, sort_ns in tx.stream(*read.read_query()):
        if candidates.beyond(ceiling):
            return int(doc_id)
        candidates.take(trace_id, sort_ns)
        count += 1
    return False if count >= STREAMED else None


def _ahead(tx: Transaction, read: Plan, least: int) -> list[tuple[str, int | None]] | None:
    """The traces of the documents whose sort value, above their ceiling, is at least
    `least` and which the filter matches, each with its sort value where the page may
    list it; None when more than AHEAD could be."""
    counted = tx.query_one(*read.ahead_count_query(least))
    if counted is None or counted[0] > AHEAD:
        return None
    if counted[0] == 0:
        return []
    return [(trace_id, sort_ns) for trace_id, sort_ns in tx.query(*read.ahead_query(least))]


def _fewest(tx: Transaction, readable: list[tuple[int, Documents]]) -> tuple[int, Documents]:
    """Of several filters' documents, those with the fewest matches (each counted up to
    STREAMED, every project's: a guess, which only the cost depends on)."""
    counts = []
    for at, documents in readable:
        counted = tx.query_one(
            f"SELECT COUNT(*) FROM (SELECT rowid FROM {documents.fts} WHERE "
            f"{documents.fts} MATCH {documents.match} LIMIT ?)",
            (*documents.params, STREAMED),
        )
        counts.append((STREAMED if counted is None else counted[0], at, documents))
    _, at, documents = min(counts, key=lambda count: count[:2])
    return at, documents
