"""A lean, pipelined Redis connection for the commands every ingest request sends.

Why not redis-py on this path: measured on this project's machines, one EVALSHA
through `redis.asyncio` costs about 290 us of CPU and one MULTI/XADD/INCRBY/EXEC about
410 us (connection pool, command objects, a stream reader per reply); the same commands
written straight to an asyncio transport and parsed by hiredis cost about a third of
that, and every ingest request sends both.

A connection carries the commands of every request at once. What the requests of
one event loop turn send on it goes out in one write, in the order sent, so
nothing interleaves inside a command or a connection's handshake, and Redis answers in that
order, which is the order of the waiting calls. Every call has the same timeout, so
the oldest waiting call is the first to expire, and one timer per connection watches
it: when it expires, Redis has stopped answering, the connection is dropped, and every
waiting call fails with TimeoutError (a late reply could no longer be told from a later
call's). A lost connection fails its waiting calls with redis-py's ConnectionError; the
next call connects afresh. Error replies become the redis-py exceptions callers already
map (OutOfMemoryError, NoScriptError, ResponseError).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import hiredis
from redis.connection import SSLConnection, parse_url
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import (
    NoScriptError,
    OutOfMemoryError,
    RedisError,
    ResponseError,
)

Arg = bytes | str | int | float
_SSL_REQUIREMENTS = {
    "none": ssl.CERT_NONE,
    "optional": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


#: hiredis's packer takes a tuple of any length (its stub says a 1-tuple)
_pack_command = cast(Callable[[tuple[Arg, ...]], bytes], hiredis.pack_command)
#: hiredis packs a long argument slowly: 87 us for a 64 KB one and 1,300 us for a
#: 0.8 MB request body, where joining the bytes here takes 6 and 71 us (up to 16 KB
#: it is the faster, 2-3 us a command against 4-5). A command whose last argument (an
#: entry's body) is longer than this is packed here.
LONG_ARGUMENT_BYTES = 16 * 1024


def pack(commands: Sequence[Sequence[Arg]]) -> bytes:
    """The RESP bytes of `commands`, one array of bulk strings each."""
    return b"".join([_pack(command) for command in commands])


def _pack(command: Sequence[Arg]) -> bytes:
    last = command[-1] if command else None
    if type(last) is bytes and len(last) > LONG_ARGUMENT_BYTES:
        return _joined(command)
    try:
        return _pack_command(tuple(command))
    except TypeError:
        # hiredis takes no bools: send them as Redis reads them, as 0 and 1
        return _pack_command(tuple(map(_int_of_bool, command)))


def _joined(command: Sequence[Arg]) -> bytes:
    """A command's RESP bytes, joined here (for a long argument)."""
    parts: list[bytes] = [b"*%d\r\n" % len(command)]
    for arg in command:
        if isinstance(arg, bytes):
            data = arg
        elif isinstance(arg, str):
            data = arg.encode()
        elif isinstance(arg, int):
            data = b"%d" % arg
        else:
            data = repr(float(arg)).encode()
        parts += (b"$%d\r\n" % len(data), data, b"\r\n")
    return b"".join(parts)


def _int_of_bool(arg: Arg) -> Arg:
    return int(arg) if isinstance(arg, bool) else arg


def error_of(reply: hiredis.ReplyError) -> RedisError:
    """The redis-py exception for an error reply."""
    message = str(reply)
    if message.startswith("OOM "):
        return OutOfMemoryError(message)
    if message.startswith("NOSCRIPT "):
        return NoScriptError(message)
    return ResponseError(message)


def first_error(replies: Sequence[Any]) -> RedisError | None:
    """The exception for the first error reply among `replies`, if any."""
    for reply in replies:
        if isinstance(reply, hiredis.ReplyError):
            return error_of(reply)
    return None


