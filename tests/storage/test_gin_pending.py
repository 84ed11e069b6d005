"""PostgreSQL: a batch's transaction merges the find indexes' GIN pending lists."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import orjson
import pytest

from storage import find_upgrade, gin_pending
from storage.database import Database
from storage.span_rows import SpanRow
from storage.spans import SpanStore
from tests.conftest import migrated_postgres
from tests.storage.rows import span_row


@pytest.fixture
def postgres_store() -> Iterator[Database]:
    """A migrated PostgreSQL schema of the test's own (one it may change)."""
    with migrated_postgres() as db:
        yield db


def _call(trace: str, span: str, answer: str) -> SpanRow:
    said = [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.output.messages", "value": {"stringValue": orjson.dumps(said).decode()}},
        {"key": "tenant", "value": {"stringValue": f"tenant-{trace}"}},
    ]
    return span_row(trace=trace, span=span, content=span)._replace(
        attributes=orjson.dumps(attributes).decode(), llm_type="llm"
    )


def _pending_pages(db: Database) -> dict[str, int]:
    """The pages each index's pending list holds (merging them: what is left after)."""
    with db.transaction() as tx:
        return {
            index: tx.query_one(f"SELECT gin_clean_pending_list('{index}'::regclass)")[0]
            for index in gin_pending.INDEXES
        }


def test_a_batch_leaves_no_pending_entries(postgres_database: Database) -> None:
    """The words and tokens a batch gives its documents are in the indexes' trees when
    it commits, where they would wait in the pending lists (4 MB of them) without the
    merge; the lists' limit is the migration's."""
    db = postgres_database
    with db.transaction() as tx:
        options = dict(
            tx.query(
                "SELECT relname, reloptions::text FROM pg_class "
                "WHERE relname = ANY(?) AND relnamespace = current_schema()::regnamespace",
                (list(gin_pending.INDEXES),),
            )
        )
    assert options == {
        index: f"{{gin_pending_list_limit={gin_pending.LIMIT_KB}}}" for index in gin_pending.INDEXES
    }
    store = SpanStore(db)
    store.upsert([_call(f"t{n}", "1", f"answer number {n} zyzzyva") for n in range(50)], 1000)
    assert _pending_pages(db) == {index: 0 for index in gin_pending.INDEXES}
    with db.transaction() as tx:  # what a merge would find: some, without the worker's
        tx.execute("INSERT INTO trace_facets (project_id, trace_id, tokens, sort_ns) "
                   "VALUES ('p', 'x', ARRAY[1, 2, 3], 0)")  # fmt: skip
    assert _pending_pages(db)["trace_facets_tokens"] > 0


def test_a_writer_that_does_not_own_the_indexes_writes(postgres_database: Database) -> None:
    """A database user with the tables' privileges but not the indexes' ownership
    writes its batch; the lists then wait for the inserts' merges."""
    db = postgres_database
    role = f"spangate_writer_{uuid.uuid4().hex[:8]}"
    with db.transaction() as tx:
        tx.execute(f"CREATE ROLE {role}")
        tx.execute(f"GRANT USAGE ON SCHEMA {_schema(db)} TO {role}")
        tx.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA {_schema(db)} TO {role}")
        tx.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA {_schema(db)} TO {role}")
    try:
        with db.transaction() as tx:
            tx.execute(f"SET LOCAL ROLE {role}")
            SpanStore(db).write(tx, [_call("owned", "1", "not by me")], 1000)
        with db.transaction() as tx:
            found = tx.query("SELECT trace_id FROM trace_texts WHERE trace_id = 'owned'")
        assert found == [("owned",)]
    finally:
        with db.transaction() as tx:
            tx.execute(f"DROP OWNED BY {role}")
            tx.execute(f"DROP ROLE {role}")


def _schema(db: Database) -> str:
    with db.transaction() as tx:
        row = tx.query_one("SELECT current_schema()")
    assert row is not None
    return str(row[0])


@pytest.mark.parametrize(
    "remade",
    [
        "DROP INDEX trace_texts_words",
        "DROP INDEX trace_facets_tokens; "
        "CREATE INDEX trace_facets_tokens ON trace_facets (trace_id)",
    ],
)
def test_a_store_without_one_of_the_indexes_writes(postgres_store: Database, remade: str) -> None:
    """An index an operator dropped, or made anew of another kind, is not merged; the
    batch is written, and the other index's list merged."""
    db = postgres_store
    with db.transaction() as tx:
        for statement in remade.split("; "):
            tx.execute(statement)
    SpanStore(db).upsert([_call(f"t{n}", "1", f"answer {n}") for n in range(20)], 1000)
    with db.transaction() as tx:
        assert tx.query_one("SELECT COUNT(*) FROM trace_texts")[0] == 20
        gin = tx.query(
            "SELECT index.relname FROM pg_class AS index JOIN pg_am AS method ON "
            "method.oid = index.relam AND method.amname = 'gin' WHERE index.relnamespace = "
            "current_schema()::regnamespace"
        )
    left = [name for (name,) in gin]
    assert len(left) == 1
    with db.transaction() as tx:
        assert tx.query_one(f"SELECT gin_clean_pending_list('{left[0]}'::regclass)")[0] == 0


def test_a_walk_over_the_stored_traces_leaves_the_merge_to_the_batches(
    postgres_store: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk that indexes each stored trace anew does not merge trace by trace (a
    trace's words merged alone cost as much as a batch's); a batch after it merges."""
    db = postgres_store
    store = SpanStore(db)
    store.upsert([_call(f"t{n}", "1", f"answer {n}") for n in range(30)], 1000)
    with db.transaction() as tx:  # as a store the find indexes came to
        tx.execute("DELETE FROM trace_texts")
        tx.execute("DELETE FROM trace_facets")
        tx.execute("DELETE FROM schema_migrations WHERE version = ?", (find_upgrade.UPGRADED,))
    merges = []
    merge = gin_pending.merge
    monkeypatch.setattr(gin_pending, "merge", lambda tx: merges.append(merge(tx)))
    assert find_upgrade.upgrade(db) == 30
    assert merges == []
    with db.transaction() as tx:
        assert tx.query_one("SELECT COUNT(*) FROM trace_texts")[0] == 30
    store.upsert([_call("later", "1", "a later answer")], 1000)
    assert len(merges) == 1
    assert _pending_pages(db) == {index: 0 for index in gin_pending.INDEXES}
