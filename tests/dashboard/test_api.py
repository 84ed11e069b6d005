"""/api/v1: the API-key gate to the letter, the order of checks, and the trace reads."""

from __future__ import annotations

import csv
import io

import orjson
import pytest

from storage.scores import NewScore, ScoreStore
from tests.dashboard.conftest import Site, sign_in, store
from tests.proto_json.spans import span

GATE = {"error": {"code": "UNAUTHORIZED", "message": "Authentication required"}}
KEY = "sgk_" + "a" * 43


def _trace(n: int, spans: int = 2, **root: object) -> list[dict[str, object]]:
    trace_id = f"{n + 1:032x}"
    first = {
        "traceId": trace_id,
        "spanId": f"{n + 1:015x}0",
        "name": f"run {n}",
        "startTime": f"2026-11-22T10:{n // 60:02d}:{n % 60:02d}Z",
        "endTime": f"2026-11-22T10:{n // 60:02d}:{n % 60:02d}.5Z",
        **root,
    }
    rest = [
        span(
            traceId=trace_id,
            spanId=f"{n + 1:015x}{s}",
            parentSpanId=first["spanId"],
            name=f"step {s}",
            kind="tool_call",
            startTime=first["startTime"],
        )
        for s in range(1, spans)
    ]
    return [span(**first), *rest]


@pytest.mark.parametrize("path", ["/api/v1/projects", "/api/v1/no/such/route", "/api/v1"])
@pytest.mark.parametrize("header", ["Authorization", "X-API-Key"])
@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
async def test_api_keys_are_refused_everywhere(
    site: Site, path: str, header: str, method: str
) -> None:
    """Any /api/v1 request with a key is 401 Authentication required, even signed in."""
    client = site.client()
    await sign_in(client, "owner@acme.test")
    value = f"Bearer {KEY}" if header == "Authorization" else KEY
    response = await client.open(path, method=method, headers={header: value})
    assert response.status_code == 401
    assert orjson.loads(await response.get_data()) == GATE


async def test_no_session_is_the_same_401(site: Site) -> None:
    """Without a session, known and unknown /api/v1 paths answer the same 401."""
    for path in ("/api/v1/projects", "/api/v1/projects/demo/traces", "/api/v1/nothing"):
        response = await site.client().get(path)
        assert response.status_code == 401 and orjson.loads(await response.get_data()) == GATE


async def test_writes_need_the_csrf_token_then_a_route(site: Site) -> None:
    """Signed in: a write without the token is 403; with it, deleting a trace or a
    session is 405 (nothing deletes them)."""
    store(site.db, site.demo, _trace(0))
    client = site.client()
    csrf = await sign_in(client, "owner@acme.test")
    path = f"/api/v1/projects/demo/traces/{1:032x}"
    assert (await client.delete(path)).status_code == 403
    assert (await client.delete(path, headers={"X-CSRF-Token": "wrong"})).status_code == 403
    assert (await client.delete(path, headers={"X-CSRF-Token": csrf})).status_code == 405
    sessions = "/api/v1/projects/demo/sessions/s1"
    assert (await client.delete(sessions, headers={"X-CSRF-Token": csrf})).status_code == 405


async def test_projects_of_the_users_organisation_only(site: Site) -> None:
    """A user lists only their organisation's projects; another's is 404, never 403."""
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    listed = orjson.loads(await (await client.get("/api/v1/projects")).get_data())
    assert [p["name"] for p in listed["projects"]] == ["demo"]
    assert set(listed["projects"][0]) == {"name", "createdAt"}
    for path in ("/api/v1/projects/secret/traces", "/api/v1/projects/nothing/traces"):
        response = await client.get(path)
        assert response.status_code == 404
        assert orjson.loads(await response.get_data())["error"]["code"] == "NOT_FOUND"
    assert (await client.get("/projects/secret/traces")).status_code == 404


