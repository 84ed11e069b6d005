"""SQLite's WAL checkpoints on a thread of their own, off the worker's write path.

In WAL mode the connection that commits copies the log back into the database file
once the log passes `wal_autocheckpoint` pages: for the worker's bulk upserts, about a
sixth of their time. sqlite3 lets go of the GIL while SQLite runs a statement, so a
checkpoint on another thread (and connection) runs on another core while the worker
decodes its next batch. PASSIVE checkpoints never block the writer. The writer keeps an
autocheckpoint of its own, set high, in case this thread falls behind.

SQLite starts the log over only from a write transaction that began once every frame
was copied back. Under a steady load the writer begins its next transaction while the
checkpoint of its last one still runs, so the log never started over: it grew by every
page written (140 MB for 100,000 spans into an 86 MB file), each frame going to a new
page of the file. So once the log passes WAL_RESTART_BYTES, the writer waits for the
checkpoint in progress before its next transaction (`before_write`), which then starts
the log over.
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
#: How far the log may grow before the writer waits for a checkpoint to start it over:
#: about eight of the worker's parts (in alternating drains, 32 MiB and 128 MiB both
#: cost more CPU a span).
WAL_RESTART_BYTES = 64 * 1024 * 1024
#: The longest the writer waits for that checkpoint (one that takes longer, say behind a
#: disk that stalls, is left to finish on its own; the log then grows past the mark).
RESTART_WAIT_S = 2.0
_FRAME_HEADER_BYTES = 24
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
        self._changed = threading.Condition()
        self._commits = 0  # commits told about
        self._covered = 0  # of those, the ones before the last checkpoint that finished
        self._log_bytes = 0  # the log's size when that checkpoint ran
        self._stopping = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._writer_threshold(raised=True)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpoints", daemon=True)
        self._thread.start()

    def adopt_writer(self) -> None:
        """The calling thread writes too: its connection leaves checkpoints to the thread."""
        self._writer_threshold(raised=True)

    def committed(self) -> None:
        """The writer committed: checkpoint what it wrote (without waiting)."""
        with self._changed:
            self._commits += 1
            self._changed.notify_all()

    def before_write(self) -> None:
        """The writer is about to begin a transaction: when the log has passed
        WAL_RESTART_BYTES, wait (up to RESTART_WAIT_S) for the checkpoint of every commit
        told about, so that this transaction starts the log over."""
        with self._changed:
            if self._log_bytes >= WAL_RESTART_BYTES and self._changed.wait_for(
                self._caught_up, RESTART_WAIT_S
            ):
                self._log_bytes = 0  # starting over: not to be waited for again

    def _caught_up(self) -> bool:
        return self._covered == self._commits or self._stopping

    def stop(self) -> None:
        if self._thread is not None:
            with self._changed:
                self._stopping = True
                self._changed.notify_all()
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
            frame_bytes = connection.execute("PRAGMA page_size").fetchone()[0]
            frame_bytes += _FRAME_HEADER_BYTES
            while True:
                with self._changed:
                    self._changed.wait_for(lambda: self._covered != self._commits or self._stopping)
                    if self._stopping:
                        return
                    commits = self._commits
                log_bytes, failed = 0, False
                try:
                    row = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    log_bytes = max(0, row[1]) * frame_bytes  # (busy, log frames, copied)
                except sqlite3.Error as e:  # the writer's own threshold still holds
                    log.warning("background checkpoint failed", extra={"error": str(e)})
                    failed = True
                with self._changed:  # a failed one too: the writer does not wait on it
                    self._covered, self._log_bytes = commits, log_bytes
                    self._changed.notify_all()
                    if failed:
                        self._changed.wait_for(lambda: self._stopping, _RETRY_AFTER_ERROR_S)
        except sqlite3.Error as e:
            log.warning("background checkpoints stopped", extra={"error": str(e)})
        finally:
            connection.close()
            with self._changed:  # nothing left to wait for
                self._log_bytes = 0
                self._changed.notify_all()
