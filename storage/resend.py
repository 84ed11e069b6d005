"""The re-sending window, kept in Redis so that several workers agree.

For each span, one key holds the content hash of its first send and expires at that
send's receive time plus the window. SET NX decides who is first, atomically:
- the key was free: this send opens the window (or the old one has passed): write it;
- the key holds this very hash: the same content again, or a redelivery after a crash
  between setting the key and committing: write it (an idempotent upsert);
- the key holds another hash: changed content within the window: refused (after the
  gateway answered 200, as the spec says), counted and logged; the first one stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from storage.span_rows import FAST_ROWS, SpanRow


def window_key(project_id: str, trace_id: str, span_id: str) -> str:
    """The key holding a span's first content hash while its window lasts."""
    return f"{_window_prefix(project_id)}{trace_id}:{span_id}"


def _window_prefix(project_id: str) -> str:
    return f"spangate:{{{project_id}}}:sent:"


def refused_counter(project_id: str) -> str:
    """Running count of a project's spans refused by the window."""
    return f"spangate:{{{project_id}}}:refused"


#: KEYS[1] is the project's refused counter, KEYS[2..] the window keys; ARGV holds each
#: window key's hash and expiry (ms) in turn. Answers the positions (1-based, among the
#: window keys) of the refused spans: usually none, so the reply stays small.
_WINDOW_SCRIPT = """
local refused = {}
for i = 2, #KEYS do
  local hash = ARGV[2 * i - 3]
  if not redis.call('SET', KEYS[i], hash, 'NX', 'PXAT', ARGV[2 * i - 2]) then
    local holder = redis.call('GET', KEYS[i])
    if holder and holder ~= hash then
      refused[#refused + 1] = i - 1
    end
  end
end
if #refused > 0 then redis.call('INCRBY', KEYS[1], #refused) end
return refused
"""
#: Spans per script call: a script blocks Redis while it runs, so keep each one short
#: (about a millisecond) and never hold up the collectors' XADDs for long.
CHUNK = 2000


@dataclass(frozen=True, slots=True)
class Decision:
    """Which rows of a batch are written and which are refused."""

    write: list[SpanRow]
    refused: list[SpanRow]


_Call = tuple[str, list[SpanRow]]  # a project and a chunk of its rows


class Pending:
    """Window decisions in flight on one connection: scripts sent, answers not read yet.

    The worker sends each entry's rows as soon as it has decoded them, so Redis decides
    on one entry while the next is decoded; `result` reads every answer. Use it as a
    context manager: the connection goes back to the pool (dropped if answers are left
    unread).
    """

    def __init__(self, window: ResendWindow) -> None:
        self._window = window
        self._connection: Any = window.client.connection_pool.get_connection()
        self._calls: list[_Call] = []

    def __enter__(self) -> Pending:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._connection is not None:
            self._connection.disconnect()
            self._release()

    def send(self, rows: list[SpanRow]) -> None:
        """Send the window's scripts for these rows: one call per project and chunk.

        Keys of one project share a hash tag, so each call stays on one Redis Cluster slot.
        """
        for project_id, chunk in self._window.calls(rows):
            self._send_call(project_id, chunk)
            self._calls.append((project_id, chunk))

    def _send_call(self, project_id: str, chunk: list[SpanRow]) -> None:
        window = self._window
        if FAST_ROWS is not None:
            counter, prefix = refused_counter(project_id), _window_prefix(project_id)
            command = FAST_ROWS.window_command(
                window.script_sha, counter, prefix, chunk, window.window_ms
            )
            self._connection.send_packed_command([command])
        else:
            keys, args = window.keys_and_args(project_id, chunk)
            send: Any = self._connection.send_command
            send("EVALSHA", window.script_sha, len(keys), *keys, *args)

    def result(self) -> Decision:
        """The decision on every row sent, in the order sent.

        Calls answered NOSCRIPT (Redis restarted, or flushed its scripts) are sent again,
        pipelined as before, once the script is loaded: not run one by one.
        """
        answers = [self._answer() for _ in self._calls]
        missing = [i for i, answer in enumerate(answers) if answer is None]
        if missing:
            self._window.load()
            for i in missing:
                self._send_call(*self._calls[i])
            for i in missing:
                answers[i] = self._connection.read_response()
        refused: list[SpanRow] = []
        for (_, chunk), positions in zip(self._calls, answers, strict=True):
            refused.extend(chunk[position - 1] for position in positions or ())
        self._release()
        return _decision([row for _, chunk in self._calls for row in chunk], refused)

    def _answer(self) -> list[int] | None:
        """The next call's refused positions; None when Redis lacked the script."""
        try:
            positions: list[int] = self._connection.read_response()
        except redis.exceptions.NoScriptError:
            return None
        return positions

    def _release(self) -> None:
        self._window.client.connection_pool.release(self._connection)
        self._connection = None


def _decision(rows: list[SpanRow], refused: list[SpanRow]) -> Decision:
    if not refused:
        return Decision(rows, [])
    refused_ids = {id(row) for row in refused}
    return Decision([row for row in rows if id(row) not in refused_ids], refused)


class ResendWindow:
    """The window of one worker: its Redis client and the script, registered once."""

    def __init__(self, client: redis.Redis, window_ms: int) -> None:
        self.client = client
        self.window_ms = window_ms
        self._script: Any = client.register_script(_WINDOW_SCRIPT)
        self._loaded = False

    @property
    def script_sha(self) -> str:
        sha: str = self._script.sha
        return sha

    def decide(self, rows: list[SpanRow]) -> Decision:
        """Apply the window to a batch, in order, and wait for the decision."""
        with self.begin() as pending:
            pending.send(rows)
            return pending.result()

    def begin(self) -> Pending:
        """Decisions to send piecemeal and read at once (see Pending).

        The script is loaded first by a new window: otherwise every call of the first
        batch would come back NOSCRIPT and be run again, one by one, waiting on each
        (redis-py loads a registered script only when a call finds it missing).
        """
        if not self._loaded:
            self.load()
        return Pending(self)

    def load(self) -> None:
        """Load the script into Redis (again, when it lost it)."""
        self.client.script_load(_WINDOW_SCRIPT)
        self._loaded = True

    def calls(self, rows: list[SpanRow]) -> list[_Call]:
        """The script calls for these rows: (project, rows), per project and chunk."""
        by_project: dict[str, list[SpanRow]] = {}
        for row in rows:
            by_project.setdefault(row.project_id, []).append(row)
        return [
            (project_id, project_rows[at : at + CHUNK])
            for project_id, project_rows in by_project.items()
            for at in range(0, len(project_rows), CHUNK)
        ]

    def keys_and_args(
        self, project_id: str, chunk: list[SpanRow]
    ) -> tuple[list[str], list[str | int]]:
        """The script's KEYS and ARGV for one call."""
        prefix, expiry = _window_prefix(project_id), self.window_ms
        keys = [refused_counter(project_id)]
        keys += [f"{prefix}{row.trace_id}:{row.span_id}" for row in chunk]
        args = [x for row in chunk for x in (row.content_hash, row.received_ms + expiry)]
        return keys, args
