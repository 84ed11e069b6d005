"""The database layer: dialects, error wrapping, and closing under concurrent use."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import apsw
import pytest

from storage.database import SQLITE_CACHE_KIB, SQLITE_PAGE_BYTES, Database
from storage.errors import StoreError, StoreUnavailable


def test_close_while_other_threads_use_connections(tmp_path: Path) -> None:
    """close() never closes a connection mid-transaction (SQLite would crash in C)."""
    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    with db.transaction() as tx:
        tx.execute("CREATE TABLE t (n BIGINT)")
        tx.executemany("INSERT INTO t (n) VALUES (?)", [(i,) for i in range(1000)])
    stop = threading.Event()
    failures: list[BaseException] = []

    def busy() -> None:
        while not stop.is_set():
            try:
                with db.transaction() as tx:  # readers: WAL never makes them wait
                    assert tx.query("SELECT SUM(n) FROM t") == [(499500,)]
            except BaseException as e:  # collected: any error here fails the test
                failures.append(e)

    threads = [threading.Thread(target=busy) for _ in range(4)]
    for thread in threads:
        thread.start()
    for _ in range(300):
        db.close()
    stop.set()
    for thread in threads:
        thread.join()
    assert failures == []
    db.close()


def test_transaction_rolls_back_on_error(database: Database) -> None:
    """An exception inside a transaction undoes its statements."""
    with database.transaction() as tx:
        tx.execute("CREATE TABLE r (n BIGINT)")
    with pytest.raises(ZeroDivisionError), database.transaction() as tx:
        tx.execute("INSERT INTO r (n) VALUES (?)", (1,))
        raise ZeroDivisionError
    with database.transaction() as tx:
        assert tx.query("SELECT COUNT(*) FROM r") == [(0,)]


def test_sql_errors_are_wrapped(database: Database) -> None:
    """Driver errors surface as StoreError with a one-line message."""
    with pytest.raises(StoreError) as caught, database.transaction() as tx:
        tx.execute("SELECT * FROM no_such_table")
    assert "\n" not in str(caught.value)


def test_unreachable_postgres_is_store_unavailable() -> None:
    """A PostgreSQL server that does not answer is StoreUnavailable, quickly."""
    db = Database("postgresql://postgres@127.0.0.1:1/none")
    with pytest.raises(StoreUnavailable, match="unreachable"):
        db.ping()


def test_display_url_hides_password() -> None:
    """Logged URLs never carry the password."""
    assert Database("postgresql://u:secret@h:5432/d").display_url == "postgresql://u:***@h:5432/d"


def test_new_sqlite_file_gets_the_page_size_existing_ones_keep_theirs(tmp_path: Path) -> None:
    """A new file is made with SQLITE_PAGE_BYTES pages, in WAL mode; a file made before,
    with other pages, keeps them and its data."""
    fresh = Database(f"sqlite:///{tmp_path / 'fresh.db'}")
    with fresh.transaction() as tx:
        tx.execute("CREATE TABLE t (x TEXT)")
        assert tx.query_one("PRAGMA page_size") == (SQLITE_PAGE_BYTES,)
        assert tx.query_one("PRAGMA cache_size") == (-SQLITE_CACHE_KIB,)
        assert tx.query_one("PRAGMA journal_mode") == ("wal",)
    fresh.close()
    old_path = tmp_path / "old.db"
    old = apsw.Connection(str(old_path))
    old.execute("PRAGMA page_size = 4096")
    old.execute("CREATE TABLE t (x TEXT)")
    old.execute("INSERT INTO t VALUES ('kept')")
    old.close()
    existing = Database(f"sqlite:///{old_path}")
    with existing.transaction() as tx:
        assert tx.query_one("PRAGMA page_size") == (4096,)
        assert tx.query_one("SELECT x FROM t") == ("kept",)
    existing.close()


def test_release_thread_closes_only_the_calling_threads_connection(tmp_path: Path) -> None:
    """A thread about to end gives its connection back; other threads keep theirs, and
    the thread may open a new one."""
    db = Database(f"sqlite:///{tmp_path / 'db.sqlite'}")
    with db.transaction() as tx:
        tx.execute("CREATE TABLE t (x TEXT)")
    opened: list[apsw.Connection] = []

    def other() -> None:
        with db.transaction() as tx:
            tx.execute("INSERT INTO t VALUES ('other')")
            opened.append(tx._cursor.connection)  # type: ignore[attr-defined]
        db.release_thread()
        db.release_thread()  # none left: nothing to do

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    with pytest.raises(apsw.ConnectionClosedError):
        opened[0].execute("SELECT 1")
    with db.transaction() as tx:  # this thread's connection is untouched
        assert tx.query_one("SELECT COUNT(*) FROM t") == (1,)
    db.release_thread()
    with db.transaction() as tx:  # and a new one is opened after a release
        assert tx.query_one("SELECT x FROM t") == ("other",)
    db.close()


TABLE = "CREATE TABLE t (a TEXT NOT NULL, b INTEGER, c REAL, d BLOB, PRIMARY KEY (a))"
INSERT = "INSERT INTO t (a, b, c, d) VALUES (?, ?, ?, ?)"
ROWS = [
    ("plain", 1, 0.5, b"\x00\x01"),
    ("é ✓ 𝄞", -(2**63), -1e-300, b""),
    ("", 2**63 - 1, float("inf"), None),
    ("nul\x00inside", True, 3.0, None),
    ("nulls", None, None, None),
]


@pytest.fixture
def table(tmp_path: Path) -> Any:
    db = Database(f"sqlite:///{tmp_path / 'layer.db'}")
    with db.transaction() as tx:
        tx.execute(TABLE)
    yield db
    db.close()


def test_sqlite_values_are_stored_with_their_types(table: Database) -> None:
    """Texts (non-ASCII, empty, with NUL), 64-bit bounds, bools, floats, blobs and
    NULLs read back as written, with SQLite's types for them."""
    with table.transaction() as tx:
        tx.executemany(INSERT, ROWS)
        stored = tx.query("SELECT a, b, c, d, typeof(b), typeof(c), typeof(d) FROM t ORDER BY a")
    assert stored == [
        ("", 2**63 - 1, float("inf"), None, "integer", "real", "null"),
        ("nul\x00inside", 1, 3.0, None, "integer", "real", "null"),
        ("nulls", None, None, None, "null", "null", "null"),
        ("plain", 1, 0.5, b"\x00\x01", "integer", "real", "blob"),
        ("é ✓ 𝄞", -(2**63), -1e-300, b"", "integer", "real", "blob"),
    ]


