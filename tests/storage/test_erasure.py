"""Erasing on request: a trace, a session, a data subject's spans; summaries and scores
follow."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import proto_json
from storage.database import Database
from storage.erasure import Eraser
from storage.identity import IdentityStore
from storage.scores import NewScore, ScoreStore
from storage.span_rows import SpanRow, rows_of
from storage.spans import SpanStore
from storage.trace_list import TraceSummaries
from tests.proto_json.spans import span
from tests.storage.test_trace_index import assert_exact
from tests.storage.writers import waits_for_a_writer

WINDOW_MS = 1_200_000


def _rows(project_id: str, *spans: dict[str, Any]) -> list[SpanRow]:
    request = proto_json.convert_spans(orjson.dumps({"spans": list(spans)})).request
    return rows_of(request, project_id, 1)


def _store(db: Database, project_id: str, *spans: dict[str, Any]) -> None:
    SpanStore(db).upsert(_rows(project_id, *spans), WINDOW_MS)


def _setup(db: Database) -> str:
    project = IdentityStore(db).create_project("demo").id
    _store(
        db,
        project,
        span(traceId="a" * 32, spanId="1" * 16, attributes={"user.id": "u-42", "session.id": "s"}),
        span(traceId="a" * 32, spanId="2" * 16, parentSpanId="1" * 16),
        span(traceId="b" * 32, spanId="1" * 16, attributes={"user.id": "u-7"}),
        span(traceId="c" * 32, spanId="1" * 16, attributes={"user.id": "u-42"}),
    )
    with db.transaction() as tx:
        tx.execute(
            "INSERT INTO users (id, email, org_id, role, created_at) SELECT 'u', 'a@x.io', "
            "org_id, 'owner', 'then' FROM projects WHERE id = ?",
            (project,),
        )
    ScoreStore(db).create_by_user(project, "u", NewScore("a" * 32, None, "n", 0.5, None, "ui"))
    return project


def test_a_data_subjects_spans(database: Database) -> None:
    """--attribute takes exactly the spans that name the subject; the counts come first
    and erase nothing; the trace's summary is recounted from what is left."""
    project = _setup(database)
    eraser = Eraser(database, project)
    selection = eraser.attribute("user.id", "u-42", whole_traces=False)
    counted = eraser.count(selection)
    assert (counted.traces, counted.spans, counted.scores) == (2, 2, 0)
    assert SpanStore(database).count(project) == 4
    eraser.erase(selection)
    assert SpanStore(database).count(project) == 2
    summaries = TraceSummaries(database)
    left = summaries.get(project, "a" * 32)
    assert left is not None and left.span_count == 1 and left.root_name is None
    assert summaries.get(project, "c" * 32) is None
    assert summaries.get(project, "b" * 32) is not None


def test_a_subject_named_by_a_key_of_any_characters(database: Database) -> None:
    """A key with a backslash, a quote, LIKE's wildcards or letters outside ASCII names
    exactly its spans on either store (each key as stored in JSON, escapes and all)."""
    project = IdentityStore(database).create_project("demo").id
    keys = ["app\\user", 'say "id"', "100%_id", "Benutzer.Kennung.ÄÖ", "a\\\\%_b"]
    _store(
        database,
        project,
        *(
            span(traceId=f"{n:032x}", spanId="1" * 16, attributes={key: "u-42", "other": key})
            for n, key in enumerate(keys, 1)
        ),
        span(traceId="f" * 32, spanId="1" * 16, attributes={"appXuser": "u-42", "100a_id": "u-42"}),
    )
    eraser = Eraser(database, project)
    for n, key in enumerate(keys, 1):
        selection = eraser.attribute(key, "u-42", whole_traces=True)
        assert selection.traces == {f"{n:032x}"}, key


def test_whole_traces_and_sessions(database: Database) -> None:
    """A session's traces, or a trace, go whole, with their scores and summaries."""
    project = _setup(database)
    eraser = Eraser(database, project)
    erased = eraser.erase(eraser.session("s"))
    assert (erased.traces, erased.spans, erased.scores) == (1, 2, 1)
    assert ScoreStore(database).for_trace(project, "a" * 32) == []
    assert TraceSummaries(database).get(project, "a" * 32) is None
    erased = eraser.erase(eraser.trace("B" * 32))
    assert erased.spans == 1 and SpanStore(database).count(project) == 1


@pytest.mark.parametrize("stored", [True, False])
def test_an_erasure_waits_for_a_writer_of_its_trace_and_takes_what_it_wrote(
    database: Database, stored: bool
) -> None:
    """A trace is erased while a worker holds a batch of its spans uncommitted: the
    erasure waits for the commit, then takes those spans too; the summary and indexes
    follow (none is left). Of a trace not `stored` before, there is no summary to lock
    yet: the erasure claims the trace's key as a worker does."""
    project = IdentityStore(database).create_project("demo").id
    if stored:
        _store(database, project, span(traceId="a" * 32, spanId="1" * 16))
    eraser = Eraser(database, project)
    later = _rows(project, span(traceId="a" * 32, spanId="2" * 16, parentSpanId="1" * 16))
    _, erased = waits_for_a_writer(
        database, later, WINDOW_MS, lambda: eraser.erase(eraser.trace("a" * 32))
    )
    assert (erased.traces, erased.spans) == (1, 2 if stored else 1)
    assert SpanStore(database).count(project) == 0
    assert TraceSummaries(database).get(project, "a" * 32) is None
    assert_exact(database)
