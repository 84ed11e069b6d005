"""The collector's part of the ingestion record: one record per authenticated request,
on a real Redis, whichever way the request ends."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson
import pytest
import redis

from collector.errors import GatewayError
from collector.ingestion_record import (
    MAX_PENDING,
    RECORDS_PER_CALL,
    Requester,
    RequestRecorder,
    record_keys,
)
from collector.redis_cluster import QueueLink
from collector.redis_link import Script
from dashboard.ingestion import ingestion_json
from service.settings import Settings
from spanqueue import heartbeat
from spanqueue.ingestion import (
    KEEP,
    LARGEST_RECORDED,
    RECORDS,
    RequestRecord,
    minute_field,
    reasons_of,
)
from spanqueue.ingestion_read import IngestionView, read_ingestion
from spanqueue.layout import minutes_key, requests_key
from tests.collector.conftest import ADMISSIONS, Tenant, make_app, sent
from tests.proto_json.spans import span
from tests.redis_server import RedisServer

TWO = orjson.dumps({"spans": [span(), span(spanId="1" * 16)]})
WAIT_S = 10.0


def view(tenant: Tenant, limit: int = 100) -> IngestionView:
    client = redis.Redis.from_url(tenant.redis_url)
    try:
        return read_ingestion(client, tenant.project_id, limit, int(time.time() * 1000))
    finally:
        client.close()


async def records(tenant: Tenant, count: int) -> tuple[RequestRecord, ...]:
    """The project's request records once there are `count` (those written later, by the
    collector's batches, come within its flush interval)."""
    deadline = time.monotonic() + WAIT_S
    while len(found := view(tenant).requests) < count and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return found


