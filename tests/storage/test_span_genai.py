"""The GenAI view's facts through the worker into the store and the traces' summaries."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import redis
from hypothesis import example, given
from hypothesis import strategies as st

from genai.prices import Pricer, parse_price_file
from spanqueue.layout import STREAMS_KEY, stream_key
from storage.database import Database
from storage.span_rows import SpanRow, rows_of
from storage.spans import SpanStore
from storage.trace_list import TraceFilter, TraceSummaries, TraceSummary
from tests.fuzz import FUZZ
from tests.proto_json.spans import span
from tests.worker.test_loop import WINDOW_S, Queue

TRACE = "0af7651916cd43dd8448eb211c80319c"
PRICES = parse_price_file(
    "[[model]]\nmatch = 'house-model'\ninput_per_mtok = 1000000\noutput_per_mtok = 2000000\n"
)


@pytest.fixture
def queue(redis_url: str) -> Iterator[Queue]:
    client = redis.Redis.from_url(redis_url)
    project_id = f"prj_{uuid.uuid4().hex[:12]}"
    yield Queue(client, project_id)
    for key in client.scan_iter(match=f"spangate:{{{project_id}}}:*"):
        client.delete(key)
    client.srem(STREAMS_KEY, stream_key(project_id))
    client.close()


def _drain(queue: Queue, database: Database) -> None:
    from worker.loop import Worker

    Worker(queue.client, SpanStore(database), WINDOW_S, block_ms=10, pricer=Pricer(PRICES)).run(
        burst=True
    )


def _llm(span_id: str, parent: str | None, tokens: tuple[int, int], **more: Any) -> dict[str, Any]:
    return span(
        traceId=TRACE,
        spanId=span_id,
        parentSpanId=parent,
        name="chat",
        kind="client",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": more.pop("model", "house-model"),
            "gen_ai.usage.input_tokens": tokens[0],
            "gen_ai.usage.output_tokens": tokens[1],
            "gen_ai.input.messages": more.pop("question", '[{"role":"user","content":"q"}]'),
            **more.pop("attributes", {}),
        },
        **more,
    )


def _agent(span_id: str, **attributes: Any) -> dict[str, Any]:
    return span(
        traceId=TRACE,
        spanId=span_id,
        name="planner",
        kind="agent",
        startTime="2026-11-22T10:00:00Z",
        attributes=attributes,
    )


def _summary(database: Database, project: str) -> TraceSummary:
    found = TraceSummaries(database).get(project, TRACE)
    assert found is not None
    return found


def test_the_worker_stores_each_model_calls_facts_and_their_sums(
    queue: Queue, database: Database
) -> None:
    """Two LLM calls under an agent that reports usage of its own: each call's tokens
    and cost (from the price file) are stored; the trace adds up the calls only, with
    its models, its first call's question and its last call's answer."""
    queue.send(
        _agent("a" * 16, **{"gen_ai.usage.input_tokens": 999, "user.id": "u-1"}),
        _llm("1" * 16, "a" * 16, (10, 1), question='[{"role":"user","content":"first?"}]',
             startTime="2026-11-22T10:00:01Z"),
        _llm("2" * 16, "a" * 16, (20, 2), model="gpt-4o", startTime="2026-11-22T10:00:02Z",
             attributes={"gen_ai.output.messages": '[{"role":"assistant","content":"last!"}]'}),
    )  # fmt: skip
    _drain(queue, database)
    with database.transaction() as tx:
        rows = tx.query(
            "SELECT span_id, llm_type, model, input_tokens, cost_usd, cost_source FROM spans "
            "WHERE project_id = ? ORDER BY span_id",
            (queue.project_id,),
        )
    assert rows[0] == ("1" * 16, "llm", "house-model", 10, 10 + 2.0, "price-file")
    assert rows[1][:5] == ("2" * 16, "llm", "gpt-4o", 20, rows[1][4])
    assert rows[1][5] == "price-table" and 0 < rows[1][4] < 0.01
    assert rows[2][:4] == ("a" * 16, "agent", None, 999)
    found = _summary(database, queue.project_id)
    assert found.usage[:3] == (30, 3, 33)
    assert found.usage[3] == pytest.approx(12.0 + rows[1][4])
    assert (found.models, found.llm_calls, found.user_id) == (["gpt-4o", "house-model"], 2, "u-1")
    assert (found.input, found.output) == ("first?", "last!")


def test_each_end_of_a_trace_falls_back_on_its_roots_alone(
    queue: Queue, database: Database
) -> None:
    """The first call gives its question; the last call, which records no answer, gives
    none: the output is the agent root's, the input still the first call's. A page
    lists it the same."""
    queue.send(
        _agent("a" * 16, **{"input.value": "plan it", "output.value": "planned"}),
        _llm("1" * 16, "a" * 16, (1, 1), question='[{"role":"user","content":"first?"}]',
             startTime="2026-11-22T10:00:01Z"),
        _llm("2" * 16, "a" * 16, (1, 1), question='[{"role":"user","content":"second?"}]',
             startTime="2026-11-22T10:00:02Z"),
    )  # fmt: skip
    _drain(queue, database)
    found = _summary(database, queue.project_id)
    assert (found.llm_calls, found.input, found.output) == (2, "first?", "planned")
    (listed,) = TraceSummaries(database).page(queue.project_id, TraceFilter(), 10).traces
    assert listed == found


def test_usage_of_a_span_with_no_model_call_below_counts(queue: Queue, database: Database) -> None:
    """A trace whose only usage is an agent's own shows that usage; its input is the
    root's input when it has no LLM call."""
    queue.send(
        _agent(
            "a" * 16,
            **{"gen_ai.usage.input_tokens": 5, "gen_ai.usage.cost": 0.25, "input.value": "do it"},
        )
    )
    _drain(queue, database)
    found = _summary(database, queue.project_id)
    assert found.usage == (5, None, 5, 0.25)
    assert (found.llm_calls, found.input) == (0, "do it")


