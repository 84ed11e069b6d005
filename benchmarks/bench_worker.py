"""Worker throughput from a pre-filled stream into the span store, as a ratio of a plain
bulk insert of the same rows.

    python -m benchmarks.bench_worker [--entries 100] [--spans 1000] [--rounds 3]
    python -m benchmarks.bench_worker --database postgresql://postgres@127.0.0.1/test \
        --entries 1000 --rounds 1 [--across 10]
    python -m benchmarks.bench_worker --genai [--database ...]
    python -m benchmarks.bench_worker --resource  # bodies as an OTel SDK exports them

`--genai` compares the worker with itself: OTel GenAI chat calls (a few KB of messages,
token counts) against the same spans with those attributes renamed out of every LLM
convention, so the ratio is what the GenAI view (reading, pricing, summing) costs.
Target: >= 0.8, on SQLite and PostgreSQL.

SQLite (the default): the baseline inserts the very same rows (already built) with the
sqlite3 module's own executemany, one transaction per 50 entries' rows (BATCH_ENTRIES),
into an empty copy of the spans table: the database's ceiling through the standard
library (the worker's store writes through storage/_sqlite_bulk.c where it was built, so
it can pass 1.0).

PostgreSQL (`--database`, a schema of its own each round, dropped after): the baseline
COPYs the same rows (binary, as the worker), in the same transactions, into a table of
the same columns with no key and no index; the same bodies are then drained into SQLite
too, for comparison. Target there: >= 50,000 spans/s and >= 0.5
of the baseline, with the store growing to 1,000,000 spans (`--entries 1000`).
The worker runs with the process settings of `spangate worker` (worker_process). The
worker does everything else too: XREADGROUP, decoding the canonical JSON, building rows
and content hashes, the re-sending window (a query per row before its upsert), XACK and
XDEL. Target:
>= 100,000 spans/s (0.83 of the baseline's 121,000 on the host where that target was
set).
"""

from __future__ import annotations

import argparse
import multiprocessing
import sqlite3
import statistics
import tempfile
import time
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import psycopg
import redis

import proto_json
from benchmarks.payloads import TRACE_SPANS, native_spans_body, under_sdk_resource
from spangate.cli_serve import worker_process
from spanqueue.layout import STREAMS_KEY, QueuedRequest, stream_key
from storage.database import Database
from storage.resend import COLUMN_TYPES, INSERT
from storage.schema import migrate
from storage.span_rows import SpanRow, rows_of
from storage.spans import SpanStore
from tests.postgres_server import postgres_schema
from tests.redis_server import RedisServer
from worker.loop import Worker


def fill(
    server: RedisServer,
    project: str,
    entries: int,
    spans: int,
    across: int = 1,
    genai: str | None = None,
    resource: bool = False,
) -> list[bytes]:
    """Queue `entries` converted bodies of `spans` spans for `project`, each trace's
    spans in `across` consecutive bodies (GenAI chat calls under attribute prefix
    `genai`, when given; under an SDK's resource and scope, when `resource`); the bodies."""
    bodies = [
        proto_json.convert_spans(
            native_spans_body(spans, seed=i + 1, across=across, genai=genai)
        ).payload
        for i in range(entries)
    ]
    if resource:
        bodies = [under_sdk_resource(body) for body in bodies]
    enqueue(server, project, bodies, spans)
    return bodies


def enqueue(server: RedisServer, project: str, bodies: list[bytes], spans: int) -> None:
    client = server.client()
    for body in bodies:
        item = QueuedRequest(project, "spans", int(time.time() * 1000), spans, body)
        client.sadd(STREAMS_KEY, stream_key(project))
        client.xadd(stream_key(project), item.fields())  # type: ignore[arg-type]
    client.close()


def _rows(bodies: list[bytes], project: str, batch_entries: int) -> tuple[list[SpanRow], int]:
    """The rows of the bodies, and how many one baseline transaction writes."""
    rows = [row for body in bodies for row in rows_of(orjson.loads(body), project, 0)]
    return rows, len(rows) // max(1, len(bodies) // batch_entries)