def test_upsert_conflicts_take_the_do_update_path(table: Database) -> None:
    """ON CONFLICT ... DO UPDATE runs per row, later rows seeing earlier ones."""
    upsert = INSERT + " ON CONFLICT (a) DO UPDATE SET b = t.b + excluded.b"
    with table.transaction() as tx:
        tx.executemany(upsert, [("k", 1, None, None), ("k", 2, None, None)])
        assert tx.query("SELECT b FROM t") == [(3,)]


@pytest.mark.parametrize(
    "rows",
    [
        [(None, 1, 1.0, None)],  # NOT NULL
        [("k", 1, 1.0, None), ("k", 2, 2.0, None)],  # primary key
        [("k", 2**63, 1.0, None)],  # past 64 bits
        [("k", 1, 1.0)],  # a value short
    ],
)
def test_a_failing_row_rolls_the_batch_back_as_a_store_error(
    table: Database, rows: list[Any]
) -> None:
    """Constraint, overflow and parameter count errors are StoreError (not unavailable),
    and no row of the batch stays."""
    with pytest.raises(StoreError) as raised, table.transaction() as tx:
        tx.executemany(INSERT, [("first", 1, None, None), *rows])
    assert not isinstance(raised.value, StoreUnavailable)
    with table.transaction() as tx:
        assert tx.query("SELECT COUNT(*) FROM t") == [(0,)]


