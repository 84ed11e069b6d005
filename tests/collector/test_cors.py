"""CORS on the ingest routes: the configured origins, read as the setting gives them."""

from __future__ import annotations

import dataclasses

import orjson
from quart import Quart

from collector.app import create_app
from service.settings import Settings
from tests.collector.conftest import Tenant
from tests.proto_json.spans import span

ALLOWED = "https://app.example.com"
PREFLIGHT = {
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization",
}


def _app(settings: Settings, value: str) -> Quart:
    origins = Settings.from_env({"SPANGATE_CORS_ALLOWED_ORIGINS": value}).cors_allowed_origins
    return create_app(dataclasses.replace(settings, cors_allowed_origins=origins))


async def test_an_allowed_origin_is_answered_and_another_is_not(
    settings: Settings, tenant: Tenant
) -> None:
    """A preflight of an allowed origin gets the methods and headers; a post from it
    gets its origin back, and `Vary: Origin`; another origin gets neither."""
    app = _app(settings, f"{ALLOWED}/, http://localhost:5173")
    async with app.test_app() as running:
        client = running.test_client()
        allowed = await client.options("/v1/spans", headers={"Origin": ALLOWED, **PREFLIGHT})
        assert allowed.status_code == 204
        assert "POST" in allowed.headers["Access-Control-Allow-Methods"]
        assert "Authorization" in allowed.headers["Access-Control-Allow-Headers"]
        other = await client.options(
            "/v1/spans", headers={"Origin": "https://evil.example", **PREFLIGHT}
        )
        assert other.status_code == 204 and "Access-Control-Allow-Methods" not in other.headers
        body = orjson.dumps({"spans": [span()]})
        sent = await client.post("/v1/spans", data=body, headers=tenant.auth(Origin=ALLOWED))
        assert sent.status_code == 200
        assert sent.headers["Access-Control-Allow-Origin"] == ALLOWED
        assert "Origin" in sent.headers["Vary"]
        refused = await client.post(
            "/v1/spans", data=body, headers=tenant.auth(Origin="https://evil.example")
        )
        assert refused.status_code == 200
        assert "Access-Control-Allow-Origin" not in refused.headers


async def test_no_origins_means_no_cors_headers(settings: Settings, tenant: Tenant) -> None:
    app = _app(settings, "")
    async with app.test_app() as running:
        client = running.test_client()
        response = await client.post(
            "/v1/spans", data=orjson.dumps({"spans": [span()]}), headers=tenant.auth(Origin=ALLOWED)
        )
        assert response.status_code == 200
        assert "Access-Control-Allow-Origin" not in response.headers
