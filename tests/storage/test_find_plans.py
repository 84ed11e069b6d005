"""Every query of the trace list (each filter, each sort, first and later pages, the
traces with no sort value) and of the sessions list is answered through indexes on a
seeded store: no table scan of spans or of the summaries and indexes beside them, on
SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storage import newest_first, trace_list
from storage.database import Database
from storage.index_filters import index_queries
from storage.retention import make_partitions
from storage.schema import migrate
from storage.session_summaries import SessionCursor, SessionFilter, sessions_query
from storage.span_rows import SpanRow
from storage.spans import SpanStore, first_errors_query
from storage.trace_facets import name_token
from storage.trace_query import (
    NULLABLE,
    SORTS,
    Cursor,
    ScoreCondition,
    TraceFilter,
    TraceOrder,
    page_query,
    tail_query,
)
from tests.conftest import migrated_postgres
from tests.storage.rows import span_row
from tests.storage.test_trace_index import _indexed

PROJECTS = 3
TRACES = 1500  # a project
TABLES = (
    "spans", "trace_summaries", "trace_facets", "project_span_names",
    "span_texts", "trace_texts", "session_summaries", "scores",
)  # fmt: skip


def _seed_rows(project: int) -> list[SpanRow]:
    rows = []
    for trace in range(TRACES):
        start = (trace + 1) * 10**9
        for span, content in enumerate("xyz"):
            rows.append(
                _indexed(
                    span_row(
                        project=f"p{project}",
                        trace=f"{trace:032x}",
                        span=f"{span:016x}",
                        day="2026-11-23",
                        content=content if trace % 5 else "x",
                        root=span == 0,
                        start=start + span,
                        end=None if trace % 11 == 0 else start + 100 + trace,
                        error=trace % 7 == 0,
                        session=f"s{trace % 40}" if trace % 3 else None,
                    )
                )
            )
    return rows


def _seed(db: Database) -> Database:
    make_partitions(db)
    for project in range(PROJECTS):
        SpanStore(db).upsert(_seed_rows(project), 1000)
    if db.postgres:
        with db.transaction() as tx:
            for table in TABLES:
                tx.execute(f"ANALYZE {table}")
    return db


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    """A seeded store of each dialect (PostgreSQL where one is configured)."""
    if request.param == "sqlite":
        path: Path = tmp_path_factory.mktemp("plans") / "spans.db"
        db = Database(f"sqlite:///{path}")
        migrate(db)
        yield _seed(db)
        db.close()
        return
    with migrated_postgres() as db:
        yield _seed(db)


FILTERS = {
    "none": TraceFilter(),
    "q": TraceFilter(name="name y"),
    "name": TraceFilter(span_name="name z"),
    # the names' tokens read first, as the list does (storage/index_filters.py)
    "name by its tokens": TraceFilter(
        span_name="name z", span_name_tokens=(name_token("p1", "name z"),)
    ),
    "name of no span": TraceFilter(span_name="nothing", span_name_tokens=()),
    "status": TraceFilter(errors_only=True),
    "session": TraceFilter(session="s1"),
    "user": TraceFilter(user="u1"),
    "model": TraceFilter(model="gpt-4o"),
    "from/to": TraceFilter(from_ns=200 * 10**9, to_ns=300 * 10**9),
    "duration": TraceFilter(min_duration_ns=500, max_duration_ns=900),
    "cost": TraceFilter(min_cost_usd=0.1),
    "tokens": TraceFilter(min_tokens=10),
    "attr=key=value": TraceFilter(attributes=(("retries", "3"),)),
    "attr=key": TraceFilter(attributes=(("retries", None),)),
    "text": TraceFilter(words=("alpha", "bravo")),
    # read inside the texts' words: the project's texts by its index, no table scanned
    "text of a script without spaces": TraceFilter(words=("東京", "alpha")),
    "score": TraceFilter(scores=(ScoreCondition("helpful", ">=", 0.5),)),
}


def _reads(postgres: bool) -> Iterator[tuple[str, str, list[Any]]]:
    for what, filters in FILTERS.items():
        for sort in SORTS:
            for descending in (True, False):
                order = TraceOrder(sort, descending)
                # a filter of the worker's indexes that lets few traces through drives
                # the page (storage/trace_list.py)
                drivers = [None] + [0] * bool(index_queries("p1", filters, postgres))
                for after in (None, Cursor(100 * 10**9, "f" * 32, sort, descending)):
                    for driver in drivers:
                        name = f"{what} by {sort} {descending} after {after} from {driver}"
                        yield name, *page_query("p1", filters, 51, after, order, postgres, driver)
                if sort in NULLABLE:
                    after = Cursor(None, "f" * 32, sort, descending)
                    for driver in drivers:
                        yield (
                            f"{what} by {sort}, the unknown, from {driver}",
                            *tail_query("p1", filters, 51, after, order, postgres, driver),
                        )
    for name, filters in (
        ("all", SessionFilter()),
        ("user", SessionFilter(user="u1")),
        ("from/to", SessionFilter(from_ns=10**11, to_ns=2 * 10**11)),
    ):
        for cursor in (None, SessionCursor(10**12, "s5")):
            yield f"sessions {name} after {cursor}", *sessions_query("p1", filters, 51, cursor)
    yield from _listed_reads(postgres)
    yield from _newest_first_reads(postgres)


def _newest_first_reads(postgres: bool) -> Iterator[tuple[str, str, list[Any]]]:
    """A page of the newest traces read from each filter's documents."""
    after = Cursor(100 * 10**9, "f" * 32)
    if postgres:
        for what, filters in FILTERS.items():
            for cursor in (None, after):
                walk = newest_first.walk_query("p1", filters, 51, cursor)
                if walk is not None:
                    yield f"{what}: its documents walked after {cursor}", *walk
        return
    for what, filters in FILTERS.items():
        for at, found in enumerate(index_queries("p1", filters, False)):
            if found.documents is None:
                continue
            read = newest_first.plan("p1", filters, after, at, found.documents)
            yield f"{what}: its documents {at}", *read.read_query()
            yield f"{what}: its documents {at} ahead", *read.ahead_count_query(10**11)
            yield f"{what}: those {at} ahead matched", *read.ahead_query(10**11)
    yield "the traces read from documents", *newest_first.summaries_query("p1", ["a", "b"])


