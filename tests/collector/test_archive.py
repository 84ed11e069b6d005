"""The raw-request archive: records written for replay, and degraded mode."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path
from typing import Any

import orjson

from service.settings import Settings
from tests.collector.conftest import Tenant, make_app
from tests.proto_json.spans import span


def body(count: int) -> bytes:
    return orjson.dumps({"spans": [span(spanId=f"{i + 1:016x}") for i in range(count)]})


def records(directory: Path) -> list[dict[str, Any]]:
    return [
        orjson.loads(line)
        for path in sorted(directory.glob("archive-*.jsonl.gz"))
        for line in gzip.decompress(path.read_bytes()).splitlines()
    ]


async def test_accepted_bodies_are_archived_decoded(
    settings: Settings, tenant: Tenant, tmp_path: Path
) -> None:
    """Each accepted request is one record: project, route, content type, the body as read
    (inflated when it came gzip); refused requests are not archived."""
    archive = tmp_path / "archive"
    app = make_app(settings, archive_dir=archive)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        assert (
            await client.post(
                "/v1/spans",
                data=body(2),
                headers=tenant.auth(**{"Content-Type": "application/json"}),
            )
        ).status_code == 200
        assert (
            await client.post(
                "/v1/spans",
                data=gzip.compress(body(1)),
                headers=tenant.auth(**{"Content-Encoding": "gzip"}),
            )
        ).status_code == 200
        assert (await client.post("/v1/spans", data=body(1))).status_code == 401
    first, second = records(archive)
    assert (first["project"], first["route"], first["content_type"]) == (
        tenant.project_id,
        "spans",
        "application/json",
    )
    assert orjson.loads(first["body"]) == orjson.loads(body(2))
    assert orjson.loads(second["body"]) == orjson.loads(body(1))
    assert first["received_ms"] <= second["received_ms"]


async def test_unwritable_archive_accepts_while_queue_has_headroom(
    settings: Settings, tenant: Tenant, tmp_path: Path
) -> None:
    """With the archive unwritable, requests are still accepted below half the queue cap,
    then refused with 503 ARCHIVE_DEGRADED_NO_HEADROOM once the backlog passes it."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    app = make_app(settings, archive_dir=blocker / "archive", queue_max_spans_per_project=100)
    async with app.test_app() as test_app:
        client = test_app.test_client()
        assert (
            await client.post("/v1/spans", data=body(10), headers=tenant.auth())
        ).status_code == 200
        await asyncio.sleep(0.3)  # let the writer fail: degraded, yet depth 10 < 50
        assert (
            await client.post("/v1/spans", data=body(45), headers=tenant.auth())
        ).status_code == 200
        for _ in range(40):  # depth 55 >= 50: refused as soon as the writer has failed
            refused = await client.post("/v1/spans", data=body(1), headers=tenant.auth())
            if refused.status_code != 200:
                break
            await asyncio.sleep(0.05)
    error = (await refused.get_json())["error"]
    assert refused.status_code == 503 and error["code"] == "ARCHIVE_DEGRADED_NO_HEADROOM"
