"""Background WAL checkpoints against a real SQLite file."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

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


def test_committed_writes_reach_the_database_file(tmp_path: Path) -> None:
    """The writer does not checkpoint (its threshold is far above these writes), yet the
    database file receives them: the thread copied the log back."""
    path = tmp_path / "spans.db"
    db = Database(f"sqlite:///{path}")
    with db.transaction() as tx:
        tx.execute("CREATE TABLE t (v TEXT)")
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
