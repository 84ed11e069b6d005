"""The queue store for a worker or a command: one Redis server or a Redis Cluster.

SPANGATE_REDIS_URL names one server or any node of a cluster; which one is asked of
that node (CLUSTER INFO: a server with cluster support disabled says so), and a
cluster gets redis-py's cluster client, which follows the slot map itself.
"""

from __future__ import annotations

import redis

_NO_CLUSTER = "cluster support disabled"


def queue_client(url: str, socket_timeout: float) -> redis.Redis | redis.RedisCluster:
    """A client of the queue store at `url` (redis.ConnectionError: it did not answer)."""
    client = redis.Redis.from_url(url, socket_timeout=socket_timeout)
    try:
        client.execute_command("CLUSTER", "INFO")  # type: ignore[no-untyped-call]
    except redis.ResponseError as e:
        if _NO_CLUSTER in str(e):
            return client
        client.close()
        raise
    except BaseException:
        client.close()
        raise
    client.close()
    return redis.RedisCluster.from_url(url, socket_timeout=socket_timeout)
