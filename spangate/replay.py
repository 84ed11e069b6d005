"""Send example files and archived requests to a running gateway (`spangate replay`)."""

from __future__ import annotations

import gzip
import sys
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

ROUTES = {
    "spans": "/v1/spans",
    "spans_batch": "/v1/spans/batch",
    "traces": "/v1/traces",
    "otlp": "/v1/otlp/v1/traces",
}
MAX_ATTEMPTS = 6
TIMEOUT_S = 30


class ReplayError(Exception):
    """A file cannot be replayed; the message says why."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One request to send."""

    api: bool  # the scores API rather than the gateway
    path: str
    body: bytes
    content_type: str
    gzipped: bool
    spans: int  # spans in the body (a score: 0)


@dataclass
class Summary:
    """What a replay did."""

    requests: int = 0
    accepted: int = 0  # spans
    rejected: int = 0
    refused: int = 0
    scores: int = 0  # recorded
    scores_refused: int = 0
    statuses: dict[int, int] = field(default_factory=dict)


def _document(raw: bytes, name: str) -> dict[str, Any]:
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise ReplayError(f"{name}: not JSON ({e})") from e
    if type(document) is not dict:
        raise ReplayError(f"{name}: not a JSON object")
    return document


def _span_count(document: dict[str, Any]) -> int:
    if "spans" in document:
        return len(document["spans"])
    if "traces" in document:
        return sum(len(t.get("spans", [])) for t in document["traces"])
    return sum(
        len(s.get("spans", []))
        for r in document.get("resourceSpans", [])
        for s in r.get("scopeSpans", [])
    )


def _json_file(raw: bytes, data: bytes, name: str, gzipped: bool) -> Outgoing:
    document = _document(data, name)
    if "trace_id" in document and "score" in document:
        return Outgoing(True, "/v1/scores", data, "application/json", False, 0)
    if "spans" in document:
        path = ROUTES["spans"]
    elif "traces" in document:
        path = ROUTES["traces"]
    elif "resourceSpans" in document:
        path = ROUTES["otlp"]
    else:
        raise ReplayError(f"{name}: neither spans, traces, resourceSpans nor a score")
    return Outgoing(False, path, raw, "application/json", gzipped, _span_count(document))


def _archive(data: bytes, name: str) -> Iterator[Outgoing]:
    for number, line in enumerate(data.splitlines(), 1):
        record = _document(line, f"{name} line {number}")
        body = record["body"].encode()
        route = ROUTES.get(record.get("route", ""))
        if route is None:
            raise ReplayError(f"{name} line {number}: unknown route {record.get('route')!r}")
        spans = (
            len([x for x in body.splitlines() if x.strip()])
            if route.endswith("batch")
            else _span_count(_document(body, name))
        )
        yield Outgoing(
            False, route, body, record.get("content_type") or "application/json", False, spans
        )


def outgoing(path: Path) -> Iterator[Outgoing]:
    """The requests a file stands for, by its name and content."""
    raw = path.read_bytes()
    gzipped = path.suffix == ".gz"
    try:
        data = gzip.decompress(raw) if gzipped else raw
    except (EOFError, OSError, zlib.error) as e:
        raise ReplayError(f"{path.name}: not complete gzip ({e})") from e
    stem = path.name.removesuffix(".gz")
    if stem.startswith("archive-") and stem.endswith(".jsonl"):
        yield from _archive(data, path.name)
    elif stem.endswith(".ndjson"):
        spans = len([line for line in data.splitlines() if line.strip()])
        yield Outgoing(False, ROUTES["spans_batch"], raw, "application/x-ndjson", gzipped, spans)
    else:
        yield _json_file(raw, data, path.name, gzipped)


def _post(url: str, request: Outgoing, key: str) -> tuple[int, bytes, str | None]:
    headers = {"Content-Type": request.content_type, "Authorization": f"Bearer {key}"}
    if request.gzipped:
        headers["Content-Encoding"] = "gzip"
    sending = urllib.request.Request(url, data=request.body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(sending, timeout=TIMEOUT_S) as response:
            return response.status, response.read(), None
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers.get("Retry-After")


def _counts(request: Outgoing, body: bytes) -> tuple[int, int]:
    """(accepted, rejected) spans from a 2xx answer, in whichever form it came."""
    answer = orjson.loads(body) if body else {}
    if "accepted" in answer:
        return int(answer["accepted"]), int(answer["rejected"])
    if "spansAccepted" in answer:
        return int(answer["spansAccepted"]), int(answer["spansRejected"])
    rejected = int(answer.get("partialSuccess", {}).get("rejectedSpans", 0))
    return request.spans - rejected, rejected


def send(request: Outgoing, url: str, key: str, summary: Summary) -> None:
    """Send one request, waiting out 429/503 (Retry-After, else backoff); count the result."""
    delay = 1.0
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            status, body, retry_after = _post(url, request, key)
        except (urllib.error.URLError, OSError):
            status, body, retry_after = 0, b"", None
        if status in (0, 429, 503) and attempt < MAX_ATTEMPTS:
            time.sleep(float(retry_after) if retry_after and retry_after.isdigit() else delay)
            delay = min(delay * 2, 30.0)
            continue
        break
    summary.requests += 1
    summary.statuses[status] = summary.statuses.get(status, 0) + 1
    if request.api:  # a score
        if 200 <= status < 300:
            summary.scores += 1
        else:
            summary.scores_refused += 1
    elif 200 <= status < 300:
        accepted, rejected = _counts(request, body)
        summary.accepted += accepted
        summary.rejected += rejected
    else:
        summary.refused += request.spans


def replay(
    paths: list[Path],
    ingest_url: str,
    api_url: str,
    key: str,
    rate: float | None,
    progress: bool = True,
    now: bool = False,
) -> Summary:
    """Send every request of every file, at most `rate` requests per second; with `now`,
    as a new run of the present (spangate/replay_now.py)."""
    requests = [request for path in paths for request in outgoing(path)]
    if now:
        from spangate.replay_now import renewed

        requests = renewed(requests, time.time_ns())
    summary = Summary()
    interval = 1.0 / rate if rate else 0.0
    next_at = time.monotonic()
    for request in requests:
        wait = next_at - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        next_at = time.monotonic() + interval
        base = api_url if request.api else ingest_url
        send(request, base.rstrip("/") + request.path, key, summary)
        if progress:
            done = summary.requests * 30 // len(requests)
            print(
                f"\r[{'#' * done}{'.' * (30 - done)}] {summary.requests}/{len(requests)} "
                f"requests  accepted {summary.accepted}  rejected {summary.rejected}  "
                f"refused {summary.refused + summary.scores_refused}",
                end="",
                file=sys.stderr,
                flush=True,
            )
    if progress:
        print(file=sys.stderr)
    return summary
