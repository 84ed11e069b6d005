"""The collector's Redis: one server, or a Redis Cluster, told apart at first use.

SPANGATE_REDIS_URL may name one server or any node of a cluster: the first call asks
that node for the cluster's slot map (CLUSTER SLOTS); a server with cluster support
disabled says so, and every call then goes to it. In a cluster, a call goes to the
master of its key's slot (redis-py's `key_slot`, hash tags included), on that node's
own pipelined link (collector.redis_link). Every key of a project carries the project's
hash tag, so a request's script stays on one node; a command never names keys of two
slots. redis-py's asyncio cluster client would do the routing too, at 2.4 times the
client's CPU: 163-165 us a call against 67-68 us here (5,000 calls of the enqueue
script with an 800-byte entry, one after another, on a 3-master cluster, two runs).

The map is learned again, from any node that answers, when a node redirects a call
(MOVED: the slot moved, the call goes where it now lives; ASK: the slot is moving, that
one call goes there after ASKING; TRYAGAIN: the slot's keys are half moved, the call is
tried again a moment later), and when a node cannot be reached or stops
answering: the call fails (the caller answers 503), and a later call finds the replica
promoted in the dead master's place. At most one map is fetched at a time, and not
more often than every REFRESH_EVERY_S.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import hiredis
from redis.crc import key_slot
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError, ResponseError

from collector.redis_link import Arg, RedisLink, Script, error_of

log = logging.getLogger("spangate.collector")
SLOTS = 16384
#: Redirections one call follows before it fails (a slot moving twice in a call).
MAX_REDIRECTS = 3
#: Waits before a call that met TRYAGAIN is tried again: a slot's few queue keys move in
#: milliseconds.
TRYAGAIN_WAITS_S = (0.025, 0.05, 0.1)
REFRESH_EVERY_S = 0.1
_NO_CLUSTER = "cluster support disabled"

Address = tuple[str, int]


class QueueLink:
    """Calls to the queue store, on one server or routed through a cluster's slots."""

    def __init__(self, url: str, timeout_s: float, connect_timeout_s: float) -> None:
        self.seed = RedisLink(url, timeout_s, connect_timeout_s)
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.clustered: bool | None = None  # None: not known yet (no answer so far)
        self._slots: list[Address | None] = [None] * SLOTS
        self._masters: list[Address] = []  # those of the map, in order
        self._links: dict[Address, RedisLink] = {}
        self._refreshing: asyncio.Future[None] | None = None
        self._refreshed_at = 0.0
        #: told of each failed call by node ("host:port"): unreachable, silent, or an
        #: error reply other than a redirection (the collector's metrics count them)
        self.node_failed: Callable[[str], None] = lambda node: None

    # -- the calls ------------------------------------------------------------------------
    # On one server each call goes straight to its link: the path every request takes.

    async def execute(self, *args: Arg, key: str | None = None) -> Any:
        """One command's reply, on the node of `key` (any node without one)."""
        if self.clustered is False:
            return await self.seed.execute(*args)
        return await self._call(key, lambda link: link.execute(*args), args)

    async def evalsha(self, script: Script, keys: Sequence[Arg], args: Sequence[Arg]) -> Any:
        """Run `script` on the node of its keys (RedisLink.evalsha)."""
        if self.clustered is False:
            return await self.seed.evalsha(script, keys, args)
        return await self._call(
            _first(keys),
            lambda link: link.evalsha(script, keys, args),
            ("EVAL", script.source, len(keys), *keys, *args),
        )

    async def evalsha_replicated(
        self, script: Script, keys: Sequence[Arg], args: Sequence[Arg], replicas: int, wait_ms: int
    ) -> tuple[Any, int]:
        """RedisLink.evalsha_replicated, on the node of the script's keys."""
        if self.clustered is False:
            return await self.seed.evalsha_replicated(script, keys, args, replicas, wait_ms)
        result: tuple[Any, int] = await self._call(
            _first(keys),
            lambda link: link.evalsha_replicated(script, keys, args, replicas, wait_ms),
            None,
        )
        return result

    async def is_cluster(self) -> bool:
        """Whether the store is a cluster (asked at first use: ConnectionError or
        TimeoutError while nobody answers)."""
        if self.clustered is None:
            await self._known()
        return bool(self.clustered)

    async def each_master(self, *args: Arg) -> dict[str, Any]:
        """One command's reply from every master by "host:port" (from the one server when
        it is no cluster); a node's failure is its reply."""
        await self._known()
        links = [self.seed]
        if self.clustered:
            links = [self._link(address) for address in self._masters]
        replies = await asyncio.gather(
            *(self._on(link, link.execute(*args)) for link in links), return_exceptions=True
        )
        return {_name(link): reply for link, reply in zip(links, replies, strict=True)}

    async def close(self) -> None:
        """Drop every connection (calls waiting on them fail)."""
        await self.seed.close()
        for link in self._links.values():
            await link.close()

    # -- routing --------------------------------------------------------------------------

    async def _call(
        self,
        key: str | None,
        call: Callable[[RedisLink], Awaitable[Any]],
        asked: Sequence[Arg] | None,
    ) -> Any:
        """`call` on the link of `key`'s node, redirections followed. `asked`: the call
        as one command, sent after ASKING where a slot is moving (None: sent as it is).
        TRYAGAIN (a command naming several keys of a slot whose keys are half moved) is
        tried again after TRYAGAIN_WAITS_S, from the map."""
        await self._known()
        if not self.clustered:
            return await self._on(self.seed, call(self.seed))
        link, asking = self._link_for(key), False
        waits = iter(TRYAGAIN_WAITS_S)
        for _ in range(MAX_REDIRECTS + len(TRYAGAIN_WAITS_S)):
            try:
                if not asking:
                    return await self._on(link, call(link))
                assert asked is not None
                replies = await self._on(link, link.send([("ASKING",), asked]))
                if isinstance(replies[1], hiredis.ReplyError):
                    raise error_of(replies[1])
                return replies[1]
            except ResponseError as e:
                message = str(e)
                if message.startswith("TRYAGAIN") and (wait := next(waits, None)) is not None:
                    await asyncio.sleep(wait)
                    link, asking = self._link_for(key), False
                    continue
                redirect = _redirect(message)
                if redirect is None:
                    raise
                kind, slot, address = redirect
                link, asking = self._link(address), kind == "ASK" and asked is not None
                if kind == "MOVED":
                    self._slots[slot] = address
                    self._refresh_soon()
        raise RedisConnectionError("the cluster kept redirecting a call")

    async def _on(self, link: RedisLink, call: Any) -> Any:
        """Await `call` (made on `link`), counting the node's failures; the map is learned
        again after a failure to reach it."""
        try:
            return await call
        except (RedisConnectionError, TimeoutError, OSError) as e:
            self._count_error(link)
            if self.clustered:
                self._refresh_soon()
            if isinstance(e, OSError) and not isinstance(e, RedisConnectionError | TimeoutError):
                raise RedisConnectionError(str(e)) from e
            raise
        except RedisError as e:
            if not isinstance(e, NoScriptError) and _redirect(str(e)) is None:
                self._count_error(link)
            raise

    def _count_error(self, link: RedisLink) -> None:
        self.node_failed(_name(link))

    def _link_for(self, key: str | None) -> RedisLink:
        address = self._slots[key_slot(key.encode())] if key is not None else None
        if address is None:  # no key, or a slot nobody serves as far as known
            address = self._masters[0] if self._masters else self._seed_address()
            if key is not None:
                self._refresh_soon()
        return self._link(address)

    def _link(self, address: Address) -> RedisLink:
        link = self._links.get(address)
        if link is None:
            endpoint = self.seed.endpoint.at(*address)
            link = RedisLink(endpoint, self.timeout_s, self.connect_timeout_s)
            self._links[address] = link
        return link

    def _seed_address(self) -> Address:
        return self.seed.endpoint.host, self.seed.endpoint.port

    # -- the map --------------------------------------------------------------------------

    async def _known(self) -> None:
        """Whether the store is a cluster, asked of the seed at first use (until it
        answers: ConnectionError or TimeoutError meanwhile)."""
        if self.clustered is None:
            await self._refresh()
            if self.clustered is None:  # another call's asking failed
                raise RedisConnectionError("the queue store has not answered yet")

    def _refresh_soon(self) -> None:
        """Learn the map again in the background, unless that was done a moment ago."""
        if self._refreshing is None and time.monotonic() - self._refreshed_at >= REFRESH_EVERY_S:
            task = asyncio.ensure_future(self._refresh())
            task.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def _refresh(self) -> None:
        """Ask the nodes for the slot map, the seed first, then the nodes known."""
        if self._refreshing is not None:
            return await asyncio.shield(self._refreshing)
        self._refreshing = asyncio.get_running_loop().create_future()
        try:
            await self._fetch_map()
        finally:
            self._refreshed_at = time.monotonic()
            done, self._refreshing = self._refreshing, None
            done.set_result(None)

    async def _fetch_map(self) -> None:
        links = [self.seed, *(self._links.values())]
        failure: BaseException | None = None
        for link in links:
            try:
                reply = await link.execute("CLUSTER", "SLOTS")
            except ResponseError as e:
                if _NO_CLUSTER in str(e) and link is self.seed:
                    self.clustered = False
                    return
                failure = e
                continue
            except (RedisConnectionError, TimeoutError) as e:
                failure = e
                continue
            self._apply(reply, link)
            if not self.clustered:
                log.info("the queue store is a Redis Cluster", extra={"nodes": len(self._links)})
            self.clustered = True
            return
        if self.clustered is None and failure is not None:
            raise failure

    def _apply(self, reply: list[Any], asked: RedisLink) -> None:
        slots: list[Address | None] = [None] * SLOTS
        for start, end, master, *_ in reply:
            host = master[0].decode() if master[0] else asked.endpoint.host
            address = (host, int(master[1]))
            self._link(address)
            slots[int(start) : int(end) + 1] = [address] * (int(end) - int(start) + 1)
        self._slots = slots
        self._masters = sorted({address for address in slots if address is not None})


def _first(keys: Sequence[Arg]) -> str | None:
    if not keys:
        return None
    key = keys[0]
    return key.decode() if isinstance(key, bytes) else str(key)


def _redirect(message: str) -> tuple[str, int, Address] | None:
    """("MOVED" or "ASK", slot, address) of a redirection's error message."""
    kind, _, rest = message.partition(" ")
    if kind not in ("MOVED", "ASK"):
        return None
    slot, _, where = rest.partition(" ")
    host, _, port = where.rpartition(":")
    return kind, int(slot), (host, int(port))


def _name(link: RedisLink) -> str:
    return f"{link.endpoint.host}:{link.endpoint.port}"
