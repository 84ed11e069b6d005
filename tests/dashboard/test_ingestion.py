"""The ingestion page and `GET /api/v1/projects/{p}/ingestion`, on a real Redis."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from dashboard.ingestion_chart import render
from service.settings import Settings
from spanqueue.ingestion import RECORDS, RefusedSpan, RequestRecord, day_of, lag_sample
from spanqueue.ingestion_read import MinuteCounts
from spanqueue.layout import dead_letter_key, depth_key, lag_key, minutes_key, refused_key
from storage.database import Database
from storage.identity import Project
from tests.dashboard.conftest import Site, sign_in

REQUEST_KEYS = {
    "at", "route", "status", "code", "accepted", "rejected", "ignored", "bytes", "keyPrefix",
}  # fmt: skip


@pytest.fixture
def settings(database: Database, tmp_path: Path, redis_url: str) -> Settings:
    """The dashboard's settings, with the test Redis as its queue store."""
    return Settings(database_url=database.url, data_dir=tmp_path / "data", redis_url=redis_url)


@pytest.fixture
def queue(redis_url: str, site: Site) -> Iterator[redis.Redis]:
    """The test Redis; the projects' keys removed afterwards."""
    client = redis.Redis.from_url(redis_url)
    yield client
    for project in (site.demo, site.secret):
        for key in client.scan_iter(match=f"spangate:{{{project.id}}}:*"):
            client.delete(key)
    client.close()


def record(client: redis.Redis, project: Project, *records: RequestRecord) -> None:
    """Write request records as the collector does (its script)."""
    at = records[0].at_ms
    keys = [f"spangate:{{{project.id}}}:ingest:requests", minutes_key(project.id, day_of(at))]
    args = [value for one in records for value in one.field_values()]
    client.eval(RECORDS, 2, *keys, *args)  # type: ignore[no-untyped-call]


def seed(client: redis.Redis, project: Project, now: int) -> None:
    """Two requests (a 200 with a rejected span, then a 429), a refused span, a dead
    letter, a queue depth and two lags."""
    record(
        client,
        project,
        RequestRecord(now - 2000, "/v1/spans", 200, None, 3, 1, 2, 512, "sgk_abcdefgh",
                      "span 1: INVALID_NAME: name must be a non-empty string"),
        RequestRecord(now - 1000, "/v1/traces", 429, "RATE_LIMIT_EXCEEDED", 0, None, 0, 90,
                      "sgk_abcdefgh", "too many requests; slow down"),
    )  # fmt: skip
    refusal = RefusedSpan(now - 500, "ab" * 16, "cd" * 8, "sent again with other content")
    client.xadd(refused_key(project.id), refusal.fields())  # type: ignore[arg-type]
    client.xadd(dead_letter_key(project.id), {"reason": "undecodable"})
    client.set(depth_key(project.id), 42)
    client.lpush(lag_key(project.id), lag_sample(now, now - 120), lag_sample(now, now - 80))


async def test_the_json_is_the_contract(site: Site, queue: redis.Redis) -> None:
    """Every role reads the record as the contract names it, newest first."""
    now = int(time.time() * 1000)
    seed(queue, site.demo, now)
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    response = await client.get("/api/v1/projects/demo/ingestion")
    assert response.status_code == 200
    body = await response.get_json()
    assert set(body) == {"requests", "refused", "deadLetters", "queueDepth", "lagMs"}
    newest, older = body["requests"]
    assert set(newest) == set(older) == REQUEST_KEYS
    assert newest["status"] == 429 and newest["code"] == "RATE_LIMIT_EXCEEDED"
    assert newest["rejected"] is None and newest["route"] == "/v1/traces"
    assert older == {
        "at": older["at"],
        "route": "/v1/spans",
        "status": 200,
        "code": None,
        "accepted": 3,
        "rejected": 1,
        "ignored": 2,
        "bytes": 512,
        "keyPrefix": "sgk_abcdefgh",
    }
    assert older["at"].endswith("Z") and older["at"] < newest["at"]
    assert body["refused"] == [
        {
            "at": body["refused"][0]["at"],
            "traceId": "ab" * 16,
            "spanId": "cd" * 8,
            "reason": "sent again with other content",
        }
    ]
    assert (body["deadLetters"], body["queueDepth"]) == (1, 42)
    assert body["lagMs"] == {"p50": 80, "p95": 120}


async def test_limit_caps_both_lists_and_is_checked(site: Site, queue: redis.Redis) -> None:
    """`limit` caps requests and refused spans; outside 1-1000 it is 400."""
    now = int(time.time() * 1000)
    seed(queue, site.demo, now)
    client = site.client()
    await sign_in(client, "member@acme.test")
    body = await (await client.get("/api/v1/projects/demo/ingestion?limit=1")).get_json()
    assert [r["status"] for r in body["requests"]] == [429] and len(body["refused"]) == 1
    for bad in ("0", "1001", "x"):
        answer = await client.get(f"/api/v1/projects/demo/ingestion?limit={bad}")
        assert answer.status_code == 400
        assert (await answer.get_json())["error"]["code"] == "VALIDATION_ERROR"