def test_a_resent_span_counts_once_and_a_replaced_one_exactly(
    queue: Queue, database: Database
) -> None:
    """The same span sent again changes no sum; a changed span sent after the window
    replaces its tokens and cost in the trace's totals."""
    queue.send(_llm("1" * 16, None, (10, 1)), received_ms=1_000)
    queue.send(_llm("1" * 16, None, (10, 1)), received_ms=2_000)
    _drain(queue, database)
    assert _summary(database, queue.project_id).usage[:3] == (10, 1, 11)
    queue.send(_llm("1" * 16, None, (40, 4)), received_ms=1_000 + 2 * WINDOW_S * 1000)
    _drain(queue, database)
    found = _summary(database, queue.project_id)
    assert found.usage == (40, 4, 44, 40 + 8.0)
    assert found.llm_calls == 1


def test_a_conversation_id_is_the_session(queue: Queue, database: Database) -> None:
    """gen_ai.conversation.id puts a span without session.id in that session."""
    queue.send(_llm("1" * 16, None, (1, 1), attributes={"gen_ai.conversation.id": "conv-9"}))
    _drain(queue, database)
    assert _summary(database, queue.project_id).session_id == "conv-9"


def test_plain_spans_are_stored_without_facts(database: Database) -> None:
    """A span no convention describes keeps every GenAI field None, through the same
    path the worker takes."""
    from proto_json import convert_spans
    from storage.span_genai import with_views

    request = convert_spans(
        b'{"spans": [{"traceId": "' + TRACE.encode() + b'", "spanId": "1111111111111111", '
        b'"name": "GET /", "startTime": "2026-11-22T10:00:00Z", '
        b'"attributes": {"http.method": "GET", "note": "\\"key\\":\\"gen_ai.x\\""}}]}'
    ).request
    rows = with_views(rows_of(request, "p", 1), Pricer())
    assert rows[0][20:] == (None,) * 13


