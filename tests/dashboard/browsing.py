"""What the browser tests share: the system's Chromium, signing in, a served dashboard
on a database the test module fills, and screenshots kept where one asks.

Debian's `chromium-headless-shell` (Playwright's own browser download is not used). In
CI a missing browser fails these tests; elsewhere they skip, saying how to install it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from storage.database import Database
from storage.identity import IdentityStore
from storage.passwords import Passwords
from storage.schema import migrate
from tests.dashboard.conftest import PASSWORD
from tests.dashboard.served import dashboard_and_collector

CHROMIUM = Path("/usr/bin/chromium-headless-shell")
OWNER = "owner@acme.test"

if not CHROMIUM.exists():
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"{CHROMIUM} is missing in CI: .ci/run installs it with apt")
    pytest.skip(
        f"no {CHROMIUM}: apt-get install -y chromium-headless-shell to run the browser tests",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright  # noqa: E402

__all__ = ["Browser", "Page", "expect", "launched", "serve", "shot", "sign_in"]


@contextmanager
def launched() -> Iterator[Browser]:
    """Headless Chromium from the system."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def serve(
    root: Path, redis_url: str, fill: Callable[[Database, IdentityStore], None]
) -> Iterator[dict[str, str]]:
    """A dashboard and a collector on a new SQLite file with owner@acme.test (org acme),
    filled by `fill`: their base URLs (`app`, `ingest`)."""
    url = f"sqlite:///{root / 'spangate.db'}"
    db = Database(url)
    migrate(db)
    identity = IdentityStore(db)
    identity.add_user(OWNER, "owner", "acme")
    Passwords(db).set_password(OWNER, PASSWORD)
    fill(db, identity)
    db.close()
    with dashboard_and_collector(root, url, redis_url) as urls:
        yield urls


def sign_in(page: Page, base: str) -> None:
    """Sign in as owner@acme.test through the form."""
    page.goto(f"{base}/login")
    page.get_by_label("Email").fill(OWNER)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{base}/projects")


def shot(page: Page | Locator, directory: Path, name: str) -> Path:
    """A screenshot of a page or of one element in `directory`, copied to
    $SPANGATE_SCREENSHOTS when it is set (to look at them)."""
    path = directory / f"{name}.png"
    page.screenshot(path=str(path))
    if os.environ.get("SPANGATE_SCREENSHOTS"):
        (Path(os.environ["SPANGATE_SCREENSHOTS"]) / path.name).write_bytes(path.read_bytes())
    return path
