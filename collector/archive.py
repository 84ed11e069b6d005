"""The optional raw-request archive: every accepted body, for replay (SPANGATE_ARCHIVE_DIR).

Files `archive-<UTC time>-<pid>-<n>.jsonl.gz`, one JSON object per accepted request,
each line its own gzip member (so a file being written is readable up to its last
complete record, and concatenated members are one valid gzip stream):
`{"received_ms", "project", "route", "content_type", "body"}` with the body as the
gateway read it after gzip (UTF-8 text). A new file starts after ROTATE_BYTES of input.
`spangate replay` sends these records again.

Writing is a thread fed by a bounded queue, so compression never blocks the event
loop. When the archive cannot keep up or cannot be written it is degraded: the
gateway keeps accepting while the project's queue has headroom (under half of
SPANGATE_QUEUE_MAX_SPANS_PER_PROJECT) and refuses with 503 ARCHIVE_DEGRADED_NO_HEADROOM
past it, since neither the archive nor the worker is keeping up then. The first
successful write clears the state.
"""

from __future__ import annotations

import gzip
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson

ROTATE_BYTES = 64 * 1024 * 1024
QUEUE_BYTES = 64 * 1024 * 1024
HEADROOM_FRACTION = 0.5
log = logging.getLogger("spangate.archive")


@dataclass(frozen=True, slots=True)
class ArchiveRecord:
    """One accepted request, as archived."""

    received_ms: int
    project: str
    route: str
    content_type: str
    body: bytes

    def line(self) -> bytes:
        """The record as one JSON line."""
        return (
            orjson.dumps(
                {
                    "received_ms": self.received_ms,
                    "project": self.project,
                    "route": self.route,
                    "content_type": self.content_type,
                    "body": self.body.decode("utf-8", "replace"),
                }
            )
            + b"\n"
        )


class Archive:
    """Appends records from a writer thread; `degraded` says when it is not keeping up."""

    def __init__(
        self, directory: Path, rotate_bytes: int = ROTATE_BYTES, queue_bytes: int = QUEUE_BYTES
    ) -> None:
        self.directory = directory
        self.rotate_bytes = rotate_bytes
        self.queue_bytes = queue_bytes
        self.degraded = False
        self._pending: queue.SimpleQueue[ArchiveRecord | None] = queue.SimpleQueue()
        self._pending_bytes = 0
        self._lock = threading.Lock()
        self._file: BinaryIO | None = None
        self._written = 0
        self._thread = threading.Thread(target=self._run, name="spangate-archive", daemon=True)

    def start(self) -> None:
        """Start the writer thread."""
        self._thread.start()

    def append(self, record: ArchiveRecord) -> None:
        """Queue a record; when the queue is full the record is dropped and the archive is
        degraded (the spans themselves are in the Redis queue already)."""
        with self._lock:
            if self._pending_bytes + len(record.body) > self.queue_bytes:
                self._degrade("the archive writer is behind; a body was not archived")
                return
            self._pending_bytes += len(record.body)
        self._pending.put(record)

    def stop(self) -> None:
        """Write what is queued, close the file, end the thread."""
        self._pending.put(None)
        self._thread.join(timeout=60)

    def _degrade(self, reason: str) -> None:
        if not self.degraded:
            log.error("archive degraded", extra={"reason": reason})
        self.degraded = True

    def _open(self) -> BinaryIO:
        self.directory.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = self.directory / f"archive-{stamp}-{os.getpid()}-{time.monotonic_ns()}.jsonl.gz"
        return open(path, "ab")  # closed at rotation and at stop

    def _write(self, record: ArchiveRecord) -> None:
        if self._file is None or self._written >= self.rotate_bytes:
            if self._file is not None:
                self._file.close()
                self._file = None
            self._file = self._open()
            self._written = 0
        line = record.line()
        self._file.write(gzip.compress(line, compresslevel=6, mtime=0))
        self._file.flush()
        self._written += len(line)

    def _run(self) -> None:
        while (record := self._pending.get()) is not None:
            with self._lock:
                self._pending_bytes -= len(record.body)
            try:
                self._write(record)
            except OSError as e:
                self._file = None
                self._degrade(f"cannot write the archive: {e}")
                continue
            if self.degraded:
                log.warning("archive writing again")
                self.degraded = False
        if self._file is not None:
            self._file.close()
