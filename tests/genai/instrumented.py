"""The canonical spans that real OpenAI instrumentations emit for known calls.

`emit(library, scenario)` runs `tests.genai.emit` in a child process against a
`FakeOpenAI` server, receives what its OTLP/HTTP JSON exporters send on a loopback
receiver, and converts the span bodies with `proto_json.convert_otlp`, as the collector
does. `Instrumented` runs each (library, scenario) once and keeps the answer: the
`instrumented` fixture (tests/genai/conftest.py), one per pytest run, is one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson

import proto_json
from tests.genai.emit import LIBRARIES, SCENARIOS
from tests.genai.fake_openai import FakeOpenAI
from tests.genai.loopback import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_SECONDS = 60.0
# A wait covers the runs queued before it, each bounded by RUN_TIMEOUT_SECONDS.
WAIT_TIMEOUT_SECONDS = 300.0
# Variables that would change what a library emits or where it exports: only the
# library's own table entry sets them in the child.
_FOREIGN_PREFIXES = ("OTEL_", "TRACELOOP_", "OPENINFERENCE_", "OPENAI_")


class HarnessError(AssertionError):
    """A child run failed, hung, or exported no spans; the message carries its output."""


@dataclass(frozen=True, slots=True)
class Emission:
    """What one library exported for one scenario."""

    library: str
    scenario: str
    requests: tuple[proto_json.CanonicalRequest, ...]
    log_records: tuple[dict[str, Any], ...]
    openai_requests: tuple[tuple[str, dict[str, Any]], ...]

    @property
    def spans(self) -> list[dict[str, Any]]:
        """Every canonical span, in export (end) order."""
        return [span for _, span in self.scoped_spans]

    @property
    def scoped_spans(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every canonical span with the instrumentation scope that made it."""
        return [
            (scope_spans.get("scope", {}), span)
            for request in self.requests
            for resource_spans in request["resourceSpans"]
            for scope_spans in resource_spans["scopeSpans"]
            for span in scope_spans["spans"]
        ]


def plain(value: dict[str, Any]) -> Any:
    """An OTLP/JSON AnyValue as plain Python (intValue strings as ints)."""
    for kind, inner in value.items():
        if kind == "intValue":
            return int(inner)
        if kind == "arrayValue":
            return [plain(item) for item in inner.get("values", [])]
        if kind == "kvlistValue":
            return {pair["key"]: plain(pair.get("value", {})) for pair in inner.get("values", [])}
        return inner
    return None


def attributes(item: dict[str, Any]) -> dict[str, Any]:
    """A span's, event's or log record's attributes as a plain dict."""
    return {pair["key"]: plain(pair.get("value", {})) for pair in item.get("attributes", [])}