def test_spans_stored_before_the_columns_get_their_facts(database_url: str) -> None:
    """A store that had spans before the GenAI columns: after the migration, the
    upgrade gives each described span its facts and its trace its sums, keeping the
    trace's place in the list; run again, it does nothing."""
    from proto_json import convert_spans
    from storage.genai_upgrade import upgrade
    from storage.schema import migrate

    db = Database(database_url)
    try:
        migrate(db, until=10)
        with db.transaction() as tx:
            tx.execute("INSERT INTO organizations VALUES ('o', 'default', 'then')")
            tx.execute("INSERT INTO projects VALUES ('p', 'demo', 'o', 'then')")
        spans = [
            _agent("a" * 16),
            _llm("1" * 16, "a" * 16, (10, 1), startTime="2026-11-22T10:00:01Z"),
            _llm("2" * 16, "a" * 16, (20, 2), model="gpt-4o", startTime="2026-11-22T10:00:02Z"),
        ]
        request = convert_spans(orjson.dumps({"spans": spans})).request
        rows = rows_of(request, "p", 5)
        with db.transaction() as tx:
            for row in rows:
                tx.execute(f"INSERT INTO spans VALUES ({', '.join('?' * 20)})", tuple(row)[:20])
            tx.execute(
                "INSERT INTO trace_summaries (project_id, trace_id, sort_ns, start_ns, "
                "end_ns, span_count, error_count, root_name, session_id, received_ms) "
                "VALUES ('p', ?, 7, 7, NULL, 3, 0, 'planner', NULL, 5)",
                (TRACE,),
            )
        migrate(db)
        seen: list[tuple[int, int]] = []
        assert upgrade(db, Pricer(PRICES), lambda done, total: seen.append((done, total))) == 1
        assert seen == [(1, 1)]
        found = _summary(db, "p")
        assert (found.usage[:3], found.llm_calls, found.sort_ns) == ((30, 3, 33), 2, 7)
        assert found.models == ["gpt-4o", "house-model"]
        with db.transaction() as tx:
            (cost,) = tx.query_one("SELECT cost_usd FROM spans WHERE span_id = ?", ("1" * 16,)) or (
                None,
            )
        assert cost == 12.0
        assert upgrade(db, Pricer(PRICES)) == 0
    finally:
        db.close()


def test_spans_stored_before_a_convention_described_them_get_their_facts(
    database: Database,
) -> None:
    """A store whose spans of no LLM convention were stored without the users their
    attributes name, and whose OpenInference spans of no kind (`input.value`) were
    stored undescribed (as builds before this one stored them): the walk gives them
    their users and facts (a chain), their traces their users, texts and previews, and
    their sessions their users; run again, it does nothing."""
    from proto_json import convert_spans
    from storage.genai_upgrade import REDESCRIBED, redescribe
    from storage.span_genai import with_views

    root = span(traceId=TRACE, spanId="a" * 16, name="handle",
                attributes={"enduser.id": "u-9", "session.id": "s-9"})  # fmt: skip
    plain = span(traceId="9" * 32, spanId="b" * 16, name="pipeline",
                 attributes={"input.value": "summarise the wombat report"})  # fmt: skip
    spans = [root, _llm("1" * 16, "a" * 16, (10, 1), startTime="2026-11-22T10:00:01Z"), plain]
    request = convert_spans(orjson.dumps({"spans": spans})).request
    rows = with_views(rows_of(request, "p", 5), Pricer())
    assert [(row.llm_type, row.user_id) for row in rows] == [
        (None, "u-9"), ("llm", None), ("chain", None)
    ]  # fmt: skip
    old = [row if row.llm_type == "llm" else SpanRow(*row[:20]) for row in rows]
    SpanStore(database).upsert(old, 1000)
    with database.transaction() as tx:
        tx.execute("DELETE FROM schema_migrations WHERE version = ?", (REDESCRIBED,))
    summaries = TraceSummaries(database)
    assert _summary(database, "p").user_id is None
    assert summaries.page("p", TraceFilter(words=("wombat",)), 10).traces == []
    before = summaries.page("p", TraceFilter(), 10).traces
    assert {t.trace_id: t.input for t in before} == {TRACE: "q", "9" * 32: None}
    assert redescribe(database, Pricer()) == 2
    found = _summary(database, "p")
    assert (found.user_id, found.llm_calls, found.input) == ("u-9", 1, "q")
    [wombat] = summaries.page("p", TraceFilter(words=("wombat",)), 10).traces
    assert (wombat.trace_id, wombat.input) == ("9" * 32, "summarise the wombat report")
    with database.transaction() as tx:
        assert tx.query("SELECT session_id, user_id FROM session_summaries") == [("s-9", "u-9")]
        assert tx.query("SELECT 1 FROM trace_index_stale") == []
    assert redescribe(database, Pricer()) == 0