def _listed_reads(postgres: bool) -> Iterator[tuple[str, str, list[Any]]]:
    """A page's listed traces' spans and previews, by their keys."""
    keys = [(f"{n:032x}", f"{n:016x}", "1970-01-01") for n in range(1, 4)]
    for select in (trace_list._SPAN, trace_list._STORED_PREVIEWS, trace_list._PREVIEWS):
        yield f"listed spans {select}", *trace_list.span_query("p1", keys, postgres, select)
    # the listed traces with errors: their error spans, by their key
    errors = [(f"{n:032x}", n * 10**9, (n + 1) * 10**9) for n in range(1, 4)]
    yield "listed errors", *first_errors_query("p1", errors, postgres)


def _sqlite_scans(db: Database, sql: str, params: list[Any]) -> list[str]:
    with db.transaction() as tx:
        plan = [row[-1] for row in tx.query(f"EXPLAIN QUERY PLAN {sql}", params)]
    # SQLite names a table by its alias where it has one
    aliases = {alias for table, alias in re.findall(r"\b(\w+) AS (\w+)", sql) if table in TABLES}
    bare = re.compile(rf"SCAN ({'|'.join((*TABLES, *aliases))})( AS \w+)?$")
    return [line for line in plan if bare.match(line)]


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _postgres_scans(db: Database, sql: str, params: list[Any]) -> list[str]:
    with db.transaction() as tx:
        # a seed this small is cheaper to scan than to seek: the planner is asked for its
        # plan with scans priced out, which still scans where no index can serve
        tx.execute("SET LOCAL enable_seqscan = off")
        (answer,) = tx.query_one(f"EXPLAIN (FORMAT JSON) {sql}", params) or [None]
        document = answer if isinstance(answer, list) else json.loads(answer)
        scanned = []
        for node in _nodes(document[0]["Plan"]):
            name = node.get("Relation Name", "")
            if node["Node Type"] == "Seq Scan" and name.split("_2")[0] in TABLES:
                if tx.query_one(f"SELECT 1 FROM {name} LIMIT 1") is not None:
                    scanned.append(name)
        return scanned


def test_every_find_query_goes_through_indexes(seeded: Database) -> None:
    """No query of the trace or sessions list scans a table: each reads indexes."""
    scans = _postgres_scans if seeded.postgres else _sqlite_scans
    found = {
        what: scanned
        for what, sql, params in _reads(seeded.postgres)
        if (scanned := scans(seeded, sql, params))
    }
    assert not found, found


def _postgres_plan(db: Database, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    with db.transaction() as tx:
        tx.execute("SET LOCAL enable_seqscan = off")
        (answer,) = tx.query_one(f"EXPLAIN (FORMAT JSON) {sql}", params) or [None]
    document = answer if isinstance(answer, list) else json.loads(answer)
    return list(_nodes(document[0]["Plan"]))


@pytest.mark.parametrize("seeded", ["postgres"], indirect=True)
def test_postgres_walks_the_sort_index_for_a_root_name_most_traces_have(
    seeded: Database,
) -> None:
    """PostgreSQL: `q` kept by every trace walks the start index and stops at the page
    (the expression's statistics); it sorted the project's summaries, guessing the LIKE
    kept a few."""
    plan = _postgres_plan(
        seeded, *page_query("p1", TraceFilter(name="name"), 51, None, postgres=True)
    )
    assert not [node for node in plan if node["Node Type"] == "Sort"], plan
    assert any(node.get("Index Name") == "trace_summaries_recent" for node in plan), plan
