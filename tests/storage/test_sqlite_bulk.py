"""storage/_sqlite_bulk.c: the sqlite3 module's executemany, to the row and the error."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storage import database
from storage.database import Database
from storage.errors import StoreError, StoreUnavailable

bulk: Any = pytest.importorskip("storage._sqlite_bulk")  # optional: built with a C compiler
if database.SQLITE_BULK is None:
    pytest.skip("turned off by SPANGATE_PURE_PYTHON", allow_module_level=True)

TABLE = "CREATE TABLE t (a TEXT NOT NULL, b INTEGER, c REAL, d BLOB, PRIMARY KEY (a))"
INSERT = "INSERT INTO t (a, b, c, d) VALUES (?, ?, ?, ?)"
ROWS = [
    ("plain", 1, 0.5, b"\x00\x01"),
    ("é ✓ 𝄞", -(2**63), -1e-300, b""),
    ("", 2**63 - 1, float("inf"), None),
    ("nul\x00inside", True, 3.0, None),
    ("nulls", None, None, None),
]


def connect(path: Path, timeout: float = 5.0) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, timeout=timeout)
    connection.execute("PRAGMA journal_mode = WAL")
    return connection


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[sqlite3.Connection, sqlite3.Connection]]:
    """A table written by the sqlite3 module and one written by the extension."""
    reference, fast = connect(tmp_path / "reference.db"), connect(tmp_path / "fast.db")
    for connection in (reference, fast):
        connection.execute(TABLE)
    yield reference, fast
    reference.close()
    fast.close()


def test_rows_stored_exactly_as_the_sqlite3_module_stores_them(
    two: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    """Texts (non-ASCII, empty, with NUL), 64-bit bounds, bools, floats, blobs and
    NULLs read back the same, with the same SQLite types."""
    reference, fast = two
    reference.executemany(INSERT, ROWS)
    fast.execute("BEGIN")
    bulk.executemany(fast, INSERT, [list(row) if i % 2 else row for i, row in enumerate(ROWS)])
    fast.execute("COMMIT")
    query = "SELECT a, b, c, d, typeof(a), typeof(b), typeof(c), typeof(d) FROM t ORDER BY a"
    assert fast.execute(query).fetchall() == reference.execute(query).fetchall()


def test_upsert_conflicts_take_the_do_update_path(
    two: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    """ON CONFLICT ... DO UPDATE runs per row, later rows seeing earlier ones."""
    _, fast = two
    upsert = INSERT + " ON CONFLICT (a) DO UPDATE SET b = t.b + excluded.b"
    bulk.executemany(fast, upsert, [("k", 1, None, None), ("k", 2, None, None)])
    assert fast.execute("SELECT b FROM t").fetchall() == [(3,)]


@pytest.mark.parametrize(
    ("rows", "error"),
    [
        ([(None, 1, 1.0, None)], sqlite3.IntegrityError),  # NOT NULL
        ([("k", 1, 1.0, None), ("k", 2, 2.0, None)], sqlite3.IntegrityError),  # primary key
        ([("k", 2**63, 1.0, None)], OverflowError),
        ([("k", 1, 1.0)], sqlite3.ProgrammingError),
        ([("k", 1, 1.0, object())], sqlite3.ProgrammingError),
        ([("k", 1, 1.0, None), 7], sqlite3.ProgrammingError),
    ],
)
def test_errors_are_the_sqlite3_modules(
    two: tuple[sqlite3.Connection, sqlite3.Connection], rows: list[Any], error: type[Exception]
) -> None:
    """Constraint, overflow, parameter count and type errors raise what sqlite3 raises."""
    reference, fast = two
    with pytest.raises(error):
        reference.executemany(INSERT, rows)
    with pytest.raises(error):
        bulk.executemany(fast, INSERT, rows)


def test_a_locked_database_is_operational_error(tmp_path: Path) -> None:
    """Another writer holding the lock past the busy timeout: OperationalError."""
    writer, blocked = connect(tmp_path / "x.db"), connect(tmp_path / "x.db", timeout=0.05)
    writer.execute(TABLE)
    writer.execute("BEGIN IMMEDIATE")
    blocked.execute("BEGIN")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        bulk.executemany(blocked, INSERT, ROWS)
    blocked.execute("ROLLBACK")
    writer.execute("ROLLBACK")


def test_closed_or_foreign_connections_are_refused(tmp_path: Path) -> None:
    """A closed connection is ProgrammingError; anything else is TypeError, not a crash."""
    connection = connect(tmp_path / "x.db")
    connection.close()
    with pytest.raises(sqlite3.ProgrammingError):
        bulk.executemany(connection, INSERT, [])
    with pytest.raises(TypeError):
        bulk.executemany(object(), INSERT, [])


def test_the_database_layer_uses_it_and_wraps_its_errors(tmp_path: Path) -> None:
    """Database's SQLite transactions write through the extension (its handle check
    passed); a failing row rolls the whole batch back and is a StoreError."""
    db = Database(f"sqlite:///{tmp_path / 'layer.db'}")
    try:
        with db.transaction() as tx:
            tx.execute(TABLE)
            assert tx._bulk is bulk
        with pytest.raises(StoreError) as raised:
            with db.transaction() as tx:
                tx.executemany(INSERT, [("first", 1, None, None), (None, 2, None, None)])
        assert not isinstance(raised.value, StoreUnavailable)
        with db.transaction() as tx:
            assert tx.query("SELECT COUNT(*) FROM t") == [(0,)]
    finally:
        db.close()


def test_handle_check_accepts_the_connections_own_file(tmp_path: Path) -> None:
    """The handle read from a connection names that connection's database file."""
    connection = connect(tmp_path / "x.db")
    try:
        assert bulk.handle_file(connection) == str((tmp_path / "x.db").resolve())
        assert database._bulk_for(connection) is bulk
    finally:
        connection.close()


