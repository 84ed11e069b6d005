"""Collector rate with N processes sharing the port (SO_REUSEPORT), in one run.

    python -m benchmarks.bench_scaling [--max-workers 2] [--seconds 4] [--spans 1,1000]

Nothing is pinned: the collectors, this load generator and Redis share the machine's
cores, so the growth shown is what one machine of this size gets. For each body size
(spans a request) and each N, prints the rate, its ratio to N=1 (the rate should grow
with N up to the cores available) and where the machine's CPU went, in cores: the
collectors, Redis, this load generator, and what was left idle (from /proc/stat, so
the kernel's own threads count as busy). With 1,000-span bodies, moving 0.8 MB a request
through loopback twice and into Redis's append-only file takes most of what the
collectors leave, so there the growth is bounded by the machine, not the collectors.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.bench_ingest import collector_env, cpu_seconds, database_with_key, drain
from benchmarks.loadgen import build_request, load
from benchmarks.payloads import native_spans_body
from spangate.embedded_redis import free_port
from tests.redis_server import RedisServer


def start_collectors(count: int, env: dict[str, str], port: int) -> list[subprocess.Popen[bytes]]:
    argv = [sys.executable, "-m", "spangate.cli", "collector"] + (
        ["--reuse-port"] if count > 1 else []
    )
    processes = [
        subprocess.Popen(
            argv, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(count)
    ]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health/ready", timeout=1).status_code == 200:
                time.sleep(1.0)  # let every process finish starting
                return processes
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("collectors did not start")


def idle_ticks() -> tuple[int, int]:
    """(idle, all) clock ticks of every core so far, from /proc/stat (Linux)."""
    fields = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[3], sum(fields)


def measured(
    workers: int,
    spans: int,
    redis_server: RedisServer,
    db_url: str,
    key: str,
    args: argparse.Namespace,
) -> tuple[float, list[float]]:
    """(spans/s, cores used by the collectors, Redis and this process, cores idle) with
    `workers` collectors answering `spans`-span bodies."""
    request = build_request(
        "/v1/spans", native_spans_body(spans), {"Authorization": f"Bearer {key}"}
    )
    port = free_port()
    env = collector_env(redis_server.url, db_url, port, rate_limit_rps="0")
    processes = start_collectors(workers, env, port)
    redis_pid = redis_server.process.pid  # type: ignore[union-attr]
    try:
        load(port, request, 1.0, args.connections)
        drain(redis_server.client())

        def used() -> list[float]:
            collectors = sum(cpu_seconds(p.pid) for p in processes)
            return [collectors, cpu_seconds(redis_pid), time.process_time()]

        before, ticks = used(), idle_ticks()
        result = load(port, request, args.seconds, args.connections)
        cores = [(a - b) / result.seconds for a, b in zip(used(), before, strict=True)]
        idle, total = (a - b for a, b in zip(idle_ticks(), ticks, strict=True))
        cores.append((os.cpu_count() or 1) * idle / max(total, 1))
        drain(redis_server.client())
    finally:
        for process in processes:
            process.terminate()
            process.wait()
    if set(result.statuses) != {200}:
        raise SystemExit(f"N={workers}: answers other than 200: {dict(result.statuses)}")
    return result.requests_per_second * spans, cores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--spans", default="1,1000", help="spans a body, comma-separated")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="spangate-scaling-"))
    server = RedisServer(work / "redis").start()
    db_url, key = database_with_key(work)
    try:
        for spans in (int(n) for n in args.spans.split(",")):
            first = 0.0
            for workers in range(1, args.max_workers + 1):
                rate, (collectors, redis_cores, loadgen, idle) = measured(
                    workers, spans, server, db_url, key, args
                )
                first = first or rate
                print(
                    f"{spans:5d}-span bodies  N={workers}: {rate:11,.0f} spans/s  "
                    f"ratio to N=1 {rate / first:.2f}  (cores: collectors {collectors:.2f}, "
                    f"Redis {redis_cores:.2f}, load generator {loadgen:.2f}, idle {idle:.2f})"
                )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