@pytest.mark.parametrize("admission", ADMISSIONS)
async def test_a_queued_request_is_recorded_with_its_counts(
    settings: Settings, tenant: Tenant, admission: str
) -> None:
    """A 200 that queues spans has its record (route, counts, bytes as received, the
    key's prefix, the rejected span's reason and then the field ignored) written with
    them, and neither the key nor the body is in it."""
    body = orjson.dumps({"spans": [span(), span(spanId="1" * 16, name="")], "meta": 1})
    arguments = sent(body, admission, tenant.auth())
    async with make_app(settings).test_app() as app:
        response = await app.test_client().post("/v1/spans", **arguments)
    assert response.status_code == 200
    (record,) = view(tenant).requests
    assert (record.route, record.status, record.code) == ("/v1/spans", 200, None)
    assert (record.accepted, record.rejected, record.ignored) == (1, 1, 1)
    assert record.body_bytes == len(arguments["data"])
    assert record.key_prefix == tenant.key[:12]
    assert record.reasons.startswith("span 1: INVALID_NAME")
    assert record.reasons.splitlines()[-1] == "ignored: meta"
    client = redis.Redis.from_url(tenant.redis_url)
    stored = client.xrange(requests_key(tenant.project_id))
    day = minutes_key(tenant.project_id, record.at_ms // 86_400_000)
    counts = client.hgetall(day)
    client.close()
    raw = b"".join(b"".join(k + v for k, v in fields.items()) for _, fields in stored)
    assert tenant.key.encode() not in raw and b"llm call" not in raw
    assert counts[minute_field(record.at_ms, "a").encode()] == b"1"
    assert counts[minute_field(record.at_ms, "r").encode()] == b"1"


async def test_a_request_with_nothing_to_queue_is_recorded(
    settings: Settings, tenant: Tenant
) -> None:
    """A 200 whose every span is rejected queues nothing and is still recorded."""
    body = orjson.dumps({"spans": [span(name="")]})
    async with make_app(settings).test_app() as app:
        client = app.test_client()
        response = await client.post("/v1/spans", **sent(body, "with-xadd", tenant.auth()))
        assert response.status_code == 200
        (record,) = await records(tenant, 1)
    assert (record.status, record.accepted, record.rejected) == (200, 0, 1)


@pytest.mark.parametrize("admission", ADMISSIONS)
async def test_a_rate_limited_request_is_recorded_once(
    settings: Settings, tenant: Tenant, admission: str
) -> None:
    """A 429 is recorded with its code, and no record says 200 for it."""
    app = make_app(settings, rate_limit_project_rps=1.0, rate_limit_ip_rps=0.0)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        statuses = [
            (await client.post("/v1/spans", **sent(TWO, admission, tenant.auth()))).status_code
            for _ in range(3)
        ]
        found = await records(tenant, 3)
    assert statuses == [200, 200, 429]
    assert sorted((r.status, r.code or "") for r in found) == [
        (200, ""),
        (200, ""),
        (429, "RATE_LIMIT_EXCEEDED"),
    ]
    (refusal,) = [r for r in found if r.status == 429]
    assert refusal.accepted == 0 and refusal.key_prefix == tenant.key[:12]


async def test_refusals_before_the_body_and_for_too_many_spans(
    settings: Settings, tenant: Tenant
) -> None:
    """A body over the limit announced in its headers is recorded (bytes as announced,
    never parsed: rejected null); one with too many spans counts them rejected."""
    app = make_app(settings, max_body_bytes=1000, max_spans_per_request=1)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        large = await client.post(
            "/v1/spans", data=b"x" * 10, headers=tenant.auth(**{"Content-Length": "5000"})
        )
        many = await client.post("/v1/spans", **sent(TWO, "with-xadd", tenant.auth()))
        found = await records(tenant, 2)
    assert (large.status_code, many.status_code) == (413, 503)
    by_code = {r.code: r for r in found}
    assert by_code["PAYLOAD_TOO_LARGE"].rejected is None
    assert by_code["PAYLOAD_TOO_LARGE"].body_bytes == 5000
    assert (by_code["TOO_MANY_SPANS"].rejected, by_code["TOO_MANY_SPANS"].accepted) == (2, 0)


async def test_a_length_past_64_bits_is_recorded_as_the_largest_it_writes(
    settings: Settings, tenant: Tenant
) -> None:
    """A Content-Length of 20 digits is a 413, recorded as the largest size the record
    gives, which the ingestion JSON can write; a record written larger reads so too."""
    app = make_app(settings)
    async with app.test_app() as test_app:
        huge = await test_app.test_client().post(
            "/v1/spans", data=b"x", headers=tenant.auth(**{"Content-Length": "9" * 20})
        )
        (record,) = await records(tenant, 1)
    assert huge.status_code == 413 and record.body_bytes == LARGEST_RECORDED
    written = iter(record.field_values())
    fields = {bytes(key): str(value).encode() for key, value in zip(written, written, strict=True)}
    fields[b"bytes"] = b"9" * 20
    assert RequestRecord.from_fields(fields).body_bytes == LARGEST_RECORDED
    assert orjson.loads(orjson.dumps(ingestion_json(view(tenant))))["requests"][0]["bytes"] == (
        LARGEST_RECORDED
    )


async def test_a_body_without_a_length_past_the_limit_records_more_than_it(
    settings: Settings, tenant: Tenant
) -> None:
    """A body sent in chunks (no Content-Length) that grows past the limit is refused
    with 413 (no body); its record's bytes say it was over, not 0."""
    async with make_app(settings, max_body_bytes=1000).test_app() as app:
        client = app.test_client()
        async with client.request("/v1/spans", method="POST", headers=tenant.auth()) as sending:
            for _ in range(3):
                await sending.send(b"x" * 600)
            await sending.send_complete()
            await sending.receive()
        assert sending.status_code == 413  # type: ignore[attr-defined]
        (found,) = await records(tenant, 1)
    assert (found.code, found.rejected) == ("PAYLOAD_TOO_LARGE", None)
    assert found.body_bytes > 1000


async def test_requests_without_a_valid_key_are_not_recorded(
    settings: Settings, tenant: Tenant
) -> None:
    """The record is the project's: a request it cannot be told to come from (no key, a
    wrong key, even with a refused body) leaves nothing, while one with the key does."""
    wrong = {"Authorization": "Bearer sgk_" + "x" * 43, "Content-Length": "5000"}
    async with make_app(settings, max_body_bytes=1000).test_app() as app:
        client = app.test_client()
        assert (await client.post("/v1/spans", data=TWO)).status_code == 401
        assert (await client.post("/v1/spans", data=b"x", headers=wrong)).status_code == 413
        await client.post("/v1/spans", **sent(TWO, "with-xadd", tenant.auth()))
        await asyncio.sleep(0.2)  # the collector's batches, had it kept any
        found = await records(tenant, 1)
    assert [r.status for r in found] == [200]


async def test_the_record_can_be_turned_off(settings: Settings, tenant: Tenant) -> None:
    """SPANGATE_INGESTION_RECORD=0: requests are queued and answered, nothing recorded."""
    body = orjson.dumps({"spans": [span(name="")]})
    async with make_app(settings, ingestion_record=False).test_app() as app:
        client = app.test_client()
        auth = tenant.auth()
        for arguments in (sent(TWO, "first", auth), sent(body, "with-xadd", auth)):
            assert (await client.post("/v1/spans", **arguments)).status_code == 200
        await asyncio.sleep(0.2)
    assert len(tenant.queued()) == 1
    assert view(tenant).requests == ()


async def test_the_requests_kept_are_capped(tenant: Tenant) -> None:
    """However many requests come, the record keeps about the last KEEP of a project
    (Redis trims whole nodes of 100 entries), and a reader is given the newest."""
    link = QueueLink(tenant.redis_url, 5.0, 1.0)
    script = Script.of(RECORDS)
    now = int(time.time() * 1000)
    try:
        for first in range(0, KEEP + 1000, 500):
            batch = [
                RequestRecord(now, "/v1/spans", 200, None, n, 0, 0, 10, "sgk_abcdefgh")
                for n in range(first, first + 500)
            ]
            args = [value for record in batch for value in record.field_values()]
            await link.evalsha(script, record_keys(tenant.project_id, now), args)
    finally:
        await link.close()
    client = redis.Redis.from_url(tenant.redis_url)
    kept = client.xlen(requests_key(tenant.project_id))
    client.close()
    assert KEEP <= kept <= KEEP + 100
    newest = view(tenant, limit=3).requests
    assert [r.accepted for r in newest] == [KEEP + 999, KEEP + 998, KEEP + 997]


async def test_a_reader_is_given_the_newest_requests_whatever_was_written_after_them(
    tenant: Tenant,
) -> None:
    """Records written after newer ones (a refusal's up to 50 ms late, a timeout's a
    minute after its `at`): `limit=N` is the N of newest `at`, exactly as a reading of
    everything would give, however many late ones came after."""
    link = QueueLink(tenant.redis_url, 5.0, 1.0)
    script = Script.of(RECORDS)
    now = int(time.time() * 1000)

    def made(ats: range, status: int) -> list[RequestRecord]:
        return [RequestRecord(at, "/v1/spans", status, None, 1, 0, 0, 10, "sgk_abcdefgh")
                for at in ats]  # fmt: skip

    written = made(range(now - 10_000, now - 9_500), 200) + made(
        range(now - 60_000, now - 58_700), 408
    )
    try:
        for first in range(0, len(written), 100):
            args = [
                value for record in written[first : first + 100] for value in record.field_values()
            ]
            await link.evalsha(script, record_keys(tenant.project_id, now), args)
    finally:
        await link.close()
    everything = sorted(written, key=lambda r: r.at_ms, reverse=True)
    for limit in (1, 10, 500, 1000):
        assert list(view(tenant, limit=limit).requests) == everything[:limit]


async def test_ready_asks_for_a_worker_when_told(settings: Settings, tmp_path: Path) -> None:
    """/health/ready?workers=1 is 503 while no worker beats and 200 once one does; plain
    /health/ready does not ask."""
    server = RedisServer(tmp_path / "own-redis").start()
    try:
        async with make_app(settings, redis_url=server.url).test_app() as app:
            client = app.test_client()
            plain = await client.get("/health/ready")
            silent = await client.get("/health/ready?workers=1")
            beat = heartbeat.Beat("w-1", "h", 1, int(time.time() * 1000), "running", 0, 0)
            heartbeat.beat(server.client(), beat)
            beating = await client.get("/health/ready?workers=1")
    finally:
        server.stop()
    assert plain.status_code == 200 and "workers" not in (await plain.get_json())["checks"]
    assert silent.status_code == 503
    assert (await silent.get_json())["checks"]["workers"] == "unavailable: NoWorkerAlive"
    assert beating.status_code == 200
    assert (await beating.get_json())["checks"]["workers"] == "ok"


async def test_records_read_newest_first_by_their_time(tenant: Tenant) -> None:
    """A refusal's record, written in a batch after a later request's, still reads in
    the order the requests came."""
    link = QueueLink(tenant.redis_url, 5.0, 1.0)
    now = int(time.time() * 1000)
    try:
        for at, status in ((now, 200), (now - 30, 429)):  # the later one written first
            one = RequestRecord(at, "/v1/spans", status, None, 0, None, 0, 1, "sgk_abcdefgh")
            keys = record_keys(tenant.project_id, at)
            await link.evalsha(Script.of(RECORDS), keys, list(one.field_values()))
    finally:
        await link.close()
    assert [r.status for r in view(tenant).requests] == [200, 429]


async def test_refusals_are_written_in_batches(tenant: Tenant, tmp_path: Path) -> None:
    """A flood of refused requests costs Redis one call per RECORDS_PER_CALL records of
    a project, not one a request, and past MAX_PENDING waiting they are dropped and
    counted rather than held."""
    server = RedisServer(tmp_path / "own-redis").start()
    link = QueueLink(server.url, 5.0, 1.0)
    dropped: list[int] = []
    recorder = RequestRecorder(link, dropped.append)
    who = Requester(tenant.project_id, "/v1/spans", "sgk_abcdefgh", int(time.time() * 1000))
    refusal = GatewayError(429, "RATE_LIMIT_EXCEEDED", "too many requests; slow down")
    try:
        await link.execute("SCRIPT", "LOAD", RECORDS)  # no NOSCRIPT among the calls
        server.client().config_resetstat()
        for _ in range(MAX_PENDING + 5):
            recorder.refused(who, 10, None, refusal)
        await recorder.close()
        stats = server.client().info("commandstats")
        kept = server.client().xlen(requests_key(tenant.project_id))
    finally:
        await link.close()
        server.stop()
    assert stats["cmdstat_evalsha"]["calls"] == MAX_PENDING // RECORDS_PER_CALL
    assert stats["cmdstat_xadd"]["calls"] == MAX_PENDING
    assert kept <= KEEP + 100 and dropped == [1] * 5


def test_a_reason_cut_to_fit_the_record_says_it_was_cut() -> None:
    """The record keeps the first three reasons, each at most 200 characters: one cut
    ends in "…" (an invalid kind's reason lists every kind, and read "tool_c" cut)."""
    long = "span 1: INVALID_KIND: kind must be one of " + ", ".join(["tool_call"] * 30)
    kept = reasons_of([long, "span 2: short", "span 3: x", "span 4: dropped"]).split("\n")
    assert kept[0] == long[:199] + "…" and len(kept[0]) == 200
    assert kept[1:] == ["span 2: short", "span 3: x"]
    assert reasons_of(["x" * 200]) == "x" * 200