def test_a_locked_database_is_store_unavailable(tmp_path: Path) -> None:
    """Another writer holding the lock past the busy timeout: StoreUnavailable."""
    path = tmp_path / "x.db"
    db = Database(f"sqlite:///{path}")
    with db.transaction() as tx:
        tx.execute(TABLE)
    writer = apsw.Connection(str(path))
    writer.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreUnavailable, match="locked"):
            with db.transaction() as tx:
                tx._cursor.connection.set_busy_timeout(50)  # type: ignore[attr-defined]
                tx.executemany(INSERT, ROWS)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        db.close()


GUARDED = [("k", 5, None, None), ("k", 1, None, None), ("k", 9, None, None), ("j", 0, 1.5, None)]


@pytest.mark.parametrize(
    "unless",
    [
        "SELECT 1 FROM t WHERE a = ?1 AND b > ?2",
        "SELECT 1 FROM t WHERE a = ?1 AND ?4 IS NULL AND b > ?2",  # ?3 unused: a gap
        "SELECT 1 FROM t WHERE a = ? AND b > ?",  # bare ?: the row's first values
    ],
)
def test_unless_skips_the_rows_its_query_finds_and_names_them(table: Database, unless: str) -> None:
    """`unless` runs before each row, on the row's values at the places it names (or its
    first ones, for bare ?) and after the rows before it: the rows it finds anything for
    are skipped, and their positions returned."""
    upsert = INSERT + " ON CONFLICT (a) DO UPDATE SET b = excluded.b"
    with table.transaction() as tx:
        tx.execute(INSERT, ("j", 7, None, None))
        skipped = tx.executemany(upsert, GUARDED, unless=unless)
        assert (skipped, tx.query("SELECT a, b, c FROM t ORDER BY a")) == (
            [1, 3],
            [("j", 7, None), ("k", 9, None)],
        )


@pytest.mark.parametrize(
    ("checked", "expected"),
    [
        (b"\x01\x00\x01\x01", ([3], [("j", 7, None), ("k", 9, None)])),  # (k, 1) unchecked
        (bytes(4), ([], [("j", 0, 1.5), ("k", 9, None)])),
        (b"\x01\x01\x01\x01", ([1, 3], [("j", 7, None), ("k", 9, None)])),
        (b"\x00\x00\x01\x00", ([], [("j", 0, 1.5), ("k", 9, None)])),
    ],
)
def test_checked_limits_unless_to_the_rows_it_names(
    table: Database, checked: bytes, expected: tuple[list[int], list[tuple[Any, ...]]]
) -> None:
    """With `checked`, `unless` runs only for the rows of a nonzero byte; the others are
    written without it, in their order among the checked ones."""
    upsert = INSERT + " ON CONFLICT (a) DO UPDATE SET b = excluded.b, c = excluded.c"
    unless = "SELECT 1 FROM t WHERE a = ?1 AND b > ?2"
    with table.transaction() as tx:
        tx.execute(INSERT, ("j", 7, None, None))
        skipped = tx.executemany(upsert, GUARDED, unless, checked)
        assert (skipped, tx.query("SELECT a, b, c FROM t ORDER BY a")) == expected
        with pytest.raises(ValueError, match="checked"):
            tx.executemany(upsert, GUARDED, unless, checked[:-1])
        with pytest.raises(ValueError, match="checked"):
            tx.executemany(upsert, GUARDED, None, checked)


def test_unless_with_more_parameters_than_a_row_or_bad_sql_is_an_error(table: Database) -> None:
    """An `unless` wanting values a row lacks, or that does not parse, is a StoreError
    and no row stays."""
    for unless in ("SELECT 1 FROM t WHERE a = ?5", "SELEC nonsense"):
        with pytest.raises(StoreError), table.transaction() as tx:
            tx.executemany(INSERT, ROWS, unless)
    with table.transaction() as tx:
        assert tx.query("SELECT COUNT(*) FROM t") == [(0,)]
