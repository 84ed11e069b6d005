"""Admission: rate limits and the project's queue depth, checked in Redis.

Rate limits are GCRA (generic cell rate algorithm) in Redis, so every collector
process shares them: `rps` requests per second sustained, bursts of up to two seconds'
worth. One limit per project and one per client IP; 0 disables a limit. The queue depth
is the project's queued-but-not-stored span count, raised with each XADD and lowered by
the worker when it acknowledges (see spanqueue.layout.depth_key).

The checks are the start of a Lua script: `Admission.admit` runs them alone, before a
body is read; collector.queue runs them in front of a small request's XADD, so that
request takes one round trip to Redis instead of two (see collector.ingest).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

from collector.errors import GatewayError, redis_refusal, unavailable
from collector.redis_cluster import QueueLink
from collector.redis_link import Arg, Script
from spanqueue.layout import depth_key, ip_rate_key, rate_key

BURST_SECONDS = 2.0

#: The checks, as the start of a script. KEYS: project rate, ip rate, project depth.
#: ARGV: now ms; per limit: emission interval ms and tolerance ms (0 interval: no
#: limit); max depth. Answers {1, retry_ms} rate limited, {2, depth} at capacity, {3}
#: depth not a number; past them the script goes on with `depth` set.
CHECKS = """
local now = tonumber(ARGV[1])
local function check(key, interval, tolerance)
  if interval <= 0 then return nil end
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  if tat - now > tolerance then return tat - now - tolerance end
  redis.call('SET', key, tat + interval, 'PX', math.ceil(tat + interval - now + interval))
  return nil
end
local depth = tonumber(redis.call('GET', KEYS[3]) or '0')
if not depth then return {3} end
if depth >= tonumber(ARGV[6]) then return {2, depth} end
local wait = check(KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
if wait then return {1, math.ceil(wait)} end
wait = check(KEYS[2], tonumber(ARGV[4]), tonumber(ARGV[5]))
if wait then return {1, math.ceil(wait)} end
"""
_ADMIT = Script.of(CHECKS + "return {0, depth}")
#: The client address's limit alone (KEYS[1]: its rate; ARGV: now, interval,
#: tolerance): in a cluster its key lives in another slot than the project's. Answers
#: {1, retry_ms} rate limited, else {0}.
_ADMIT_IP = Script.of(
    CHECKS.split("local depth")[0]
    + "local wait = check(KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]))\n"
    + "if wait then return {1, math.ceil(wait)} end\nreturn {0, 0}"
)


@dataclass(slots=True)  # not frozen: one is made a request, and frozen fields set slowly
class Checks:
    """One request's admission checks: the keys and arguments CHECKS starts with."""

    keys: tuple[str, str, str]
    args: tuple[Arg, ...]


def verdict(answer: list[Any]) -> int:
    """The project's queue depth when the checks let the request go on; else the 429 or
    503 they answered."""
    if answer[0] == 0:
        return int(answer[1])
    if answer[0] == 1:
        seconds = max(1, math.ceil(int(answer[1]) / 1000))
        raise GatewayError(
            429, "RATE_LIMIT_EXCEEDED", "too many requests; slow down", retry_after=seconds
        )
    if answer[0] == 2:
        raise unavailable(
            "QUEUE_NEAR_CAPACITY",
            f"the project's ingest queue holds {answer[1]} spans not yet stored; try again later",
        )
    if answer[0] == 3:
        raise unavailable("QUEUE_DEPTH_UNKNOWN", "the depth of the project's queue is unreadable")
    raise unavailable("QUEUE_DEPTH_UNKNOWN", "unexpected admission answer")


async def ip_checked_apart(client: QueueLink, checks: Checks) -> Checks:
    """On one server, `checks` as they are. In a cluster, the client address's limit is
    checked now, on its own node (RATE_LIMIT_EXCEEDED raised; not checked while that
    node does not answer: one failing master must not stop every project's ingest), and
    the checks left to run with the project's keys have it turned off: the project's
    rate key stands in for the address's, untouched, so that every key is in the
    project's slot."""
    if not await client.is_cluster():
        return checks
    project_rate, ip_rate, depth = checks.keys
    now, project_interval, project_tolerance, ip_interval, ip_tolerance, max_depth = checks.args
    if float(ip_interval) > 0:
        try:
            answer = await client.evalsha(_ADMIT_IP, (ip_rate,), (now, ip_interval, ip_tolerance))
        except (TimeoutError, RedisError):
            pass  # its node is failing over: no limit meanwhile, rather than no ingest
        else:
            verdict(answer)
    return Checks(
        (project_rate, project_rate, depth),
        (now, project_interval, project_tolerance, 0, 0, max_depth),
    )


def _limit(rps: float) -> tuple[float, float]:
    """(emission interval, tolerance) in ms for a rate; (0, 0) when disabled."""
    if rps <= 0:
        return 0.0, 0.0
    interval = 1000.0 / rps
    return interval, BURST_SECONDS * 1000.0 - interval


class Admission:
    """The checks every ingest request passes before its spans are queued."""

    def __init__(
        self,
        client: QueueLink,
        project_rps: float,
        ip_rps: float,
        max_depth: int,
    ) -> None:
        self.client = client
        self.project_limit = _limit(project_rps)
        self.ip_limit = _limit(ip_rps)
        self.max_depth = max_depth

    def checks(self, project_id: str, ip: str) -> Checks:
        """The checks of a request of this project from this address, as of now."""
        keys = (
            rate_key(project_id),
            ip_rate_key(ip),
            depth_key(project_id),
        )
        now_ms = int(time.time() * 1000)
        return Checks(keys, (now_ms, *self.project_limit, *self.ip_limit, self.max_depth))

    async def admit(self, checks: Checks) -> int:
        """The project's queue depth when the request may go on; else the 429 or 503."""
        try:
            if self.client.clustered is not False:  # one server: nothing to await
                checks = await ip_checked_apart(self.client, checks)
            answer = await self.client.evalsha(_ADMIT, checks.keys, checks.args)
        except (TimeoutError, RedisError) as e:
            raise redis_refusal(
                e, "QUEUE_DEPTH_UNKNOWN", "the depth of the project's queue cannot be read"
            ) from e
        return verdict(answer)
