"""PostgreSQL for tests and benchmarks: a schema of their own on a given server, and a
private server for tests that stop and start it (initdb into a temporary directory, on
a free loopback port: never the machine's own server)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from spangate.embedded_redis import free_port


@contextmanager
def postgres_schema(url: str) -> Iterator[str]:
    """`url` with a fresh schema of its own first on the search path; dropped after."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        separator = "&" if "?" in url else "?"
        yield f"{url}{separator}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def server_binaries() -> Path | None:
    """The directory of initdb and pg_ctl (Debian's layout, or on the PATH); None when
    this machine has no PostgreSQL server installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


class PostgresServer:
    """A postgres process owned by a test. As root it runs as the `postgres` user (the
    server refuses root)."""

    def __init__(self) -> None:
        binaries = server_binaries()
        if binaries is None:
            raise RuntimeError("no PostgreSQL server binaries (initdb, pg_ctl) here")
        self.binaries = binaries
        # a directory of its own under the system's temporary one, which the server's
        # user can reach (a test's tmp_path may be private to root)
        self.directory = Path(tempfile.mkdtemp(prefix="spangate-postgres-"))
        self.port = free_port()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            self._as_user = ["runuser", "-u", "postgres", "--"]

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self._as_user, str(self.binaries / tool), *args],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def _pg_ctl(self, *args: str) -> None:
        data = str(self.directory / "data")
        self._run("pg_ctl", "-D", data, "-l", str(self.directory / "log"), "-w", *args)

    def start(self) -> PostgresServer:
        """initdb (the first time), then start and wait until it accepts connections."""
        if not (self.directory / "data").exists():
            if self._as_user:
                shutil.chown(self.directory, "postgres", "postgres")
            data = str(self.directory / "data")
            self._run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8")
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory}"
        self._pg_ctl("-o", options, "start")
        return self

    def crash(self) -> None:
        """Stop at once, as a crash would (`immediate`: no checkpoint; the log replays
        at the next start)."""
        self._pg_ctl("-m", "immediate", "stop")

    def stop(self) -> None:
        """Stop the server and remove its files."""
        try:
            self._pg_ctl("-m", "fast", "stop")
        except subprocess.CalledProcessError:  # already stopped
            pass
        shutil.rmtree(self.directory, ignore_errors=True)
