"""Background WAL checkpoints against a real SQLite file."""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from storage import checkpoints as checkpoints_module
from storage.checkpoints import WRITER_AUTOCHECKPOINT_BYTES, BackgroundCheckpoints
from storage.database import SQLITE_PAGE_BYTES, Database


def _threshold(db: Database) -> int:
    with db.transaction() as tx:
        row = tx.query_one("PRAGMA wal_autocheckpoint")
    assert row is not None
    return int(row[0])


def test_the_writer_leaves_checkpoints_to_the_thread_and_takes_them_back(
    tmp_path: Path,
) -> None:
    db = Database(f"sqlite:///{tmp_path / 'spans.db'}")
    checkpoints = BackgroundCheckpoints(db)
    checkpoints.start()
    assert _threshold(db) == WRITER_AUTOCHECKPOINT_BYTES // SQLITE_PAGE_BYTES
    checkpoints.stop()
    assert _threshold(db) == 1000
    db.close()


def test_the_threshold_is_in_the_files_own_pages(tmp_path: Path) -> None:
    """A file made with 4 KiB pages (before SQLITE_PAGE_BYTES) gets the same 128 MiB."""
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.execute("PRAGMA page_size = 4096")
    old.execute("CREATE TABLE t (v TEXT)")
    old.close()
    db = Database(f"sqlite:///{path}")
    checkpoints = BackgroundCheckpoints(db)
    checkpoints.start()
    assert _threshold(db) == WRITER_AUTOCHECKPOINT_BYTES // 4096
    checkpoints.stop()
    db.close()


def test_another_writing_thread_adopts_the_threshold(tmp_path: Path) -> None:
    """A thread that writes through its own connection leaves checkpoints to the thread."""
    db = Database(f"sqlite:///{tmp_path / 'spans.db'}")
    checkpoints = BackgroundCheckpoints(db)
    checkpoints.start()
    seen: list[int] = []

    def writer() -> None:
        assert _threshold(db) == 1000  # a new connection, SQLite's default
        checkpoints.adopt_writer()
        seen.append(_threshold(db))
        db.release_thread()

    thread = threading.Thread(target=writer)
    thread.start()
    thread.join()
    assert seen == [WRITER_AUTOCHECKPOINT_BYTES // SQLITE_PAGE_BYTES]
    checkpoints.stop()
    db.close()


def _database_with_a_table(path: Path) -> Database:
    db = Database(f"sqlite:///{path}")
    with db.transaction() as tx:
        tx.execute("CREATE TABLE t (v TEXT)")
    return db


def test_committed_writes_reach_the_database_file(tmp_path: Path) -> None:
    """The writer does not checkpoint (its threshold is far above these writes), yet the
    database file receives them: the thread copied the log back."""
    path = tmp_path / "spans.db"
    db = _database_with_a_table(path)
    checkpoints = BackgroundCheckpoints(db)
    checkpoints.start()
    try:
        before = path.stat().st_size
        with db.transaction() as tx:
            tx.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 2000)
        checkpoints.committed()
        deadline = time.monotonic() + 30
        while path.stat().st_size < before + 2_000_000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert path.stat().st_size >= before + 2_000_000
    finally:
        checkpoints.stop()
        db.close()


_connect = sqlite3.connect  # the fixture below patches it


class _SlowCheckpoints(sqlite3.Connection):
    """A connection whose checkpoints start late (a real checkpoint, after a pause),
    so the writer's next transaction is sure to begin while one is still to run."""

    pause_s = 0.5
    finished = threading.Event()

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if "wal_checkpoint" not in sql:
            return super().execute(sql, *args)
        time.sleep(self.pause_s)
        try:
            return super().execute(sql, *args)
        finally:
            self.finished.set()


@pytest.fixture
def slow_checkpoints(monkeypatch: pytest.MonkeyPatch) -> type[_SlowCheckpoints]:
    _SlowCheckpoints.finished = threading.Event()
    monkeypatch.setattr(
        checkpoints_module.sqlite3,
        "connect",
        functools.partial(sqlite3.connect, factory=_SlowCheckpoints),
    )
    return _SlowCheckpoints


def _log_frames(path: Path) -> int:
    """Frames in the log now (a checkpoint's answer: busy, log frames, copied back)."""
    connection = _connect(path, isolation_level=None)
    try:
        (_, frames, _) = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        connection.close()
    return int(frames)


def _write(db: Database, rows: int) -> None:
    with db.transaction(immediate=True) as tx:
        tx.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * rows)


def test_past_the_mark_the_writer_waits_so_its_next_write_starts_the_log_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow_checkpoints: type[_SlowCheckpoints]
) -> None:
    path = tmp_path / "spans.db"
    db = _database_with_a_table(path)
    monkeypatch.setattr(checkpoints_module, "WAL_RESTART_BYTES", 1_000_000)
    checkpoints = BackgroundCheckpoints(db)
    checkpoints.start()
    try:
        _write(db, 2000)  # about 2 MB of log
        checkpoints.committed()
        slow_checkpoints.finished.wait(30)  # the first checkpoint finds the log past the mark
        slow_checkpoints.finished.clear()
        _write(db, 2000)  # the log grows on: the checkpoint above did not start it over
        checkpoints.committed()
        checkpoints.before_write()  # waits for that commit's checkpoint
        assert slow_checkpoints.finished.is_set()
        _write(db, 1)  # begun with every frame copied back: it starts the log over
        slow_checkpoints.finished.clear()
        checkpoints.committed()
        checkpoints.before_write()  # the log started over: no waiting again
        assert not slow_checkpoints.finished.is_set()
        slow_checkpoints.finished.wait(30)
        assert _log_frames(path) < 10
    finally:
        checkpoints.stop()
        db.close()


def test_below_the_mark_the_writer_does_not_wait(
    tmp_path: Path, slow_checkpoints: type[_SlowCheckpoints]
) -> None:
    db = _database_with_a_table(tmp_path / "spans.db")
    checkpoints = BackgroundCheckpoints(db)
    checkpoints.start()
    try:
        _write(db, 100)
        checkpoints.committed()
        checkpoints.before_write()
        assert not slow_checkpoints.finished.is_set()  # the checkpoint still to run
    finally:
        checkpoints.stop()
        db.close()
