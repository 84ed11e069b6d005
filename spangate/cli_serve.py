"""`spangate serve` and the one-part commands: `collector`, `sidecar`, `dashboard`, `worker`."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import gc
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from genai.prices import PriceFileError
from service.logs import configure_logging
from service.settings import Settings, SettingsError
from spangate.cli_support import (
    fail,
    load_pricer,
    load_settings,
    store_failure,
    upgrade_stored_spans,
    whole_number,
)
from spangate.embedded_redis import EmbeddedRedis, EmbeddedRedisError, die_with_parent
from spangate.ports import PortTaken, check_ports
from spangate.supervisor import Supervisor
from storage import trace_walk
from storage.database import Database, sqlite_writer_refused
from storage.errors import StoreError
from storage.identity import IdentityStore
from storage.schema import migrate, refuse_newer

#: How often a part run alone looks whether the embedded Redis it started has exited.
WATCH_EVERY_S = 1.0


@contextmanager
def redis_url_for(settings: Settings) -> Iterator[Settings]:
    """Settings with a Redis URL: the configured one, or the data directory's embedded
    one, kept running until the block ends, as `spangate serve` keeps it: started again
    on its port when it exits, or, when another process started it and is gone (and
    the server with it), started here; when it cannot be, the process is asked to stop
    (SIGTERM)."""
    with _queue_store(settings) as (resolved, embedded):
        if embedded is None:
            yield resolved
            return
        watch, done = _watching(embedded), threading.Event()

        def keep() -> None:
            while not done.wait(WATCH_EVERY_S):
                if not watch():
                    os.kill(os.getpid(), signal.SIGTERM)
                    return

        watcher = threading.Thread(target=keep, name="spangate-redis-watch", daemon=True)
        watcher.start()
        try:
            yield resolved
        finally:
            done.set()
            watcher.join()


@contextmanager
def _queue_store(settings: Settings) -> Iterator[tuple[Settings, EmbeddedRedis | None]]:
    """`redis_url_for`'s settings, and the data directory's embedded Redis, which this
    process started or found running (None when the settings name one)."""
    if settings.redis_url is not None:
        yield settings, None
        return
    embedded = EmbeddedRedis(settings.data_dir)
    url = embedded.start()
    try:
        yield dataclasses.replace(settings, redis_url=url), embedded
    finally:
        embedded.stop()


def _watching(embedded: EmbeddedRedis | None) -> Callable[[], bool]:
    """The supervisor's check of the embedded Redis: started again on its port when it
    has exited; False (stop everything) when it cannot be."""

    def watch() -> bool:
        if embedded is None:
            return True
        try:
            status = embedded.keep_running()
            adopted = status is None and embedded.adopt()
        except EmbeddedRedisError as e:
            print(f"spangate: the embedded Redis exited and {e}; stopping", file=sys.stderr)
            return False
        if status is not None:
            print(
                f"spangate: the embedded Redis exited with status {status}; started again "
                "on its port",
                file=sys.stderr,
                flush=True,
            )
        if adopted:
            print(
                "spangate: the process that ran the embedded Redis is gone; started it "
                "again on its port, in this one",
                file=sys.stderr,
                flush=True,
            )
        return True

    return watch


def _collector(args: argparse.Namespace) -> int:
    from collector.app import create_app
    from spangate.runner import run

    try:
        settings = load_settings()
        if not args.reuse_port:  # with it, the other collectors hold the port too
            check_ports(settings, ["collector"])
        configure_logging(settings.log_level)
        with redis_url_for(settings) as resolved:
            run(create_app(resolved), resolved.host, resolved.ingest_port, args.reuse_port)
    except (SettingsError, EmbeddedRedisError, OSError, PortTaken) as e:
        return fail(str(e))
    return 0


def _sidecar(args: argparse.Namespace) -> int:
    from scores_sidecar.app import create_app
    from spangate.runner import run

    try:
        settings = load_settings()
    except SettingsError as e:
        return fail(str(e), 2)
    try:
        check_ports(settings, ["sidecar"])
        configure_logging(settings.log_level)
        run(create_app(settings), settings.host, settings.api_port)
    except (PortTaken, OSError) as e:
        return fail(str(e))
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    from dashboard.app import create_app
    from spangate.runner import run

    try:
        settings = load_settings()
        check_ports(settings, ["dashboard"])
        configure_logging(settings.log_level)
        with redis_url_for(settings) as resolved:  # the ingestion page reads the queue store
            run(create_app(resolved), resolved.host, resolved.app_port)
    except (SettingsError, EmbeddedRedisError, OSError, PortTaken) as e:
        return fail(str(e))
    return 0


@contextmanager
def worker_process() -> Iterator[None]:
    """The process-wide settings a worker wants (worker/loop.py says why): the GIL's
    switch interval at SWITCH_INTERVAL_S and the cyclic garbage collector off; as they
    were, after."""
    from worker.loop import SWITCH_INTERVAL_S

    switch_interval, collecting = sys.getswitchinterval(), gc.isenabled()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    gc.disable()
    try:
        yield
    finally:
        sys.setswitchinterval(switch_interval)
        if collecting:
            gc.enable()


def _worker(args: argparse.Namespace) -> int:
    import redis

    from spangate import worker_health
    from spanqueue.connect import queue_client
    from storage.spans import SpanStore
    from worker.loop import Worker
    from worker.metrics import WorkerMetrics
    from worker.record import WorkerRecord

    try:
        settings = load_settings()
        pricer = load_pricer(settings)
    except (SettingsError, PriceFileError) as e:
        return fail(str(e), 2)
    if args.check:
        return worker_health.check(settings, args.consumer)
    configure_logging(settings.log_level)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    db = Database(settings.database_url, settings.database_statement_timeout_ms)
    if db.sqlite_path is not None and (refused := sqlite_writer_refused()):
        logging.getLogger("spangate.worker").warning(
            "SQLite rows are written through the sqlite3 module", extra={"reason": refused}
        )
    try:
        migrate(db)
        upgrade_stored_spans(db, pricer, stop)
        with redis_url_for(settings) as resolved:
            client = queue_client(str(resolved.redis_url), socket_timeout=30)
            metrics = WorkerMetrics()
            worker = Worker(
                client,
                SpanStore(db),
                settings.dedup_window_seconds,
                consumer=args.consumer,
                claim_idle_ms=args.claim_idle_ms,
                pricer=pricer,
                record=WorkerRecord(settings.ingestion_record, metrics),
            )
            port = settings.worker_metrics_port if args.metrics_port is None else args.metrics_port
            stop_metrics = worker_health.serve_metrics(settings.host, port, metrics)
            try:
                with worker_process():
                    stats = worker.run(stop, burst=args.burst)
            finally:
                stop_metrics()
            client.close()
    except trace_walk.Stopped as e:
        print(f"spangate: {e}; the next start goes on from there", file=sys.stderr)
        return 0
    except StoreError as e:
        return fail(store_failure(e))
    except EmbeddedRedisError as e:
        return fail(str(e))
    except redis.RedisError as e:
        return fail(f"the queue store failed: {e}")
    finally:
        db.close()
    if args.burst:
        print(
            f"stored {stats.spans_written} spans from {stats.entries} queue entries; "
            f"refused {stats.spans_refused}; dead-lettered {stats.dead_lettered}"
        )
    return 0


def _parts(args: argparse.Namespace) -> dict[str, list[str]]:
    """Each child's name and its spangate arguments."""
    if args.workers == 1:
        parts = {"collector": ["collector"]}
    else:
        parts = {
            f"collector-{n}": ["collector", "--reuse-port"] for n in range(1, args.workers + 1)
        }
    parts["sidecar"] = ["sidecar"]
    parts["dashboard"] = ["dashboard"]
    if not args.no_worker:
        # one name across restarts: a worker started again takes up at once the entries
        # the one before it left pending
        parts["worker"] = ["worker", "--consumer", f"{socket.gethostname()}-serve"]
    return parts


