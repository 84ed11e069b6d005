"""The schema, as numbered migrations applied once each, safe when processes race.

Every process calls `migrate` at start-up. SQLite serialises it with BEGIN IMMEDIATE
(the others wait on the busy timeout); PostgreSQL with a transaction-scoped advisory
lock. Both dialects run the same DDL (TEXT ids and ISO 8601 UTC times, BIGINT numbers),
but for what only PostgreSQL has (PostgresOnly): the span table's partitions.
"""

from __future__ import annotations

import asyncio
import logging

from storage import (
    document_ceilings,
    find_schema,
    gin_pending,
    session_summaries,
    summary_genai,
)
from storage.clock import utc_now_iso
from storage.database import Database, Transaction
from storage.errors import StoreError, StoreUnavailable
from storage.resend import COLUMN_TYPES, FIELDS
from storage.trace_summaries import BACKFILL_SUMMARIES

_ADVISORY_LOCK_ID = 0x5350414E  # "SPAN"
#: The span columns of the GenAI view's facts: SpanRow's fields after its first 20.
SPAN_GENAI_COLUMNS = tuple(zip(FIELDS[20:], COLUMN_TYPES[20:], strict=True))


class PostgresOnly(tuple[str, ...]):
    """A migration's statements that only PostgreSQL runs (SQLite records the version)."""


class ByDialect(tuple[tuple[str, ...], tuple[str, ...]]):
    """A migration whose statements differ by dialect: (SQLite's, PostgreSQL's)."""


