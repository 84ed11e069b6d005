"""Worker throughput from a pre-filled stream into SQLite, as a ratio of a plain executemany.

    python -m benchmarks.bench_worker [--entries 100] [--spans 1000] [--rounds 3]

The baseline inserts the very same rows (already built) with the sqlite3 module's own
executemany, one transaction per 50 entries' rows (BATCH_ENTRIES), into an empty copy
of the spans table: the database's ceiling through the standard library (the worker's
store writes through storage/_sqlite_bulk.c where it was built, so it can pass 1.0).
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
from pathlib import Path
from typing import Any

import orjson
import redis

import proto_json
from benchmarks.payloads import native_spans_body
from spangate.cli_serve import worker_process
from spanqueue.layout import STREAMS_KEY, QueuedRequest, stream_key
from storage.database import Database
from storage.schema import migrate
from storage.span_rows import rows_of
from storage.spans import UPSERT, SpanStore
from storage.worker import Worker
from tests.redis_server import RedisServer


def fill(server: RedisServer, project: str, entries: int, spans: int) -> list[bytes]:
    client = server.client()
    bodies = []
    for i in range(entries):
        conversion = proto_json.convert_spans(native_spans_body(spans, seed=i + 1))
        body = conversion.payload
        bodies.append(body)
        item = QueuedRequest(project, "spans", int(time.time() * 1000), spans, body)
        client.sadd(STREAMS_KEY, stream_key(project))
        client.xadd(stream_key(project), item.fields())  # type: ignore[arg-type]
    client.close()
    return bodies


def baseline(db: Database, bodies: list[bytes], project: str, batch_entries: int) -> float:
    """Seconds for the sqlite3 module's executemany of the same rows, batch by batch."""
    rows = [row for body in bodies for row in rows_of(orjson.loads(body), project, 0)]
    per_batch = len(rows) // max(1, len(bodies) // batch_entries)
    with db.transaction() as tx:  # the layer's first connection switches the file to WAL
        tx.execute("SELECT 1")
    connection = sqlite3.connect(str(db.sqlite_path), isolation_level=None)
    connection.execute("PRAGMA synchronous = NORMAL")
    start = time.perf_counter()
    for at in range(0, len(rows), per_batch):
        connection.execute("BEGIN")
        connection.executemany(UPSERT.split(" ON CONFLICT")[0], rows[at : at + per_batch])
        connection.execute("COMMIT")
    elapsed = time.perf_counter() - start
    connection.close()
    return elapsed


#: Entries whose rows the baseline writes in one transaction: the worker's batches when
#: the targets were set (the worker now writes parts of about PART_SPANS spans).
BATCH_ENTRIES = 50


def _run_worker(redis_url: str, db_url: str, name: str, go: Any) -> None:  # in a fork
    worker = Worker(
        redis.Redis.from_url(redis_url), SpanStore(Database(db_url)), 1200, consumer=name
    )
    go.wait()
    worker.run(burst=True)


def drain(redis_url: str, db_url: str, processes: int) -> float:
    """Seconds for `processes` workers (this one alone when 1) to drain every stream."""
    if processes == 1:
        worker = Worker(redis.Redis.from_url(redis_url), SpanStore(Database(db_url)), 1200)
        start = time.perf_counter()
        with worker_process():
            worker.run(burst=True)
        return time.perf_counter() - start
    context = multiprocessing.get_context("fork")
    go = context.Event()
    children = [
        context.Process(target=_run_worker, args=(redis_url, db_url, f"bench-{i}", go))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=100)
    parser.add_argument("--spans", type=int, default=1000, help="per entry")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--processes", type=int, default=1, help="worker processes sharing the stream"
    )
    args = parser.parse_args()
    total = args.entries * args.spans
    worker_rates, base_rates = [], []
    print(
        f"{args.entries} entries x {args.spans} spans = {total:,} spans per round, "
        f"{args.processes} worker process(es)"
    )
    for round_no in range(args.rounds):
        work = Path(tempfile.mkdtemp(prefix="spangate-worker-bench-"))
        server = RedisServer(work / "redis").start()
        project = f"bench{round_no}"
        bodies = fill(server, project, args.entries, args.spans)
        db = Database(f"sqlite:///{work / 'worker.db'}")
        migrate(db)
        plain = Database(f"sqlite:///{work / 'plain.db'}")
        migrate(plain)
        # alternate which goes first: the second one runs while the first one's
        # database is still being written back to disk
        if round_no % 2:
            base_s = baseline(plain, bodies, project, BATCH_ENTRIES)
        worker_s = drain(server.url, f"sqlite:///{work / 'worker.db'}", args.processes)
        assert SpanStore(db).count(project) == total
        if not round_no % 2:
            base_s = baseline(plain, bodies, project, BATCH_ENTRIES)
        worker_rates.append(total / worker_s)
        base_rates.append(total / base_s)
        db.close()
        plain.close()
        server.stop()
    worker_rate, base_rate = statistics.median(worker_rates), statistics.median(base_rates)
    print(f"worker(s)   {worker_rate:10,.0f} spans/s (median of {args.rounds})")
    print("  rounds:", ", ".join(f"{rate:,.0f}" for rate in worker_rates))
    print(f"executemany {base_rate:10,.0f} spans/s (sqlite3 module, same rows, same batches)")
    print(
        f"ratio {worker_rate / base_rate:.2f}; target >= 100,000 spans/s: "
        f"{'PASS' if worker_rate >= 100_000 else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
