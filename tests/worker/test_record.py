"""The worker's part of the ingestion record, its heartbeat and its metrics, on a real
Redis and a real database."""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from pathlib import Path

import httpx
import orjson
import redis

import proto_json
from service.settings import Settings
from spangate.embedded_redis import free_port
from spangate.worker_health import check, serve_metrics
from spanqueue import heartbeat
from spanqueue.ingestion import minute_field
from spanqueue.ingestion_read import read_ingestion
from spanqueue.layout import STREAMS_KEY, WORKERS_KEY, QueuedRequest, minutes_key, stream_key
from storage.database import Database
from storage.spans import SpanStore
from tests.processes import spawn
from tests.proto_json.spans import span
from worker.loop import Worker
from worker.metrics import WorkerMetrics
from worker.record import RESEND_REASON, WorkerRecord

WINDOW_S = 60


def send(client: redis.Redis, project_id: str, received_ms: int, **fields: object) -> None:
    """One request's entry, as the collector queues it."""
    body = orjson.dumps({"spans": [span(**fields)]})
    conversion = proto_json.convert_spans(body)
    item = QueuedRequest(
        project_id, "spans", received_ms, conversion.accepted, orjson.dumps(conversion.request)
    )
    client.sadd(STREAMS_KEY, stream_key(project_id))
    client.xadd(stream_key(project_id), item.fields())  # type: ignore[arg-type]


def test_refused_spans_and_lags_are_recorded(
    client: redis.Redis, project_id: str, database: Database
) -> None:
    """A span sent again with other content within the window is recorded as refused
    (ids and reason, never its attributes), counted in its minute and in the metrics;
    every request stored leaves its lag."""
    now = int(time.time() * 1000)
    send(client, project_id, now - 400, attributes={"secret.value": "first"})
    send(client, project_id, now - 300, attributes={"secret.value": "second"})
    metrics = WorkerMetrics()
    worker = Worker(
        client, SpanStore(database), WINDOW_S, block_ms=10, record=WorkerRecord(True, metrics)
    )
    stats = worker.run(burst=True)
    assert (stats.spans_written, stats.spans_refused) == (1, 1)
    view = read_ingestion(client, project_id, 100, int(time.time() * 1000))
    (refused,) = view.refused
    assert (refused.trace_id, refused.span_id) == (span()["traceId"], span()["spanId"])
    assert refused.reason == RESEND_REASON
    assert view.lag_p50_ms is not None and view.lag_p95_ms is not None
    assert 300 <= view.lag_p50_ms <= view.lag_p95_ms
    assert sum(minute.refused for minute in view.minutes) == 1
    stored = client.xrange(f"spangate:{{{project_id}}}:ingest:refused")
    assert b"second" not in b"".join(v for _, fields in stored for v in fields.values())
    counts = client.hgetall(minutes_key(project_id, refused.at_ms // 86_400_000))
    assert counts[minute_field(refused.at_ms, "f").encode()] == b"1"
    registry = metrics.registry
    assert registry.get_sample_value("spangate_worker_spans_stored_total") == 1
    assert registry.get_sample_value("spangate_worker_spans_refused_total") == 1
    assert registry.get_sample_value("spangate_worker_lag_seconds_count") == 2


def test_nothing_is_recorded_when_the_record_is_off(
    client: redis.Redis, project_id: str, database: Database
) -> None:
    """With the record off the worker stores as before and writes no lag or refusal."""
    now = int(time.time() * 1000)
    send(client, project_id, now, attributes={"a": "1"})
    send(client, project_id, now, attributes={"a": "2"})
    worker = Worker(client, SpanStore(database), WINDOW_S, block_ms=10, record=WorkerRecord(False))
    assert worker.run(burst=True).spans_refused == 1
    view = read_ingestion(client, project_id, 100, int(time.time() * 1000))
    assert (view.refused, view.lag_p50_ms) == ((), None)


def test_a_dead_letter_is_noted_without_its_body(
    client: redis.Redis, project_id: str, database: Database
) -> None:
    """An entry moved to the dead letters leaves a note (its id and reason) and counts
    in deadLetters; the note holds nothing of the body."""
    client.sadd(STREAMS_KEY, stream_key(project_id))
    entry_id = client.xadd(stream_key(project_id), {"body": "not-an-entry secret"})
    worker = Worker(
        client, SpanStore(database), WINDOW_S, block_ms=10, claim_idle_ms=0, max_attempts=2
    )
    while worker.stats.dead_lettered == 0:
        worker.run(burst=True)
    view = read_ingestion(client, project_id, 100, int(time.time() * 1000))
    assert view.dead_letters == 1
    (note,) = view.dead_notes
    assert note.entry_id == entry_id.decode()
    assert note.reason.startswith("undecodable entry") and "secret" not in note.reason


def test_a_running_worker_beats_and_a_stopped_one_does_not(
    client: redis.Redis, database: Database
) -> None:
    """While it runs a worker's heartbeat is found under its name; once it stops, it is
    gone at once."""
    name = f"beat-{uuid.uuid4().hex[:8]}"
    worker = Worker(client, SpanStore(database), WINDOW_S, consumer=name, block_ms=10)
    stop = threading.Event()
    running = threading.Thread(target=worker.run, args=(stop,))
    running.start()
    try:
        deadline = time.monotonic() + 10
        while heartbeat.last_beat(client, name) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        beat = heartbeat.last_beat(client, name)
        alive = heartbeat.alive(client, int(time.time() * 1000), prefix=name)
    finally:
        stop.set()
        running.join()
    assert beat is not None and beat.state == "running"
    assert [b.consumer for b in alive] == [name]
    assert heartbeat.last_beat(client, name) is None
    assert client.zscore(WORKERS_KEY, name) is None


def test_check_exits_by_the_heartbeat(client: redis.Redis, redis_url: str, tmp_path: Path) -> None:
    """`spangate worker --check --consumer NAME` exits 0 while NAME beats, 1 otherwise,
    and 1 when no queue store answers."""
    name = f"check-{uuid.uuid4().hex[:8]}"
    env = {"SPANGATE_REDIS_URL": redis_url, "SPANGATE_DATA_DIR": str(tmp_path)}
    settings = Settings(redis_url=redis_url, data_dir=tmp_path)

    def run_check() -> subprocess.CompletedProcess[bytes]:
        process = spawn(["worker", "--check", "--consumer", name], env, tmp_path)
        out, err = process.communicate(timeout=60)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    silent = run_check()
    assert silent.returncode == 1 and b"has not beaten" in silent.stderr
    now = int(time.time() * 1000)
    heartbeat.beat(client, heartbeat.Beat(name, "h", 1, now, "running", 3, 7))
    try:
        alive = run_check()
        assert alive.returncode == 0, alive.stderr
        assert f"worker {name} alive: running".encode() in alive.stdout
    finally:
        heartbeat.stopped(client, name)
    assert check(settings, name) == 1
    unreachable = Settings(redis_url=f"redis://127.0.0.1:{free_port()}/0", data_dir=tmp_path)
    assert check(unreachable, name) == 1


def test_worker_metrics_are_served(tmp_path: Path) -> None:
    """The worker's metrics answer in the Prometheus text format on their port."""
    metrics = WorkerMetrics()
    metrics.spans_stored.inc(5)
    port = free_port()
    stop = serve_metrics("127.0.0.1", port, metrics)
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        stop()
    assert "spangate_worker_spans_stored_total 5.0" in text
    assert "spangate_worker_batch_seconds_bucket" in text
