"""Schema creation: idempotent, and safe when several processes start at once."""

from __future__ import annotations

import logging
import multiprocessing
from pathlib import Path

import pytest

from storage import schema
from storage.database import Database
from storage.errors import StoreError, StoreUnavailable
from storage.schema import MIGRATIONS, WALKS_FROM, migrate, refuse_newer


def _migrate_and_use(url: str) -> str:
    from storage.identity import IdentityStore

    db = Database(url)
    try:
        migrate(db)
        return str(len(IdentityStore(db).list_projects()))
    except Exception as e:  # reported to the parent, which fails the test with it
        return f"{type(e).__name__}: {e}"
    finally:
        db.close()


def test_migrate_twice_is_a_no_op(database: Database) -> None:
    """Running the migrations again changes nothing and records each version once."""
    assert migrate(database) == len(MIGRATIONS)
    with database.transaction() as tx:
        versions = [row[0] for row in tx.query("SELECT version FROM schema_migrations")]
    assert versions == list(range(1, len(MIGRATIONS) + 1))


def test_concurrent_start_up(database_url: str) -> None:
    """Eight processes migrating one fresh database at once all succeed."""
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        results = pool.map(_migrate_and_use, [database_url] * 8)
    assert results == ["0"] * 8
    db = Database(database_url)
    with db.transaction() as tx:
        assert tx.query_one("SELECT COUNT(*) FROM schema_migrations") == (len(MIGRATIONS),)
    db.close()


def test_scores_given_by_keys_survive_the_table_made_anew(database_url: str) -> None:
    """Scores stored before a score could be given by a user keep every field and key."""
    db = Database(database_url)
    try:
        migrate(db, until=8)
        with db.transaction() as tx:
            tx.execute("INSERT INTO organizations VALUES ('o', 'default', 'then')")
            tx.execute(
                "INSERT INTO users (id, email, org_id, role, created_at) "
                "VALUES ('u', 'a@x.io', 'o', 'owner', 'then')"
            )
            tx.execute("INSERT INTO projects VALUES ('p', 'demo', 'o', 'then')")
            tx.execute("INSERT INTO api_keys VALUES ('k', 'h', 'sgk_', 'p', 'u', 'then', NULL)")
            tx.execute(
                "INSERT INTO scores VALUES ('s', 'p', ?, NULL, 'n', 0.5, 'c', 'api', 'k', 'then')",
                ("a" * 32,),
            )
        migrate(db)
        with db.transaction() as tx:
            row = tx.query_one("SELECT id, score, comment, key_id, user_id FROM scores")
        assert row == ("s", 0.5, "c", "k", None)
    finally:
        db.close()


def test_a_store_a_newer_build_migrated_is_refused(database: Database) -> None:
    """A worker of this build refuses a schema past its migrations; the versions that
    record a walk over the stored traces are no migration's."""
    migrate(database)
    refuse_newer(database)
    with database.transaction() as tx:
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'now'), (?, 'now')",
            (WALKS_FROM + 99, len(MIGRATIONS) + 1),
        )
    with pytest.raises(StoreError, match=f"version {len(MIGRATIONS) + 1}, newer than"):
        refuse_newer(database)


def test_every_walk_has_a_version_of_its_own() -> None:
    """Two walks recorded under one version: a store the first one recorded (any store
    it walked, however empty) would never have the second done."""
    from storage import find_upgrade, genai_upgrade

    versions = [
        value
        for module in (find_upgrade, genai_upgrade)
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, int) and value >= WALKS_FROM
    ]
    assert len(versions) >= 9 and len(versions) == len(set(versions))


async def test_a_migration_refused_is_logged_as_an_error_and_tried_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """A database that does not answer is waited for (a warning); one that refuses the
    migration (a user without the privileges it needs) is an error, tried again until
    an operator mends it."""
    failures: list[StoreError] = [
        StoreUnavailable("database is unreachable"),
        StoreError("database error: must be owner of index trace_texts_words"),
    ]

    def migrated(db: Database) -> int:
        if failures:
            raise failures.pop(0)
        return len(MIGRATIONS)

    monkeypatch.setattr(schema, "migrate", migrated)
    monkeypatch.setattr(schema, "MIGRATE_RETRY_S", 0.0)
    log = logging.getLogger("spangate.test")
    with caplog.at_level(logging.WARNING, logger="spangate.test"):
        await schema.migrate_when_reachable(Database(f"sqlite:///{tmp_path / 's.db'}"), log)
    assert [(r.levelname, r.getMessage(), r.__dict__["error"]) for r in caplog.records] == [
        ("WARNING", "database not ready; retrying", "database is unreachable"),
        ("ERROR", "database migration failed; retrying",
         "database error: must be owner of index trace_texts_words"),
    ]  # fmt: skip