def test_model_calls_stored_without_a_model_get_the_one_their_parameters_name(
    database: Database,
) -> None:
    """An OpenInference call refused before an answer, stored by a build that read no
    model from its parameters: the walk gives it that model, and its trace the model in
    its summary; run again, it does nothing."""
    from proto_json import convert_spans
    from storage.genai_upgrade import MODELLED, remodel
    from storage.span_genai import with_views

    attributes = {
        "openinference.span.kind": "LLM",
        "llm.system": "openai",
        "llm.invocation_parameters": '{"model": "gpt-4.1-mini"}',
    }
    refused = span(
        traceId=TRACE, spanId="c" * 16, name="ChatCompletion", status="error", attributes=attributes
    )
    request = convert_spans(orjson.dumps({"spans": [refused]})).request
    [row] = with_views(rows_of(request, "p", 5), Pricer())
    assert (row.llm_type, row.model) == ("llm", "gpt-4.1-mini")
    SpanStore(database).upsert([row._replace(model=None)], 1000)
    with database.transaction() as tx:
        tx.execute("DELETE FROM schema_migrations WHERE version = ?", (MODELLED,))
    assert _summary(database, "p").models == []
    assert remodel(database, Pricer()) == 1
    assert _summary(database, "p").models == ["gpt-4.1-mini"]
    [listed] = TraceSummaries(database).page("p", TraceFilter(model="gpt-4.1-mini"), 10).traces
    assert listed.trace_id == TRACE
    assert remodel(database, Pricer()) == 0


def test_spans_stored_before_association_properties_were_read_get_user_and_session(
    database: Database,
) -> None:
    """OpenLLMetry's association properties name the user and session, on a workflow
    span (which the view describes) and on a plain one (which it does not), as the
    worker stores them; a store whose spans were stored before they were read: the walk
    gives the spans, their trace and its session them; run again, it does nothing."""
    from proto_json import convert_spans
    from storage.genai_upgrade import ASSOCIATED, associate
    from storage.span_genai import with_views

    named = {"traceloop.association.properties.user_id": "alice",
             "traceloop.association.properties.session_id": "chat-1"}  # fmt: skip
    root = span(traceId=TRACE, spanId="a" * 16, name="support.workflow",
                attributes={"traceloop.span.kind": "workflow", **named})  # fmt: skip
    plain = span(traceId="9" * 32, spanId="b" * 16, name="handle", attributes=named)
    spans = [root, _llm("1" * 16, "a" * 16, (10, 1), startTime="2026-11-22T10:00:01Z"), plain]
    request = convert_spans(orjson.dumps({"spans": spans})).request
    rows = with_views(rows_of(request, "p", 5), Pricer())
    assert [(row.user_id, row.session_id) for row in rows] == [
        ("alice", "chat-1"), (None, None), ("alice", "chat-1")
    ]  # fmt: skip
    SpanStore(database).upsert([row._replace(user_id=None, session_id=None) for row in rows], 1000)
    with database.transaction() as tx:
        tx.execute("DELETE FROM schema_migrations WHERE version = ?", (ASSOCIATED,))
    assert _summary(database, "p").user_id is None
    assert associate(database) == 2
    found = _summary(database, "p")
    assert (found.user_id, found.session_id) == ("alice", "chat-1")
    with database.transaction() as tx:
        assert tx.query("SELECT session_id, user_id, trace_count FROM session_summaries") == [
            ("chat-1", "alice", 2)
        ]  # fmt: skip
        assert tx.query("SELECT 1 FROM trace_index_stale") == []
    assert associate(database) == 0