class _Handler(BaseHTTPRequestHandler):
    server: _Receiver

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the bodies are the record."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        with self.server.lock:
            self.server.bodies.append((self.path, self.headers.get("Content-Type", ""), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")


class _Receiver(ThreadingHTTPServer):
    daemon_threads = True
    lock: threading.Lock
    bodies: list[tuple[str, str, bytes]]


class OtlpReceiver(LoopbackServer):
    """A loopback OTLP/HTTP endpoint that keeps each request's path, type and body."""

    def __init__(self) -> None:
        self._server = _Receiver(("127.0.0.1", 0), _Handler)
        self._server.lock = threading.Lock()
        self._server.bodies = []
        super().__init__(self._server)

    @property
    def base_url(self) -> str:
        """The exporters' base: spans go to `/v1/traces`, log records to `/v1/logs`."""
        return self.origin

    def bodies(self, path: str) -> list[bytes]:
        """The bodies posted to `path`, refusing any that is not JSON."""
        with self._server.lock:
            posted = [(kind, body) for p, kind, body in self._server.bodies if p == path]
        for kind, _ in posted:
            if not kind.startswith("application/json"):
                raise HarnessError(f"{path} received {kind!r}, not OTLP/JSON")
        return [body for _, body in posted]


def _environment(library: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_PREFIXES)}
    loopback = "127.0.0.1,localhost"
    return {**base, "NO_PROXY": loopback, "no_proxy": loopback, **LIBRARIES[library].environment}


def _run_child(library: str, scenario: str, openai_url: str, otlp_url: str) -> str:
    """Run the child to completion within the timeout; its stderr, for error messages."""
    command = [sys.executable, "-m", "tests.genai.emit", library, scenario, openai_url, otlp_url]
    try:
        done = subprocess.run(
            command,
            cwd=ROOT,
            env=_environment(library),
            capture_output=True,
            timeout=RUN_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        stderr = (e.stderr or b"").decode(errors="replace")[-3000:]
        raise HarnessError(
            f"{library}/{scenario} did not finish in {RUN_TIMEOUT_SECONDS}s:\n{stderr}"
        ) from e
    stderr = done.stderr.decode(errors="replace")
    if done.returncode != 0:
        raise HarnessError(f"{library}/{scenario} exited {done.returncode}:\n{stderr[-3000:]}")
    return stderr


def _canonical(body: bytes, where: str) -> proto_json.CanonicalRequest:
    conversion = proto_json.convert_otlp(body)
    if conversion.refusal is not None or conversion.errors:
        raise HarnessError(f"{where}: converter refused spans: {conversion.errors}")
    return conversion.request


def emit(library: str, scenario: str) -> Emission:
    """Run `library` on `scenario` in a child process now, and collect what it exported."""
    if library not in LIBRARIES or scenario not in SCENARIOS:
        raise ValueError(f"unknown library or scenario: {library!r}, {scenario!r}")
    where = f"{library}/{scenario}"
    with FakeOpenAI() as fake, OtlpReceiver() as receiver:
        stderr = _run_child(library, scenario, fake.base_url, receiver.base_url)
        requests = tuple(_canonical(body, where) for body in receiver.bodies("/v1/traces"))
        log_records = tuple(
            record
            for body in receiver.bodies("/v1/logs")
            for resource_logs in orjson.loads(body).get("resourceLogs", [])
            for scope_logs in resource_logs.get("scopeLogs", [])
            for record in scope_logs.get("logRecords", [])
        )
        openai_requests = tuple(fake.requests)
    emission = Emission(library, scenario, requests, log_records, openai_requests)
    if not emission.spans:
        raise HarnessError(f"{where} exported no spans:\n{stderr[-3000:]}")
    return emission


class Instrumented:
    """Runs each (library, scenario) once, a few children at a time, and keeps the answers.

    `prefetch` queues runs ahead of the tests that read them; `emission` waits for one.
    """

    def __init__(self, workers: int = 2) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="emit")
        self._futures: dict[tuple[str, str], Future[Emission]] = {}
        self._lock = threading.Lock()

    def _future(self, library: str, scenario: str) -> Future[Emission]:
        with self._lock:
            future = self._futures.get((library, scenario))
            if future is None:
                future = self._executor.submit(emit, library, scenario)
                self._futures[(library, scenario)] = future
            return future

    def prefetch(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Queue these runs now, in this order."""
        for library, scenario in pairs:
            self._future(library, scenario)

    def emission(self, library: str, scenario: str) -> Emission:
        """What `library` emitted for `scenario`, once its run (queued or new) is done."""
        future = self._future(library, scenario)
        try:
            return future.result(timeout=WAIT_TIMEOUT_SECONDS)
        except TimeoutError as e:
            raise HarnessError(
                f"{library}/{scenario} not done after {WAIT_TIMEOUT_SECONDS}s"
            ) from e

    def spans(self, library: str, scenario: str) -> list[dict[str, Any]]:
        """The canonical OTLP/JSON spans `library` emits for `scenario`."""
        return self.emission(library, scenario).spans

    def close(self) -> None:
        """Drop runs not yet started; wait for the running ones (each bounded)."""
        self._executor.shutdown(wait=True, cancel_futures=True)


def every_pair() -> list[tuple[str, str]]:
    """Every (library, scenario) the harness knows."""
    return [(library, scenario) for library in LIBRARIES for scenario in SCENARIOS]
