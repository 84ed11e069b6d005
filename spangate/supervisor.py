"""`spangate serve`'s children kept running: one that exits is started again, the rest
serving meanwhile; all of them stop on SIGTERM or SIGINT.

A child started again waits RESTART_DELAYS_S[n] first, n being how many times in a row
it exited within STARTED_S of being started (a child that ran that long started fine:
its count starts over). After START_FAILURES such exits in a row it is not started
again, and the supervisor stops everything: a child that cannot start (a port taken, a
database it cannot use) is not retried for ever.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

RESTART_DELAYS_S = (0.5, 1.0, 2.0, 4.0, 8.0)
STARTED_S = 10.0
START_FAILURES = 5
STOP_TIMEOUT_S = 30.0
_POLL_S = 0.2

Process = subprocess.Popen[bytes]


@dataclass
class _Child:
    argv: list[str]
    process: Process | None = None
    started_at: float = 0.0
    failures: int = 0  # exits in a row within STARTED_S of a start
    due: float = 0.0  # when to start it again, while process is None


def _say(message: str) -> None:
    print(f"spangate: {message}", file=sys.stderr, flush=True)


class Supervisor:
    """Starts, watches and stops the children named in `parts` (name -> arguments)."""

    def __init__(self, parts: dict[str, list[str]], start: Callable[[list[str]], Process]):
        self._start = start
        self._children = {name: _Child(argv) for name, argv in parts.items()}
        self._stopping = False

    def start(self) -> None:
        """Start every child; from here on SIGTERM and SIGINT stop them all (in `run`),
        also when they come before it."""

        def on_signal(signum: int, frame: object) -> None:
            self._stopping = True

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        now = time.monotonic()
        for child in self._children.values():
            child.process, child.started_at = self._start(child.argv), now

    def processes(self) -> dict[str, Process]:
        """The children running now, by name."""
        return {n: c.process for n, c in self._children.items() if c.process is not None}

    def run(self, watch: Callable[[], bool] = lambda: True) -> int:
        """Until SIGTERM or SIGINT (exit code 0), or a child failing at start-up
        START_FAILURES times in a row, or `watch` (called each round: the embedded
        Redis kept running) saying False (1); then stop every child."""
        code = 0
        while not self._stopping:
            if not self._step(time.monotonic()) or not watch():
                code = 1
                break
            time.sleep(_POLL_S)
        self._stop_all()
        return code

    def _step(self, now: float) -> bool:
        """Note the children that exited and start those that are due; False when one
        has failed at start-up too often."""
        for name, child in self._children.items():
            if child.process is None:
                if now >= child.due:
                    child.process, child.started_at = self._start(child.argv), now
                continue
            status = child.process.poll()
            if status is None:
                continue
            child.process = None
            child.failures = child.failures + 1 if now - child.started_at < STARTED_S else 0
            if child.failures >= START_FAILURES:
                _say(
                    f"{name} exited with status {status}, {child.failures} times in a row "
                    f"within {STARTED_S:g} s of starting; stopping"
                )
                return False
            delay = RESTART_DELAYS_S[min(child.failures, len(RESTART_DELAYS_S) - 1)]
            _say(f"{name} exited with status {status}; starting it again in {delay:g} s")
            child.due = now + delay
        return True

    def _stop_all(self) -> None:
        processes = list(self.processes().values())
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
