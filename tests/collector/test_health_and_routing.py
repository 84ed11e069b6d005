"""Health routes, 404 and 405, and the 500 that never shows a traceback."""

from __future__ import annotations

from pathlib import Path

from quart.typing import TestClientProtocol as Client

from service.settings import Settings
from tests.collector.conftest import make_app


async def test_health_routes_need_no_auth(client: Client) -> None:
    """/health, /health/live, /health/ingest and /health/ready answer 200 without a key."""
    for path, status in [
        ("/health", "ok"),
        ("/health/live", "live"),
        ("/health/ingest", "ok"),
        ("/health/ready", "ready"),
    ]:
        response = await client.get(path)
        assert response.status_code == 200, path
        assert (await response.get_json())["status"] == status


async def test_ready_names_the_failing_dependency(settings: Settings, tmp_path: Path) -> None:
    """/health/ready is 503 and names the store that does not answer."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    app = make_app(settings, database_url=f"sqlite:///{blocker / 'x.db'}")
    async with app.test_app() as test_app:
        client = test_app.test_client()
        ready = await client.get("/health/ready")
        ingest = await client.get("/health/ingest")
    body = await ready.get_json()
    assert ready.status_code == 503 and body["checks"]["queue"] == "ok"
    assert body["checks"]["database"].startswith("unavailable")
    assert ingest.status_code == 200


async def test_queue_down_fails_ingest_and_ready(settings: Settings) -> None:
    """With Redis unreachable, /health/ingest and /health/ready are 503; /health stays 200."""
    app = make_app(settings, redis_url="redis://127.0.0.1:1/0")
    async with app.test_app() as test_app:
        client = test_app.test_client()
        assert (await client.get("/health/ingest")).status_code == 503
        assert (await client.get("/health/ready")).status_code == 503
        assert (await client.get("/health")).status_code == 200


async def test_unknown_path_and_wrong_method(client: Client) -> None:
    """Other paths are 404 and wrong methods 405 (with Allow), in the error format."""
    missing = await client.get("/v1/nope")
    assert missing.status_code == 404
    assert (await missing.get_json())["error"]["code"] == "NOT_FOUND"
    wrong = await client.get("/v1/spans")
    assert wrong.status_code == 405
    assert (await wrong.get_json())["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert "POST" in wrong.headers["Allow"]
    assert (await client.post("/health")).status_code == 405
