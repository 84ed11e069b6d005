"""A resource's and a scope's text stored once a project, whatever the spans under it."""

from __future__ import annotations

from datetime import date

import orjson

import proto_json
from storage import shared_texts
from storage.database import Database
from storage.retention import remove_days_before
from storage.span_rows import SpanRow, rows_of_json
from storage.spans import SpanStore
from tests.storage.rows import span_row

WINDOW_MS = 1000
_NS_A_DAY = 86_400 * 10**9


def _resource(attributes: int, service: str = "agent-app") -> dict[str, object]:
    pairs = [{"key": "service.name", "value": {"stringValue": service}}]
    pairs += [
        {"key": f"host.label.{n}", "value": {"stringValue": f"value {n} " * 10}}
        for n in range(attributes)
    ]
    return {"attributes": pairs}


def _rows(
    resource: dict[str, object],
    spans: int,
    day: date = date(2026, 11, 23),
    project: str = "p",
    trace: str = "a" * 32,
) -> list[SpanRow]:
    """The rows the worker makes of an OTLP request of `spans` spans under `resource`."""
    start = (day - date(1970, 1, 1)).days * _NS_A_DAY
    body = {
        "resourceSpans": [
            {
                "resource": resource,
                "scopeSpans": [
                    {
                        "scope": {"name": "openinference.instrumentation.openai", "version": "1"},
                        "spans": [
                            {
                                "traceId": trace,
                                "spanId": f"{n + 1:016x}",
                                "name": f"call {n}",
                                "kind": 1,
                                "startTimeUnixNano": str(start + n),
                                "endTimeUnixNano": str(start + n + 10),
                            }
                            for n in range(spans)
                        ],
                    }
                ],
            }
        ]
    }
    conversion = proto_json.convert_otlp(orjson.dumps(body))
    return rows_of_json(conversion.payload, project, 1)


def _stored_texts(database: Database) -> list[tuple[str, str, str]]:
    with database.transaction() as tx:
        return sorted(tx.query("SELECT project_id, body, last_day FROM shared_texts"))


def test_a_resource_under_many_spans_is_stored_once(database: Database) -> None:
    """500 spans under a resource of 1,000 attributes (150 KB of JSON): the resource's
    text once, each row its key; every span reads back the resource it was sent with."""
    resource = _resource(1000)
    store = SpanStore(database)
    assert store.upsert(_rows(resource, 500), WINDOW_MS) == []
    text = orjson.dumps(resource).decode()
    assert len(text) > 150_000
    assert [body for _, body, _ in _stored_texts(database)] == sorted(
        [text, '{"name":"openinference.instrumentation.openai","version":"1"}']
    )
    with database.transaction() as tx:
        [(longest,)] = tx.query("SELECT MAX(LENGTH(resource) + LENGTH(scope)) FROM spans")
    assert longest == 2 * shared_texts.KEY_LENGTH
    spans = store.trace("p", "a" * 32)
    assert len(spans) == 500
    assert all(span["resource"] == resource for span in spans)
    assert store.span("p", "a" * 32, f"{1:016x}")[0]["scope"]["name"] == (
        "openinference.instrumentation.openai"
    )


def test_short_texts_and_rows_stored_before_hold_their_texts(database: Database) -> None:
    """An empty resource stays in its row; a row stored before the texts were shared,
    which holds the text itself, reads as it did."""
    store = SpanStore(database)
    old = span_row(trace="b")._replace(resource=orjson.dumps(_resource(3)).decode())
    store.upsert([*_rows({}, 2), old], WINDOW_MS)
    assert _stored_texts(database) == [
        ("p", '{"name":"openinference.instrumentation.openai","version":"1"}', "2026-11-23")
    ]
    assert [span["resource"] for span in store.trace("p", "a" * 32)] == [{}, {}]
    assert store.trace("p", "b")[0]["resource"] == _resource(3)


def test_each_project_keeps_its_own_texts(database: Database) -> None:
    """The same resource sent to two projects, in one batch: each project has its text."""
    store = SpanStore(database)
    store.upsert([*_rows(_resource(2), 2, project="p"), *_rows(_resource(2), 1, project="q")], 1)
    assert [project for project, _, _ in _stored_texts(database)] == ["p", "p", "q", "q"]
    with database.transaction() as tx:
        tx.execute("DELETE FROM shared_texts WHERE project_id = 'p'")
    assert store.trace("q", "a" * 32)[0]["resource"] == _resource(2)
    # a text gone (as after retention, for a row of an old day written after it ran)
    assert store.trace("p", "a" * 32)[0]["resource"] == {}


def test_retention_removes_a_text_with_the_last_day_that_used_it(database: Database) -> None:
    """A text keeps the latest day of the rows written with it: retention removes the
    one used only on removed days and keeps the one a later day still uses."""
    old, new = date(2026, 11, 20), date(2026, 11, 23)
    store = SpanStore(database)
    store.upsert(_rows(_resource(1, "gone"), 1, day=old, trace="c" * 32), WINDOW_MS)
    store.upsert(_rows(_resource(1, "kept"), 1, day=old, trace="d" * 32), WINDOW_MS)
    store.upsert(_rows(_resource(1, "kept"), 1, day=new, trace="e" * 32), WINDOW_MS)
    gone, kept = (orjson.dumps(_resource(1, name)).decode() for name in ("gone", "kept"))
    days = {body: day for _, body, day in _stored_texts(database)}
    assert (days[gone], days[kept]) == ("2026-11-20", "2026-11-23")
    remove_days_before(database, new)
    days = {body: day for _, body, day in _stored_texts(database)}
    assert gone not in days and kept in days
    assert store.trace("p", "e" * 32)[0]["resource"] == _resource(1, "kept")