async def test_list_newest_first_with_its_members(site: Site) -> None:
    """The list: newest first, with the contract's members and values."""
    for n in range(3):
        store(site.db, site.demo, _trace(n, spans=n + 1, status="error" if n == 1 else "ok"))
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    body = orjson.loads(await (await client.get("/api/v1/projects/demo/traces")).get_data())
    assert body["next"] is None
    assert [t["rootName"] for t in body["traces"]] == ["run 2", "run 1", "run 0"]
    first = body["traces"][0]
    assert first == {
        "traceId": f"{3:032x}",
        "rootName": "run 2",
        "startTimeUnixNano": first["startTimeUnixNano"],
        "durationMs": 500.0,
        "spanCount": 3,
        "errorCount": 0,
        "sessionId": None,
        "inputTokens": None,
        "outputTokens": None,
        "totalTokens": None,
        "costUsd": None,
        "models": [],
        "llmCalls": 0,
        "userId": None,
        "input": None,
        "output": None,
    }
    assert body["traces"][1]["errorCount"] == 1


async def test_filters(site: Site) -> None:
    """q (root name, any case), status=error and session narrow the list; bad ones are 400."""
    store(site.db, site.demo, _trace(0, name="Plan trip"))
    store(site.db, site.demo, _trace(1, name="book hotel", status="error"))
    store(site.db, site.demo, _trace(2, name="plan_b", attributes={"session.id": "s-1"}))
    client = site.client()
    await sign_in(client, "viewer@acme.test")

    async def names(query: str) -> list[str]:
        response = await client.get(f"/api/v1/projects/demo/traces?{query}")
        return [t["rootName"] for t in orjson.loads(await response.get_data())["traces"]]

    assert await names("q=PLAN") == ["plan_b", "Plan trip"]
    assert await names("q=n_") == ["plan_b"]  # _ is a character, not a wildcard
    assert await names("status=error") == ["book hotel"]
    assert await names("session=s-1") == ["plan_b"]
    assert await names("q=plan&session=s-1") == ["plan_b"]
    for bad in ("status=ok", "limit=0", "limit=x", "limit=%EF%BC%95", "cursor=nope"):
        response = await client.get(f"/api/v1/projects/demo/traces?{bad}")
        assert response.status_code == 400
        assert orjson.loads(await response.get_data())["error"]["code"] == "VALIDATION_ERROR"


async def test_cursor_never_skips_or_repeats_while_spans_arrive(site: Site) -> None:
    """Paging by cursor while new traces arrive, and earlier spans join listed traces,
    returns every trace that was there at the start exactly once."""
    for n in range(0, 20, 2):
        store(site.db, site.demo, _trace(n))
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    seen: list[str] = []
    cursor = ""
    arriving = iter(range(1, 40, 2))
    while True:
        response = await client.get(f"/api/v1/projects/demo/traces?limit=3&cursor={cursor}")
        body = orjson.loads(await response.get_data())
        seen += [t["traceId"] for t in body["traces"]]
        n = next(arriving)
        store(site.db, site.demo, _trace(n))  # a new trace, older and newer than the page
        for listed in body["traces"]:  # a root that starts earlier than anything stored
            store(
                site.db,
                site.demo,
                [
                    span(
                        traceId=listed["traceId"],
                        spanId="f" * 16,
                        name="early",
                        startTime="2026-11-21T00:00:00Z",
                    )
                ],
            )
        if body["next"] is None:
            break
        cursor = body["next"]
    originals = {f"{n + 1:032x}" for n in range(0, 20, 2)}
    assert len(seen) == len(set(seen))
    assert originals <= set(seen)