MIGRATIONS: tuple[tuple[str, ...] | ByDialect, ...] = (
    (  # 1: identity
        """CREATE TABLE organizations (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL)""",
        """CREATE TABLE users (
            id TEXT PRIMARY KEY,
            email TEXT NOT NULL UNIQUE,
            org_id TEXT NOT NULL REFERENCES organizations(id),
            role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
            created_at TEXT NOT NULL)""",
        """CREATE TABLE projects (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            org_id TEXT NOT NULL REFERENCES organizations(id),
            created_at TEXT NOT NULL)""",
        """CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            key_hash TEXT NOT NULL UNIQUE,
            prefix TEXT NOT NULL,
            project_id TEXT NOT NULL REFERENCES projects(id),
            user_id TEXT NOT NULL REFERENCES users(id),
            created_at TEXT NOT NULL,
            revoked_at TEXT)""",
        "CREATE INDEX api_keys_project ON api_keys (project_id)",
    ),
    (  # 2: scores
        """CREATE TABLE scores (
            id TEXT PRIMARY KEY,
            project_id TEXT NOT NULL REFERENCES projects(id),
            trace_id TEXT NOT NULL,
            span_id TEXT,
            name TEXT NOT NULL,
            score DOUBLE PRECISION NOT NULL CHECK (score >= 0 AND score <= 1),
            comment TEXT,
            source TEXT NOT NULL CHECK (source IN ('api', 'sdk', 'ui', 'eval')),
            key_id TEXT NOT NULL REFERENCES api_keys(id),
            created_at TEXT NOT NULL)""",
        "CREATE INDEX scores_trace ON scores (project_id, trace_id)",
    ),
    (  # 3: spans. One row per (span, UTC day of its start): the re-sending rules
        # make a changed span sent after the window replace the row of its start day, or
        # add a row when it starts on another day.
        """CREATE TABLE spans (
            project_id TEXT NOT NULL,
            trace_id TEXT NOT NULL,
            span_id TEXT NOT NULL,
            start_day TEXT NOT NULL,
            parent_span_id TEXT,
            name TEXT NOT NULL,
            kind TEXT NOT NULL,
            status_code BIGINT NOT NULL,
            status_message TEXT,
            start_ns BIGINT NOT NULL,
            end_ns BIGINT,
            session_id TEXT,
            attributes TEXT NOT NULL,
            events TEXT NOT NULL,
            links TEXT NOT NULL,
            extras TEXT NOT NULL,
            resource TEXT NOT NULL,
            scope TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            received_ms BIGINT NOT NULL,
            PRIMARY KEY (project_id, trace_id, span_id, start_day))""",
        "CREATE INDEX spans_trace_start ON spans (project_id, start_ns)",
    ),
    (  # 4: that index served no query better than the primary key (project, trace,
        # span, day): SQLite even chose it for `traces show`, scanning the project's
        # spans by time instead of seeking its trace; every span write paid for it.
        "DROP INDEX IF EXISTS spans_trace_start",
    ),
    (  # 5: a per-trace summary the worker keeps in the transaction that writes the
        # spans (storage/trace_summaries.py), so the trace list never reads spans; the
        # spans already stored get theirs here.
        """CREATE TABLE trace_summaries (
            project_id TEXT NOT NULL,
            trace_id TEXT NOT NULL,
            sort_ns BIGINT NOT NULL,
            start_ns BIGINT NOT NULL,
            end_ns BIGINT,
            span_count BIGINT NOT NULL,
            error_count BIGINT NOT NULL,
            root_name TEXT,
            session_id TEXT,
            received_ms BIGINT NOT NULL,
            PRIMARY KEY (project_id, trace_id))""",
        "CREATE INDEX trace_summaries_recent ON trace_summaries (project_id, sort_ns, trace_id)",
        "CREATE INDEX trace_summaries_errors ON trace_summaries (project_id, sort_ns, trace_id) "
        "WHERE error_count > 0",
        "CREATE INDEX trace_summaries_session ON trace_summaries "
        "(project_id, session_id, sort_ns, trace_id) WHERE session_id IS NOT NULL",
        BACKFILL_SUMMARIES,
    ),
    (  # 6: dashboard sign-in: password hashes, server-side sessions, failed attempts
        # (storage/passwords.py, storage/web_sessions.py).
        "ALTER TABLE users ADD COLUMN password_hash TEXT",
        """CREATE TABLE web_sessions (
            token_hash TEXT PRIMARY KEY,
            user_id TEXT NOT NULL REFERENCES users(id),
            csrf_token TEXT NOT NULL,
            created_at TEXT NOT NULL,
            expires_ms BIGINT NOT NULL)""",
        "CREATE INDEX web_sessions_user ON web_sessions (user_id)",
        """CREATE TABLE login_failures (
            email TEXT NOT NULL,
            at_ms BIGINT NOT NULL)""",
        "CREATE INDEX login_failures_email ON login_failures (email, at_ms)",
    ),
    (  # 7: alert rules and webhooks, which operators add (storage/alerts.py,
        # storage/webhooks.py); evaluation and delivery are off during the beta.
        """CREATE TABLE alert_rules (
            id TEXT PRIMARY KEY,
            project_id TEXT NOT NULL REFERENCES projects(id),
            name TEXT NOT NULL,
            condition TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'paused')),
            created_at TEXT NOT NULL)""",
        "CREATE INDEX alert_rules_project ON alert_rules (project_id, created_at)",
        """CREATE TABLE alert_history (
            rule_id TEXT NOT NULL REFERENCES alert_rules(id),
            at TEXT NOT NULL,
            event TEXT NOT NULL CHECK (event IN ('created', 'paused', 'resumed', 'triggered')),
            actor TEXT NOT NULL)""",
        "CREATE INDEX alert_history_rule ON alert_history (rule_id, at)",
        """CREATE TABLE webhooks (
            id TEXT PRIMARY KEY,
            project_id TEXT NOT NULL REFERENCES projects(id),
            url TEXT NOT NULL,
            events TEXT NOT NULL,
            created_at TEXT NOT NULL)""",
        "CREATE INDEX webhooks_project ON webhooks (project_id, created_at)",
    ),
    (  # 8: datasets, made and kept in the dashboard (storage/datasets.py)
        """CREATE TABLE datasets (
            id TEXT PRIMARY KEY,
            project_id TEXT NOT NULL REFERENCES projects(id),
            name TEXT NOT NULL,
            description TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (project_id, name))""",
        """CREATE TABLE dataset_items (
            dataset_id TEXT NOT NULL REFERENCES datasets(id),
            position BIGINT NOT NULL,
            input TEXT NOT NULL,
            expected TEXT,
            PRIMARY KEY (dataset_id, position))""",
    ),
    (  # 9: a score is given by an API key or, in the dashboard, by a user: the table is
        # made anew (SQLite cannot drop a NOT NULL) with key_id or user_id set.
        """CREATE TABLE scores_by (
            id TEXT PRIMARY KEY,
            project_id TEXT NOT NULL REFERENCES projects(id),
            trace_id TEXT NOT NULL,
            span_id TEXT,
            name TEXT NOT NULL,
            score DOUBLE PRECISION NOT NULL CHECK (score >= 0 AND score <= 1),
            comment TEXT,
            source TEXT NOT NULL CHECK (source IN ('api', 'sdk', 'ui', 'eval')),
            key_id TEXT REFERENCES api_keys(id),
            user_id TEXT REFERENCES users(id),
            created_at TEXT NOT NULL,
            CHECK (key_id IS NOT NULL OR user_id IS NOT NULL))""",
        "INSERT INTO scores_by (id, project_id, trace_id, span_id, name, score, comment, "
        "source, key_id, user_id, created_at) SELECT id, project_id, trace_id, span_id, name, "
        "score, comment, source, key_id, NULL, created_at FROM scores",
        "DROP TABLE scores",
        "ALTER TABLE scores_by RENAME TO scores",
        "CREATE INDEX scores_trace ON scores (project_id, trace_id)",
    ),
    PostgresOnly(  # 10: span rows partitioned by start day, so that old days are dropped
        # whole (storage/partitions.py); rows of a day with no partition of its own go to
        # the default one. Ids compare byte by byte (COLLATE "C"): they are hex and
        # ASCII, and the key's comparisons were a tenth of an insert's cost.
        (
            "ALTER TABLE spans RENAME TO spans_unpartitioned",
            "ALTER INDEX spans_pkey RENAME TO spans_unpartitioned_pkey",
            """CREATE TABLE spans (
                project_id TEXT COLLATE "C" NOT NULL,
                trace_id TEXT COLLATE "C" NOT NULL,
                span_id TEXT COLLATE "C" NOT NULL,
                start_day TEXT COLLATE "C" NOT NULL,
                parent_span_id TEXT,
                name TEXT NOT NULL,
                kind TEXT NOT NULL,
                status_code BIGINT NOT NULL,
                status_message TEXT,
                start_ns BIGINT NOT NULL,
                end_ns BIGINT,
                session_id TEXT,
                attributes TEXT NOT NULL,
                events TEXT NOT NULL,
                links TEXT NOT NULL,
                extras TEXT NOT NULL,
                resource TEXT NOT NULL,
                scope TEXT NOT NULL,
                content_hash TEXT NOT NULL,
                received_ms BIGINT NOT NULL,
                PRIMARY KEY (project_id, trace_id, span_id, start_day))
                PARTITION BY RANGE (start_day)""",
            "CREATE TABLE spans_default PARTITION OF spans DEFAULT",
            "INSERT INTO spans SELECT * FROM spans_unpartitioned",
            "DROP TABLE spans_unpartitioned",
        )
    ),
    (  # 11: the GenAI view's facts beside each span (storage/span_genai.py), and their
        # sums and previews in each trace's summary (storage/summary_genai.py). The spans
        # stored before get theirs from storage/genai_upgrade.py, after the migrations.
        *(f"ALTER TABLE spans ADD COLUMN {name} {kind}" for name, kind in SPAN_GENAI_COLUMNS),
        *(
            f"ALTER TABLE trace_summaries ADD COLUMN {name} {kind}"
            + (" NOT NULL DEFAULT 0" if name == "llm_calls" else "")
            for name, kind in summary_genai.COLUMNS
        ),
    ),
    (  # 12: failed sign-ins are also counted per client address (storage/passwords.py)
        "ALTER TABLE login_failures ADD COLUMN client_ip TEXT",
        "CREATE INDEX login_failures_client ON login_failures (client_ip, at_ms)",
    ),
    ByDialect(  # 13: finding a trace (storage/find_schema.py): the sorts' indexes, the
        # LLM text's full-text index, the attribute and span-name indexes; and the
        # session summaries, made here for the sessions already stored.
        (
            (*find_schema.SQLITE, session_summaries.BACKFILL),
            (*find_schema.POSTGRES, session_summaries.BACKFILL),
        )
    ),
    ByDialect(  # 14: SQLite: the writer notes the span rows an upsert replaces itself
        # (storage/trace_index.py), without the update trigger, which slowed every insert
        ((find_schema.SQLITE_WRITER_NOTES_REPLACED,), ())
    ),
    PostgresOnly(  # 15: finding a trace: the planner's statistics, GIN's pending list
        # (storage/find_schema.py)
        find_schema.POSTGRES_PLANNING
    ),
    (  # 16: each span text's previews (storage/trace_index.py), which the trace list shows;
        # the texts stored before get theirs from storage/find_upgrade.py
        "ALTER TABLE span_texts ADD COLUMN previews TEXT",
    ),
    ByDialect(  # 17: SQLite: the writer gives the full-text index a batch's texts in one
        # statement (storage/trace_index.py), without the insert trigger
        ((find_schema.SQLITE_WRITER_INDEXES_TEXTS,), ())
    ),
    PostgresOnly(  # 18: the worker gives each text's words (storage/text_words.py); the
        # texts stored before get theirs from storage/find_upgrade.py
        (find_schema.POSTGRES_WORKER_GIVES_WORDS,)
    ),
    ByDialect(  # 19: SQLite: the full-text index without the words' positions
        # (storage/find_schema.py), the texts stored indexed anew
        (find_schema.SQLITE_TEXT_INDEX_WITHOUT_POSITIONS, ())
    ),
    ByDialect(  # 20: the LLM text's words as documents of a trace's day, each span's
        # previews beside them (storage/find_schema.py, storage/trace_texts.py)
        (find_schema.SQLITE_TRACE_TEXTS, find_schema.POSTGRES_TRACE_TEXTS)
    ),
    ByDialect(  # 21: a trace's attributes and span names as documents of tokens
        # (storage/find_schema.py, storage/trace_facets.py)
        (find_schema.SQLITE_TRACE_FACETS, find_schema.POSTGRES_TRACE_FACETS)
    ),
    PostgresOnly(  # 22: each transaction takes the stale rows of the traces it holds
        # locked (storage/trace_index.py), through an index
        ("CREATE INDEX trace_index_stale_trace ON trace_index_stale (project_id, trace_id)",)
    ),
    (  # 23: a resource's and a scope's text stored once a project, the span rows holding
        # its key (storage/shared_texts.py); the rows stored before keep their texts
        "CREATE TABLE shared_texts (project_id TEXT NOT NULL, key TEXT NOT NULL, "
        "body TEXT NOT NULL, last_day TEXT NOT NULL, PRIMARY KEY (project_id, key))",
    ),
    (  # 24: no query read the sessions' index by user (the user filter reads the traces'),
        # and a user and a session id of 2,000 bytes each made an entry over PostgreSQL's
        # B-tree limit (2,704 bytes), which refused its batch
        "DROP INDEX session_summaries_user",
    ),
    (  # 25: the last trace a walk over the stored traces did (storage/trace_walk.py), so
        # that a walk stopped midway goes on from there
        "CREATE TABLE walk_progress (version BIGINT PRIMARY KEY, project_id TEXT NOT NULL, "
        "trace_id TEXT NOT NULL)",
    ),
    ByDialect(  # 26: each document of the find indexes with its trace's sort value, where
        # a page of the newest traces reads them in that order; on SQLite with a ceiling,
        # where such a page stops reading them (storage/document_ceilings.py)
        (document_ceilings.SQLITE_MIGRATION, document_ceilings.POSTGRES_MIGRATION)
    ),
    PostgresOnly(  # 27: the find indexes' GIN pending lists of 4 MB, which the worker's
        # transaction merges before it commits (storage/gin_pending.py)
        gin_pending.MIGRATION
    ),
)


