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
