"""`spangate serve` end to end on embedded defaults, as the README's quick start runs it."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx
import orjson

from spangate.embedded_redis import free_port
from tests.processes import spawn, wait_healthy
from tests.proto_json.spans import span


def _wait_stored(env: dict[str, str], cwd: Path, trace_id: str) -> None:
    """The worker inside serve stores the span: traces show finds it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        shown = spawn(["traces", "show", trace_id, "--project", "demo", "--json"], env, cwd)
        out, _ = shown.communicate(timeout=30)
        if shown.returncode == 0:
            assert orjson.loads(out)["spans"][0]["traceId"] == trace_id
            return
        time.sleep(0.2)
    raise AssertionError("the span was not stored by serve's worker")


def _ports() -> dict[str, str]:
    return {
        "SPANGATE_INGEST_PORT": str(free_port()),
        "SPANGATE_API_PORT": str(free_port()),
        "SPANGATE_APP_PORT": str(free_port()),
    }


def _dashboard_lists(app: str, trace_id: str) -> None:
    """Signed in through the dashboard's form, the trace list shows the trace."""
    with httpx.Client(base_url=app) as browser:
        page = browser.get("/login").text
        token = page.split('name="csrf-token" content="')[1].split('"')[0]
        signed_in = browser.post(
            "/login", data={"email": "a@x.io", "password": PASSWORD, "csrf_token": token}
        )
        assert signed_in.status_code == 303
        listed = browser.get("/api/v1/projects/demo/traces").json()
    assert [t["traceId"] for t in listed["traces"]] == [trace_id]


PASSWORD = "a long password"


def test_serve_embedded_defaults_then_clean_stop(tmp_path: Path) -> None:
    """serve starts Redis, collector, sidecar and dashboard, takes spans and scores, shows
    the stored trace to a signed-in user, and stops on SIGTERM."""
    env = _ports()
    port, api_port = env["SPANGATE_INGEST_PORT"], env["SPANGATE_API_PORT"]
    app = f"http://127.0.0.1:{env['SPANGATE_APP_PORT']}"
    process = spawn(["serve"], env, tmp_path)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health/ready", process)
        wait_healthy(f"http://127.0.0.1:{api_port}/health/ready", process)
        wait_healthy(f"{app}/health/ready", process)
        add = ["users", "add", "a@x.io", "--role", "owner", "--password-stdin"]
        keys = spawn(add, env, tmp_path, stdin=subprocess.PIPE)
        keys.communicate(f"{PASSWORD}\n".encode(), timeout=30)
        assert keys.returncode == 0
        created = spawn(["keys", "create", "--project", "demo", "--user", "a@x.io"], env, tmp_path)
        out, _ = created.communicate(timeout=30)
        key = out.decode().strip().splitlines()[-1]
        response = httpx.post(
            f"http://127.0.0.1:{port}/v1/spans",
            content=orjson.dumps({"spans": [span()]}),
            headers={"Authorization": f"Bearer {key}"},
        )
        assert response.status_code == 200 and response.json()["accepted"] == 1
        score = httpx.post(
            f"http://127.0.0.1:{api_port}/v1/scores",
            json={"trace_id": span()["traceId"], "score": 0.9},
            headers={"X-API-Key": key},
        )
        assert score.status_code == 201 and score.json()["source"] == "api"
        _wait_stored(env, tmp_path, span()["traceId"])
        _dashboard_lists(app, span()["traceId"])
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
        _, err = process.communicate()
    assert f"spangate is ready: open {app}/" in err.decode()
    redis_dir = tmp_path / ".spangate" / "redis"
    assert (redis_dir / "appendonly.aof").exists()
    assert not (redis_dir / "redis.url").exists()  # the embedded Redis was stopped


def test_serve_workers_share_the_ingest_port(tmp_path: Path) -> None:
    """--workers 2 runs two collector processes on one port; requests on fresh connections
    are all accepted, and both processes answer some of them."""
    env = _ports()
    port = env["SPANGATE_INGEST_PORT"]
    process = spawn(["serve", "--workers", "2", "--no-worker"], env, tmp_path)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health/ready", process)
        assert spawn(["users", "add", "a@x.io", "--role", "owner"], env, tmp_path).wait(30) == 0
        created = spawn(["keys", "create", "--project", "demo", "--user", "a@x.io"], env, tmp_path)
        key = created.communicate(timeout=30)[0].decode().strip().splitlines()[-1]
        counts: list[float] = []
        for _ in range(40):
            with httpx.Client() as client:  # a new connection each time
                response = client.post(
                    f"http://127.0.0.1:{port}/v1/spans",
                    content=orjson.dumps({"spans": [span()]}),
                    headers={"Authorization": f"Bearer {key}"},
                )
                assert response.status_code == 200
                metrics = client.get(f"http://127.0.0.1:{port}/metrics").text
            counts.append(_accepted_count(metrics))
        # Each process counts only the requests it served: one process alone would have
        # shown all 40 by the last round; two sharing the port each show fewer.
        assert max(counts) < 40 and sum(counts) > 0
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def _accepted_count(metrics: str) -> float:
    for line in metrics.splitlines():
        if (
            line.startswith("spangate_requests_total{")
            and 'route="/v1/spans"' in line
            and 'status="200"' in line
        ):
            return float(line.rsplit(" ", 1)[1])
    return 0.0
