"""Project settings and API keys: who may rename, list, create and revoke, on the pages
and under /api/v1."""

from __future__ import annotations

import orjson
import pytest

from storage.api_keys import key_hash
from storage.identity import IdentityStore
from tests.dashboard.conftest import Site, csrf_of, sign_in


async def _json(response: object) -> object:
    return orjson.loads(await response.get_data())  # type: ignore[attr-defined]


async def test_owner_creates_lists_and_revokes_a_key(site: Site) -> None:
    """POST api-keys answers 201 with the secret (once); the key acts on the gateway's
    lookup; the list never shows the secret; revoking stops it."""
    client = site.client()
    csrf = await sign_in(client, "owner@acme.test")
    headers = {"X-CSRF-Token": csrf}
    response = await client.post("/api/v1/projects/demo/api-keys", json={}, headers=headers)
    assert response.status_code == 201
    created = await _json(response)
    assert set(created) == {"id", "key", "prefix"} and created["key"].startswith("sgk_")
    identity = IdentityStore(site.db)
    acting = identity.identity_for_hash(key_hash(created["key"]))
    assert acting is not None and acting.project == "demo" and acting.role == "owner"
    listed = await _json(await client.get("/api/v1/projects/demo/api-keys"))
    assert listed == {
        "keys": [
            {
                "id": created["id"],
                "prefix": created["prefix"],
                "user": "owner@acme.test",
                "createdAt": listed["keys"][0]["createdAt"],
                "revokedAt": None,
            }
        ]
    }
    assert (
        created["key"]
        not in (await (await client.get("/api/v1/projects/demo/api-keys")).get_data()).decode()
    )
    response = await client.post(f"/api/v1/api-keys/{created['id']}/revoke", headers=headers)
    assert response.status_code == 200 and (await _json(response))["revokedAt"]
    assert identity.identity_for_hash(key_hash(created["key"])) is None


@pytest.mark.parametrize("email", ["viewer@acme.test", "member@acme.test"])
async def test_others_see_keys_but_cannot_change_them(site: Site, email: str) -> None:
    """Members and viewers list keys; creating, revoking and renaming are 403
    AUTHORIZATION_FAILED, and their pages have no controls."""
    owner_key = IdentityStore(site.db).create_key("demo", "owner@acme.test")
    client = site.client()
    csrf = await sign_in(client, email)
    headers = {"X-CSRF-Token": csrf}
    listed = await _json(await client.get("/api/v1/projects/demo/api-keys"))
    assert [k["id"] for k in listed["keys"]] == [owner_key.id]
    for response in (
        await client.post("/api/v1/projects/demo/api-keys", json={}, headers=headers),
        await client.post(f"/api/v1/api-keys/{owner_key.id}/revoke", headers=headers),
        await client.patch("/api/v1/projects/demo", json={"name": "x"}, headers=headers),
    ):
        assert response.status_code == 403
        assert (await _json(response))["error"]["code"] == "AUTHORIZATION_FAILED"
    page = (await (await client.get("/projects/demo/settings/api-keys")).get_data()).decode()
    assert owner_key.prefix in page and "Create key" not in page and ">Revoke<" not in page
    response = await client.post(
        "/projects/demo/settings/api-keys", form={"csrf_token": csrf_of(page.encode())}
    )
    assert response.status_code == 403


async def test_csrf_is_checked_before_the_role(site: Site) -> None:
    """A viewer's write without the token is 403 for the token, not for the role."""
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    response = await client.post("/api/v1/projects/demo/api-keys", json={})
    assert (await _json(response))["error"]["code"] == "CSRF_FAILED"


async def test_another_organisations_keys_are_not_found(site: Site) -> None:
    """Another organisation's project and keys are 404, even for an owner."""
    theirs = IdentityStore(site.db).create_key("secret", "boss@globex.test")
    client = site.client()
    csrf = await sign_in(client, "owner@acme.test")
    headers = {"X-CSRF-Token": csrf}
    assert (await client.get("/api/v1/projects/secret/api-keys")).status_code == 404
    response = await client.post(f"/api/v1/api-keys/{theirs.id}/revoke", headers=headers)
    assert response.status_code == 404
    assert (await _json(response))["error"]["message"] == f"no key {theirs.id}"
    assert IdentityStore(site.db).key(theirs.id).revoked_at is None
    response = await client.post("/api/v1/api-keys/nope/revoke", headers=headers)
    assert response.status_code == 404
    assert (await _json(response))["error"]["message"] == "no key nope"


async def test_the_key_page_shows_a_new_secret_once(site: Site) -> None:
    """Create key on the page shows the secret with a copy button; the next view does not."""
    client = site.client()
    csrf = await sign_in(client, "owner@acme.test")
    response = await client.post("/projects/demo/settings/api-keys", form={"csrf_token": csrf})
    page = (await response.get_data()).decode()
    created = IdentityStore(site.db).list_keys("demo")[0]
    secret = page.split('<code id="new-key">')[1].split("<")[0]
    assert secret.startswith(created.prefix) and 'data-copy="new-key"' in page
    again = (await (await client.get("/projects/demo/settings/api-keys")).get_data()).decode()
    assert secret not in again and created.prefix in again
    response = await client.post(
        f"/projects/demo/settings/api-keys/{created.id}/revoke", form={"csrf_token": csrf}
    )
    assert response.status_code == 303
    assert IdentityStore(site.db).key(created.id).revoked_at is not None


async def test_rename(site: Site) -> None:
    """Owners rename (the API and the form); the old name is gone, a taken name is 409,
    a bad one 400 with the reason next to the field."""
    IdentityStore(site.db).create_project("taken", "acme")
    client = site.client()
    csrf = await sign_in(client, "owner@acme.test")
    headers = {"X-CSRF-Token": csrf}
    response = await client.patch("/api/v1/projects/demo", json={"name": "demo-2"}, headers=headers)
    assert response.status_code == 200 and (await _json(response))["name"] == "demo-2"
    assert (await client.get("/api/v1/projects/demo/traces")).status_code == 404
    assert (await client.get("/api/v1/projects/demo-2/traces")).status_code == 200
    for body, status in (({"name": "taken"}, 409), ({"name": "no spaces"}, 400), ([], 400)):
        response = await client.patch("/api/v1/projects/demo-2", json=body, headers=headers)
        assert response.status_code == status
    response = await client.post(
        "/projects/demo-2/settings", form={"name": "bad name!", "csrf_token": csrf}
    )
    page = (await response.get_data()).decode()
    assert response.status_code == 400 and 'id="name-error"' in page
    response = await client.post(
        "/projects/demo-2/settings", form={"name": "demo", "csrf_token": csrf}
    )
    assert response.headers["Location"] == "/projects/demo/settings"


async def test_admins_manage_keys_and_the_name_like_owners(site: Site) -> None:
    """An admin creates and revokes a key (which acts as admin) and renames the project."""
    client = site.client()
    csrf = await sign_in(client, "admin@acme.test")
    headers = {"X-CSRF-Token": csrf}
    response = await client.post("/api/v1/projects/demo/api-keys", json={}, headers=headers)
    created = await _json(response)
    assert response.status_code == 201
    acting = IdentityStore(site.db).identity_for_hash(key_hash(created["key"]))
    assert acting is not None and acting.role == "admin"
    response = await client.post(f"/api/v1/api-keys/{created['id']}/revoke", headers=headers)
    assert response.status_code == 200
    response = await client.patch(
        "/api/v1/projects/demo", json={"name": "renamed"}, headers=headers
    )
    assert response.status_code == 200
