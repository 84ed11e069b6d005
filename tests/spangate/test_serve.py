"""`spangate serve` end to end on embedded defaults, as the README's quick start runs it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import pytest
import redis

from dashboard.cookies import SECRET_FILE
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


@contextmanager
def _serving(
    command: list[str], env: dict[str, str], cwd: Path
) -> Iterator[tuple[subprocess.Popen[bytes], list[str]]]:
    """`spangate COMMAND` running for the block, which must leave it serving: SIGTERM
    then stops it with status 0. What it said on stderr is in the list after."""
    process = spawn(command, env, cwd)
    said: list[str] = []
    try:
        yield process, said
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
        said.append(process.communicate()[1].decode())


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
    with _serving(["serve"], env, tmp_path) as (process, said):
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
    assert f"spangate is ready: open {app}/" in said[0]
    redis_dir = tmp_path / ".spangate" / "redis"
    assert (redis_dir / "appendonly.aof").exists()
    url = (redis_dir / "redis.url").read_text().strip()  # kept, for the next start's port
    with pytest.raises(redis.ConnectionError):  # the embedded Redis was stopped
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()


def test_serve_workers_share_the_ingest_port(tmp_path: Path) -> None:
    """--workers 2 runs two collector processes on one port; requests on fresh connections
    are all accepted, and both processes answer some of them."""
    env = _ports()
    port = env["SPANGATE_INGEST_PORT"]
    with _serving(["serve", "--workers", "2", "--no-worker"], env, tmp_path) as (process, said):
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


def _accepted_count(metrics: str) -> float:
    for line in metrics.splitlines():
        if (
            line.startswith("spangate_requests_total{")
            and 'route="/v1/spans"' in line
            and 'status="200"' in line
        ):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _children(pid: int) -> dict[str, int]:
    """serve's children by their command (`collector`, `worker`...), from /proc."""
    found = {}
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        if b"spangate.cli" in argv:  # not the embedded redis-server
            found[argv[argv.index(b"spangate.cli") + 1].decode()] = int(child)
    return found


