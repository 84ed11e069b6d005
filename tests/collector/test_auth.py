"""Gateway authentication: Bearer only, the documented 401 messages, AUTH_UNAVAILABLE."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from quart.typing import TestClientProtocol as Client

from collector.auth import MALFORMED, MISSING, bearer_token
from collector.errors import GatewayError
from service.settings import Settings
from tests.collector.conftest import Tenant, make_app
from tests.proto_json.spans import span

BODY = orjson.dumps({"spans": [span()]})


async def post(client: Client, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    response = await client.post("/v1/spans", data=BODY, headers=headers)
    return response.status_code, (await response.get_json())["error"]


async def test_key_only_in_x_api_key_is_missing_authorization(
    client: Client, tenant: Tenant
) -> None:
    """The gateway reads only Authorization; X-API-Key alone is 'Missing Authorization header'."""
    assert await post(client, {"X-API-Key": tenant.key}) == (
        401,
        {"code": "UNAUTHORIZED", "message": MISSING},
    )


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Bearer ", "Token sgk_x", "bearer a b"])
async def test_malformed_authorization(client: Client, tenant: Tenant, header: str) -> None:
    """Anything but `Bearer <key>` is 401 UNAUTHORIZED, even with a valid X-API-Key."""
    status, error = await post(client, {"Authorization": header, "X-API-Key": tenant.key})
    assert (status, error["code"], error["message"]) == (401, "UNAUTHORIZED", MALFORMED)


async def test_scheme_is_case_insensitive(client: Client, tenant: Tenant) -> None:
    """`bearer` in any case is the Bearer scheme."""
    response = await client.post(
        "/v1/spans", data=BODY, headers={"Authorization": f"bearer {tenant.key}"}
    )
    assert response.status_code == 200


@pytest.mark.parametrize("key", ["sgk_" + "A" * 43, "nonsense"])
async def test_unknown_key(client: Client, tenant: Tenant, key: str) -> None:
    """A key that does not exist is 401 UNAUTHORIZED."""
    status, error = await post(client, {"Authorization": f"Bearer {key}"})
    assert (status, error["code"]) == (401, "UNAUTHORIZED")


async def test_revoked_key(settings: Settings, tenant: Tenant) -> None:
    """A revoked key is refused (a fresh app: nothing cached)."""
    [record] = tenant.store.list_keys()
    tenant.store.revoke_key(record.id)
    async with make_app(settings).test_app() as test_app:
        status, error = await post(test_app.test_client(), tenant.auth())
    assert (status, error["code"]) == (401, "UNAUTHORIZED")


async def test_viewer_key_may_still_send_spans(client: Client, tenant: Tenant) -> None:
    """Sending spans needs a valid key, whatever the creator's role is now."""
    tenant.store.set_role("owner@x.io", "viewer")
    response = await client.post("/v1/spans", data=BODY, headers=tenant.auth())
    assert response.status_code == 200


async def test_store_unreachable_is_auth_unavailable(
    settings: Settings, tenant: Tenant, tmp_path: Path
) -> None:
    """When keys cannot be verified the gateway answers 503 AUTH_UNAVAILABLE, not 401."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    app = make_app(settings, database_url=f"sqlite:///{blocker / 'x.db'}")
    async with app.test_app() as test_app:
        status, error = await post(test_app.test_client(), tenant.auth())
    assert (status, error["code"]) == (503, "AUTH_UNAVAILABLE")


def test_bearer_token_parsing() -> None:
    """The token is what follows `Bearer `, surrounding spaces ignored."""
    assert bearer_token("Bearer  sgk_abc ") == "sgk_abc"
    assert bearer_token("bearer sgk_abc") == "sgk_abc"
    for header in (None, "Basic sgk_abc", "Bearer", "Bearer a b"):
        with pytest.raises(GatewayError):
            bearer_token(header)
