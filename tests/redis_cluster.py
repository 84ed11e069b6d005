"""A real Redis Cluster for tests: three masters and a replica each, on loopback ports.

Made as an operator makes one (`redis-cli --cluster create ... --cluster-replicas 1`),
with a node timeout of a second so that a failover takes about that long, and, as the
production layout (docs/operations.md) says, the slots of healthy masters served while another
master fails over (`cluster-require-full-coverage no`). Torn down by process id.
"""

from __future__ import annotations

import random
import socket
import subprocess
import time
from pathlib import Path

import redis

from spangate.embedded_redis import redis_server_binary
from tests.redis_server import RedisServer

NODE_TIMEOUT_MS = 1000
START_TIMEOUT_S = 30.0


def _ephemeral_low() -> int:
    """The first port the kernel hands out to outgoing connections."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def cluster_port() -> int:
    """A port free on 127.0.0.1 a moment ago, with the one 10,000 above it (the node's
    cluster bus) free too. Both lie below the kernel's ephemeral range, so that the
    tests' own outgoing connections cannot take them before the node binds them."""
    high = max(_ephemeral_low() - 10_000, 12_000)
    while True:
        port = random.randrange(10_000, high)
        try:
            for probe_port in (port, port + 10_000):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", probe_port))
        except OSError:
            continue
        return port


def _redis_cli() -> str:
    """The redis-cli next to the redis-server the project runs."""
    return str(Path(redis_server_binary()).with_name("redis-cli"))


class RedisClusterServers:
    """redis-server processes forming one cluster: `masters` masters, `replicas` each."""

    def __init__(self, directory: Path, masters: int = 3, replicas: int = 1) -> None:
        self.directory = directory
        self.replicas = replicas
        self.nodes = [
            RedisServer(
                directory / f"node{n}",
                port=cluster_port(),
                extra=(
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    str(NODE_TIMEOUT_MS),
                    "--repl-diskless-sync",
                    "yes",
                    "--repl-diskless-sync-delay",
                    "0",
                    "--cluster-require-full-coverage",
                    "no",
                ),
            )  # fmt: skip
            for n in range(masters * (1 + replicas))
        ]

    @property
    def url(self) -> str:
        """One node's URL (any node names the cluster)."""
        return f"redis://127.0.0.1:{self.nodes[0].port}"

    def start(self) -> RedisClusterServers:
        for node in self.nodes:
            for attempt in range(3):
                try:
                    node.start()
                    break
                except redis.ConnectionError:
                    # the port was taken between the probe and the bind: another one
                    node.crash()
                    if attempt == 2:
                        raise
                    node.port = cluster_port()
        subprocess.run(
            [
                _redis_cli(), "--cluster", "create",
                *(f"127.0.0.1:{node.port}" for node in self.nodes),
                "--cluster-replicas", str(self.replicas), "--cluster-yes",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=START_TIMEOUT_S,
        )  # fmt: skip
        self.wait_ok()
        return self

    def wait_ok(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Until every running node says the cluster is ok and every master has a
        replica in sync."""
        deadline = time.monotonic() + timeout_s
        while not self._ok():
            if time.monotonic() > deadline:
                raise TimeoutError("the Redis Cluster did not come up")
            time.sleep(0.05)

    def _ok(self) -> bool:
        masters = 0
        for node in self.running():
            client = node.client()
            try:
                if client.cluster("INFO").get("cluster_state") != "ok":
                    return False
                replication = client.info("replication")
                if replication["role"] == "master":
                    masters += 1
                    if replication.get("connected_slaves", 0) < self.replicas:
                        return False
                    if any(
                        replication[f"slave{n}"]["state"] != "online"
                        for n in range(replication["connected_slaves"])
                    ):
                        return False
            except redis.RedisError:
                return False
            finally:
                client.close()
        return masters == len(self.nodes) // (1 + self.replicas)

    def masters(self) -> list[RedisServer]:
        """The nodes that are masters now."""
        masters = []
        for node in self.running():
            client = node.client()
            try:
                if client.info("replication")["role"] == "master":
                    masters.append(node)
            finally:
                client.close()
        return masters

    def running(self) -> list[RedisServer]:
        return [node for node in self.nodes if node.process is not None]

    def master_of(self, key: str) -> RedisServer:
        """The node serving `key`'s slot now: a master that some node's map names for it
        (a node just back from a failure may still name itself)."""
        masters = self.masters()
        for node in self.running():
            client = node.client()
            try:
                slot = int(client.execute_command("CLUSTER KEYSLOT", key))
                for start, end, master, *_ in client.execute_command("CLUSTER SLOTS"):
                    if start <= slot <= end:
                        named = [n for n in masters if n.port == int(master[1])]
                        if named:
                            return named[0]
            except redis.RedisError:
                continue
            finally:
                client.close()
        raise LookupError(f"no node serves {key}")

    def stop(self) -> None:
        for node in self.nodes:
            node.crash()