def baseline(db: Database, bodies: list[bytes], project: str, batch_entries: int) -> float:
    """Seconds for the sqlite3 module's executemany of the same rows, batch by batch."""
    rows, per_batch = _rows(bodies, project, batch_entries)
    with db.transaction() as tx:  # the layer's first connection switches the file to WAL
        tx.execute("SELECT 1")
    connection = sqlite3.connect(str(db.sqlite_path), isolation_level=None)
    connection.execute("PRAGMA synchronous = NORMAL")
    start = time.perf_counter()
    for at in range(0, len(rows), per_batch):
        connection.execute("BEGIN")
        connection.executemany(INSERT, rows[at : at + per_batch])
        connection.execute("COMMIT")
    elapsed = time.perf_counter() - start
    connection.close()
    return elapsed


def postgres_baseline(url: str, bodies: list[bytes], project: str, batch_entries: int) -> float:
    """Seconds for a COPY of the same rows into a table with no key and no index, in
    the same transactions."""
    rows, per_batch = _rows(bodies, project, batch_entries)
    columns = ", ".join(SpanRow._fields)
    with psycopg.connect(url) as connection:
        connection.execute(
            "CREATE TABLE plain_spans AS SELECT * FROM spans WITH NO DATA", prepare=False
        )
        connection.commit()
        start = time.perf_counter()
        for at in range(0, len(rows), per_batch):
            with connection.cursor() as cursor:
                with cursor.copy(f"COPY plain_spans ({columns}) FROM STDIN {BINARY}") as copy:
                    copy.set_types(COLUMN_TYPES)
                    for row in rows[at : at + per_batch]:
                        copy.write_row(row)
            connection.commit()
        return time.perf_counter() - start


BINARY = "(FORMAT BINARY)"


#: Entries whose rows the baseline writes in one transaction: the worker's batches when
#: the targets were set (the worker now writes parts of about PART_SPANS spans).
BATCH_ENTRIES = 50


def _run_worker(
    redis_url: str, db_url: str, name: str, go: Any, find_index: bool = True
) -> None:  # in a fork
    store = SpanStore(Database(db_url), find_index)
    worker = Worker(redis.Redis.from_url(redis_url), store, 1200, consumer=name)
    go.wait()
    worker.run(burst=True)


def drain(redis_url: str, db_url: str, processes: int, find_index: bool = True) -> float:
    """Seconds for `processes` workers (this one alone when 1) to drain every stream
    (`find_index`: keeping the indexes that find a trace)."""
    if processes == 1:
        store = SpanStore(Database(db_url), find_index)
        worker = Worker(redis.Redis.from_url(redis_url), store, 1200)
        start = time.perf_counter()
        with worker_process():
            worker.run(burst=True)
        return time.perf_counter() - start
    context = multiprocessing.get_context("fork")
    go = context.Event()
    children = [
        context.Process(target=_run_worker, args=(redis_url, db_url, f"bench-{i}", go, find_index))
        for i in range(processes)
    ]
    with worker_process():  # the children inherit the settings
        for child in children:
            child.start()
    time.sleep(2)  # imports and connections before the clock starts
    start = time.perf_counter()
    go.set()
    for child in children:
        child.join()
    return time.perf_counter() - start


GENAI_TARGET = 0.8


