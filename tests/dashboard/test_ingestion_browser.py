"""The ingestion page in a real browser (Playwright driving the system's Chromium), fed
by a real collector process."""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from storage.database import Database
from storage.identity import IdentityStore
from storage.passwords import Passwords
from storage.schema import migrate
from tests.dashboard.conftest import PASSWORD
from tests.dashboard.served import dashboard_and_collector, forget_queue
from tests.proto_json.spans import span

CHROMIUM = Path("/usr/bin/chromium-headless-shell")
#: Where the test leaves its screenshot of the page, for people to look at.
SCREENSHOT = Path(os.environ.get("SPANGATE_SCREENSHOT_DIR", "/tmp")) / "ingestion-page.png"

if not CHROMIUM.exists():
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"{CHROMIUM} is missing in CI: .ci/run installs it with apt")
    pytest.skip(
        f"no {CHROMIUM}: apt-get install -y chromium-headless-shell to run the browser tests",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, expect, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[dict[str, str]]:
    """`spangate dashboard` and `spangate collector` on a database with an owner, a
    project and its key: their base URLs and the key."""
    root = tmp_path_factory.mktemp("ingestion")
    url = f"sqlite:///{root / 'spangate.db'}"
    db = Database(url)
    migrate(db)
    identity = IdentityStore(db)
    identity.add_user("owner@acme.test", "owner", "acme")
    Passwords(db).set_password("owner@acme.test", PASSWORD)
    identity.create_project("demo", "acme")
    key = identity.create_key("demo", "owner@acme.test").key
    project_id = identity.project("demo").id
    db.close()
    try:
        with dashboard_and_collector(root, url, redis_url) as urls:
            yield {**urls, "key": key}
    finally:
        forget_queue(redis_url, project_id)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium from the system."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield launched
        launched.close()


def test_the_page_shows_what_became_of_each_request(
    browser: Browser, served: dict[str, str]
) -> None:
    """Requests sent to the collector (one with a rejected span, one whose gzip is
    broken) are on the project's Ingestion page, reached from its navigation, newest
    first, with the chart of the minute's spans."""
    auth = {"Authorization": f"Bearer {served['key']}", "Content-Type": "application/json"}
    good = orjson.dumps({"spans": [span(), span(spanId="1" * 16, name="")]})
    sent = httpx.post(f"{served['ingest']}/v1/spans", content=good, headers=auth)
    assert sent.status_code == 200 and sent.json()["rejected"] == 1
    broken = gzip.compress(good)[:-8]
    refused = httpx.post(
        f"{served['ingest']}/v1/spans",
        content=broken,
        headers={**auth, "Content-Encoding": "gzip"},
    )
    assert refused.status_code == 400
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    base = served["app"]
    page.goto(f"{base}/login")
    page.get_by_label("Email").fill("owner@acme.test")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("link", name="demo").click()
    page.get_by_role("navigation", name="Project").get_by_role("link", name="Ingestion").click()
    expect(page.get_by_role("heading", name="Ingestion", exact=True)).to_be_visible()
    rows = page.locator("table.requests tbody tr")
    for _ in range(50):  # the collector writes a refusal's record within 50 ms, in a batch
        if rows.count() == 2:
            break
        page.wait_for_timeout(100)
        page.reload()
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("SERIALIZATION_ERROR")
    expect(rows.nth(1)).to_contain_text("span 1: INVALID_NAME")
    expect(rows.nth(1)).to_contain_text(served["key"][:12])
    chart = page.get_by_role("img", name="Spans per minute")
    expect(chart).to_be_visible()
    expect(chart.locator("rect.accepted")).to_have_count(1)
    expect(chart.locator("rect.rejected")).to_have_count(1)
    assert served["key"] not in page.content()
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    page.close()
