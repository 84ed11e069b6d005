"""The example payloads, and `spangate replay` against `spangate serve`."""

from __future__ import annotations

import gzip
import signal
import time
from pathlib import Path

import orjson
import pytest

import proto_json
from spangate.embedded_redis import free_port
from spangate.replay import outgoing
from spangate.replay_now import renewed
from tests.processes import spawn, wait_healthy
from tests.proto_json import protobuf

EXAMPLES = Path(__file__).parents[2] / "examples"
SPAN_FILES = sorted(
    p
    for p in EXAMPLES.iterdir()
    if p.name.endswith((".json", ".ndjson", ".gz")) and "score" not in p.name
)


@pytest.mark.parametrize("path", SPAN_FILES, ids=lambda p: p.name)
def test_every_example_converts_cleanly(path: Path) -> None:
    """Each example body is accepted whole by its route and is valid OTLP once converted."""
    data = path.read_bytes()
    data = gzip.decompress(data) if path.suffix == ".gz" else data
    if path.name.startswith("batch"):
        result = proto_json.convert_ndjson(data)
    else:
        document = orjson.loads(data)
        if "spans" in document:
            result = proto_json.convert_spans(data)
        elif "traces" in document:
            result = proto_json.convert_traces(data)
        else:
            result = proto_json.convert_otlp(data)
    assert result.errors == () and result.ignored == () and result.accepted > 0
    protobuf.parse(result.request)


def test_replay_routes_files_by_form() -> None:
    """Files go to the route of their form; gzip files keep their Content-Encoding."""
    routes = {
        path.name: [(o.api, o.path, o.gzipped) for o in outgoing(path)]
        for path in EXAMPLES.iterdir()
        if path.suffix in (".json", ".ndjson", ".gz")
    }
    assert routes["spans.json.gz"] == [(False, "/v1/spans", True)]
    assert routes["batch.ndjson"] == [(False, "/v1/spans/batch", False)]
    assert routes["traces.json"] == [(False, "/v1/traces", False)]
    assert routes["otlp_agent.json"] == [(False, "/v1/otlp/v1/traces", False)]
    assert routes["score.json"] == [(True, "/v1/scores", False)]


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    process = spawn(argv, env, cwd)
    out, err = process.communicate(timeout=120)
    return process.returncode, out.decode() + err.decode()


def test_replay_examples_then_archive_against_serve(tmp_path: Path) -> None:
    """Examples replay with nothing refused and are stored once; replaying the collector's
    archive of them sends the same requests again, and the re-sending rules store nothing new."""
    port, api_port = free_port(), free_port()
    archive = tmp_path / "archive"
    env = {
        "SPANGATE_INGEST_PORT": str(port),
        "SPANGATE_API_PORT": str(api_port),
        "SPANGATE_APP_PORT": str(free_port()),
        "SPANGATE_ARCHIVE_DIR": str(archive),
    }
    serve = spawn(["serve"], env, tmp_path)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health/ready", serve)
        wait_healthy(f"http://127.0.0.1:{api_port}/health/ready", serve)
        assert _run(["users", "add", "a@x.io", "--role", "owner"], env, tmp_path)[0] == 0
        code, out = _run(["keys", "create", "--project", "demo", "--user", "a@x.io"], env, tmp_path)
        key = next(line for line in out.splitlines() if line.startswith("sgk_"))
        files = [
            str(p) for p in sorted(EXAMPLES.iterdir()) if p.suffix in (".json", ".ndjson", ".gz")
        ]
        code, out = _run(["replay", *files, "--key", key, "--quiet"], env, tmp_path)
        assert code == 0, out
        assert "refused 0" in out
        scores = sum(1 for name in files if name.endswith("score.json"))
        assert scores and out.rstrip().endswith(f"; scores recorded {scores}, refused 0"), out
        stored = _stored(env, tmp_path, "4bf92f3577b34da6a3ce929d0e0e4736", expect=4)
        code, out = _run(
            [
                "replay",
                *map(str, sorted(archive.glob("archive-*.jsonl.gz"))),
                "--key",
                key,
                "--quiet",
            ],
            env,
            tmp_path,
        )
        assert code == 0 and "refused 0" in out, out
        time.sleep(1.0)
        assert _stored(env, tmp_path, "4bf92f3577b34da6a3ce929d0e0e4736", expect=4) == stored
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0
    finally:
        if serve.poll() is None:
            serve.terminate()
            serve.wait(timeout=60)
        serve.communicate()


