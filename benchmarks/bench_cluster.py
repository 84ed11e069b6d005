"""The collector on a Redis Cluster against the same collector on one Redis server, in
one run.

    python -m benchmarks.bench_cluster [--seconds 3] [--rounds 5] [--connections 8]
    python -m benchmarks.bench_ingest --cluster [...]      # the same

A 3-master cluster (no replicas: what is measured is the collector's routing, not
replication) and a single server, both append-only as the embedded server is, their
processes with the load generator on core 1; one collector on each, on core 0. Each
round loads the single server's collector and the cluster's back to back, the order
alternating, so a host speeding up or slowing down favours neither; the ratio is the
median of the paired rounds. Then two collector processes on the cluster, one a core
(sharing them with Redis and the load), driven at once: their total rate.
Targets: the cluster's per-collector rate >= 0.8 of the single server's; two
collectors on the cluster run within the machine's cores (their total above one's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import redis

from benchmarks.bench_ingest import LOAD_CORE, collector_env, database_with_key, pin, start
from benchmarks.bench_ingest import drain as drain_server
from benchmarks.loadgen import build_request, load, load_together
from benchmarks.payloads import native_spans_body
from spangate.embedded_redis import free_port
from tests.redis_cluster import RedisClusterServers
from tests.redis_server import RedisServer


def drain_cluster(cluster: RedisClusterServers) -> None:
    """Empty every master's queue keys and compact its log (bench_ingest.drain, a node
    at a time)."""
    for node in cluster.masters():
        client: redis.Redis = node.client()
        try:
            drain_server(client)
        finally:
            client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args()
    compare(args.seconds, args.rounds, args.connections)


def compare(seconds: float, rounds: int, connections: int) -> None:
    """Run the comparison and print its figures (see the module's docstring)."""
    work = Path(tempfile.mkdtemp(prefix="spangate-bench-cluster-"))
    server = RedisServer(work / "redis").start()
    cluster = RedisClusterServers(work / "cluster", masters=3, replicas=0).start()
    for node in (server, *cluster.nodes):
        pin(node.process.pid, LOAD_CORE)  # type: ignore[union-attr]
    db_url, key = database_with_key(work)
    ports = {"single": free_port(), "cluster": free_port(), "cluster-2": free_port()}
    urls = {"single": server.url, "cluster": cluster.url, "cluster-2": cluster.url}
    collectors = {
        name: start(
            ["-m", "spangate.cli", "collector"],
            collector_env(urls[name], db_url, port),
            f"http://127.0.0.1:{port}/health/ready",
        )
        for name, port in ports.items()
    }
    pin(collectors["cluster-2"].pid, LOAD_CORE)
    pin(os.getpid(), LOAD_CORE)
    single_client = server.client()
    auth = {"Authorization": f"Bearer {key}"}
    cases = [
        ("1-span native", native_spans_body(1), 1),
        ("1000-span native", native_spans_body(1000), 1000),
    ]
    print(
        f"{rounds} paired rounds of {seconds:g} s, {connections} connections; "
        "collector on core 0; Redis (1 server, or 3 masters) and load on core 1"
    )
    try:
        for label, body, spans in cases:
            request = build_request("/v1/spans", body, auth)
            for port in ports.values():
                load(port, request, 0.5, connections)  # warm up
            single_rates, cluster_rates, ratios = [], [], []
            for round_no in range(rounds):
                order = ["single", "cluster"] if round_no % 2 == 0 else ["cluster", "single"]
                rates = {}
                for name in order:
                    result = load(ports[name], request, seconds, connections)
                    rates[name] = result.requests_per_second * spans
                drain_server(single_client)
                drain_cluster(cluster)
                single_rates.append(rates["single"])
                cluster_rates.append(rates["cluster"])
                ratios.append(rates["cluster"] / rates["single"])
            two = []
            for _ in range(rounds):
                results = load_together(
                    [ports["cluster"], ports["cluster-2"]], request, seconds, connections
                )
                two.append(sum(r.requests_per_second for r in results) * spans)
                drain_cluster(cluster)
            print(
                f"{label:17s} single {statistics.median(single_rates):9,.0f} spans/s  "
                f"cluster {statistics.median(cluster_rates):9,.0f} spans/s  "
                f"ratio {statistics.median(ratios):.2f} "
                f"(rounds {min(ratios):.2f}-{max(ratios):.2f}); "
                f"two collectors on the cluster {statistics.median(two):9,.0f} spans/s"
            )
    finally:
        for process in collectors.values():
            process.terminate()
            process.wait()
        server.stop()
        cluster.stop()


if __name__ == "__main__":
    main()
