"""Collector span rate as a ratio of an echo app on the same framework, in one run.

    python -m benchmarks.bench_ingest [--seconds 3] [--rounds 5] [--connections 8]
                                      [--only 1-span] [--together]
    python -m benchmarks.bench_ingest --cluster     # a Redis Cluster against one server
    python -m benchmarks.bench_ingest --record      # the ingestion record on against off

Both servers are single Hypercorn processes pinned to core 0; this load generator and
Redis (append-only on, rewriting its log as the embedded server does) share core 1.
Each round runs the echo app and the collector back to back for each body, the echo app
first in even rounds and the collector first in odd ones, so that a host speeding up or
slowing down during a run does not favour one side; the ratio is the median of the
paired rounds.

`--together` drives both servers at once instead, so that they share core 0 (the
scheduler gives each half of it) and whatever slows the host slows both alike: on a
shared host whose speed moves by 10-30% from one round to the next, the ratio then
moves by a few percent. The rates are about half each; the ratio is the one to read, and
only when the collector's share of the two servers' CPU (printed) is near 0.5: with
1,000-span bodies the load generator, not core 0, runs out first.
Target: >= 0.7 on every body (1-span, and 1,000-span native, OTLP, NDJSON and native
traces).

`--record` measures what the ingestion record costs: the baseline is then the same
collector with the record off (SPANGATE_INGESTION_RECORD=0) instead of the echo app,
driven the same way. Target: >= 0.95 on the 1,000-span bodies, >= 0.90 on 1-span.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import redis

from benchmarks.loadgen import LoadResult, build_request, load, load_together
from benchmarks.payloads import native_spans_body, native_traces_body, ndjson_body, otlp_body
from spangate.embedded_redis import free_port
from storage.database import Database
from storage.identity import IdentityStore
from storage.schema import migrate
from tests.redis_server import RedisServer

SERVER_CORE, LOAD_CORE = {0}, {1}


def pin(pid: int, cores: set[int]) -> None:
    if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > 1:  # type: ignore[operator]
        os.sched_setaffinity(pid, cores)


def start(argv: list[str], env: dict[str, str], health: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, *argv],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pin(process.pid, SERVER_CORE)
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(health, timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"{argv} did not start") from None
        time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def database_with_key(work: Path) -> tuple[str, str]:
    """A fresh SQLite database under `work` with an owner's key: (its URL, the key)."""
    db_url = f"sqlite:///{work / 'spangate.db'}"
    db = Database(db_url)
    migrate(db)
    store = IdentityStore(db)
    store.add_user("bench@x.io", "owner")
    key = store.create_key("bench", "bench@x.io").key
    db.close()
    return db_url, key


def collector_env(
    redis_url: str, db_url: str, port: int, rate_limit_rps: str = "1000000"
) -> dict[str, str]:
    """A benchmarked collector's settings. The default rate limits are evaluated on every
    request, as in production, but out of reach; "0" turns them off. So is the queue's cap
    per project: with no worker draining, a 4 s run at 250,000 spans/s queues a million
    spans, the default cap, and the rest would be refused QUEUE_NEAR_CAPACITY."""
    return {
        "SPANGATE_REDIS_URL": redis_url,
        "SPANGATE_DATABASE_URL": db_url,
        "SPANGATE_INGEST_PORT": str(port),
        "SPANGATE_LOG_LEVEL": "warning",
        "SPANGATE_RATE_LIMIT_PROJECT_RPS": rate_limit_rps,
        "SPANGATE_RATE_LIMIT_IP_RPS": rate_limit_rps,
        "SPANGATE_QUEUE_MAX_SPANS_PER_PROJECT": "1000000000",
    }


def drain(client: redis.Redis) -> None:
    """Empty the queue between rounds so Redis memory and the AOF stay bounded (and the
    queue depth with it: nothing is refused QUEUE_NEAR_CAPACITY for want of a worker).

    The AOF rewrite that shrinks the file is waited for. Redis 6.2's rewrite child takes
    every write the parent does for up to a second after it has written the dataset,
    and the parent then writes what is left in its own thread. Not waited for, the
    rewrite ran on into the next round; when that was a collector's round, Redis's log
    showed 245 MB taken twice and the parent blocked 0.46 s writing the rest."""
    for pattern in ("spangate:{*}:spans", "spangate:{*}:depth", "spangate:{*}:ingest:*"):
        for key in client.scan_iter(match=pattern):
            client.delete(key)
    rewritten(client)
    client.bgrewriteaof()
    rewritten(client)


def rewritten(client: redis.Redis) -> None:
    """Wait until Redis has no AOF rewrite running or scheduled."""
    while True:
        persistence = client.info("persistence")
        if not (persistence["aof_rewrite_in_progress"] or persistence["aof_rewrite_scheduled"]):
            return
        time.sleep(0.05)