def _stored(env: dict[str, str], cwd: Path, trace_id: str, expect: int) -> list[str]:
    """The stored span ids of a trace, once the worker has stored `expect` of them."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        code, out = _run(["traces", "show", trace_id, "--project", "demo", "--json"], env, cwd)
        if code == 0:
            spans = orjson.loads(out[out.index("{") :])["spans"]
            if len(spans) >= expect:
                assert len(spans) == expect
                return sorted(s["spanId"] for s in spans)
        time.sleep(0.2)
    raise AssertionError("the spans were not stored")


CONVERTERS = {
    "/v1/spans/batch": proto_json.convert_ndjson,
    "/v1/spans": proto_json.convert_spans,
    "/v1/traces": proto_json.convert_traces,
}


def test_replay_now_renews_ids_and_moves_times_to_the_present() -> None:
    """--now gives every example fresh ids (one new id per old one across files, so the
    score names the renewed trace) and moves its times so the latest is now, keeping
    durations; each body still converts cleanly."""
    requests = [r for p in sorted(EXAMPLES.iterdir()) if p.suffix in (".json", ".ndjson", ".gz")
                for r in outgoing(p)]  # fmt: skip
    now = 1_900_000_000_123_456_789
    renewed_requests = renewed(requests, now)
    spans = []
    for old, new in zip(requests, renewed_requests, strict=True):
        data = gzip.decompress(new.body) if new.gzipped else new.body
        if new.api:
            score = orjson.loads(data)
            continue
        convert = CONVERTERS.get(new.path, proto_json.convert_otlp)
        result = convert(data)
        assert result.errors == () and result.accepted == old.spans
        spans += [s for r in result.request["resourceSpans"] for ss in r["scopeSpans"]
                  for s in ss["spans"]]  # fmt: skip
    old_ids = {"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"}
    assert not old_ids & {s["traceId"] for s in spans} and not old_ids & {
        s["spanId"] for s in spans
    }
    assert score["trace_id"] in {s["traceId"] for s in spans}
    assert max(int(s["endTimeUnixNano"]) for s in spans) == now
    root = next(s for s in spans if s["name"] == "support-agent")
    assert int(root["endTimeUnixNano"]) - int(root["startTimeUnixNano"]) == 4_250_000_000


def test_replay_now_twice_shows_two_runs(tmp_path: Path) -> None:
    """Against serve, the README's `replay examples/traces.json --now` sent twice stores
    two runs, both starting today, instead of refusing the second."""
    port = free_port()
    env = {"SPANGATE_INGEST_PORT": str(port), "SPANGATE_API_PORT": str(free_port()),
           "SPANGATE_APP_PORT": str(free_port())}  # fmt: skip
    serve = spawn(["serve"], env, tmp_path)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health/ready", serve)
        assert _run(["users", "add", "a@x.io", "--role", "owner"], env, tmp_path)[0] == 0
        _, out = _run(["keys", "create", "--project", "demo", "--user", "a@x.io"], env, tmp_path)
        key = next(line for line in out.splitlines() if line.startswith("sgk_"))
        for _ in range(2):
            args = ["replay", str(EXAMPLES / "traces.json"), "--now", "--key", key, "--quiet"]
            code, out = _run(args, env, tmp_path)
            assert code == 0 and "refused 0" in out, out
        deadline, listed = time.monotonic() + 30, []
        while time.monotonic() < deadline and len(listed) < 2:
            code, out = _run(["traces", "list", "--project", "demo", "--json"], env, tmp_path)
            listed = orjson.loads(out[out.index("[") :]) if code == 0 else []
            time.sleep(0.2)
        assert len({t["traceId"] for t in listed}) == 2
        today = time.time_ns() - 86_400 * 10**9
        assert all(int(t["startTimeUnixNano"]) > today for t in listed)
    finally:
        serve.terminate()
        serve.wait(timeout=60)
        serve.communicate()
