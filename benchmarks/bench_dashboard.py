"""Dashboard read costs as the store grows: the trace list and the trace page.

    python -m benchmarks.bench_dashboard [--large-traces 100000] [--seconds 6]

Two SQLite databases are filled through the span store (as the worker writes): a small
one of 10,000 spans (1,000 traces of 10) and a large one of 1,000,000 spans (100,000
traces of 10); each also holds one trace of 1,000 spans. Both are served by the
dashboard app in this process (Quart's test client: the whole app, no sockets), signed in.

* list: `GET /api/v1/projects/demo/traces?limit=50` and the list page, large / small.
  Target <= 1.5: the list reads per-trace summaries through an index, so its cost must
  not grow with the store.
* trace page: the 1,000-span trace's page (`/projects/demo/traces/{id}`), large / small;
  and against the baseline of reading that trace's rows from the large database (the
  span store's query, every column fetched, nothing parsed). Target <= 3.

Each ratio is the median of paired rounds (benchmarks/timing.py), measured in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from quart.typing import TestClientProtocol

import proto_json
from benchmarks.timing import paired_ratio
from dashboard.app import create_app
from service.settings import Settings
from storage.database import Database
from storage.identity import IdentityStore
from storage.passwords import Passwords
from storage.schema import migrate
from storage.span_rows import rows_of_json
from storage.spans import SpanStore

PASSWORD = "benchmark password"
SPANS_PER_TRACE = 10
TRACES_PER_BODY = 100
BIG_TRACE = "b" * 32
BIG_TRACE_SPANS = 1000


def _body(rng: random.Random, traces: int, first_second: int) -> bytes:
    spans: list[dict[str, Any]] = []
    for t in range(traces):
        trace_id = f"{rng.getrandbits(128):032x}"
        second = first_second + t
        start = f"2026-11-{1 + second // 86_400 % 28:02d}T{second // 3600 % 24:02d}:"
        start += f"{second // 60 % 60:02d}:{second % 60:02d}"
        root = f"{rng.getrandbits(64):016x}"
        for s in range(SPANS_PER_TRACE):
            spans.append(
                {
                    "traceId": trace_id,
                    "spanId": root if s == 0 else f"{rng.getrandbits(64):016x}",
                    "parentSpanId": None if s == 0 else root,
                    "name": "agent run" if s == 0 else f"step-{s}",
                    "kind": "agent" if s == 0 else "llm_call",
                    "startTime": f"{start}.{s:03d}Z",
                    "endTime": f"{start}.{900 - s:03d}Z",
                    "status": "error" if rng.random() < 0.05 else "ok",
                    "attributes": {"llm.model": "m-1", "llm.tokens.prompt": rng.randint(1, 4000)},
                }
            )
    return orjson.dumps({"spans": [{k: v for k, v in s.items() if v is not None} for s in spans]})


def _big_trace() -> bytes:
    spans = [
        {
            "traceId": BIG_TRACE,
            "spanId": f"{n + 1:016x}",
            "parentSpanId": f"{(n + 1) // 2:016x}" if n else None,
            "name": f"step-{n}",
            "kind": "tool_call",
            "startTime": f"2026-12-01T00:00:{n % 60:02d}.{n:03d}Z",
            "endTime": f"2026-12-01T00:01:{n % 60:02d}Z",
            "attributes": {"tool.args": {"query": "x" * 40, "limit": n}, "n": n},
            "events": [{"name": "retry", "attributes": {"attempt": 1}}] if n % 4 == 0 else [],
        }
        for n in range(BIG_TRACE_SPANS)
    ]
    for span in spans:
        if span["parentSpanId"] is None:
            del span["parentSpanId"]
    return orjson.dumps({"spans": spans})


def fill(path: Path, traces: int) -> tuple[Database, str]:
    """A migrated database at `path` with `traces` traces and the 1,000-span one."""
    db = Database(f"sqlite:///{path}")
    migrate(db)
    project = IdentityStore(db).create_project("demo", "acme")
    IdentityStore(db).add_user("bench@acme.test", "viewer", "acme")
    Passwords(db).set_password("bench@acme.test", PASSWORD)
    store, rng = SpanStore(db), random.Random(traces)
    bodies = [_big_trace()]
    bodies += [
        _body(rng, min(TRACES_PER_BODY, traces - at), at)
        for at in range(0, traces, TRACES_PER_BODY)
    ]
    for body in bodies:
        payload = proto_json.convert_spans(body).payload
        store.upsert(rows_of_json(payload, project.id, int(time.time() * 1000)), 1_200_000)
    return db, project.id


async def _signed_in(settings: Settings) -> tuple[Any, TestClientProtocol]:
    app = create_app(settings)
    context = app.test_app()
    await context.startup()
    client = app.test_client()
    page = (await (await client.get("/login")).get_data()).decode()
    token = re.search(r'name="csrf-token" content="([^"]+)"', page)
    assert token is not None
    form = {"email": "bench@acme.test", "password": PASSWORD, "csrf_token": token.group(1)}
    response = await client.post("/login", form=form)
    assert response.status_code == 303
    return context, client


def _getter(
    loop: asyncio.AbstractEventLoop, client: TestClientProtocol, path: str
) -> Callable[[], None]:
    def get() -> None:
        response = loop.run_until_complete(client.get(path))
        assert response.status_code == 200, path
        loop.run_until_complete(response.get_data())

    return get


def _read_rows(db: Database, project_id: str) -> Callable[[], None]:
    def read() -> None:
        with db.transaction() as tx:
            rows = tx.query(
                "SELECT * FROM spans WHERE project_id = ? AND trace_id = ? "
                "ORDER BY start_ns, span_id, start_day",
                (project_id, BIG_TRACE),
            )
        assert len(rows) == BIG_TRACE_SPANS

    return read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small-traces", type=int, default=1_000)
    parser.add_argument("--large-traces", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=6.0, help="per measured ratio")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        small, small_project = fill(root / "small.db", args.small_traces)
        large, large_project = fill(root / "large.db", args.large_traces)
        print(f"filled in {time.perf_counter() - started:.0f} s")
        loop = asyncio.new_event_loop()
        apps = []
        clients = []
        for db in (small, large):
            settings = Settings(database_url=db.url, data_dir=root / "data")
            context, client = loop.run_until_complete(_signed_in(settings))
            apps.append(context)
            clients.append(client)
        for label, path in (
            ("list JSON (limit 50)", "/api/v1/projects/demo/traces?limit=50"),
            ("list page", "/projects/demo/traces"),
            ("list JSON, errors only", "/api/v1/projects/demo/traces?limit=50&status=error"),
        ):
            ratio, base, subject = paired_ratio(
                _getter(loop, clients[0], path), _getter(loop, clients[1], path), args.seconds
            )
            print(
                f"{label}: large/small {ratio:.2f} "
                f"(small {base * 1000:.2f} ms, large {subject * 1000:.2f} ms; target <= 1.5)"
            )
        page = f"/projects/demo/traces/{BIG_TRACE}"
        ratio, base, subject = paired_ratio(
            _getter(loop, clients[0], page), _getter(loop, clients[1], page), args.seconds
        )
        print(
            f"trace page ({BIG_TRACE_SPANS} spans): large/small {ratio:.2f} "
            f"(small {base * 1000:.2f} ms, large {subject * 1000:.2f} ms)"
        )
        ratio, base, subject = paired_ratio(
            _read_rows(large, large_project), _getter(loop, clients[1], page), args.seconds
        )
        print(
            f"trace page of {BIG_TRACE_SPANS} spans / reading its rows: {ratio:.2f} "
            f"(rows {base * 1000:.2f} ms, page {subject * 1000:.2f} ms; target <= 3)"
        )
        for context in apps:
            loop.run_until_complete(context.shutdown())
        loop.close()
        for db in (small, large):
            db.close()


if __name__ == "__main__":
    main()
