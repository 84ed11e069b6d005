"""SQLite's WAL checkpoints on a thread of their own, off the worker's write path.

In WAL mode the connection that commits copies the log back into the database file
once the log passes `wal_autocheckpoint` pages: for the worker's bulk upserts, about a
sixth of their time. sqlite3 lets go of the GIL while SQLite runs a statement, so a
checkpoint on another thread (and connection) runs on another core while the worker
decodes its next batch. PASSIVE checkpoints never block the writer. The writer keeps an
autocheckpoint of its own, set high, in case this thread falls behind.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

from storage.database import SQLITE_BUSY_TIMEOUT_MS, Database
from storage.errors import StoreError

log = logging.getLogger("spangate.worker")
#: The writer's own threshold while checkpoints run here: above one batch's log (a
#: batch of 50 entries of 1,000 spans writes about 45 MB). Set in pages of the file's size.
WRITER_AUTOCHECKPOINT_BYTES = 128 * 1024 * 1024
SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES = 1000
_RETRY_AFTER_ERROR_S = 1.0


class BackgroundCheckpoints:
    """A thread checkpointing a SQLite database after each commit it is told about.

    `start` and `stop` are called on the writer's thread: they set that thread's
    connection's own threshold (up while the thread runs, back to SQLite's default
    after). Another thread that writes calls `adopt_writer` for its own connection.
    """

    def __init__(self, db: Database) -> None:
        if db.sqlite_path is None:
            raise ValueError("checkpoints are SQLite's")
        self._db = db
        self._path = db.sqlite_path
        self._due = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._writer_threshold(raised=True)
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpoints", daemon=True)
        self._thread.start()

    def adopt_writer(self) -> None:
        """The calling thread writes too: its connection leaves checkpoints to the thread."""
        self._writer_threshold(raised=True)

    def committed(self) -> None:
        """The writer committed: checkpoint what it wrote (without waiting)."""
        self._due.set()

    def stop(self) -> None:
        if self._thread is not None:
            self._stopping.set()
            self._due.set()
            self._thread.join()
            self._thread = None
        self._writer_threshold(raised=False)

    def _writer_threshold(self, raised: bool) -> None:
        """WRITER_AUTOCHECKPOINT_BYTES (in the file's pages) or SQLite's default.

        Best effort: a writer left at the default checkpoints for itself, as before.
        """
        try:
            with self._db.transaction() as tx:
                pages = SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES
                if raised:
                    (page_bytes,) = tx.query_one("PRAGMA page_size") or (4096,)
                    pages = WRITER_AUTOCHECKPOINT_BYTES // int(page_bytes)
                tx.query_one(f"PRAGMA wal_autocheckpoint = {pages}")
        except StoreError as e:
            log.warning("cannot set the writer's checkpoint threshold", extra={"error": str(e)})

    def _run(self) -> None:
        try:
            connection = sqlite3.connect(
                self._path, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000, isolation_level=None
            )
        except sqlite3.Error as e:  # the writer's own threshold still holds
            log.warning("background checkpoints not started", extra={"error": str(e)})
            return
        try:
            while not self._stopping.is_set():
                self._due.wait()
                self._due.clear()
                try:
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as e:  # the writer's own threshold still holds
                    log.warning("background checkpoint failed", extra={"error": str(e)})
                    self._stopping.wait(_RETRY_AFTER_ERROR_S)
        finally:
            connection.close()