def start_baseline(record: bool, redis_url: str, db_url: str, port: int) -> subprocess.Popen[bytes]:
    """The baseline server: the echo app, or with `record` the collector with the
    ingestion record off."""
    if record:
        env = {**collector_env(redis_url, db_url, port), "SPANGATE_INGESTION_RECORD": "0"}
        health = f"http://127.0.0.1:{port}/health/ready"
        return start(["-m", "spangate.cli", "collector"], env, health)
    return start(["-m", "benchmarks.echo_app", str(port)], {}, f"http://127.0.0.1:{port}/health")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--only", default="", help="run the cases whose label contains this")
    parser.add_argument(
        "--together", action="store_true", help="drive both servers at once (see above)"
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="the baseline is the collector with the ingestion record off (see above)",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="the collector on a 3-master Redis Cluster against one on a single server "
        "(benchmarks/bench_cluster.py)",
    )
    args = parser.parse_args()
    if args.cluster:
        from benchmarks.bench_cluster import compare

        compare(args.seconds, args.rounds, args.connections)
        return
    work = Path(tempfile.mkdtemp(prefix="spangate-bench-"))
    server = RedisServer(work / "redis").start()
    pin(server.process.pid, LOAD_CORE)  # type: ignore[union-attr]
    db_url, key = database_with_key(work)
    collector_port, echo_port = free_port(), free_port()
    env = collector_env(server.url, db_url, collector_port)
    collector = start(
        ["-m", "spangate.cli", "collector"], env, f"http://127.0.0.1:{collector_port}/health/ready"
    )
    echo = start_baseline(args.record, server.url, db_url, echo_port)
    pin(os.getpid(), LOAD_CORE)
    client = server.client()
    auth = {"Authorization": f"Bearer {key}"}
    cases = [
        ("1000-span native", "/v1/spans", native_spans_body(1000), 1000),
        ("1000-span OTLP", "/v1/otlp/v1/traces", otlp_body(1000), 1000),
        ("1000-span NDJSON", "/v1/spans/batch", ndjson_body(1000), 1000),
        ("1000-span traces", "/v1/traces", native_traces_body(1000), 1000),
        ("1-span native", "/v1/spans", native_spans_body(1), 1),
    ]
    cases = [case for case in cases if args.only in case[0]]
    print(
        ("baseline: the collector with the ingestion record off; " if args.record else "")
        + f"{args.rounds} paired rounds of {args.seconds:g} s, {args.connections} connections; "
        f"servers on core 0{' at once' if args.together else ''}, load and Redis on core 1"
    )

    def paired(request: bytes, round_no: int) -> tuple[LoadResult, LoadResult]:
        if args.together:
            baseline, measured = load_together(
                [echo_port, collector_port], request, args.seconds, args.connections
            )
            return baseline, measured
        if round_no % 2:  # every other round the collector goes first (see the docstring)
            measured = load(collector_port, request, args.seconds, args.connections)
            return load(echo_port, request, args.seconds, args.connections), measured
        baseline = load(echo_port, request, args.seconds, args.connections)
        return baseline, load(collector_port, request, args.seconds, args.connections)

    sides = ("record off", "record on") if args.record else ("echo", "collector")
    try:
        for label, path, body, spans in cases:
            request = build_request(path, body, auth)
            load(echo_port, request, 0.5, args.connections)  # warm up both
            load(collector_port, request, 0.5, args.connections)
            drain(client)
            ratios, echo_rates, collector_rates, shares, refused = [], [], [], [], 0
            statuses: Counter[int] = Counter()
            for round_no in range(args.rounds):
                used = [cpu_seconds(p.pid) for p in (echo, collector)]
                baseline, measured = paired(request, round_no)
                echo_s, collector_s = (
                    cpu_seconds(p.pid) - u for p, u in zip((echo, collector), used, strict=True)
                )
                shares.append(collector_s / max(echo_s + collector_s, 1e-9))
                drain(client)
                for status, n in measured.statuses.items():
                    if status != 200:
                        refused += n
                        statuses[status] += n
                echo_rates.append(baseline.requests_per_second * spans)
                collector_rates.append(measured.requests_per_second * spans)
                ratios.append(collector_rates[-1] / echo_rates[-1])
            print(
                f"{label:17s} {sides[0]} {statistics.median(echo_rates):9,.0f} spans/s  "
                f"{sides[1]} {statistics.median(collector_rates):9,.0f} spans/s  "
                f"ratio {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
                + (
                    f"  (collector's CPU share {statistics.median(shares):.2f})"
                    if args.together
                    else ""
                )
                + (f"  ({refused} non-200 answers: {dict(statuses)})" if refused else "")
            )
    finally:
        for process in (collector, echo):
            process.terminate()
            process.wait()
        server.stop()


if __name__ == "__main__":
    main()
