"""POST /v1/scores: the body rules, the header precedence, roles, limits, the gates."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from quart.typing import TestClientProtocol as Client

from scores_sidecar.app import create_app
from service.settings import Settings
from spangate.embedded_redis import free_port
from storage.database import Database
from storage.identity import IdentityStore
from storage.schema import migrate
from storage.scores import ScoreStore
from tests.processes import spawn, wait_healthy

TRACE = "5b8efff798038103d269b633813fc60c"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'db.db'}")


@pytest.fixture
def store(settings: Settings) -> IdentityStore:
    db = Database(settings.database_url)
    migrate(db)
    store = IdentityStore(db)
    store.add_user("owner@x.io", "owner")
    return store


@pytest.fixture
def key(store: IdentityStore) -> str:
    return store.create_key("proj", "owner@x.io").key


@pytest.fixture
async def client(settings: Settings, store: IdentityStore) -> AsyncIterator[Client]:
    async with create_app(settings).test_app() as app:
        yield app.test_client()


async def post(client: Client, body: Any, **headers: str) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    response = await client.post("/v1/scores", data=data, headers=headers)
    return response.status_code, await response.get_json()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_minimal_score_gets_defaults_and_is_stored(
    client: Client, key: str, store: IdentityStore
) -> None:
    """A trace id and a score are enough; defaults are filled in and the score is stored."""
    status, body = await post(client, {"trace_id": TRACE, "score": 0.5}, **bearer(key))
    assert status == 201
    assert {k: body[k] for k in ("trace_id", "span_id", "name", "score", "comment", "source")} == {
        "trace_id": TRACE,
        "span_id": None,
        "name": "default",
        "score": 0.5,
        "comment": None,
        "source": "api",
    }
    assert body["id"].startswith("scr_") and body["created_at"].endswith("Z")
    project = store.project("proj")
    assert body["project_id"] == project.id
    [stored] = ScoreStore(store.db).for_trace(project.id, TRACE)
    assert stored.id == body["id"]


async def test_every_field(client: Client, key: str) -> None:
    """All fields are taken as sent."""
    sent = {
        "trace_id": TRACE,
        "span_id": "eee19b7ec3c1b174",
        "name": "helpfulness",
        "score": 1,
        "comment": "great",
        "source": "eval",
    }
    status, body = await post(client, sent, **bearer(key))
    assert status == 201 and {k: body[k] for k in sent} == {**sent, "score": 1.0}


@pytest.mark.parametrize("score", [0, 0.0, -0.0, 1, 1.0, 0.999999])
async def test_score_bounds_are_inclusive(client: Client, key: str, score: float) -> None:
    """0.0 and 1.0 are valid scores; -0.0 is taken as 0.0."""
    status, body = await post(client, {"trace_id": TRACE, "score": score}, **bearer(key))
    assert status == 201
    assert str(body["score"]) == str(float(score) + 0.0)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"score": 0.5}, "trace_id"),
        ({"trace_id": TRACE.upper(), "score": 0.5}, "trace_id"),
        ({"trace_id": TRACE[:31], "score": 0.5}, "trace_id"),
        ({"trace_id": 5, "score": 0.5}, "trace_id"),
        ({"trace_id": TRACE, "span_id": "EEE19B7EC3C1B174", "score": 0.5}, "span_id"),
        ({"trace_id": TRACE, "span_id": 1, "score": 0.5}, "span_id"),
        ({"trace_id": TRACE}, "score"),
        ({"trace_id": TRACE, "score": -0.01}, "score"),
        ({"trace_id": TRACE, "score": 1.01}, "score"),
        ({"trace_id": TRACE, "score": True}, "score"),
        ({"trace_id": TRACE, "score": "0.5"}, "score"),
        ({"trace_id": TRACE, "score": None}, "score"),
        ({"trace_id": TRACE, "score": 0.5, "name": ""}, "name"),
        ({"trace_id": TRACE, "score": 0.5, "name": 3}, "name"),
        ({"trace_id": TRACE, "score": 0.5, "source": "human"}, "source"),
        ({"trace_id": TRACE, "score": 0.5, "comment": ["x"]}, "comment"),
        ({"trace_id": TRACE, "score": 0.5, "name": "a\x00b"}, "name"),  # no store holds it
        ({"trace_id": TRACE, "score": 0.5, "comment": "\x00"}, "comment"),
    ],
)
async def test_invalid_fields_are_422_with_details(
    client: Client, key: str, body: dict[str, Any], field: str
) -> None:
    """Each invalid field is a 422 VALIDATION_ERROR that names the field in details."""
    status, answer = await post(client, body, **bearer(key))
    assert status == 422 and answer["error"]["code"] == "VALIDATION_ERROR"
    assert field in answer["error"]["details"]["fields"]


async def test_every_bad_field_is_reported_at_once(client: Client, key: str) -> None:
    """Details list all failing fields, not only the first."""
    _, answer = await post(client, {"trace_id": "x", "score": 2, "source": "?"}, **bearer(key))
    assert set(answer["error"]["details"]["fields"]) == {"trace_id", "score", "source"}


@pytest.mark.parametrize("data", [b"{", b"[]", b'"x"', b"", b'{"trace_id": NaN}'])
async def test_non_json_or_non_object_body_is_422(client: Client, key: str, data: bytes) -> None:
    """A body that is not a JSON object is 422 too (never 400 or 500)."""
    status, answer = await post(client, data, **bearer(key))
    assert status == 422 and "body" in answer["error"]["details"]["fields"]


async def test_header_precedence(client: Client, key: str) -> None:
    """Authorization first; X-API-Key only when Authorization is absent."""
    body = {"trace_id": TRACE, "score": 0.1}
    assert (await post(client, body))[0] == 401
    assert (await post(client, body, **{"X-API-Key": key}))[0] == 201
    assert (await post(client, body, Authorization="Basic x", **{"X-API-Key": key}))[0] == 401
    assert (await post(client, body, Authorization="", **{"X-API-Key": key}))[0] == 401
    assert (await post(client, body, Authorization="Bearer sgk_" + "A" * 43, **{"X-API-Key": key}))[
        0
    ] == 401
    assert (await post(client, body, **bearer(key), **{"X-API-Key": "junk"}))[0] == 201
    status, answer = await post(client, body, **{"X-API-Key": "sgk_" + "B" * 43})
    assert status == 401 and answer["error"]["code"] == "UNAUTHORIZED"


async def test_roles(settings: Settings, store: IdentityStore, key: str) -> None:
    """Member and above create scores; viewer gets 403, also after a creator's demotion."""
    store.add_user("admin@x.io", "admin")
    member_key = store.create_key("proj", "admin@x.io").key
    store.set_role("admin@x.io", "member")
    body = {"trace_id": TRACE, "score": 0.3}
    async with create_app(settings).test_app() as app:
        assert (await post(app.test_client(), body, **bearer(member_key)))[0] == 201
    store.set_role("admin@x.io", "viewer")
    async with create_app(settings).test_app() as app:
        status, answer = await post(app.test_client(), body, **bearer(member_key))
    assert status == 403 and answer["error"]["code"] == "AUTHORIZATION_FAILED"
    assert answer["error"]["details"] == {"role": "viewer", "required": "member"}


