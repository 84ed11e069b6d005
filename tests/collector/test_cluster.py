"""The gateway and the worker on a real Redis Cluster: three masters with a replica
each, started by the test (tests/redis_cluster.py). Every command a request or the
worker sends goes to one slot: a CROSSSLOT error would fail these tests."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from quart import Quart
from redis.crc import key_slot

import proto_json
from collector.app import create_app
from service.settings import Settings
from spangate.embedded_redis import free_port
from spanqueue.connect import queue_client
from spanqueue.consumer import POLL_STREAMS
from spanqueue.ingestion_read import read_ingestion
from spanqueue.layout import (
    GROUP,
    STREAMS_KEY,
    QueuedRequest,
    dead_letter_key,
    rate_key,
    stream_key,
)
from storage.database import Database
from storage.identity import IdentityStore
from storage.schema import migrate
from storage.spans import SpanStore
from tests.collector.conftest import ADMISSIONS, sent
from tests.processes import spawn, wait_healthy
from tests.proto_json.spans import span
from tests.redis_cluster import RedisClusterServers
from worker.loop import Worker

EXAMPLES = Path(__file__).parents[2] / "examples"
#: Each ingest route with an example body for it.
ROUTES = (
    ("/v1/spans", "spans.json", "application/json"),
    ("/v1/spans/batch", "batch.ndjson", "application/x-ndjson"),
    ("/v1/traces", "traces.json", "application/json"),
    ("/v1/otlp/v1/traces", "otlp_agent.json", "application/json"),
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterServers]:
    servers = RedisClusterServers(tmp_path_factory.mktemp("cluster")).start()
    yield servers
    servers.stop()


@dataclasses.dataclass
class Projects:
    settings: Settings
    keys: dict[str, str]  # project id -> its key

    def auth(self, project_id: str, **headers: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[project_id]}", **headers}


def _projects(tmp_path: Path, cluster: RedisClusterServers, count: int) -> Projects:
    """`count` projects with a key each, on a fresh SQLite file, projects spread over the
    cluster's masters."""
    settings = Settings(
        data_dir=tmp_path,
        redis_url=cluster.url,
        database_url=f"sqlite:///{tmp_path / 'spangate.db'}",
    )
    db = Database(settings.database_url)
    migrate(db)
    identity = IdentityStore(db)
    identity.add_user("owner@x.io", "owner")
    keys: dict[str, str] = {}
    n = 0
    while len(keys) < count:
        created = identity.create_key(f"project-{n}", "owner@x.io")
        n += 1
        project = identity.project(created.project).id
        masters = {cluster.master_of(stream_key(p)).port for p in [*keys, project]}
        # ids are random: the last place goes to a project on another master, if needed
        if len(keys) < count - 1 or len(masters) > 1 or count == 1:
            keys[project] = created.key
    db.close()
    return Projects(settings, keys)


def _drain(projects: Projects) -> dict[str, int]:
    """Run a worker over the cluster until every stream is empty; spans stored per
    project."""
    db = Database(projects.settings.database_url)
    try:
        client = queue_client(str(projects.settings.redis_url), socket_timeout=10)
        Worker(client, SpanStore(db), 60, block_ms=50).run(burst=True)
        assert all(client.xlen(stream_key(project)) == 0 for project in projects.keys)
        client.close()
        return {project: SpanStore(db).count(project) for project in projects.keys}
    finally:
        db.close()


async def test_every_route_queues_on_the_cluster_and_the_worker_stores_it(
    tmp_path: Path, cluster: RedisClusterServers
) -> None:
    projects = _projects(tmp_path, cluster, 6)
    masters = {cluster.master_of(stream_key(project)).port for project in projects.keys}
    assert len(masters) > 1, "the projects should spread over several masters"
    app = create_app(projects.settings)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        for project in projects.keys:
            for route, example, content_type in ROUTES:
                response = await client.post(
                    route,
                    data=(EXAMPLES / example).read_bytes(),
                    headers=projects.auth(project, **{"Content-Type": content_type}),
                )
                assert response.status_code == 200, await response.get_data()
                assert _accepted(await response.get_json(), (EXAMPLES / example).read_bytes())
        for path in ("/health/ready", "/health/ingest"):
            health = await client.get(path)
            assert health.status_code == 200, await health.get_data()
        metrics = (await (await client.get("/metrics")).get_data()).decode()
        assert "spangate_redis_node_errors_total" in metrics
    # the examples are one trace's four spans in each format: stored once
    assert _drain(projects) == dict.fromkeys(projects.keys, 4)


