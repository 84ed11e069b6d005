"""The database layer: dialects, error wrapping, and closing under concurrent use."""

from __future__ import annotations

import sqlite3
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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
    old = sqlite3.connect(old_path)
    old.execute("PRAGMA page_size = 4096")
    old.execute("CREATE TABLE t (x TEXT)")
    old.execute("INSERT INTO t VALUES ('kept')")
    old.commit()
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
    opened: list[sqlite3.Connection] = []

    def other() -> None:
        with db.transaction() as tx:
            tx.execute("INSERT INTO t VALUES ('other')")
            opened.append(tx._cursor.connection)
        db.release_thread()
        db.release_thread()  # none left: nothing to do

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        opened[0].execute("SELECT 1")
    with db.transaction() as tx:  # this thread's connection is untouched
        assert tx.query_one("SELECT COUNT(*) FROM t") == (1,)
    db.release_thread()
    with db.transaction() as tx:  # and a new one is opened after a release
        assert tx.query_one("SELECT x FROM t") == ("other",)
    db.close()


def test_numbered_placeholders_take_the_values_they_name(tmp_path: Path) -> None:
    """On SQLite `?N` is the Nth value, repeated or with numbers left out (sent to the
    sqlite3 module as bare placeholders: Python 3.14 refuses numbered ones bound from a
    sequence, and 3.12 warns)."""
    database = Database(f"sqlite:///{tmp_path / 'numbered.db'}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with database.transaction() as tx:
            assert tx.query("SELECT ?2, ?1, ?2", ("a", "b")) == [("b", "a", "b")]
            assert tx.query_one("SELECT ?3 || ?1", ("x", "unused", "y")) == ("yx",)
            tx.execute("CREATE TABLE n (a TEXT, b TEXT)")
            tx.executemany("INSERT INTO n VALUES (?2, ?1)", [("1", "2"), ("3", "4")])
            assert tx.query("SELECT a, b FROM n ORDER BY a") == [("2", "1"), ("4", "3")]
            skipped = tx.executemany(
                "INSERT INTO n VALUES (?, ?)", [("5", "6")], "SELECT 1 WHERE ?2 = '6'"
            )
            assert skipped == [0]
    database.close()


def test_postgres_statements_have_a_time_limit(postgres_database: Database) -> None:
    """A statement past the limit is cancelled, as the database being unavailable (a
    worker keeps its entries and tries again); the pooled connection stays usable."""
    limited = Database(postgres_database.url, statement_timeout_ms=200)
    try:
        with limited.transaction() as tx:
            assert tx.query_one("SHOW statement_timeout") == ("200ms",)
        with pytest.raises(StoreUnavailable, match="statement timeout"):
            with limited.transaction() as tx:
                tx.query_one("SELECT pg_sleep(5)")
        with limited.transaction() as tx:
            assert tx.query_one("SELECT 1") == (1,)
    finally:
        limited.close()


def test_postgres_statements_are_not_compiled(postgres_database: Database) -> None:
    """JIT compilation is off on every pooled connection: a statement of the store,
    costed past jit_above_cost by the planner's guesses on a growing span table, took
    hundreds of milliseconds to compile and one to run."""
    barrier = threading.Barrier(2)

    def jit() -> tuple[object, ...] | None:
        with postgres_database.transaction() as tx:
            barrier.wait(timeout=10)  # both threads hold a connection: two of them
            return tx.query_one("SHOW jit")

    with ThreadPoolExecutor(2) as threads:
        assert [f.result() for f in [threads.submit(jit) for _ in range(2)]] == [("off",)] * 2


def test_postgres_down_fails_at_once_after_the_first_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the server is unreachable, the first transaction waits out the pool's
    timeout; the ones after it ask the server itself first, and fail without waiting."""
    db = Database("postgresql://postgres@127.0.0.1:1/none")
    try:
        with pytest.raises(StoreUnavailable, match="unreachable: .*refused"):
            db.ping()

        def no_wait(**_: object) -> None:
            pytest.fail("waited on the pool")

        monkeypatch.setattr(db._postgres_pool(), "getconn", no_wait)
        with pytest.raises(StoreUnavailable, match="unreachable: .*refused"):
            db.ping()
    finally:
        db.close()


TABLE = "CREATE TABLE t (a TEXT NOT NULL, b INTEGER, c REAL, d BLOB, PRIMARY KEY (a))"
INSERT = "INSERT INTO t (a, b, c, d) VALUES (?, ?, ?, ?)"
GUARDED = [("k", 5, None, None), ("k", 1, None, None), ("k", 9, None, None), ("j", 0, 1.5, None)]


@pytest.mark.parametrize(
    "unless",
    [
        "SELECT 1 FROM t WHERE a = ?1 AND b > ?2",
        "SELECT 1 FROM t WHERE a = ?1 AND ?4 IS NULL AND b > ?2",  # ?3 unused: a gap
        "SELECT 1 FROM t WHERE a = ? AND b > ?",  # bare ?: the row's first values
    ],
)
def test_unless_skips_the_rows_its_query_finds_and_names_them(tmp_path: Path, unless: str) -> None:
    """`unless` runs before each row, on the row's values at the places it names (or its
    first ones, for bare ?) and after the rows before it: the rows it finds anything for
    are skipped, and their positions returned."""
    upsert = INSERT + " ON CONFLICT (a) DO UPDATE SET b = excluded.b"
    db = Database(f"sqlite:///{tmp_path / 'layer.db'}")
    try:
        with db.transaction() as tx:
            tx.execute(TABLE)
            tx.execute(INSERT, ("j", 7, None, None))
        with db.transaction() as tx:
            skipped = tx.executemany(upsert, GUARDED, unless=unless)
            assert skipped == [1, 3]
            assert tx.query("SELECT a, b, c FROM t ORDER BY a") == [("j", 7, None), ("k", 9, None)]
    finally:
        db.close()


@pytest.mark.parametrize(
    ("checked", "expected"),
    [
        (b"\x01\x00\x01\x01", ([3], [("j", 7, None), ("k", 9, None)])),  # (k, 1) unchecked
        (bytes(4), ([], [("j", 0, 1.5), ("k", 9, None)])),
        (b"\x01\x01\x01\x01", ([1, 3], [("j", 7, None), ("k", 9, None)])),
        (b"\x00\x00\x01\x00", ([], [("j", 0, 1.5), ("k", 9, None)])),  # a run, then a check
    ],
)
def test_checked_limits_unless_to_the_rows_it_names(
    tmp_path: Path, checked: bytes, expected: tuple[list[int], list[tuple[object, ...]]]
) -> None:
    """With `checked`, `unless` runs only for the rows of a nonzero byte, after the rows
    before it are written; the others are written without it."""
    upsert = INSERT + " ON CONFLICT (a) DO UPDATE SET b = excluded.b, c = excluded.c"
    unless = "SELECT 1 FROM t WHERE a = ?1 AND b > ?2"
    db = Database(f"sqlite:///{tmp_path / 'layer.db'}")
    try:
        with db.transaction() as tx:
            tx.execute(TABLE)
            tx.execute(INSERT, ("j", 7, None, None))
        with db.transaction() as tx:
            skipped = tx.executemany(upsert, GUARDED, unless, checked)
            assert (skipped, tx.query("SELECT a, b, c FROM t ORDER BY a")) == expected
            with pytest.raises(ValueError, match="checked"):
                tx.executemany(upsert, GUARDED, unless, checked[:-1])
    finally:
        db.close()
