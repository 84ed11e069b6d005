"""One small database layer over SQLite (sqlite3) and PostgreSQL (psycopg), sync.

SQL is written once with `?` placeholders and portable types; PostgreSQL gets `%s`.
With SQLite each thread keeps its own connection (the async apps call in through a
thread pool, so connections are reused without sharing one across threads). With
PostgreSQL the threads share a pool (psycopg_pool) that checks a connection before
lending it, so a server restart costs no request once the server is back, and every
statement has a time limit. Driver exceptions are wrapped here: StoreUnavailable when
the database cannot be reached, StoreError else.
"""

from __future__ import annotations

import functools
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from proto_json import fastpath
from storage.errors import StoreError, StoreRefused, StoreUnavailable, WriteConflict

# The pool logs each failed connection attempt; StoreUnavailable says why, once, where
# the failure is met.
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

#: executemany without the sqlite3 module's per-row cost (storage/_sqlite_bulk.c),
#: where it was built and found the SQLite library the sqlite3 module uses.
SQLITE_BULK = fastpath.extension("storage._sqlite_bulk")
#: Transactions a write may take on PostgreSQL when it meets another's (`Database.retried`).
WRITE_ATTEMPTS = 5
_Result = TypeVar("_Result")


def sqlite_writer_refused() -> str | None:
    """Why storage/_sqlite_bulk.c, built here, refused to load (the worker says so at
    start-up: it then writes SQLite through the sqlite3 module, slower); None else."""
    return fastpath.REFUSED.get("storage._sqlite_bulk")


Row = tuple[Any, ...]
SQLITE_BUSY_TIMEOUT_MS = 10_000
#: Page size of a new SQLite file (an existing one keeps its own). A stored span is
#: about 1 KB: on 16 KiB pages the worker's writes take a quarter of the write calls
#: into the log and the file that 4 KiB pages take (commit 4610e38).
SQLITE_PAGE_BYTES = 16_384
#: Pages a SQLite connection may keep (SQLite's default is 2 MB). Trace ids are random,
#: so each part the worker writes touches index pages all over the primary key; the
#: cache is filled only as pages are read (commit f84392d).
SQLITE_CACHE_KIB = 65_536
CONNECT_TIMEOUT_S = 3
#: PostgreSQL connections a process keeps open at most (the async apps' thread pools
#: and the worker's writer thread share them).
POOL_MAX_CONNECTIONS = 16
#: A statement running longer is cancelled (StoreUnavailable: a worker tries again): a
#: stuck query must not hold a pooled connection and its locks for ever. 0: no limit.
STATEMENT_TIMEOUT_MS = 30_000
#: PostgreSQL compiles a statement the planner costs above `jit_above_cost` (100,000 by
#: default), before running it. The store's statements read a few thousand rows at
#: most, by index, but costs follow the planner's guesses: on a span table growing
#: faster than its statistics are gathered, the statement that recomputes the summaries
#: of a batch's stored traces was costed at 1.8 million, and compiled for 220 ms to run
#: for 1.
JIT_OFF = "SET jit = off"


class Cursor(Protocol):
    """What both drivers' cursors offer that this layer uses."""

    rowcount: int

    def execute(self, sql: Any, params: Sequence[Any] = ...) -> Any: ...
    def executemany(self, sql: Any, params: Sequence[Any]) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def fetchone(self) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...


@functools.lru_cache(maxsize=256)
def _positional(sql: str) -> tuple[str, tuple[int, ...] | None]:
    """SQLite SQL whose placeholders are numbered (`?N`, the Nth value) rewritten with
    bare ones, and the value each bare one takes (None for SQL without numbered ones):
    the sqlite3 module deprecates binding numbered placeholders from a sequence (Python
    3.12) and refuses it from 3.14, and a mapping needs every number up to the last."""
    order = tuple(int(number) - 1 for number in re.findall(r"\?(\d+)", sql))
    if not order or re.search(r"\?(?!\d)", sql):
        return sql, None
    return re.sub(r"\?\d+", "?", sql), order