def genai_rounds(args: argparse.Namespace) -> None:
    """`--genai`: GenAI chat calls (messages of a few KB, token counts) against their
    twins with the same attributes under names no LLM convention has, each drained into
    an empty store of its own, the order alternating; the ratio of their rates."""
    total = args.entries * args.spans
    rates: dict[str, list[float]] = {"gen_ai": [], "app": []}
    for round_no in range(args.rounds):
        work = Path(tempfile.mkdtemp(prefix="spangate-worker-bench-"))
        server = RedisServer(work / "redis").start()
        order = ("gen_ai", "app") if round_no % 2 == 0 else ("app", "gen_ai")
        for prefix in order:
            project = f"bench{round_no}{prefix}"
            with ExitStack() as stack:
                url = (
                    stack.enter_context(postgres_schema(args.database))
                    if args.database
                    else f"sqlite:///{work / f'{prefix}.db'}"
                )
                db = Database(url)
                migrate(db)
                fill(server, project, args.entries, args.spans, args.across, prefix)
                rates[prefix].append(total / drain(server.url, url, args.processes))
                assert SpanStore(db).count(project) == total
                db.close()
        server.stop()
    genai, twin = statistics.median(rates["gen_ai"]), statistics.median(rates["app"])
    print(
        f"GenAI spans {genai:10,.0f} spans/s (median of {args.rounds}; rounds: "
        + ", ".join(f"{rate:,.0f}" for rate in rates["gen_ai"])
        + ")"
    )
    print(
        f"their twins {twin:10,.0f} spans/s (rounds: "
        + ", ".join(f"{rate:,.0f}" for rate in rates["app"])
        + ")"
    )
    ratio = genai / twin
    verdict = "PASS" if ratio >= GENAI_TARGET else "FAIL"
    print(f"ratio {ratio:.2f}; target >= {GENAI_TARGET}: {verdict}")


#: The schema before the indexes that find a trace (migration 13).
BEFORE_FIND_INDEX = 12
FIND_INDEX_TARGET = 0.8


def find_index_rounds(args: argparse.Namespace) -> None:
    """`--find-index`: the same bodies drained into a store with the indexes that find
    a trace (full text, attributes, names, sorts, sessions) and into one migrated to
    before them, written without them; the order alternating; the ratio of rates."""
    total = args.entries * args.spans
    rates: dict[bool, list[float]] = {True: [], False: []}
    for round_no in range(args.rounds):
        work = Path(tempfile.mkdtemp(prefix="spangate-worker-bench-"))
        server = RedisServer(work / "redis").start()
        bodies = [
            proto_json.convert_spans(
                native_spans_body(args.spans, seed=i + 1, across=args.across)
            ).payload
            for i in range(args.entries)
        ]
        for indexed in (True, False) if round_no % 2 == 0 else (False, True):
            project = f"bench{round_no}{int(indexed)}"
            with ExitStack() as stack:
                url = (
                    stack.enter_context(postgres_schema(args.database))
                    if args.database
                    else f"sqlite:///{work / f'{int(indexed)}.db'}"
                )
                db = Database(url)
                migrate(db, None if indexed else BEFORE_FIND_INDEX)
                enqueue(server, project, bodies, args.spans)
                rates[indexed].append(total / drain(server.url, url, args.processes, indexed))
                assert SpanStore(db).count(project) == total
                db.close()
        server.stop()
    for indexed, label in ((True, "with the find indexes"), (False, "without them")):
        print(
            f"{label:22} {statistics.median(rates[indexed]):10,.0f} spans/s (median of "
            f"{args.rounds}; rounds: " + ", ".join(f"{r:,.0f}" for r in rates[indexed]) + ")"
        )
    ratio = statistics.median(rates[True]) / statistics.median(rates[False])
    verdict = "PASS" if ratio >= FIND_INDEX_TARGET else "FAIL"
    print(f"ratio {ratio:.2f}; target >= {FIND_INDEX_TARGET}: {verdict}")


