"""Instructions per 1-span request, collector and echo app, counted by callgrind.

    python -m benchmarks.bench_instructions [--requests 200]
    python -m benchmarks.bench_instructions --record [--spans 1000 --requests 20]

Where bench_ingest's rates move with whatever else the host runs, an instruction count
does not: each app runs under `valgrind --tool=callgrind` with counting off until it
has answered 50 requests, then counts exactly `--requests` sequential requests on one
keep-alive connection. Same binary and inputs, same count (within about 0.2%), so a
change of 1% in what a request costs shows. Needs valgrind (and its callgrind_control).

`--record` counts the collector with the ingestion record off (SPANGATE_INGESTION_RECORD=0)
as the baseline instead of the echo app, on bodies of `--spans` spans.
"""

from __future__ import annotations

import argparse
import http.client
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_ingest import collector_env, database_with_key
from benchmarks.payloads import native_spans_body
from spangate.embedded_redis import free_port
from tests.redis_server import RedisServer

WARM_UP = 50
START_TIMEOUT_S = 300  # imports under valgrind are slow


def _post(connection: http.client.HTTPConnection, body: bytes, headers: dict[str, str]) -> int:
    connection.request("POST", "/v1/spans", body, headers)
    response = connection.getresponse()
    response.read()
    return response.status


def _connected(port: int, body: bytes, headers: dict[str, str]) -> http.client.HTTPConnection:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            if _post(connection, body, headers) == 200:
                return connection
        except OSError:
            time.sleep(1)
        if time.monotonic() > deadline:
            raise SystemExit(f"nothing answered on port {port}")


def _total(counts: Path) -> int:
    for line in counts.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise SystemExit(f"no totals in {counts}")


def instructions(
    argv: list[str], env: dict[str, str], port: int, requests: int, key: str, spans: int = 1
) -> float:
    """Instructions per request of the app `argv` starts on `port`."""
    counts = Path(tempfile.mkdtemp(prefix="spangate-callgrind-")) / "callgrind.out"
    app = subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={counts}",
            sys.executable,
            *argv,
        ],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    body = native_spans_body(spans)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    try:
        connection = _connected(port, body, headers)
        for _ in range(WARM_UP):
            _post(connection, body, headers)
        control = ["callgrind_control", "-i"]
        subprocess.run([*control, "on", str(app.pid)], check=True, capture_output=True)
        statuses = {_post(connection, body, headers) for _ in range(requests)}
        subprocess.run([*control, "off", str(app.pid)], check=True, capture_output=True)
        if statuses != {200}:
            raise SystemExit(f"{argv}: answers {statuses}")
    finally:
        app.terminate()
        app.wait()
    return _total(counts) / requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--record", action="store_true", help="the record on against off")
    parser.add_argument("--spans", type=int, default=1, help="spans a request (--record)")
    args = parser.parse_args()
    if args.record:
        record(args.requests, args.spans)
        return
    work = Path(tempfile.mkdtemp(prefix="spangate-bench-"))
    server = RedisServer(work / "redis").start()
    try:
        db_url, key = database_with_key(work)
        port = free_port()
        env = collector_env(server.url, db_url, port)
        echo = instructions(["-m", "benchmarks.echo_app", str(port)], {}, port, args.requests, key)
        collector = instructions(["-m", "spangate.cli", "collector"], env, port, args.requests, key)
    finally:
        server.stop()
    print(f"{args.requests} sequential 1-span requests after {WARM_UP} of warm-up")
    print(f"echo       {echo:12,.0f} instructions a request")
    print(f"collector  {collector:12,.0f} instructions a request")
    print(f"ratio {echo / collector:.3f} (the request rate's ratio on one core, host noise aside)")


def record(requests: int, spans: int) -> None:
    """Instructions a request of the collector with the ingestion record on and off."""
    work = Path(tempfile.mkdtemp(prefix="spangate-bench-"))
    server = RedisServer(work / "redis").start()
    argv = ["-m", "spangate.cli", "collector"]
    try:
        db_url, key = database_with_key(work)
        port = free_port()
        env = collector_env(server.url, db_url, port)
        off = {**env, "SPANGATE_INGESTION_RECORD": "0"}
        without = instructions(argv, off, port, requests, key, spans)
        with_record = instructions(argv, env, port, requests, key, spans)
    finally:
        server.stop()
    print(f"{requests} sequential {spans}-span requests after {WARM_UP} of warm-up")
    print(f"record off {without:14,.0f} instructions a request")
    print(f"record on  {with_record:14,.0f} instructions a request")
    print(f"ratio {without / with_record:.3f} (the request rate's ratio on one core)")


if __name__ == "__main__":
    main()