@dataclass(frozen=True, slots=True)
class Script:
    """A Lua script and its SHA1, for EVALSHA."""

    source: str
    sha: str

    @classmethod
    def of(cls, source: str) -> Script:
        return cls(source, hashlib.sha1(source.encode()).hexdigest())


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how to connect, read from a redis://, rediss:// or unix:// URL."""

    host: str
    port: int
    path: str | None
    tls: ssl.SSLContext | None
    db: int
    username: str | None
    password: str | None

    @classmethod
    def of(cls, url: str) -> Endpoint:
        options: dict[str, Any] = parse_url(url)  # type: ignore[no-untyped-call]
        tls = None
        if options.get("connection_class") is SSLConnection:
            tls = ssl.create_default_context(cafile=options.get("ssl_ca_certs"))
            requirement = _SSL_REQUIREMENTS[str(options.get("ssl_cert_reqs", "required"))]
            if requirement != ssl.CERT_REQUIRED:
                tls.check_hostname = False
            tls.verify_mode = requirement
        return cls(
            host=str(options.get("host", "localhost")),
            port=int(options.get("port", 6379)),
            path=options.get("path"),
            tls=tls,
            db=int(options.get("db", 0)),
            username=options.get("username"),
            password=options.get("password"),
        )

    def at(self, host: str, port: int) -> Endpoint:
        """The same credentials and TLS, at another server (a cluster's node)."""
        return dataclasses.replace(self, host=host, port=port, path=None)

    def handshake(self) -> list[list[Arg]]:
        """The commands a new connection sends first."""
        commands: list[list[Arg]] = []
        if self.password is not None:
            credentials = [self.username, self.password] if self.username else [self.password]
            commands.append(["AUTH", *credentials])
        if self.db:
            commands.append(["SELECT", self.db])
        return commands


class _Waiter:
    """A call waiting for `expected` replies, in the order they come."""

    __slots__ = ("future", "deadline", "expected", "replies")

    def __init__(self, future: asyncio.Future[list[Any]], deadline: float, expected: int) -> None:
        self.future = future
        self.deadline = deadline
        self.expected = expected
        self.replies: list[Any] = []