def _start(env: dict[str, str], argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "spangate.cli", *argv], env=env, preexec_fn=die_with_parent
    )


def _banner(settings: Settings, parts: dict[str, list[str]], first_run: bool) -> None:
    """Where each part listens; on a store with no user yet, how to add one and a key."""
    lines = [
        f"spangate serving {', '.join(parts)}",
        f"  ingest:  http://{settings.host}:{settings.ingest_port}/v1/spans "
        f"(OTLP/JSON: /v1/otlp/v1/traces)",
        f"  scores:  http://{settings.host}:{settings.api_port}/v1/scores",
        f"  queue:   {settings.redis_url}",
        f"  storage: {Database(settings.database_url).display_url}",
        *(
            (
                "  first user: spangate users add you@example.com --role owner --password-stdin",
                "  a key:      spangate keys create --project demo --user you@example.com",
            )
            if first_run
            else ()
        ),
        f"  dashboard: http://{settings.host}:{settings.app_port}/",
    ]
    print("\n".join(lines), file=sys.stderr, flush=True)


READY_WAIT_S = 60.0


def _listening(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
    except OSError:
        return False
    return True


def _say_when_listening(settings: Settings, children: dict[str, subprocess.Popen[bytes]]) -> None:
    """Once the three ports answer, end the start-up output with the dashboard's address
    (nothing when a child exits first or they take too long: the supervisor says why).
    The ports were free before the children started (check_ports), and every child is
    still running when they answer: what answers is this serve's own processes."""
    ports = (settings.ingest_port, settings.api_port, settings.app_port)
    deadline = time.monotonic() + READY_WAIT_S
    while time.monotonic() < deadline:
        if any(child.poll() is not None for child in children.values()):
            return
        answering = all(_listening(settings.host, port) for port in ports)
        if answering and all(child.poll() is None for child in children.values()):
            print(
                f"spangate is ready: open http://{settings.host}:{settings.app_port}/",
                file=sys.stderr,
                flush=True,
            )
            return
        time.sleep(0.2)


def _serve(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
        load_pricer(settings)  # a bad price file stops start-up here, in one line
    except (SettingsError, PriceFileError) as e:
        return fail(str(e), 2)
    try:  # before anything starts: a taken port is one line, not a child's traceback
        check_ports(settings, ["collector", "sidecar", "dashboard"])
    except PortTaken as e:
        return fail(str(e))
    configure_logging(settings.log_level)
    db = Database(settings.database_url, settings.database_statement_timeout_ms)
    try:  # the worker part walks the stored traces, while the collector accepts
        migrate(db)
        refuse_newer(db)
        first_run = not IdentityStore(db).has_users()
    except StoreError as e:
        return fail(store_failure(e))
    finally:
        db.close()
    parts = _parts(args)
    try:
        with _queue_store(settings) as (resolved, embedded):
            env = dict(os.environ, SPANGATE_REDIS_URL=str(resolved.redis_url))
            _banner(resolved, parts, first_run)
            supervisor = Supervisor(parts, functools.partial(_start, env))
            supervisor.start()
            _say_when_listening(resolved, supervisor.processes())
            return supervisor.run(_watching(embedded))
    except EmbeddedRedisError as e:
        return fail(str(e))


_DEFAULTS = Settings()
#: The settings a first run is moved with (the rest: docs/operations.md).
_SETTINGS = "settings (environment variables):\n" + "\n".join(
    f"  {name:<30}{default!s:<12}{meaning}"
    for name, default, meaning in (
        ("SPANGATE_HOST", _DEFAULTS.host, "the address every part listens on"),
        ("SPANGATE_INGEST_PORT", _DEFAULTS.ingest_port, "the collector (OTLP/HTTP /v1/traces)"),
        ("SPANGATE_API_PORT", _DEFAULTS.api_port, "the scores sidecar"),
        ("SPANGATE_APP_PORT", _DEFAULTS.app_port, "the dashboard"),
        (
            "SPANGATE_WORKER_METRICS_PORT",
            _DEFAULTS.worker_metrics_port,
            "the worker's Prometheus /metrics (0: none)",
        ),
        ("SPANGATE_DATA_DIR", _DEFAULTS.data_dir, "the embedded Redis's files, SQLite's database"),
        ("SPANGATE_REDIS_URL", "unset", "the embedded Redis, or redis://..."),
        ("SPANGATE_DATABASE_URL", "unset", "SQLite in the data directory, or postgresql://..."),
    )
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add serve and the one-part commands."""
    serve = commands.add_parser(
        "serve",
        help="run every part on embedded defaults",
        description="Run the collector, the scores sidecar, the dashboard and a worker,\n"
        "on an embedded Redis and SQLite unless the environment names others.",
        epilog=_SETTINGS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--no-worker", action="store_true", help="do not drain the queue")
    serve.add_argument(
        "--workers",
        type=whole_number(1),
        default=1,
        metavar="N",
        help="collector processes sharing the ingest port (SO_REUSEPORT)",
    )
    serve.set_defaults(handler=_serve)
    collector = commands.add_parser("collector", help="run the ingest gateway")
    collector.add_argument(
        "--reuse-port", action="store_true", help="share the port with other collector processes"
    )
    collector.set_defaults(handler=_collector)
    sidecar = commands.add_parser("sidecar", help="run the scores API")
    sidecar.set_defaults(handler=_sidecar)
    dashboard = commands.add_parser("dashboard", help="run the dashboard (browser sign-in)")
    dashboard.set_defaults(handler=_dashboard)
    worker = commands.add_parser("worker", help="drain the queue into the span store")
    worker.add_argument(
        "--burst", action="store_true", help="drain what is queued, then exit (prints a summary)"
    )
    worker.add_argument(
        "--consumer",
        default=None,
        help="its name in the consumer groups (default: host-pid); a worker started "
        "with the name of one that stopped takes up that one's pending entries at once",
    )
    worker.add_argument(
        "--check",
        action="store_true",
        help="exit 0 when the worker (--consumer NAME, else any of this host) has beaten "
        "within 60 s, else 1: for a container's health check",
    )
    worker.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve Prometheus metrics on this port (default SPANGATE_WORKER_METRICS_PORT, "
        "4321; 0: none)",
    )
    worker.add_argument(
        "--claim-idle-ms",
        type=whole_number(0),
        default=30_000,
        help="take over entries another worker left pending this long",
    )
    worker.set_defaults(handler=_worker)