def _redis_server(pid: int) -> int:
    """The embedded redis-server's pid of a process, from /proc (started by any of its
    threads: a part run alone starts it again from a thread of its own)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"redis-server" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
    raise AssertionError("the process runs no redis-server")


def _stored_traces(env: dict[str, str], cwd: Path, expected: set[str]) -> set[str]:
    """The demo project's stored traces, once they include `expected` (or after 60 s).
    There may be more: a request whose answer a killed collector never sent."""
    deadline = time.monotonic() + 60
    limit = str(len(expected) + 1000)
    while True:
        listed = spawn(
            ["traces", "list", "--project", "demo", "--limit", limit, "--json"], env, cwd
        )
        out, _ = listed.communicate(timeout=60)
        stored = {t["traceId"] for t in orjson.loads(out)}
        if expected <= stored or time.monotonic() > deadline:
            return stored
        time.sleep(1)


@contextmanager
def _sending(port: str, key: str) -> Iterator[tuple[list[str], list[str]]]:
    """One span a request, each its own trace, sent for the block: the traces
    acknowledged (200) and refused."""
    stop, acknowledged, refused = threading.Event(), [], []

    def send() -> None:
        with httpx.Client(timeout=5) as client:
            n = 0
            while not stop.is_set():
                n += 1
                trace = f"{n:032x}"
                try:
                    response = client.post(
                        f"http://127.0.0.1:{port}/v1/spans",
                        content=orjson.dumps({"spans": [span(traceId=trace)]}),
                        headers={"Authorization": f"Bearer {key}"},
                    )
                except httpx.TransportError:  # the collector is down: not acknowledged
                    time.sleep(0.05)
                    continue
                (acknowledged if response.status_code == 200 else refused).append(trace)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        yield acknowledged, refused
    finally:
        stop.set()
        sender.join()


def _key(env: dict[str, str], cwd: Path) -> str:
    """A key of project demo, its owner added."""
    assert spawn(["users", "add", "a@x.io", "--role", "owner"], env, cwd).wait(30) == 0
    created = spawn(["keys", "create", "--project", "demo", "--user", "a@x.io"], env, cwd)
    return created.communicate(timeout=30)[0].decode().strip().splitlines()[-1]


def _more_acknowledged(acknowledged: list[str], more: int) -> int:
    """How many more spans were acknowledged, once `more` were or 30 s passed."""
    served = len(acknowledged)
    deadline = time.monotonic() + 30
    while len(acknowledged) < served + more and time.monotonic() < deadline:
        time.sleep(0.1)
    return len(acknowledged) - served


@dataclass
class _Load:
    """serve with spans coming (`_under_load`): its process, its ingest port, the traces
    acknowledged and refused so far, and (after the block) what serve said."""

    process: subprocess.Popen[bytes]
    port: str
    acknowledged: list[str]
    refused: list[str]
    said: list[str]


@contextmanager
def _under_load(tmp_path: Path) -> Iterator[_Load]:
    """serve on embedded defaults with spans sent a second before the block and during
    it; after it, every span acknowledged is stored (checked), then serve stops."""
    env = _ports()
    port = env["SPANGATE_INGEST_PORT"]
    with _serving(["serve"], env, tmp_path) as (process, said):
        wait_healthy(f"http://127.0.0.1:{port}/health/ready", process)
        with _sending(port, _key(env, tmp_path)) as (acknowledged, refused):
            time.sleep(1)
            load = _Load(process, port, acknowledged, refused, said)
            yield load
        assert set(acknowledged) <= _stored_traces(env, tmp_path, set(acknowledged))


def test_serve_starts_again_a_worker_and_a_collector_killed_under_load(tmp_path: Path) -> None:
    """SIGKILL the worker and the collector while spans keep coming: serve starts them
    again by itself, the ingest port answers again, and every span that got a 200 is
    stored."""
    with _under_load(tmp_path) as load:
        before = _children(load.process.pid)
        os.kill(before["worker"], signal.SIGKILL)
        os.kill(before["collector"], signal.SIGKILL)
        wait_healthy(f"http://127.0.0.1:{load.port}/health/ready", load.process)
        more = _more_acknowledged(load.acknowledged, 20)
        after = _children(load.process.pid)
    assert after["worker"] != before["worker"] and after["collector"] != before["collector"]
    assert more >= 20, "the restarted collector takes spans again"
    assert not load.refused
    assert "worker exited with status -9; starting it again" in load.said[0]
    assert "collector exited with status -9; starting it again" in load.said[0]


def test_serve_starts_again_its_redis_killed_under_load(tmp_path: Path) -> None:
    """SIGKILL the embedded Redis while spans keep coming: serve starts it again on its
    port, spans are acknowledged again, and every span that got a 200 is stored (those
    sent while it was down were refused, not acknowledged)."""
    with _under_load(tmp_path) as load:
        redis_server = _redis_server(load.process.pid)
        os.kill(redis_server, signal.SIGKILL)
        more = _more_acknowledged(load.acknowledged, 50)
        assert _redis_server(load.process.pid) != redis_server
    assert more >= 50, "spans are acknowledged again"
    assert "the embedded Redis exited with status -9; started again on its port" in load.said[0]


def test_a_killed_serve_takes_its_redis_with_it(tmp_path: Path) -> None:
    """SIGKILL serve: its embedded Redis stops too (it is told when serve dies), and
    the next serve starts and stops cleanly on the same directory. The first start
    says how to add a user; once there is one, the next does not."""
    env = _ports()
    ready = f"http://127.0.0.1:{env['SPANGATE_INGEST_PORT']}/health/ready"
    killed = spawn(["serve"], env, tmp_path)
    try:
        wait_healthy(ready, killed)
        redis_server = _redis_server(killed.pid)
    finally:
        killed.kill()
        first_said = killed.communicate(timeout=30)[1].decode()
    deadline = time.monotonic() + 30
    while _running(redis_server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(redis_server), "the Redis of a killed serve is gone"
    assert "first user: spangate users add" in first_said
    assert spawn(["users", "add", "a@x.io", "--role", "owner"], env, tmp_path).wait(30) == 0
    with _serving(["serve"], env, tmp_path) as (process, said):
        wait_healthy(ready, process)
    assert "first user" not in said[0] and "dashboard: http://" in said[0]


def _running(pid: int) -> bool:
    """Whether a process runs (not gone, not a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_serve_stops_when_a_child_keeps_failing_at_start_up(tmp_path: Path) -> None:
    """A child that cannot start (the dashboard's session secret file is empty) is
    started again a few times, then serve stops everything and says why, with status 1."""
    env = _ports()
    (tmp_path / ".spangate").mkdir()
    (tmp_path / ".spangate" / SECRET_FILE).write_text("")
    process = spawn(["serve", "--no-worker"], env, tmp_path)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 1
    said = err.decode()
    assert said.count("dashboard exited with status 1; starting it again") == 4
    assert "dashboard exited with status 1, 5 times in a row" in said
    assert "spangate is ready" not in said


@pytest.mark.parametrize(
    ("command", "variable"),
    [
        (["serve"], "SPANGATE_APP_PORT"),
        (["serve"], "SPANGATE_INGEST_PORT"),
        (["dashboard"], "SPANGATE_APP_PORT"),
        (["sidecar"], "SPANGATE_API_PORT"),
        (["collector"], "SPANGATE_INGEST_PORT"),
    ],
)
def test_a_taken_port_stops_start_up_in_one_line(
    tmp_path: Path, command: list[str], variable: str
) -> None:
    """A port that is taken (here by a listening socket, as by a first serve) stops the
    command before it starts anything, in one line naming the port and its setting;
    serve never says it is ready."""
    env = _ports()
    port = int(env[variable])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        process = spawn(command, env, tmp_path)
        _, err = process.communicate(timeout=60)
    said = err.decode().strip().splitlines()
    assert process.returncode == 1
    assert len(said) == 1, said
    assert f"port {port} on 127.0.0.1 is taken" in said[0] and variable in said[0]
    assert not (tmp_path / ".spangate" / "redis").exists()  # no Redis was started


def test_serve_refuses_one_port_for_two_parts(tmp_path: Path) -> None:
    """The same port set for the dashboard and the sidecar: one line naming both."""
    env = _ports()
    env["SPANGATE_API_PORT"] = env["SPANGATE_APP_PORT"]
    process = spawn(["serve"], env, tmp_path)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert "SPANGATE_API_PORT" in err.decode() and "SPANGATE_APP_PORT" in err.decode()


def test_a_collector_run_alone_starts_again_its_redis_killed(tmp_path: Path) -> None:
    """`spangate collector` alone on embedded defaults: its redis-server killed, it
    starts it again on its port (not left a zombie, every send refused), says so, and
    takes spans again; a worker run alone beside it stores them."""
    env = _ports()
    ingest = f"http://127.0.0.1:{env['SPANGATE_INGEST_PORT']}"
    assert spawn(["users", "add", "a@x.io", "--role", "owner"], env, tmp_path).wait(30) == 0
    created = spawn(["keys", "create", "--project", "demo", "--user", "a@x.io"], env, tmp_path)
    key = created.communicate(timeout=30)[0].decode().strip().splitlines()[-1]
    with _serving(["collector"], env, tmp_path) as (collector, said):
        wait_healthy(f"{ingest}/health/ready", collector)
        redis_server = _redis_server(collector.pid)
        os.kill(redis_server, signal.SIGKILL)
        deadline, answered = time.monotonic() + 30, 0
        body = {"spans": [span(traceId="c1" * 16)]}
        while time.monotonic() < deadline:
            answered = httpx.post(
                f"{ingest}/v1/spans", json=body, headers={"Authorization": f"Bearer {key}"}
            ).status_code
            if answered == 200:
                break
            time.sleep(0.2)
        assert answered == 200 and _redis_server(collector.pid) != redis_server
        with _serving(["worker"], env, tmp_path):
            _wait_stored(env, tmp_path, "c1" * 16)
    assert "the embedded Redis exited with status -9; started again on its port" in said[0]


def test_a_collector_run_alone_starts_the_redis_of_a_worker_killed(tmp_path: Path) -> None:
    """A worker run alone first starts the embedded Redis; a collector run alone after it
    uses that one. The worker killed (its Redis goes with it), the collector starts the
    Redis itself, on its port, and takes spans again; a new worker stores them."""
    env = {**_ports(), "SPANGATE_WORKER_METRICS_PORT": "0"}
    ingest = f"http://127.0.0.1:{env['SPANGATE_INGEST_PORT']}"
    assert spawn(["users", "add", "a@x.io", "--role", "owner"], env, tmp_path).wait(30) == 0
    created = spawn(["keys", "create", "--project", "demo", "--user", "a@x.io"], env, tmp_path)
    key = created.communicate(timeout=30)[0].decode().strip().splitlines()[-1]
    worker = spawn(["worker"], env, tmp_path)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (tmp_path / ".spangate/redis/redis.url").exists():
            time.sleep(0.1)
        with _serving(["collector"], env, tmp_path) as (collector, said):
            wait_healthy(f"{ingest}/health/ready", collector)
            worker.kill()
            worker.wait(timeout=30)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not _runs_redis(collector.pid):
                time.sleep(0.1)
            answered = httpx.post(
                f"{ingest}/v1/spans",
                json={"spans": [span(traceId="c2" * 16)]},
                headers={"Authorization": f"Bearer {key}"},
            )
            assert answered.status_code == 200
            with _serving(["worker"], env, tmp_path):
                _wait_stored(env, tmp_path, "c2" * 16)
        assert "the process that ran the embedded Redis is gone; started it again" in said[0]
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.communicate()


def _runs_redis(pid: int) -> bool:
    try:
        return _redis_server(pid) > 0
    except AssertionError:
        return False