def worker_rounds(args: argparse.Namespace) -> None:
    """The default: the worker against a plain insert of the same rows, and what the
    store holds a span."""
    total = args.entries * args.spans
    worker_rates, base_rates, sqlite_rates, stored = [], [], [], []
    print(
        f"{args.entries} entries x {args.spans} spans = {total:,} spans per round, "
        f"{args.processes} worker process(es), each trace in {args.across} request(s)"
    )
    for round_no in range(args.rounds):
        work = Path(tempfile.mkdtemp(prefix="spangate-worker-bench-"))
        server = RedisServer(work / "redis").start()
        project = f"bench{round_no}"
        bodies = fill(server, project, args.entries, args.spans, args.across, None, args.resource)
        with ExitStack() as stack:
            if args.database:
                url = stack.enter_context(postgres_schema(args.database))
                plain_url = stack.enter_context(postgres_schema(args.database))
            else:
                url, plain_url = f"sqlite:///{work / 'worker.db'}", f"sqlite:///{work / 'plain.db'}"
            db = Database(url)
            migrate(db)
            plain = Database(plain_url)
            migrate(plain)

            base = (
                partial(postgres_baseline, plain_url, bodies, project, BATCH_ENTRIES)
                if args.database
                else partial(baseline, plain, bodies, project, BATCH_ENTRIES)
            )
            # alternate which goes first: the second one runs while the first one's
            # database is still being written back to disk
            if round_no % 2:
                base_s = base()
            worker_s = drain(server.url, url, args.processes)
            assert SpanStore(db).count(project) == total
            if not args.database:  # the store's file and its log, a span
                stored.append(sum(f.stat().st_size for f in work.glob("worker.db*")) / total)
            if not round_no % 2:
                base_s = base()
            worker_rates.append(total / worker_s)
            base_rates.append(total / base_s)
            db.close()
            plain.close()
            if args.database:  # the same bodies into SQLite, for comparison
                enqueue(server, f"{project}-sqlite", bodies, args.spans)
                sqlite_url = f"sqlite:///{work / 'sqlite.db'}"
                migrate(Database(sqlite_url))
                sqlite_rates.append(total / drain(server.url, sqlite_url, args.processes))
        server.stop()
    worker_rate, base_rate = statistics.median(worker_rates), statistics.median(base_rates)
    print(f"worker(s)   {worker_rate:10,.0f} spans/s (median of {args.rounds})")
    print("  rounds:", ", ".join(f"{rate:,.0f}" for rate in worker_rates))
    print("  baseline rounds:", ", ".join(f"{rate:,.0f}" for rate in base_rates))
    if stored:
        print(f"stored      {statistics.median(stored):10,.0f} bytes a span (the file and its log)")
    ratio = worker_rate / base_rate
    if args.database:
        print(f"COPY        {base_rate:10,.0f} spans/s (no key, no index, same rows, same batches)")
        met = worker_rate >= 50_000 and ratio >= 0.5
        sqlite_rate = statistics.median(sqlite_rates)
        print(f"SQLite      {sqlite_rate:10,.0f} spans/s (the same worker(s), the same bodies)")
        print(
            f"ratio {ratio:.2f}; target >= 50,000 spans/s and >= 0.5: {'PASS' if met else 'FAIL'}"
        )
    else:
        print(f"executemany {base_rate:10,.0f} spans/s (sqlite3 module, same rows, same batches)")
        met = worker_rate >= 100_000
        print(f"ratio {ratio:.2f}; target >= 100,000 spans/s: {'PASS' if met else 'FAIL'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=100)
    parser.add_argument("--spans", type=int, default=1000, help="per entry")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--database", default="", help="postgresql://... (a schema of its own); unset: SQLite"
    )
    parser.add_argument(
        "--processes", type=int, default=1, help="worker processes sharing the stream"
    )
    parser.add_argument(
        "--across",
        type=int,
        choices=[n for n in range(1, TRACE_SPANS + 1) if TRACE_SPANS % n == 0],
        default=1,
        help="requests each trace's spans come in (1: each trace whole in one; more: most "
        "of a batch's traces are already stored, and the worker checks their spans)",
    )
    parser.add_argument(
        "--resource",
        action="store_true",
        help="every body under the resource and scope an OpenTelemetry SDK exports "
        "(15 attributes), as an exporter's; the native bodies have none",
    )
    parser.add_argument(
        "--genai",
        action="store_true",
        help="GenAI chat calls against their twins without GenAI attributes (the cost of "
        "the GenAI view), instead of the worker against a plain insert",
    )
    parser.add_argument(
        "--find-index",
        action="store_true",
        help="the worker with the indexes that find a trace against the worker without "
        "them (their cost), instead of the worker against a plain insert",
    )
    args = parser.parse_args()
    if args.find_index:
        find_index_rounds(args)
        return
    if args.genai:
        genai_rounds(args)
        return
    worker_rounds(args)


if __name__ == "__main__":
    main()