def _accepted(answer: dict[str, Any], body: bytes) -> int:
    """Spans a route's answer says it accepted (OTLP's: those of the body, less those it
    rejected)."""
    for field in ("accepted", "spansAccepted"):
        if field in answer:
            return int(answer[field])
    request = orjson.loads(body)
    spans = sum(
        len(scope["spans"])
        for resource in request["resourceSpans"]
        for scope in resource["scopeSpans"]
    )
    return spans - int(answer.get("partialSuccess", {}).get("rejectedSpans", 0) or 0)


def test_rate_limits_and_queue_caps_hold_across_two_collector_processes(
    tmp_path: Path, cluster: RedisClusterServers
) -> None:
    """Two `spangate collector` processes on the cluster share a project's queue cap and
    a client address's rate limit (its key lives in a slot of its own)."""
    projects = _projects(tmp_path, cluster, 2)
    capped, limited = projects.keys
    urls = []
    started = []
    for _ in range(2):
        port = free_port()
        env = {
            "SPANGATE_REDIS_URL": cluster.url,
            "SPANGATE_DATABASE_URL": str(projects.settings.database_url),
            "SPANGATE_INGEST_PORT": str(port),
            "SPANGATE_QUEUE_MAX_SPANS_PER_PROJECT": "2",
            "SPANGATE_RATE_LIMIT_IP_RPS": "1",
        }
        process = spawn(["collector"], env, tmp_path)
        started.append(process)
        urls.append(f"http://127.0.0.1:{port}")
        wait_healthy(urls[-1] + "/health/ready", process)
    try:
        body = orjson.dumps({"spans": [span()]})
        first, second = (
            httpx.post(f"{url}/v1/spans", content=body, headers=projects.auth(capped))
            for url in urls
        )
        assert (first.status_code, second.status_code) == (200, 200)
        # two seconds' burst of one request a second is spent: the next one is refused
        # whichever collector it reaches
        third = httpx.post(f"{urls[0]}/v1/spans", content=body, headers=projects.auth(limited))
        assert third.status_code == 429, third.text
        time.sleep(1.1)
        full = httpx.post(f"{urls[1]}/v1/spans", content=body, headers=projects.auth(capped))
        assert full.status_code == 503
        assert full.json()["error"]["code"] == "QUEUE_NEAR_CAPACITY"
    finally:
        for process in started:
            process.terminate()
            process.communicate()
    _drain(projects)