class _Connection(asyncio.Protocol):
    """One socket to Redis: commands written whole, replies matched in order."""

    def __init__(self, timeout_s: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._timeout_s = timeout_s
        self._reader = hiredis.Reader()
        self._waiting: deque[_Waiter] = deque()
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._outgoing: list[bytes] = []  # written once per event loop turn
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._reader.feed(data)
        waiting = self._waiting
        try:
            while (reply := self._reader.gets()) is not False:
                if not waiting:
                    raise hiredis.ProtocolError("a reply no call was waiting for")
                waiter = waiting[0]
                waiter.replies.append(reply)
                if len(waiter.replies) == waiter.expected:
                    waiting.popleft()
                    if not waiter.future.done():  # done: its caller went away
                        waiter.future.set_result(waiter.replies)
        except hiredis.ProtocolError as e:
            message = f"Redis sent what cannot be read: {e}"
            self.fail(lambda: RedisConnectionError(message))

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(lambda: RedisConnectionError("the connection to Redis was lost"))

    def send(self, payload: bytes, expected: int) -> asyncio.Future[list[Any]]:
        """Write `payload`; the future of its `expected` replies."""
        if self.closed or self._transport is None:
            raise RedisConnectionError("the connection to Redis is closed")
        future: asyncio.Future[list[Any]] = self._loop.create_future()
        deadline = self._loop.time() + self._timeout_s
        self._waiting.append(_Waiter(future, deadline, expected))
        if not self._outgoing:
            self._loop.call_soon(self._flush)
        self._outgoing.append(payload)
        if self._timer is None:
            self._timer = self._loop.call_at(deadline, self._expire)
        return future

    def _flush(self) -> None:
        """One write (one system call) for every command sent since the last turn."""
        outgoing, self._outgoing = self._outgoing, []
        if not self.closed and self._transport is not None:
            self._transport.write(outgoing[0] if len(outgoing) == 1 else b"".join(outgoing))

    def _expire(self) -> None:
        self._timer = None
        if not self._waiting:
            return
        deadline = self._waiting[0].deadline
        if deadline > self._loop.time():
            self._timer = self._loop.call_at(deadline, self._expire)
            return
        self.fail(lambda: TimeoutError(f"Redis did not answer within {self._timeout_s:g} s"))

    def fail(self, error: Callable[[], BaseException]) -> None:
        """Close the connection; every waiting call raises a fresh `error()`."""
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting, self._waiting = self._waiting, deque()
        for waiter in waiting:
            if not waiter.future.done():
                waiter.future.set_exception(error())
        if self._transport is not None:
            self._transport.abort()


class _Lane:
    """One lazily (re)connected connection of a link."""

    def __init__(self, connect: Callable[[], Awaitable[_Connection]]) -> None:
        self._connect = connect
        self.connection: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None

    async def connected(self) -> _Connection:
        """The open connection, made once for every caller that needs it at the same time."""
        connection = self.connection
        if connection is not None and not connection.closed:
            return connection
        if self._connecting is None:
            connecting = asyncio.ensure_future(self._connect())
            connecting.add_done_callback(self._connected_or_not)
            self._connecting = connecting
        return await asyncio.shield(self._connecting)

    def _connected_or_not(self, connecting: asyncio.Future[_Connection]) -> None:
        self._connecting = None
        if not connecting.cancelled() and connecting.exception() is None:
            self.connection = connecting.result()

    def close(self) -> None:
        if self.connection is not None:
            self.connection.fail(lambda: RedisConnectionError("the client was closed"))
            self.connection = None


class RedisLink:
    """Pipelined calls to one Redis server.

    Two connections: commands over BULK_BYTES (the XADD of a large request) go on one,
    everything else on the other. Redis runs one connection's commands strictly in
    order, so on a single connection a request's small admission call would wait behind
    every megabyte XADD queued before it, and the collector would sit idle meanwhile.
    """

    BULK_BYTES = 64 * 1024

    def __init__(self, url: str | Endpoint, timeout_s: float, connect_timeout_s: float) -> None:
        self.endpoint = Endpoint.of(url) if isinstance(url, str) else url
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._small = _Lane(self._connect)
        self._bulk = _Lane(self._connect)
        self._ran: set[str] = set()  # scripts run through evalsha_replicated

    async def execute(self, *args: Arg) -> Any:
        """One command's reply; its error reply raised."""
        (reply,) = await self.send([args])
        if isinstance(reply, hiredis.ReplyError):
            raise error_of(reply)
        return reply

    async def evalsha(self, script: Script, keys: Sequence[Arg], args: Sequence[Arg]) -> Any:
        """Run `script`, sending its source only when Redis does not have it yet."""
        try:
            return await self.execute("EVALSHA", script.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await self.execute("EVAL", script.source, len(keys), *keys, *args)

    async def evalsha_replicated(
        self, script: Script, keys: Sequence[Arg], args: Sequence[Arg], replicas: int, wait_ms: int
    ) -> tuple[Any, int]:
        """`evalsha`, then WAIT for `replicas` replicas up to `wait_ms`, in one round trip
        on one connection (WAIT covers the connection's writes before it); the script's
        reply and how many replicas hold its writes. A script this link has not run yet
        goes as EVAL: a NOSCRIPT would cost a second WAIT."""
        commands = ("EVALSHA", "EVAL") if script.sha in self._ran else ("EVAL",)
        for command in commands:
            code = script.sha if command == "EVALSHA" else script.source
            reply, acked = await self.send(
                [(command, code, len(keys), *keys, *args), ("WAIT", replicas, wait_ms)]
            )
            if isinstance(reply, hiredis.ReplyError):
                error = error_of(reply)
                if isinstance(error, NoScriptError) and command == "EVALSHA":
                    continue
                raise error
            self._ran.add(script.sha)
            return reply, int(acked)
        raise AssertionError("unreachable: EVAL answers or raises")

    async def close(self) -> None:
        """Drop the connections (calls waiting on them fail)."""
        self._small.close()
        self._bulk.close()

    async def send(self, commands: Sequence[Sequence[Arg]]) -> list[Any]:
        """The replies to `commands`, sent at once on one connection (error replies as
        hiredis.ReplyError: `error_of` makes them redis-py's)."""
        payload = pack(commands)
        lane = self._bulk if len(payload) > self.BULK_BYTES else self._small
        connection = await lane.connected()
        return await connection.send(payload, len(commands))

    async def _connect(self) -> _Connection:
        loop, endpoint = asyncio.get_running_loop(), self.endpoint
        factory: Callable[[], _Connection] = lambda: _Connection(self.timeout_s)  # noqa: E731
        connection: _Connection | None = None
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                if endpoint.path is not None:
                    _, connection = await loop.create_unix_connection(factory, endpoint.path)
                else:
                    _, connection = await loop.create_connection(
                        factory, endpoint.host, endpoint.port, ssl=endpoint.tls
                    )
                handshake = endpoint.handshake()
                if handshake:
                    error = first_error(await connection.send(pack(handshake), len(handshake)))
                    if error is not None:
                        raise RedisConnectionError(f"Redis refused the connection: {error}")
        except BaseException as e:
            if connection is not None:
                connection.fail(lambda: RedisConnectionError("the connection was not made"))
            if isinstance(e, OSError | TimeoutError):
                raise RedisConnectionError(f"cannot connect to Redis: {e!r}") from e
            raise
        return connection