def test_the_walk_stores_ids_as_the_worker_does(database: Database) -> None:
    """A user and session named by association properties with a NUL, or of 1,024
    four-byte characters (each id, and both in one session's summary, over PostgreSQL's
    B-tree limit were they kept whole): the walk stores them as the worker stores them
    (storage/storable.py), and the worker stores a span with both."""
    from proto_json import convert_spans
    from storage.genai_upgrade import ASSOCIATED, associate
    from storage.span_genai import with_views
    from storage.storable import storable

    pick = random.Random(7).randrange  # characters PostgreSQL cannot compress away
    wide = "".join(chr(0x1F300 + pick(0x800)) for _ in range(1024))
    sent = [
        span(traceId=f"{n:032x}", spanId="a" * 16, name="handle",
             attributes={"traceloop.association.properties.user_id": user,
                         "traceloop.association.properties.session_id": session})
        for n, (user, session) in enumerate((("a\x00b", "s\x00t"), (wide, wide)), start=1)
    ]  # fmt: skip
    rows = with_views(rows_of(convert_spans(orjson.dumps({"spans": sent})).request, "p", 5),
                      Pricer())  # fmt: skip
    fresh = [(row.user_id, row.session_id) for row in storable(list(rows))]
    store = SpanStore(database)
    store.upsert([row._replace(user_id=None, session_id=None) for row in rows], 1000)
    with database.transaction() as tx:
        tx.execute("DELETE FROM schema_migrations WHERE version = ?", (ASSOCIATED,))
    assert associate(database) == 2
    with database.transaction() as tx:
        walked = tx.query("SELECT user_id, session_id FROM spans ORDER BY trace_id")
        assert [tuple(row) for row in walked] == fresh
        assert len(tx.query("SELECT 1 FROM session_summaries")) == 2
    plain = span(traceId="9" * 32, spanId="b" * 16, name="plain",
                 attributes={"user.id": wide, "session.id": "x" + wide})  # fmt: skip
    rows = rows_of(convert_spans(orjson.dumps({"spans": [plain]})).request, "p", 5)
    store.upsert(storable(with_views(rows, Pricer())), 1000)
    with database.transaction() as tx:
        assert len(tx.query("SELECT 1 FROM session_summaries")) == 3


def test_embedding_texts_stored_before_they_were_read_are_found_after_the_walk(
    database: Database,
) -> None:
    """OpenInference's embedding texts are a call's input, found by the `text` filter;
    a store whose embedding calls were stored before they were read: the walk indexes
    them; run again, it does nothing."""
    from proto_json import convert_spans
    from storage.genai_upgrade import EMBEDDED, embed_texts
    from storage.span_genai import with_views

    given = {"openinference.span.kind": "EMBEDDING", "embedding.model_name": "m",
             "embedding.embeddings.0.embedding.text": "the wombat report"}  # fmt: skip
    call = span(traceId=TRACE, spanId="e" * 16, name="CreateEmbeddings", attributes=given)
    rows = with_views(rows_of(convert_spans(orjson.dumps({"spans": [call]})).request, "p", 5),
                      Pricer())  # fmt: skip
    SpanStore(database).upsert(rows, 1000)
    summaries = TraceSummaries(database)
    assert [t.trace_id for t in summaries.page("p", TraceFilter(words=("wombat",)), 10).traces] == [
        TRACE
    ]
    with database.transaction() as tx:  # as a build that did not read them stored it
        tx.execute("DELETE FROM trace_texts")
        tx.execute("DELETE FROM span_texts")
        tx.execute("DELETE FROM schema_migrations WHERE version = ?", (EMBEDDED,))
    assert summaries.page("p", TraceFilter(words=("wombat",)), 10).traces == []
    assert embed_texts(database) == 1
    [found] = summaries.page("p", TraceFilter(words=("wombat",)), 10).traces
    assert (found.trace_id, found.input) == (TRACE, "the wombat report")
    assert embed_texts(database) == 0


def test_token_sums_past_64_bits_stop_at_their_cap(database: Database) -> None:
    """Counts the view no longer reads (a trillion or more) in a store that holds them:
    a trace's and a session's token sums stop at MAX_SUM, whether the spans come
    together, one at a time (a stored trace's summary added to, or made anew), or in
    several traces of a session; nothing is refused."""
    from proto_json import convert_spans
    from storage.session_summaries import session_summary
    from storage.summary_genai import MAX_SUM

    store = SpanStore(database)

    def calls(trace: int, spans: range) -> list[SpanRow]:
        sent = []
        for n in spans:
            call = _llm(f"{n:016x}", None, (1, 1), attributes={"session.id": "s"})
            call["traceId"] = f"{trace:032x}"
            sent.append(call)
        rows = rows_of(convert_spans(orjson.dumps({"spans": sent})).request, "p", 5)
        return [row._replace(input_tokens=2**62, llm_type="llm") for row in rows]

    store.upsert(calls(1, range(1, 4)), 1000)  # together
    for n in range(1, 4):  # one at a time
        store.upsert(calls(2, range(n, n + 1)), 1000)
    for trace in (1, 2):
        found = TraceSummaries(database).get("p", f"{trace:032x}")
        assert found is not None and found.usage[0] == MAX_SUM, trace
    session = session_summary(database, "p", "s")
    assert session is not None and (session.traces, session.input_tokens) == (2, MAX_SUM)