async def test_problems_only_reads_past_the_requests_that_went_well(
    site: Site, queue: redis.Redis
) -> None:
    """`problems=1` lists only the requests refused or with spans rejected, newest
    first, however many that went well came after them (the page and the JSON); any
    other value is a 400."""
    now = int(time.time() * 1000)
    seed(queue, site.demo, now - 60_000)  # a 200 with a rejected span, then a 429
    fine = [
        RequestRecord(now - 30_000 + n, "/v1/traces", 200, None, 5, 0, 0, 100, "sgk_abcdefgh")
        for n in range(3000)
    ]
    for at in range(0, len(fine), 500):
        record(queue, site.demo, *fine[at : at + 500])
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    api = "/api/v1/projects/demo/ingestion"
    listed = (await (await client.get(f"{api}?limit=10")).get_json())["requests"]
    assert {r["status"] for r in listed} == {200} and len(listed) == 10
    wrong = (await (await client.get(f"{api}?problems=1")).get_json())["requests"]
    assert [(r["status"], r["rejected"]) for r in wrong] == [(429, None), (200, 1)]
    wrong = (await (await client.get(f"{api}?problems=1&limit=1")).get_json())["requests"]
    assert [r["status"] for r in wrong] == [429]
    page = (await (await client.get("/projects/demo/ingestion?problems=1")).get_data()).decode()
    assert "The latest 2 requests refused or with spans rejected" in page
    assert 'href="?window=hour">all requests</a>' in page
    answer = await client.get(f"{api}?problems=yes")
    assert answer.status_code == 400
    assert (await answer.get_json())["error"]["message"] == "problems must be 1 or 0"


async def test_an_empty_record_and_another_organisation(site: Site, queue: redis.Redis) -> None:
    """A project with nothing recorded answers empty lists and null lags; another
    organisation's project is 404; an API key is 401."""
    client = site.client()
    await sign_in(client, "owner@acme.test")
    body = await (await client.get("/api/v1/projects/demo/ingestion")).get_json()
    assert body == {
        "requests": [],
        "refused": [],
        "deadLetters": 0,
        "queueDepth": 0,
        "lagMs": {"p50": None, "p95": None},
    }
    assert (await client.get("/api/v1/projects/secret/ingestion")).status_code == 404
    assert (await client.get("/projects/secret/ingestion")).status_code == 404
    keyed = await client.get(
        "/api/v1/projects/demo/ingestion", headers={"Authorization": "Bearer sgk_x"}
    )
    assert keyed.status_code == 401


async def test_the_page_lists_and_charts_the_record(site: Site, queue: redis.Redis) -> None:
    """The page, linked from the project's navigation, shows the requests with their
    reasons, the refused span, the summary and a chart of the minute's spans."""
    now = int(time.time() * 1000)
    seed(queue, site.demo, now)
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    traces = (await (await client.get("/projects/demo/traces")).get_data()).decode()
    assert 'href="/projects/demo/ingestion"' in traces
    page = (await (await client.get("/projects/demo/ingestion")).get_data()).decode()
    assert "RATE_LIMIT_EXCEEDED" in page and "span 1: INVALID_NAME" in page
    assert "ab" * 16 in page and "<dd>42</dd>" in page
    assert "p50 80 ms, p95 120 ms" in page
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="ingestion-chart"' in page
    assert "3 accepted, 1 rejected, 0 refused" in page  # the chart's description
    day = (await client.get("/projects/demo/ingestion?window=day")).status_code
    assert day == 200
    assert (await client.get("/projects/demo/ingestion?window=week")).status_code == 400


async def test_without_a_queue_store_the_page_says_so(
    database: Database, tmp_path: Path, site: Site
) -> None:
    """A dashboard with no queue store configured answers 503 QUEUE_UNAVAILABLE."""
    from dashboard.app import create_app

    app = create_app(Settings(database_url=database.url, data_dir=tmp_path / "other"))
    async with app.test_app():
        client = app.test_client()
        await sign_in(client, "viewer@acme.test")
        answer = await client.get("/api/v1/projects/demo/ingestion")
    assert answer.status_code == 503
    assert (await answer.get_json())["error"]["code"] == "QUEUE_UNAVAILABLE"


def test_the_chart_stacks_each_minute() -> None:
    """Each minute with spans is a stack of its accepted, rejected and refused bars, the
    tallest minute as high as the plot; empty minutes draw nothing."""
    minutes = (
        MinuteCounts(0, 0, 0, 0),
        MinuteCounts(60_000, 6, 2, 0),
        MinuteCounts(120_000, 1, 0, 3),
    )
    svg = str(render(minutes))
    assert svg.count('class="accepted"') == 2
    assert svg.count('class="rejected"') == 1 and svg.count('class="refused"') == 1
    assert "7 accepted, 2 rejected, 3 refused" in svg
    assert ">8</text>" in svg  # the y axis's top: the busiest minute
