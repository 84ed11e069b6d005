"""Spans acknowledged by the collector, for the tests that then break the worker or the
database: REQUESTS requests of SPANS_PER_REQUEST spans, each answered 200."""

from __future__ import annotations

from pathlib import Path

import orjson

from collector.app import create_app
from service.settings import Settings
from storage.database import Database
from storage.identity import IdentityStore
from tests.proto_json.spans import span

REQUESTS, SPANS_PER_REQUEST = 60, 200


def request_body(request_no: int) -> bytes:
    trace = f"{request_no + 1:032x}"
    return orjson.dumps(
        {
            "spans": [
                span(traceId=trace, spanId=f"{i + 1:016x}", attributes={"i": i, "pad": "x" * 100})
                for i in range(SPANS_PER_REQUEST)
            ]
        }
    )


async def send_acknowledged(db: Database, redis_url: str, data_dir: Path) -> tuple[str, int]:
    """A project of its own in the migrated `db`, and REQUESTS requests sent to it through
    the collector; the project's id and the spans acknowledged."""
    identity = IdentityStore(db)
    identity.add_user("o@x.io", "owner")
    created = identity.create_key("acknowledged", "o@x.io")
    settings = Settings(data_dir=data_dir, redis_url=redis_url, database_url=db.url)
    acknowledged = 0
    async with create_app(settings).test_app() as app:
        client = app.test_client()
        for n in range(REQUESTS):
            response = await client.post(
                "/v1/spans",
                data=request_body(n),
                headers={"Authorization": f"Bearer {created.key}"},
            )
            assert response.status_code == 200
            acknowledged += (await response.get_json())["accepted"]
    return identity.project("acknowledged").id, acknowledged