def test_workflows_stored_as_model_calls_become_chains(database: Database) -> None:
    """An OTel GenAI workflow with messages, stored by a build that read it as a model
    call over the two calls below it: the walk makes it a chain, and its trace counts
    two calls; run again, it does nothing."""
    from proto_json import convert_spans
    from storage.genai_upgrade import COUNTED_ONCE, count_once
    from storage.span_genai import with_views

    said = '[{"role": "user", "parts": [{"type": "text", "content": "plan"}]}]'
    workflow = span(
        traceId=TRACE,
        spanId="f" * 16,
        name="invoke_workflow plan",
        attributes={"gen_ai.operation.name": "invoke_workflow", "gen_ai.input.messages": said},
    )
    calls = [span(traceId=TRACE, spanId=str(n) * 16, parentSpanId="f" * 16, name="chat",
                  attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                              "gen_ai.usage.input_tokens": 10})
             for n in (1, 2)]  # fmt: skip
    request = convert_spans(orjson.dumps({"spans": [workflow, *calls]})).request
    rows = with_views(rows_of(request, "p", 5), Pricer())
    assert [row.llm_type for row in rows] == ["chain", "llm", "llm"]
    SpanStore(database).upsert([rows[0]._replace(llm_type="llm"), *rows[1:]], 1000)
    with database.transaction() as tx:  # the three calls the build before counted
        tx.execute("UPDATE trace_summaries SET llm_calls = 3")
        tx.execute("DELETE FROM schema_migrations WHERE version = ?", (COUNTED_ONCE,))
    assert count_once(database, Pricer()) == 1
    found = _summary(database, "p")
    assert (found.llm_calls, found.usage[0]) == (2, 20)
    with database.transaction() as tx:
        assert tx.query("SELECT llm_type FROM spans WHERE span_id = ?", ("f" * 16,)) == [("chain",)]
    assert count_once(database, Pricer()) == 0


_KEYS = st.sampled_from(
    [
        "gen_ai.operation.name", "gen_ai.request.model", "gen_ai.response.model",
        "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cost",
        "gen_ai.input.messages", "gen_ai.agent.name", "gen_ai.tool.name", "llm.model",
        "llm.token_count.prompt", "openinference.span.kind", "traceloop.span.kind",
        "llm.input_messages.0.message.role", "ai.operationId", "ai.response.text",
        "input.value", "user.id", "gen_ai.conversation.id", "session.id", "http.method",
    ]
)  # fmt: skip
_VALUES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["chat", "LLM", "agent", "invoke_agent", "12", "-3", " ", "1e3"]),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.lists(st.integers(0, 9), max_size=2),
    st.dictionaries(st.sampled_from("ab"), st.integers(0, 9), max_size=2),
)


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.dictionaries(_KEYS, _VALUES, max_size=6),
            st.sampled_from(["llm_call", "agent", "internal", "client"]),
        ),
        min_size=1,
        max_size=4,
    )
)
@example([({"ai.response.text": "hi"}, "internal")])  # the Vercel AI SDK's names
@example([({"ai.usage.promptTokens": 3}, "client")])
def test_the_quick_test_misses_no_span_a_convention_describes(
    spans: list[tuple[dict[str, Any], str]],
) -> None:
    """The worker reads a span only when a quick test of its text says a convention may
    describe it: that test passes every span whose view is not None."""
    from proto_json import convert_spans
    from storage.span_genai import described, stored_view

    body = orjson.dumps(
        {
            "spans": [
                span(spanId=f"{n + 1:016x}", kind=kind, attributes=attributes)
                for n, (attributes, kind) in enumerate(spans)
            ]
        }
    )
    for row in rows_of(convert_spans(body).request, "p", 1):
        seen = stored_view(row.name, row.kind, row.attributes, row.events)
        assert seen is None or described(row.kind, row.attributes, row.events), row.attributes
