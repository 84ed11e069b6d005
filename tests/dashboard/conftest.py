"""A dashboard on a real database with two organisations, their users and stored spans."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from quart import Quart
from quart.typing import TestClientProtocol

import proto_json
from dashboard.app import create_app
from genai.prices import Pricer
from service.settings import Settings
from storage.database import Database
from storage.identity import IdentityStore, Project
from storage.passwords import Passwords
from storage.span_genai import with_views
from storage.span_rows import SpanRow, rows_of
from storage.spans import SpanStore
from tests.proto_json.spans import span

PASSWORD = "correct horse battery"
WINDOW_MS = 1_200_000
_CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]*)">')


@dataclass
class Site:
    """The app, its database and the names the tests use."""

    app: Quart
    db: Database
    demo: Project  # of organisation acme, where owner@ and viewer@ are
    secret: Project  # of organisation globex

    def client(self) -> TestClientProtocol:
        """A new browser (its own cookie jar)."""
        return self.app.test_client()


def store(
    db: Database, project: Project, spans: list[dict[str, Any]], received_ms: int = 1
) -> list[SpanRow]:
    """Store native spans as the worker would; the rows the window refused."""
    request = proto_json.convert_spans(orjson.dumps({"spans": spans})).request
    rows = with_views(rows_of(request, project.id, received_ms), Pricer())
    return SpanStore(db).upsert(rows, WINDOW_MS)


def agent_run(trace_id: str, **model: Any) -> list[dict[str, Any]]:
    """An agent span over 0-10 s and its model call over 2-7 s (`model` overrides or
    adds fields of the call)."""
    return [
        span(
            traceId=trace_id,
            spanId="1" * 16,
            name="agent run",
            kind="agent",
            startTime="2026-11-22T10:00:00Z",
            endTime="2026-11-22T10:00:10Z",
        ),
        span(
            traceId=trace_id,
            spanId="2" * 16,
            parentSpanId="1" * 16,
            name="ask model",
            kind="llm_call",
            startTime="2026-11-22T10:00:02Z",
            endTime="2026-11-22T10:00:07Z",
            **model,
        ),
    ]


def csrf_of(page: bytes) -> str:
    """The CSRF token a page carries in its meta tag."""
    found = _CSRF_META.search(page.decode())
    assert found is not None, "the page has no csrf-token meta tag"
    return found.group(1)


async def sign_in(client: TestClientProtocol, email: str, password: str = PASSWORD) -> str:
    """Sign in through the form; the session's CSRF token."""
    page = await (await client.get("/login")).get_data()
    response = await client.post(
        "/login", form={"email": email, "password": password, "csrf_token": csrf_of(page)}
    )
    assert response.status_code == 303, await response.get_data()
    return csrf_of(await (await client.get("/projects")).get_data())


@pytest.fixture
def settings(database: Database, tmp_path: Path) -> Settings:
    """Settings of a dashboard on the test database."""
    return Settings(database_url=database.url, data_dir=tmp_path / "data")


@pytest.fixture
async def site(database: Database, settings: Settings) -> AsyncIterator[Site]:
    """A serving dashboard: acme (owner@, admin@, member@, viewer@, project demo), globex
    (boss@, project secret)."""
    identity, passwords = IdentityStore(database), Passwords(database)
    for email, role, org in (
        ("owner@acme.test", "owner", "acme"),
        ("viewer@acme.test", "viewer", "acme"),
        ("member@acme.test", "member", "acme"),
        ("admin@acme.test", "admin", "acme"),
        ("boss@globex.test", "owner", "globex"),
    ):
        identity.add_user(email, role, org)
        passwords.set_password(email, PASSWORD)
    demo = identity.create_project("demo", "acme")
    secret = identity.create_project("secret", "globex")
    app = create_app(settings)
    async with app.test_app():
        yield Site(app, database, demo, secret)