@pytest.mark.parametrize("replica_acks", [0, 1])
async def test_a_master_killed_under_load(
    tmp_path: Path, cluster: RedisClusterServers, replica_acks: int
) -> None:
    """SIGKILL the master of some projects while requests keep coming and a worker
    drains: no 500, every answer within the enqueue timeout (and a little), the other
    masters' projects keep getting 200s, and 200s come back within seconds of the
    replica's promotion; the worker keeps draining throughout. With REPLICA_ACKS=1 (the
    dead node restarted, to serve as the new master's replica) every span that got a 200
    is stored."""
    projects = _projects(tmp_path, cluster, 6)
    victim = cluster.master_of(stream_key(next(iter(projects.keys))))
    on_victim = {p for p in projects.keys if cluster.master_of(stream_key(p)) is victim}
    elsewhere = set(projects.keys) - on_victim
    assert elsewhere, [
        (cluster.master_of(stream_key(p)).port, key_slot(stream_key(p).encode()))
        for p in projects.keys
    ]
    timeout_ms = 1000
    app = create_app(
        dataclasses.replace(
            projects.settings, enqueue_timeout_ms=timeout_ms, redis_replica_acks=replica_acks
        )
    )
    answers: list[tuple[str, float, float, int, str]] = []  # project, sent, took, status, span
    stop = asyncio.Event()

    async def send(app: Quart, project: str) -> None:
        client = app.test_client()
        n = 0
        while not stop.is_set():
            n += 1
            span_id = f"{hash(project) & 0xFFFF:04x}{n:012x}"
            body = orjson.dumps({"spans": [span(spanId=span_id)]})
            sent_at = time.monotonic()
            response = await client.post("/v1/spans", data=body, headers=projects.auth(project))
            took = time.monotonic() - sent_at
            answers.append((project, sent_at, took, response.status_code, span_id))
            await asyncio.sleep(0.01)

    worker_stop = threading.Event()
    db = Database(projects.settings.database_url)
    worker = Worker(queue_client(cluster.url, socket_timeout=2), SpanStore(db), 60, block_ms=100)
    draining = threading.Thread(target=worker.run, args=(worker_stop,))
    draining.start()
    try:
        async with app.test_app() as test_app:
            senders = [asyncio.create_task(send(test_app, project)) for project in projects.keys]
            try:
                await asyncio.sleep(1.0)
                killed_at = time.monotonic()
                victim.crash()
                health = test_app.test_client()
                ingest = await health.get("/health/ingest")
                ready = await health.get("/health/ready")
                masters = (await ingest.get_json())["cluster"]["masters"]
                await asyncio.to_thread(_wait_promoted, cluster, on_victim, victim)
                promoted_at = time.monotonic()
                if replica_acks:
                    victim.start()  # back as the new master's replica
                    await asyncio.to_thread(cluster.wait_ok)
                back_at = time.monotonic()
                await asyncio.sleep(3.0)
                ingest_after = await health.get("/health/ingest")
            finally:
                stop.set()
                await asyncio.gather(*senders)
    finally:
        worker_stop.set()
        draining.join()
        db.close()
        if victim.process is None:  # whole again for the next test
            victim.start()
        await asyncio.to_thread(cluster.wait_ok)

    assert (ingest.status_code, ready.status_code) == (503, 200)
    assert masters[f"127.0.0.1:{victim.port}"].startswith("unavailable")
    assert list(masters.values()).count("ok") == 2
    assert ingest_after.status_code == 200
    assert worker.stats.entries > len(answers) // 2, "the worker did not keep up"
    statuses = {status for *_, status, _ in answers}
    assert statuses <= {200, 503}, statuses
    assert max(took for _, _, took, _, _ in answers) < timeout_ms / 1000 + 1.0
    during = [a for a in answers if killed_at <= a[1] <= promoted_at and a[0] in elsewhere]
    assert during and all(status == 200 for _, _, _, status, _ in during)
    after = [a for a in answers if a[1] > back_at + 2.0 and a[0] in on_victim]
    assert after and all(status == 200 for _, _, _, status, _ in after), (
        f"promoted after {promoted_at - killed_at:.1f} s"
    )
    stored = _stored_span_ids(projects)
    acknowledged = {
        (project, span_id) for project, _, _, status, span_id in answers if status == 200
    }
    lost = acknowledged - stored
    if replica_acks:
        assert not lost, f"{len(lost)} acknowledged spans lost"


def _wait_promoted(cluster: RedisClusterServers, projects: set[str], dead: Any) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if all(cluster.master_of(stream_key(p)) is not dead for p in projects):
                return
        except LookupError:  # every node still names the dead master
            pass
        assert time.monotonic() < deadline, "no replica was promoted"
        time.sleep(0.1)


def _stored_span_ids(projects: Projects) -> set[tuple[str, str]]:
    _drain(projects)
    db = Database(projects.settings.database_url)
    try:
        with db.transaction() as tx:
            return {(p, s) for p, s in tx.query("SELECT project_id, span_id FROM spans")}
    finally:
        db.close()


def test_an_entry_that_keeps_failing_is_dead_lettered_on_the_cluster(
    tmp_path: Path, cluster: RedisClusterServers
) -> None:
    """The dead-letter move (a transaction: XADD to the dead letters, acknowledgement)
    stays in the project's slot."""
    projects = _projects(tmp_path, cluster, 1)
    [project] = projects.keys
    client = queue_client(cluster.url, socket_timeout=5)
    client.sadd(STREAMS_KEY, stream_key(project))
    client.xadd(stream_key(project), {b"project": b"garbage"})
    db = Database(projects.settings.database_url)
    try:
        worker = Worker(client, SpanStore(db), 60, block_ms=50, max_attempts=1)
        worker.run(burst=True)
    finally:
        db.close()
    assert worker.stats.dead_lettered == 1
    assert client.xlen(dead_letter_key(project)) == 1 and client.xlen(stream_key(project)) == 0
    client.close()


