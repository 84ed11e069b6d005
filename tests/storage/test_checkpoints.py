"""Background WAL checkpoints against a real SQLite file."""

from __future__ import annotations

import time
from pathlib import Path

from storage.checkpoints import WRITER_AUTOCHECKPOINT_PAGES, BackgroundCheckpoints
from storage.database import Database


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
    assert _threshold(db) == WRITER_AUTOCHECKPOINT_PAGES
    checkpoints.stop()
    assert _threshold(db) == 1000
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
