"""A 10,000-span trace's page in a real browser: first paint and each interaction.

    python -m benchmarks.bench_trace_browser [--spans 10000] [--rounds 7]

One SQLite file holds a 10,000-span trace (a tree, ten children a span, every fifth a
model call, every 97th an error) and, as the baseline, a 10-span trace of the same
shape. `spangate dashboard` serves it (a real process; SPANGATE_REDIS_URL if set, else
its embedded Redis); the system's Chromium (Playwright) signs in and, each round, opens
both pages and times in the page (performance.now(), to the next frame):

* first paint: the page's first-contentful-paint, and its load event;
* zoom in, reset zoom, collapse to depth 2, all open again;
* select a span (its details fetched and shown), next error, find (a search of every
  span's attributes on the server, and going to the first match).

Prints one line per measure: median and range over the rounds, in milliseconds, and the
median ratio to the 10-span trace's figure for the same measure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

import proto_json
from genai.prices import Pricer
from spangate.embedded_redis import free_port
from storage.database import Database
from storage.identity import IdentityStore
from storage.passwords import Passwords
from storage.schema import migrate
from storage.span_genai import with_views
from storage.span_rows import rows_of
from storage.spans import SpanStore

CHROMIUM = "/usr/bin/chromium-headless-shell"
PASSWORD = "benchmark password"
BIG, SMALL = "b" * 32, "5" * 32
NEXT_FRAME = "await new Promise((r) => requestAnimationFrame(() => setTimeout(r)));"
ACTIONS = {
    "zoom in": "document.querySelector('[data-zoom=in]').click();",
    "reset zoom": "document.querySelector('[data-zoom=reset]').click();",
    "collapse to depth 2": (
        "const s = document.getElementById('collapse-depth'); s.value = '2';"
        "s.dispatchEvent(new Event('change'));"
    ),
    "all open again": (
        "const s = document.getElementById('collapse-depth'); s.value = '';"
        "s.dispatchEvent(new Event('change'));"
    ),
}
FIRST_PAINT = """async () => [
  await new Promise((r) => new PerformanceObserver((list, o) => {
    const found = list.getEntriesByName("first-contentful-paint")[0];
    if (found) { o.disconnect(); r(found.startTime); }
  }).observe({type: "paint", buffered: true})),
  performance.getEntriesByType("navigation")[0].loadEventEnd]"""
UNTIL_DETAIL = (
    "const seen = new Promise((r) => new MutationObserver((_, o) => { o.disconnect(); r(); })"
    ".observe(document.getElementById('detail'), {childList: true}));"
)


def _spans(trace_id: str, count: int) -> list[dict[str, Any]]:
    spans = []
    for at in range(count):
        ms = at * 10_000 // count
        start = f"2026-11-22T10:00:{ms // 1000:02d}.{ms % 1000:03d}Z"
        attributes: dict[str, Any] = {"n": at, "note": f"text of span {at}"}
        if at and at % 5 == 0:
            attributes |= {"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 10,
                           "gen_ai.usage.output_tokens": 5}  # fmt: skip
        spans.append({
            "traceId": trace_id, "spanId": f"{at + 1:016x}", "name": f"step {at}",
            "kind": "llm_call" if at and at % 5 == 0 else "agent",
            "status": "error" if at and at % 97 == 0 else "ok",
            "startTime": start, "endTime": "2026-11-22T10:00:10Z" if at == 0 else start,
            "attributes": attributes,
            **({"parentSpanId": f"{(at - 1) // 10 + 1:016x}"} if at else {}),
        })  # fmt: skip
    return spans


def _database(root: Path, count: int) -> str:
    url = f"sqlite:///{root / 'bench.db'}"
    db = Database(url)
    migrate(db)
    identity = IdentityStore(db)
    identity.add_user("bench@example.com", "owner", "bench")
    Passwords(db).set_password("bench@example.com", PASSWORD)
    project = identity.create_project("demo", "bench")
    for trace_id, spans in ((BIG, count), (SMALL, 10)):
        made = _spans(trace_id, spans)
        for first in range(0, spans, 2000):  # as a client sends them: under the limits
            body = orjson.dumps({"spans": made[first : first + 2000]})
            request = proto_json.convert_spans(body).request
            SpanStore(db).upsert(with_views(rows_of(request, project.id, 1), Pricer()), 1_200_000)
    db.close()
    return url


def _serve(root: Path, url: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPANGATE_")}
    env |= {"SPANGATE_DATABASE_URL": url, "SPANGATE_APP_PORT": str(port),
            "SPANGATE_DATA_DIR": str(root / "data"), "SPANGATE_LOG_LEVEL": "warning"}  # fmt: skip
    if os.environ.get("SPANGATE_REDIS_URL"):
        env["SPANGATE_REDIS_URL"] = os.environ["SPANGATE_REDIS_URL"]
    process = subprocess.Popen(
        [sys.executable, "-m", "spangate.cli", "dashboard"], env=env, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health/ready", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the dashboard did not start")


def _timed(page: Any, script: str, wait: str = NEXT_FRAME) -> float:
    return float(page.evaluate(f"async () => {{ const t = performance.now(); {script} {wait}"
                               " return performance.now() - t; }"))  # fmt: skip


def _round(page: Any, base: str, trace_id: str) -> dict[str, float]:
    """One round of every measure on one trace's page."""
    opened = page.goto(f"{base}/projects/demo/traces/{trace_id}", wait_until="load")
    if opened is None or opened.status != 200:
        raise SystemExit(f"the trace page answered {opened and opened.status}")
    paint = page.evaluate(FIRST_PAINT)
    found = {"first contentful paint": paint[0], "load event": paint[1]}
    for name, script in ACTIONS.items():
        found[name] = _timed(page, script)
    link = f".span-row[data-span-id='{'0' * 15}2'] .label a"
    found["select a span"] = _timed(
        page, UNTIL_DETAIL + f'document.querySelector("{link}").click();', "await seen;"
    )
    if page.locator("#next-error").is_enabled():  # the 10-span trace has no error
        found["next error"] = _timed(
            page, UNTIL_DETAIL + "document.getElementById('next-error').click();", "await seen;"
        )
    page.goto(f"{base}/projects/demo/traces/{trace_id}", wait_until="load")
    found["find (server search, go to match)"] = _timed(
        page,
        UNTIL_DETAIL + "document.getElementById('trace-find').value = 'span 3';"
        "document.querySelector('form.trace-find').requestSubmit();",
        "await seen;",
    )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        process, base = _serve(root, _database(root, args.spans))
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.goto(f"{base}/login")
                page.get_by_label("Email").fill("bench@example.com")
                page.get_by_label("Password").fill(PASSWORD)
                page.get_by_role("button", name="Sign in").click()
                page.wait_for_url(f"{base}/projects")
                _round(page, base, BIG)  # warm: the database's pages and the browser's cache
                big, small = [], []
                for _ in range(args.rounds):
                    small.append(_round(page, base, SMALL))
                    big.append(_round(page, base, BIG))
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(f"{args.spans:,}-span trace page ({args.rounds} rounds), ms: median, range, "
          "ratio to the 10-span trace")  # fmt: skip
    for name in big[0]:
        values = [r[name] for r in big]
        ratios = [b[name] / max(s[name], 0.1) for b, s in zip(big, small, strict=True) if name in s]
        ratio = f"x{statistics.median(ratios):.1f}" if ratios else "-"
        print(f"  {name:36} {statistics.median(values):8.1f}  {min(values):8.1f}-"
              f"{max(values):<8.1f}  {ratio}")  # fmt: skip


if __name__ == "__main__":
    main()