async def test_the_collector_follows_a_slot_that_moves(
    tmp_path: Path, cluster: RedisClusterServers
) -> None:
    """A project's slot moved to another master under a running collector: while its
    keys are moving (ASK: that call goes to the new master after ASKING) and once the
    slot is there (MOVED: the map is learned again), requests get 200; the worker then
    stores every span."""
    projects = _projects(tmp_path, cluster, 1)
    [project] = projects.keys
    # five requests a second: the project's rate key lives long enough to be moved
    app = create_app(dataclasses.replace(projects.settings, rate_limit_project_rps=5))
    async with app.test_app() as test_app:
        client = test_app.test_client()
        posted = 0

        async def post(admission: str) -> int:
            nonlocal posted
            posted += 1
            body = orjson.dumps({"spans": [span(spanId=f"{posted:016x}")]})
            response = await client.post(
                "/v1/spans", **sent(body, admission, projects.auth(project))
            )
            return response.status_code

        assert await post("with-xadd") == 200  # the map is learned
        source = cluster.master_of(stream_key(project))
        target = next(node for node in cluster.masters() if node is not source)
        slot = key_slot(stream_key(project).encode())
        with source.client() as on_source, target.client() as on_target:
            source_id = on_source.execute_command("CLUSTER MYID").decode()
            target_id = on_target.execute_command("CLUSTER MYID").decode()
            on_target.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", source_id)
            on_source.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", target_id)
            keys = on_source.execute_command("CLUSTER GETKEYSINSLOT", slot, 100)
            on_source.execute_command(
                "MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys
            )
            for admission in ADMISSIONS:  # the keys are gone from the source: ASK
                assert await post(admission) == 200
            # a key of the request's script missing on the target: TRYAGAIN until the
            # slot is the target's (the call is tried again meanwhile)
            asked = on_target.pipeline(transaction=False)
            asked.execute_command("ASKING").delete(rate_key(project)).execute()
            late = asyncio.create_task(post("with-xadd"))
            await asyncio.sleep(0.01)
            for node in cluster.masters():
                with node.client() as on_node:
                    on_node.execute_command("CLUSTER SETSLOT", slot, "NODE", target_id)
            assert await late == 200
        for admission in ADMISSIONS:  # MOVED
            assert await post(admission) == 200
        assert cluster.master_of(stream_key(project)) is target
    assert _drain(projects) == {project: posted}


def test_a_burst_worker_reads_past_many_idle_streams(
    tmp_path: Path, cluster: RedisClusterServers
) -> None:
    """Streams are polled POLL_STREAMS at a time: entries in a stream whose turn comes
    after more idle ones than that are still read before a burst ends."""
    client = queue_client(cluster.url, socket_timeout=5)
    idle = [f"idle-{n:02d}" for n in range(POLL_STREAMS + 4)]
    for project in idle:
        client.sadd(STREAMS_KEY, stream_key(project))
        client.xgroup_create(stream_key(project), GROUP, id="0", mkstream=True)
    conversion = proto_json.convert_spans(orjson.dumps({"spans": [span()]}))
    item = QueuedRequest("zz-last", "spans", int(time.time() * 1000), 1, conversion.payload)
    client.sadd(STREAMS_KEY, stream_key(item.project_id))
    client.xadd(stream_key(item.project_id), item.fields())  # type: ignore[arg-type]
    db = Database(f"sqlite:///{tmp_path / 'spangate.db'}")
    migrate(db)
    try:
        Worker(client, SpanStore(db), 60, block_ms=50).run(burst=True)
        assert SpanStore(db).count(item.project_id) == 1
    finally:
        db.close()
        for project in (*idle, item.project_id):
            client.srem(STREAMS_KEY, stream_key(project))
            client.delete(stream_key(project))
        client.close()


@pytest.mark.parametrize("admission", ADMISSIONS)
async def test_the_ingestion_record_is_kept_on_the_cluster(
    tmp_path: Path, cluster: RedisClusterServers, admission: str
) -> None:
    """On the cluster each project's requests, queued or refused, are recorded beside
    its stream; the worker adds their lags; one pipeline reads a project's record."""
    projects = _projects(tmp_path, cluster, 3)
    one = orjson.dumps({"spans": [span()]})
    two = orjson.dumps({"spans": [span(), span(spanId="1" * 16)]})
    app = create_app(dataclasses.replace(projects.settings, max_spans_per_request=1))
    async with app.test_app() as test_app:  # stopping writes the refusals kept
        client = test_app.test_client()
        for project in projects.keys:
            auth = projects.auth(project)
            queued = await client.post("/v1/spans", **sent(one, admission, auth))
            refused = await client.post("/v1/spans", **sent(two, admission, auth))
            assert (queued.status_code, refused.status_code) == (200, 503)
    assert _drain(projects) == dict.fromkeys(projects.keys, 1)
    queue = queue_client(cluster.url, socket_timeout=10)
    try:
        views = [
            read_ingestion(queue, project, 10, int(time.time() * 1000)) for project in projects.keys
        ]
    finally:
        queue.close()
    for view in views:
        assert [(r.status, r.code) for r in view.requests] == [(503, "TOO_MANY_SPANS"), (200, None)]
        assert view.lag_p50_ms is not None and view.queue_depth == 0