async def test_trace_detail_with_scores(site: Site) -> None:
    """A trace: its stored spans as `traces show --json` gives them, and its scores."""
    store(site.db, site.demo, _trace(0, spans=3))
    with site.db.transaction() as tx:
        tx.execute(
            "INSERT INTO api_keys (id, key_hash, prefix, project_id, user_id, created_at) "
            "SELECT 'key_1', 'h', 'sgk_', ?, id, 'now' FROM users WHERE email = ?",
            (site.demo.id, "owner@acme.test"),
        )
    ScoreStore(site.db).create(
        site.demo.id, "key_1", NewScore(f"{1:032x}", None, "accuracy", 0.75, "ok", "api")
    )
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    body = orjson.loads(
        await (await client.get(f"/api/v1/projects/demo/traces/{1:032X}")).get_data()
    )
    assert body["traceId"] == f"{1:032x}" and len(body["spans"]) == 3
    assert body["spans"][0]["name"] == "run 0" and body["spans"][1]["kind"] == "tool_call"
    assert [(s["name"], s["score"], s["source"]) for s in body["scores"]] == [
        ("accuracy", 0.75, "api")
    ]
    assert set(body["scores"][0]) == {
        "id",
        "name",
        "score",
        "comment",
        "source",
        "spanId",
        "createdAt",
    }
    assert (await client.get(f"/api/v1/projects/demo/traces/{9:032x}")).status_code == 404
    assert (await client.get("/api/v1/projects/demo/traces/zz")).status_code == 404


async def test_export(site: Site) -> None:
    """Export: JSON and CSV of the newest traces, honouring the filters; over 100 is 400."""
    for n in range(4):
        store(site.db, site.demo, _trace(n, status="error" if n % 2 else "ok"))
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    base = "/api/v1/projects/demo/traces/export"
    response = await client.get(f"{base}?format=json&limit=2")
    exported = orjson.loads(await response.get_data())
    assert [t["traceId"] for t in exported] == [f"{4:032x}", f"{3:032x}"]
    assert all(len(t["spans"]) == 2 for t in exported)
    assert "attachment" in response.headers["Content-Disposition"]
    response = await client.get(f"{base}?format=csv&status=error")
    rows = list(csv.DictReader(io.StringIO((await response.get_data()).decode())))
    assert response.content_type.startswith("text/csv")
    assert {r["traceId"] for r in rows} == {f"{2:032x}", f"{4:032x}"} and len(rows) == 4
    assert "error" in {r["status"] for r in rows} and "2" not in {r["status"] for r in rows}
    assert all(isinstance(orjson.loads(r["attributes"]), dict) for r in rows)
    for bad in (
        "limit=101",
        "format=xml",
        "limit=0",
        "format=json&format=xml",
        "format=csv&format=json",
    ):
        response = await client.get(f"{base}?{bad}")
        assert response.status_code == 400
        assert orjson.loads(await response.get_data())["error"]["code"] == "VALIDATION_ERROR"
    assert (await client.get(f"{base}?limit=100")).status_code == 200


FORMULAS = ('=HYPERLINK("http://evil.example/s","s")', "+1+2", "-3-4", "@SUM(1)", "\tx", "\rx")


async def test_csv_export_neutralises_formulas(site: Site) -> None:
    """A span name or session id that a spreadsheet would run as a formula is written
    to the CSV export behind a `'`; the JSON export keeps the text exact."""
    spans = [
        span(
            traceId="f" * 32,
            spanId=f"{n + 1:016x}",
            parentSpanId=None if n == 0 else "1".zfill(16),
            name=formula,
            startTime="2026-11-22T11:00:00Z",
            attributes={"session.id": FORMULAS[0]},
        )
        for n, formula in enumerate(FORMULAS)
    ]
    store(site.db, site.demo, spans)
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    base = "/api/v1/projects/demo/traces/export"
    text = (await (await client.get(f"{base}?format=csv")).get_data()).decode()
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert sorted(r["name"] for r in rows) == sorted("'" + f for f in FORMULAS)
    assert {r["sessionId"] for r in rows} == {"'" + FORMULAS[0]}
    exported = orjson.loads(await (await client.get(f"{base}?format=json")).get_data())
    assert sorted(s["name"] for s in exported[0]["spans"]) == sorted(FORMULAS)
    assert {s["sessionId"] for s in exported[0]["spans"]} == {FORMULAS[0]}