async def test_content_length_rules(client: Client, key: str) -> None:
    """A non-integer Content-Length is 400; one over 10 MB is 413 before reading."""
    body = orjson.dumps({"trace_id": TRACE, "score": 0.5})
    bad = await client.post(
        "/v1/scores", data=body, headers={**bearer(key), "Content-Length": "12abc"}
    )
    assert bad.status_code == 400
    assert (await bad.get_json())["error"]["code"] == "INVALID_CONTENT_LENGTH"
    big = await client.post(
        "/v1/scores",
        data=body,
        headers={**bearer(key), "Content-Length": str(10 * 1024 * 1024 + 1)},
    )
    assert big.status_code == 413
    assert (await big.get_json())["error"]["code"] == "REQUEST_TOO_LARGE"


async def test_body_over_limit_while_reading_is_413(client: Client, key: str) -> None:
    """A body that turns out larger than 10 MB is 413 REQUEST_TOO_LARGE."""
    response = await client.post(
        "/v1/scores", data=b" " * (10 * 1024 * 1024 + 10), headers=bearer(key)
    )
    assert response.status_code == 413
    assert (await response.get_json())["error"]["code"] == "REQUEST_TOO_LARGE"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/fixes/active"),
        ("GET", "/v1/management/projects"),
        ("POST", "/v1/management/api-keys"),
    ],
)
async def test_gated_routes_refuse_api_keys(
    client: Client, key: str, method: str, path: str
) -> None:
    """Gated routes answer 401 'Authentication required' to API keys, in the scores form."""
    response = await client.open(path, method=method, headers=bearer(key))
    answer = await response.get_json()
    assert response.status_code == 401
    assert answer["error"]["code"] == "UNAUTHORIZED"
    assert answer["error"]["message"] == "Authentication required"
    assert isinstance(answer["error"]["details"], dict)


async def test_no_listing_route(client: Client, key: str) -> None:
    """There is no route that lists scores: GET /v1/scores is 405, Allow: POST."""
    response = await client.get("/v1/scores", headers=bearer(key))
    assert response.status_code == 405 and "POST" in response.headers["Allow"]
    assert set((await response.get_json())["error"]) == {"code", "message", "details"}


async def test_health_routes(client: Client) -> None:
    """Health routes answer without authentication."""
    for path in ("/health", "/health/live", "/health/ready"):
        assert (await client.get(path)).status_code == 200


async def test_store_unreachable_is_500_and_not_ready(tmp_path: Path, key: str) -> None:
    """With the relational store gone: 500 INTERNAL_ERROR for scores, 503 for readiness."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    settings = Settings(data_dir=tmp_path, database_url=f"sqlite:///{blocker / 'x.db'}")
    async with create_app(settings).test_app() as app:
        client = app.test_client()
        status, answer = await post(client, {"trace_id": TRACE, "score": 0.5}, **bearer(key))
        ready = await client.get("/health/ready")
    assert status == 500 and answer["error"]["code"] == "INTERNAL_ERROR"
    assert ready.status_code == 503


def test_a_stalled_body_is_408_within_the_body_timeout(
    settings: Settings, key: str, tmp_path: Path
) -> None:
    """`spangate sidecar` as a real process: a body that stops arriving is answered 408
    REQUEST_TIMEOUT once SPANGATE_BODY_TIMEOUT_S has passed, in the API's error form,
    and the connection is let go."""
    port = free_port()
    env = {
        "SPANGATE_DATABASE_URL": settings.database_url,
        "SPANGATE_API_PORT": str(port),
        "SPANGATE_BODY_TIMEOUT_S": "1",
    }
    process = spawn(["sidecar"], env, tmp_path)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health", process)
        head = (
            f"POST /v1/scores HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
            began = time.monotonic()
            sock.sendall(head + b'{"trace_id"')
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
                if b"\r\n\r\n" in reply and reply.rstrip().endswith(b"}"):
                    break
        assert time.monotonic() - began < 10
        assert reply.startswith(b"HTTP/1.1 408"), reply
        error = orjson.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]
        assert (error["code"], error["details"]) == ("REQUEST_TIMEOUT", {})
    finally:
        process.terminate()
        process.communicate(timeout=30)
