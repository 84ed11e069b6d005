"""Collector span rate with N processes sharing the port (SO_REUSEPORT), in one run.

    python -m benchmarks.bench_scaling [--max-workers 2] [--seconds 4]

Nothing is pinned: the collectors, this load generator and Redis share the machine's
cores, so the growth shown is what one machine of this size gets. Prints spans/s per N
and the ratio to N=1 (issue 8: the rate should grow with N up to the cores available).
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

from benchmarks.bench_ingest import collector_env, database_with_key, drain
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="spangate-scaling-"))
    server = RedisServer(work / "redis").start()
    db_url, key = database_with_key(work)
    request = build_request(
        "/v1/spans", native_spans_body(1000), {"Authorization": f"Bearer {key}"}
    )
    rates: dict[int, float] = {}
    try:
        for workers in range(1, args.max_workers + 1):
            port = free_port()
            env = collector_env(server.url, db_url, port, rate_limit_rps="0")
            processes = start_collectors(workers, env, port)
            try:
                load(port, request, 1.0, args.connections)
                drain(server.client())
                result = load(port, request, args.seconds, args.connections)
                drain(server.client())
            finally:
                for process in processes:
                    process.terminate()
                    process.wait()
            rates[workers] = result.requests_per_second * 1000
            print(
                f"N={workers}: {rates[workers]:9,.0f} spans/s  ratio to N=1 "
                f"{rates[workers] / rates[1]:.2f}  ({dict(result.statuses)})"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