def test_checked_of_another_length_or_without_unless_is_an_error(
    two: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    """`checked` must hold one byte a row, as bytes, and come with `unless`; no row runs."""
    _, fast = two
    unless = "SELECT 1 FROM t WHERE a = ?1"
    for unless_sql, checked in (
        (unless, bytes(len(ROWS) - 1)),
        (unless, bytes(len(ROWS) + 1)),
        (unless, bytearray(len(ROWS))),
        (None, bytes(len(ROWS))),
    ):
        with pytest.raises(ValueError, match="checked"):
            bulk.executemany(fast, INSERT, ROWS, unless_sql, checked)
    assert fast.execute("SELECT COUNT(*) FROM t").fetchall() == [(0,)]


def test_values_repeated_from_row_to_row_are_stored_as_given(
    two: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    """The extension leaves a value bound while rows repeat it (the same object, number,
    NULL); every change, a skipped row in between, and a new chunk of rows bind anew."""
    reference, fast = two
    table = "CREATE TABLE r (n INTEGER PRIMARY KEY, a TEXT, b INTEGER, c REAL, d BLOB, e TEXT)"
    insert = "INSERT INTO r (n, a, b, c, d, e) VALUES (?, ?, ?, ?, ?, ?)"
    unless = "SELECT 1 WHERE ?6 = 'skip'"
    shared, blob = "shared text", b"shared blob"
    equal = "".join(["shared", " text"])  # equal to `shared`, another object
    pattern = [
        (shared, 1, 0.0, blob, "keep"),
        (shared, 1, -0.0, blob, "keep"),
        (equal, 2, 0.0, None, "keep"),
        ("other", 2, float("nan"), None, "skip"),  # checked, never written
        ("other", None, 0.0, blob, "keep"),
        (None, None, None, None, "keep"),
        (shared, 1, 0.0, b"", "keep"),
    ]
    chunk = 16_384  # the extension's rows per pass (CHUNK_ROWS)
    rows = [(n, *pattern[n % len(pattern)]) for n in range(chunk + 2 * len(pattern))]
    reference.execute(table)
    fast.execute(table)
    reference.executemany(insert, [row for row in rows if row[5] != "skip"])
    fast.execute("BEGIN")
    skipped = bulk.executemany(fast, insert, rows, unless)
    fast.execute("COMMIT")
    assert skipped == [n for n, row in enumerate(rows) if row[5] == "skip"]
    query = "SELECT n, a, b, c, d, e, typeof(b), typeof(c) FROM r ORDER BY n"
    assert fast.execute(query).fetchall() == reference.execute(query).fetchall()


def test_unless_with_more_parameters_than_a_row_or_bad_sql_is_an_error(
    two: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    """An `unless` wanting values a row lacks, or that does not parse, raises; no row runs."""
    _, fast = two
    with pytest.raises(sqlite3.ProgrammingError, match="more than"):
        bulk.executemany(fast, INSERT, ROWS, "SELECT 1 FROM t WHERE a = ?5")
    with pytest.raises(sqlite3.DatabaseError, match="syntax error"):
        bulk.executemany(fast, INSERT, ROWS, "SELEC nonsense")
    with pytest.raises(TypeError):
        bulk.executemany(fast, INSERT, ROWS, b"SELECT 1")
    assert fast.execute("SELECT COUNT(*) FROM t").fetchall() == [(0,)]
    assert bulk.executemany(fast, INSERT, ROWS[:1], None) == []