#: Versions from here on record a walk done once over the stored traces (storage/
#: trace_walk.py), not a migration.
WALKS_FROM = 1000


def refuse_newer(db: Database) -> None:
    """StoreError when a newer build migrated the store past this build's migrations: a
    worker of this build would write rows as that schema no longer takes them (a text
    its full-text index no longer indexes as it is inserted, say)."""
    with db.transaction() as tx:
        row = tx.query_one(
            "SELECT MAX(version) FROM schema_migrations WHERE version < ?", (WALKS_FROM,)
        )
    newest = row[0] if row is not None else None
    if newest is not None and newest > len(MIGRATIONS):
        raise StoreError(
            f"the database's schema is at version {newest}, newer than this build's "
            f"{len(MIGRATIONS)}: run the release that migrated it, or a newer one"
        )


def _lock(tx: Transaction, postgres: bool) -> None:
    if postgres:
        tx.query_one("SELECT pg_advisory_xact_lock(?)", (_ADVISORY_LOCK_ID,))
    tx.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, "
        "applied_at TEXT NOT NULL)"
    )


def migrate(db: Database, until: int | None = None) -> int:
    """Apply the migrations this database lacks (up to version `until`, to test an
    upgrade from it); the schema version it is at after."""
    wanted = MIGRATIONS if until is None else MIGRATIONS[:until]
    with db.transaction(immediate=True) as tx:
        _lock(tx, db.postgres)
        applied = {row[0] for row in tx.query("SELECT version FROM schema_migrations")}
        for version, statements in enumerate(wanted, start=1):
            if version in applied:
                continue
            if isinstance(statements, PostgresOnly) and not db.postgres:
                statements = ()
            if isinstance(statements, ByDialect):
                statements = statements[1] if db.postgres else statements[0]
            for statement in statements:
                tx.execute(statement)
            tx.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                (version, utc_now_iso()),
            )
    return len(wanted)


MIGRATE_RETRY_S = 2.0


async def migrate_when_reachable(db: Database, log: logging.Logger) -> None:
    """Migrate, retrying while the database is unreachable (it may come up later), or
    refuses the migration (a user without the privileges it needs, which an operator
    may grant meanwhile: that is logged as an error)."""
    while True:
        try:
            await asyncio.to_thread(migrate, db)
            return
        except StoreUnavailable as e:
            log.warning("database not ready; retrying", extra={"error": str(e)})
        except StoreError as e:
            log.error("database migration failed; retrying", extra={"error": str(e)})
        await asyncio.sleep(MIGRATE_RETRY_S)