def _sqlite_statement(sql: str, values: Sequence[Any]) -> tuple[str, Sequence[Any]]:
    """`sql` and `values` as the sqlite3 module takes them (see _positional)."""
    plain, order = _positional(sql)
    return (sql, values) if order is None else (plain, [values[i] for i in order])


def _sqlite_rows(sql: str, rows: Sequence[Sequence[Any]]) -> tuple[str, Sequence[Sequence[Any]]]:
    """`sql` and each of `rows` as the sqlite3 module takes them (see _positional)."""
    plain, order = _positional(sql)
    return (sql, rows) if order is None else (plain, [[row[i] for i in order] for row in rows])


class Transaction:
    """Statements run inside one transaction; `?` placeholders on both dialects (and
    `?N`, the Nth value, on SQLite)."""

    def __init__(self, cursor: Cursor, postgres: bool, bulk: ModuleType | None = None) -> None:
        self._cursor = cursor
        self._postgres = postgres
        self._bulk = bulk

    @property
    def postgres(self) -> bool:
        """Whether this is a PostgreSQL transaction (else SQLite)."""
        return self._postgres

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self._postgres else sql

    def _run(self, sql: str, params: Sequence[Any]) -> None:
        if self._postgres:
            self._cursor.execute(self._sql(sql), params)
        else:
            self._cursor.execute(*_sqlite_statement(sql, params))

    def total_changes(self) -> int:
        """SQLite: the rows inserted, updated or deleted on this connection since it opened
        (a difference of two tells what the statements between them changed)."""
        if self._postgres:
            raise ValueError("total_changes is SQLite's")
        return int(self._cursor.connection.total_changes)  # type: ignore[attr-defined]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; the number of rows it changed."""
        self._run(sql, params)
        return self._cursor.rowcount

    def executemany(
        self,
        sql: str,
        rows: Sequence[Sequence[Any]],
        unless: str | None = None,
        checked: bytes | None = None,
    ) -> list[int]:
        """Run one statement for each row of parameters; the positions of rows skipped.

        `unless` (SQLite only) is a query run first with each row's values (`?N` is the
        row's Nth; bare `?`s are its first values in order); a row it finds anything for
        is skipped. `checked`, a byte a row, limits it to the rows of a nonzero byte.
        """
        if unless is not None and self._postgres:
            raise ValueError("unless is for SQLite; PostgreSQL can say it in one statement")
        if checked is not None and (unless is None or len(checked) != len(rows)):
            raise ValueError("checked must be None, or bytes of one byte a row with unless")
        if self._bulk is not None and isinstance(rows, list):
            connection = self._cursor.connection  # type: ignore[attr-defined]
            skipped: list[int] = self._bulk.executemany(connection, sql, rows, unless, checked)
            return skipped
        if unless is None:
            self._many(sql, rows)
            return []
        return self._guarded(sql, rows, unless, checked)

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not self._postgres:
            sql, rows = _sqlite_rows(sql, rows)
        if rows:
            self._cursor.executemany(self._sql(sql), rows)

    def _guarded(
        self, sql: str, rows: Sequence[Sequence[Any]], unless: str, checked: bytes | None
    ) -> list[int]:
        """executemany with `unless` (SQLite, through the sqlite3 module): the rows
        between two checked ones go in one executemany, written before the next check,
        which may find them."""
        skipped: list[int] = []
        used = max((int(n) for n in re.findall(r"\?(\d+)", unless)), default=0)
        used = used or unless.count("?")
        run: list[Sequence[Any]] = []
        for position, row in enumerate(rows):
            if checked is None or checked[position]:
                self._many(sql, run)
                run = []
                self._run(unless, row[:used])
                if self._cursor.fetchone() is not None:
                    skipped.append(position)
                    continue
            run.append(row)
        self._many(sql, run)
        return skipped

    def copy(self, table: str, types: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """PostgreSQL: COPY rows into `table` ("name (columns)", the columns of PostgreSQL
        `types`), in one stream. Binary: a third of the text format's cost to the client
        (whose GIL the worker's decoding needs) and less work for the server."""
        if not self._postgres:
            raise ValueError("copy is for PostgreSQL")
        cursor: Any = self._cursor
        with cursor.copy(f"COPY {table} FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(types)
            for row in rows:
                copy.write_row(row)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """All rows of a query."""
        self._run(sql, params)
        return [tuple(row) for row in self._cursor.fetchall()]

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Row]:
        """The rows of a query as SQLite steps to each (a reader that stops early has it
        read no further); no other statement may run in the transaction until the
        reader is done with them."""
        self._run(sql, params)
        for row in self._cursor:
            yield tuple(row)

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """The first row of a query, or None."""
        self._run(sql, params)
        row = self._cursor.fetchone()
        return None if row is None else tuple(row)


def arrays(rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """PostgreSQL: rows (at least one) as a list a column, the parameters of a statement
    that reads them back with `unnest`."""
    return [list(column) for column in zip(*rows, strict=True)]


def _one_line(error: BaseException) -> str:
    """A driver's message on one line (psycopg's span several)."""
    return " ".join(str(error).split())


def _enable_wal(connection: sqlite3.Connection) -> None:
    """Switch to WAL (persistent in the file), waiting out other processes doing the same.

    Changing the journal mode can answer SQLITE_BUSY without calling the busy handler,
    so processes starting together on a fresh file retry here for the busy timeout.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _bulk_for(connection: sqlite3.Connection) -> ModuleType | None:
    """SQLITE_BULK when the handle it reads from `connection` names the connection's own
    database file (a check of its assumption about the sqlite3 module's objects)."""
    if SQLITE_BULK is None:
        return None
    files = [row[2] for row in connection.execute("PRAGMA database_list") if row[1] == "main"]
    return SQLITE_BULK if files and SQLITE_BULK.handle_file(connection) == files[0] else None


def _unicode_fold(value: str | bytes | int | float | None) -> str | bytes | int | float | None:
    """SQL `unicode_fold(x)` on SQLite: a text case-folded as Python folds it, in any
    script (SQLite's LOWER folds ASCII letters only)."""
    return value.casefold() if isinstance(value, str) else value


def _sqlite_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


class _Slot:
    """One thread's connection and the lock held while it is in use.

    close() takes the lock before closing, so a connection is never closed under a
    thread still using it (with SQLite that would be a use-after-free in C).
    """

    __slots__ = ("bulk", "closed", "connection", "lock")

    def __init__(self, connection: Any, bulk: ModuleType | None = None) -> None:
        self.connection = connection
        self.bulk = bulk
        self.lock = threading.Lock()
        self.closed = False

    def close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                try:
                    self.connection.close()
                except Exception:  # a broken connection may fail to close; it is gone anyway
                    pass


class Database:
    """A database named by URL: `sqlite:///path/file.db` or `postgresql://...`."""

    def __init__(self, url: str, statement_timeout_ms: int = STATEMENT_TIMEOUT_MS) -> None:
        self.url = url
        self.postgres = url.startswith(("postgresql://", "postgres://"))
        self.statement_timeout_ms = statement_timeout_ms
        self._local = threading.local()
        self._lock = threading.Lock()
        self._slots: list[_Slot] = []
        self._pool: ConnectionPool[Any] | None = None
        # the last transaction found the server unreachable: the next asks it first, and
        # fails at once while it is down, rather than after the pool's timeout
        self._unreachable = False

    @property
    def sqlite_path(self) -> Path | None:
        """The SQLite database file; None for PostgreSQL."""
        return None if self.postgres else _sqlite_path(self.url)

    @property
    def display_url(self) -> str:
        """The URL without a password, for logs and messages."""
        return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", self.url)

    def _configure(self, connection: psycopg.Connection[Any]) -> None:
        """Each new pooled PostgreSQL connection: its statement time limit, and no JIT
        compilation (JIT_OFF)."""
        connection.execute(f"SET statement_timeout = {int(self.statement_timeout_ms)}")
        connection.execute(JIT_OFF)
        connection.commit()

    def _postgres_pool(self) -> ConnectionPool[Any]:
        with self._lock:
            if self._pool is None:
                self._pool = ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=POOL_MAX_CONNECTIONS,
                    kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "autocommit": False},
                    configure=self._configure,
                    check=ConnectionPool.check_connection,
                    open=False,
                    name="spangate",
                )
                self._pool.open(wait=False)
            return self._pool

    def _connect(self) -> Any:
        path = _sqlite_path(self.url)
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(
            path,
            timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        connection.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        connection.execute(f"PRAGMA page_size = {SQLITE_PAGE_BYTES}")  # before anything is written
        _enable_wal(connection)
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
        connection.create_function("unicode_fold", 1, _unicode_fold, deterministic=True)
        return connection

    def _acquire(self) -> _Slot:
        """This thread's slot, locked; a new connection when there is none (or it closed)."""
        slot: _Slot | None = getattr(self._local, "slot", None)
        if slot is not None:
            slot.lock.acquire()
            if not slot.closed:
                return slot
            slot.lock.release()
        connection = self._connect()
        slot = _Slot(connection, _bulk_for(connection))
        slot.lock.acquire()
        self._local.slot = slot
        with self._lock:
            self._slots.append(slot)
        return slot

    def _discard(self, slot: _Slot) -> None:
        """Drop a broken connection (called with its lock held)."""
        slot.closed = True
        self._local.slot = None
        with self._lock:
            if slot in self._slots:
                self._slots.remove(slot)
        try:
            slot.connection.close()
        except Exception:  # closing a broken connection may fail too; it is gone anyway
            pass

    @contextmanager
    def transaction(self, immediate: bool = False) -> Iterator[Transaction]:
        """A transaction committed on success and rolled back on any error.

        `immediate` takes SQLite's write lock at the start (read-then-write sequences
        that must not interleave with another process); PostgreSQL ignores it.
        """
        if self.postgres:
            yield from self._postgres_transaction()
            return
        try:
            slot = self._acquire()
        except (sqlite3.Error, OSError) as e:
            raise StoreUnavailable(
                f"database {self.display_url} is unreachable: {_one_line(e)}"
            ) from e
        try:
            yield from self._run(slot, immediate)
        finally:
            slot.lock.release()

    def retried(self, work: Callable[[Transaction], _Result], immediate: bool = False) -> _Result:
        """`work` in a transaction (`transaction(immediate)`), run again in a new one when
        it met another's (WriteConflict: the server broke a deadlock by ending it, or a key
        it inserts was another's first), up to WRITE_ATTEMPTS transactions in all."""
        attempts = 1
        while True:
            try:
                with self.transaction(immediate) as tx:
                    return work(tx)
            except WriteConflict:
                if attempts == WRITE_ATTEMPTS:
                    raise
                attempts += 1

    def _connect_error(self) -> str | None:
        """Why a connection of this thread's own fails; None when it succeeds (the pool's
        timeout names no reason, and fails slowly)."""
        try:
            psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S).close()
        except psycopg.Error as e:
            return _one_line(e)
        return None

    def _lend(self) -> tuple[ConnectionPool[Any], Any]:
        """The pool and a connection of it; StoreUnavailable when there is none."""
        unreachable = f"database {self.display_url} is unreachable"
        if self._unreachable:  # as it was last time: ask the server itself, at once
            reason = self._connect_error()
            if reason is not None:
                raise StoreUnavailable(f"{unreachable}: {reason}")
        pool = self._postgres_pool()
        try:
            connection = pool.getconn(timeout=CONNECT_TIMEOUT_S)
        except (PoolTimeout, psycopg.Error) as e:
            reason = self._connect_error()
            self._unreachable = reason is not None
            if reason is None:  # the server answers: every pooled connection is in use
                raise StoreUnavailable(
                    f"database {self.display_url}: no pooled connection free within "
                    f"{CONNECT_TIMEOUT_S} s (all {POOL_MAX_CONNECTIONS} in use)"
                ) from e
            raise StoreUnavailable(f"{unreachable}: {reason}") from e
        self._unreachable = False
        return pool, connection

    def _failure(self, error: BaseException) -> BaseException:
        """What a transaction's error is raised as (itself when it is not the driver's)."""
        if isinstance(error, psycopg.errors.QueryCanceled):
            return StoreUnavailable(
                f"database {self.display_url} did not answer within the statement "
                f"timeout ({self.statement_timeout_ms} ms): {_one_line(error)}"
            )
        if isinstance(error, psycopg.DataError | psycopg.errors.ProgramLimitExceeded):
            # before OperationalError, which ProgramLimitExceeded is: no retry mends it
            return StoreRefused(f"database refused a value: {_one_line(error)}")
        if isinstance(error, psycopg.errors.UniqueViolation | psycopg.errors.DeadlockDetected):
            return WriteConflict(f"database error: {_one_line(error)}")
        if isinstance(error, sqlite3.OperationalError) and str(error) == "integer overflow":
            # a sum past 64 bits: the rows' values, which no retry mends
            return StoreRefused(f"database refused a value: {_one_line(error)}")
        if isinstance(error, psycopg.OperationalError | sqlite3.OperationalError):
            return StoreUnavailable(f"database {self.display_url} failed: {_one_line(error)}")
        if isinstance(error, psycopg.Error | sqlite3.Error | OverflowError):
            # OverflowError: a value the driver cannot bind (an integer past 64 bits)
            return StoreError(f"database error: {_one_line(error)}")
        return error

    def _postgres_transaction(self) -> Iterator[Transaction]:
        pool, connection = self._lend()
        try:
            with connection.cursor() as cursor:
                yield Transaction(cursor, postgres=True)
            connection.commit()
        except BaseException as e:
            if not connection.closed:
                try:
                    connection.rollback()
                except psycopg.Error:  # the pool discards a connection it finds broken
                    pass
            failure = self._failure(e)
            if failure is e:
                raise
            raise failure from e
        finally:
            pool.putconn(connection)

    def _run(self, slot: _Slot, immediate: bool) -> Iterator[Transaction]:
        connection = slot.connection
        cursor = connection.cursor()
        try:
            cursor.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield Transaction(cursor, postgres=False, bulk=slot.bulk)
                cursor.execute("COMMIT")
            except BaseException:
                try:
                    cursor.execute("ROLLBACK")
                except sqlite3.Error:  # SQLite may have rolled back already
                    pass
                raise
        except BaseException as e:
            failure = self._failure(e)
            if failure is e:
                raise
            raise failure from e
        finally:
            cursor.close()

    def release_thread(self) -> None:
        """Close the calling thread's connection, if it has one (a thread about to end)."""
        slot: _Slot | None = getattr(self._local, "slot", None)
        if slot is not None:
            with slot.lock:
                self._discard(slot)

    def close(self) -> None:
        """Close every connection, in every thread, each once its current use ends."""
        with self._lock:
            slots, self._slots = self._slots, []
            pool, self._pool = self._pool, None
        for slot in slots:
            slot.close()
        if pool is not None:
            pool.close()

    def ping(self) -> None:
        """A trivial round trip; StoreUnavailable when the database does not answer."""
        with self.transaction() as tx:
            tx.query_one("SELECT 1")
