"""The indexes that find a trace (LLM text, attributes, span names) and the session
summaries follow what is stored, under every re-sending rule, erasure and retention."""

from __future__ import annotations

import tempfile
import tracemalloc
from datetime import date
from functools import partial
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import proto_json
from genai import view_of
from storage import attribute_hashes, trace_query
from storage.attribute_hashes import attribute_pairs, resource_pairs, text_hash
from storage.database import Database
from storage.erasure import Eraser
from storage.index_filters import NAMES_MATCHED, name_tokens
from storage.retention import remove_days_before
from storage.schema import migrate
from storage.session_summaries import EVERY_SESSION
from storage.span_rows import SpanRow
from storage.spans import SpanStore
from storage.storable import key_text
from storage.summary_genai import span_of
from storage.text_words import joined
from storage.trace_facets import hex_token, hex_tokens, key_token, name_token, packed, unpacked
from storage.trace_list import TraceFilter, TraceSummaries
from storage.trace_texts import text_and_previews
from tests.fuzz import FUZZ
from tests.storage.rows import sends, span_row

WINDOW_MS = 1_200_000


def _attributes(content: str) -> str:
    """A row's attributes by its content: `y` an LLM call whose answer names it."""
    pairs: list[dict[str, Any]] = [{"key": "tenant", "value": {"stringValue": f"t-{content}"}}]
    if content == "y":
        answer = [{"role": "assistant", "parts": [{"type": "text", "content": "Alpha BRAVO"}]}]
        said = orjson.dumps(answer).decode()
        pairs += [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": said}},
        ]
    if content == "z":
        pairs.append({"key": "retries", "value": {"intValue": "3"}})
    return orjson.dumps(pairs).decode()


def _indexed(row: SpanRow) -> SpanRow:
    return row._replace(attributes=_attributes(row.content_hash))


_ROWS = sends(WINDOW_MS).map(_indexed)


def _expected(tx: Any) -> tuple[set[Any], dict[Any, set[str]], set[Any], set[Any]]:
    """The previews, the words of each trace's day, the tokens of each trace (project,
    trace, token) and the span names a recount of the stored rows gives."""
    previews: set[Any] = set()
    words: dict[Any, set[str]] = {}
    pairs: set[Any] = set()
    names: set[Any] = set()
    rows = tx.query(
        "SELECT project_id, trace_id, span_id, start_day, name, kind, attributes, events, "
        "llm_type, resource FROM spans"
    )
    shared = {
        (p, key): body
        for p, key, body in tx.query("SELECT project_id, key, body FROM shared_texts")
    }
    for project, trace, span, day, name, kind, attributes, events, llm_type, resource in rows:
        names.add((project, key_text(name), name_token(project, key_text(name))))
        resource = shared.get((project, resource), resource)  # its key's text, if a key
        for k, h in attribute_pairs(attributes) + resource_pairs(resource):
            keyed = key_token(project, key_text(k))
            pairs.update(((project, trace, keyed), (project, trace, keyed ^ h)))
        pairs.add((project, trace, name_token(project, key_text(name))))
        view = view_of(orjson.loads(attributes), orjson.loads(events), name, kind)
        if llm_type is None or view is None or not (view.input_messages or view.output_messages):
            continue
        shown = orjson.dumps(view.previews()).decode()
        previews.add((project, trace, span, day, shown))
        said = (m.content for m in (*view.input_messages, *view.output_messages) if m.content)
        if found := joined("\n".join(said)).split():
            words.setdefault((project, trace, day), set()).update(found)
    return previews, words, pairs, names


def _stored_tokens(tx: Any) -> set[tuple[str, str, int]]:
    """The (project, trace, token) of the stored documents of tokens."""
    if tx.postgres:
        rows = tx.query("SELECT project_id, trace_id, tokens FROM trace_facets")
        return {(p, t, token) for p, t, tokens in rows for token in tokens}
    rows = tx.query("SELECT project_id, trace_id, body FROM trace_facets")
    return {
        (p, t, int.from_bytes(bytes.fromhex(token), "big", signed=True))
        for p, t, body in rows
        for token in body.split()
    }


def assert_exact(db: Database) -> None:
    """Every index equals a recount of the stored rows (the documents of a trace's day
    hold its spans' words, each in any of them, and no other; the previews of the spans
    that give a trace's input and output are stored, and no others than the spans'
    own); every session summary its traces' sum; FTS5's index its content."""
    with db.transaction() as tx:
        previews, words, pairs, names = _expected(tx)
        stored = tx.query(
            "SELECT project_id, trace_id, span_id, start_day, previews FROM span_texts"
        )
        # the previews stored are their spans' own, and every end of a trace has its own
        assert set(map(tuple, stored)) <= previews
        ends = {
            (project, trace, *span_of(trace, key)[1:])
            for project, trace, *keys in tx.query(
                "SELECT project_id, trace_id, first_llm, last_llm, first_root FROM trace_summaries"
            )
            for key in keys
            if key is not None
        }
        assert {row for row in previews if row[:4] in ends} <= set(map(tuple, stored))
        documents: dict[Any, set[str]] = {}
        for *day, body in tx.query("SELECT project_id, trace_id, start_day, body FROM trace_texts"):
            # a body an earlier build stored whole has the words it would be stored as
            documents.setdefault(tuple(day), set()).update(joined(body).split())
        assert documents == words
        assert _stored_tokens(tx) == pairs
        # a project's names may outlive its spans: those of stored spans are there
        assert names <= set(map(tuple, tx.query("SELECT * FROM project_span_names")))
        # no transaction leaves the rows it noted stale to another
        assert tx.query_one("SELECT COUNT(*) FROM trace_index_stale") == (0,)
        sessions = tx.query(EVERY_SESSION)
        stored = tx.query("SELECT * FROM session_summaries")
        assert sorted(map(tuple, stored)) == sorted(map(tuple, sessions))
        if not db.postgres:  # FTS5 holds each document's words once, and no others
            for index in ("trace_text_words", "trace_facet_tokens"):
                tx.execute(f"INSERT INTO {index} ({index}, rank) VALUES ('integrity-check', 1)")
            indexed = tx.query("SELECT id FROM trace_text_words_docsize ORDER BY id")
            assert indexed == tx.query("SELECT id FROM trace_texts ORDER BY id")
            return
        stored_words = tx.query("SELECT body, tsvector_to_array(words) FROM trace_texts")
        assert all(sorted(joined(body).split()) == sorted(kept) for body, kept in stored_words)


@FUZZ
@given(st.lists(st.lists(_ROWS, max_size=10), max_size=4))
def test_the_indexes_equal_a_recount_of_the_stored_spans(batches: list[list[SpanRow]]) -> None:
    """Batch after batch (repeats, refusals, replacements, other days, new and stored
    traces mixed), then an erasure and a retention: the indexes are exact."""
    with tempfile.TemporaryDirectory() as work:
        db = Database(f"sqlite:///{work}/spans.db")
        try:
            migrate(db)
            for batch in batches:
                SpanStore(db).upsert(batch, WINDOW_MS)
                assert_exact(db)
            Eraser(db, "p").erase(Eraser(db, "p").trace("a"))
            assert_exact(db)
            remove_days_before(db, date(2026, 11, 24))
            assert_exact(db)
        finally:
            db.close()


def _find(db: Database, **filters: Any) -> list[str]:
    traces = TraceSummaries(db).page("p", TraceFilter(**filters), 10).traces
    return [t.trace_id for t in traces]


def test_a_replaced_span_has_its_words_replaced(database: Database) -> None:
    """The words of a span refused within the window are not found; those of a span
    replaced after it are, and the replaced span's are gone; erasure takes them."""
    llm = _indexed(span_row(content="y", session="s1"))
    plain = _indexed(span_row(content="x", session="s1"))
    store = SpanStore(database)
    store.upsert([plain], WINDOW_MS)
    assert _find(database, words=("alpha",)) == []
    assert store.upsert([llm._replace(received_ms=1)], WINDOW_MS)  # refused
    assert _find(database, words=("alpha",)) == []
    assert _find(database, attributes=(("tenant", "t-x"),)) == ["a"]
    store.upsert([llm._replace(received_ms=WINDOW_MS + 1)], WINDOW_MS)  # replaces it
    assert _find(database, words=("alpha", "bravo")) == ["a"]
    assert _find(database, attributes=(("tenant", "t-x"),)) == []
    assert _find(database, attributes=(("tenant", "t-y"),)) == ["a"]
    assert_exact(database)
    store.upsert([plain._replace(received_ms=3 * WINDOW_MS)], WINDOW_MS)  # and back
    assert _find(database, words=("alpha",)) == []
    assert_exact(database)
    Eraser(database, "p").erase(Eraser(database, "p").trace("a"))
    assert _find(database, attributes=(("tenant", None),)) == []
    assert_exact(database)


def _span_id(number: str) -> str:
    return number.rjust(16, "0")


def _model_call(span: str, start: int, asked: str, day: str = "2026-11-23") -> SpanRow:
    """An LLM call under root span 0 that asks `asked` and answers it, upper-cased."""

    def said(role: str, text: str) -> str:
        return orjson.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}]).decode()

    pairs = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": said("user", asked)}},
        {
            "key": "gen_ai.output.messages",
            "value": {"stringValue": said("assistant", asked.upper())},
        },
        {"key": "call", "value": {"stringValue": span}},
    ]
    row = span_row(
        span=_span_id(span), day=day, content="y", root=False, start=start, end=start + 5
    )
    return row._replace(attributes=orjson.dumps(pairs).decode())


def test_a_row_sent_twice_as_one_object_keeps_its_words_when_its_last_send_is_refused(
    database: Database,
) -> None:
    """A batch holds one row object twice, a send of its span on another day between
    them: the last send is refused (the other day's row, of other content, was received
    within the window before it) and the first is stored, with its words and previews: a
    refused row is known by its place in the batch, not by its object."""
    call = _model_call("1", 10, "first question", day="2026-11-22")
    call = call._replace(received_ms=WINDOW_MS + 1)
    other = span_row(span=_span_id("1"), day="2026-11-21", received_ms=WINDOW_MS, root=False)
    assert SpanStore(database).upsert([call, other, call], WINDOW_MS) == [call]
    assert _ends(database) == ("first question", "FIRST QUESTION")
    assert_exact(database)


def _erase_the_first_call(db: Database) -> None:
    """Of a trace of calls "one", "two" and "three": the first erased, the second gives
    the input; the indexes stay exact."""
    assert _ends(db) == ("one", "THREE")
    assert_exact(db)
    eraser = Eraser(db, "p")
    eraser.erase(eraser.attribute("call", "1", whole_traces=False))
    assert _ends(db) == ("two", "THREE")
    assert_exact(db)


def _ends(db: Database) -> tuple[str | None, str | None]:
    (ends,) = _every_end(db).values()
    return ends


def _every_end(db: Database) -> dict[str, tuple[str | None, str | None]]:
    """Each listed trace's input and output, as the list reads them on a store the
    worker made: from the previews stored alone (no span's attributes read)."""
    from storage import find_upgrade, trace_walk

    if trace_walk.needed(db, find_upgrade.PREVIEWED):
        trace_walk.record(db, find_upgrade.PREVIEWED)
    traces = TraceSummaries(db).page("p", TraceFilter(), 10).traces
    return {trace.trace_id: (trace.input, trace.output) for trace in traces}


def test_a_trace_s_ends_keep_their_previews_whichever_span_becomes_one(
    database: Database,
) -> None:
    """A batch stores the previews of its traces' ends alone (first and last LLM call,
    earliest root); a span that becomes an end when the one before it is erased, or
    replaced by a later send, shows its own."""
    store = SpanStore(database)
    root = span_row(span=_span_id("0"), start=0, end=100)
    store.upsert(
        [
            root,
            _model_call("1", 10, "one"),
            _model_call("2", 20, "two"),
            _model_call("3", 30, "three"),
        ],
        0,
    )
    with database.transaction() as tx:
        kept = tx.query("SELECT span_id FROM span_texts ORDER BY span_id")
    assert [span for (span,) in kept] == [_span_id("1"), _span_id("3")]
    _erase_the_first_call(database)
    # the last call sent again, started before the others: the second is the last
    store.upsert(
        [_model_call("3", 5, "three")._replace(content_hash="y2", received_ms=WINDOW_MS + 1)],
        WINDOW_MS,
    )
    assert _ends(database) == ("three", "TWO")
    assert_exact(database)


def test_a_trace_s_ends_of_a_later_day_outlive_the_days_removed(database: Database) -> None:
    """A batch of a trace's calls of two start days gives each day's ends their
    previews: once the first day is removed, the second day's first call gives the
    input."""
    store = SpanStore(database)
    store.upsert(
        [
            span_row(span=_span_id("0"), day="2026-11-20", start=0, end=100),
            _model_call("1", 10, "one", day="2026-11-20"),
            _model_call("2", 20, "two", day="2026-11-25"),
            _model_call("3", 30, "three", day="2026-11-25"),
            _model_call("4", 40, "four", day="2026-11-25"),
        ],
        0,
    )
    assert _ends(database) == ("one", "FOUR")
    remove_days_before(database, date(2026, 11, 22))
    assert _ends(database) == ("two", "FOUR")
    assert_exact(database)


def test_a_day_s_first_call_erased_leaves_the_next_to_give_the_input(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trace's second day's first call erased while its first day's gives the input:
    once the first day is removed, the second day's next call gives it, whichever of
    retention's transactions recounts the trace (one a trace here)."""
    from storage import retention

    monkeypatch.setattr(retention, "_TRACES_A_TRANSACTION", 1)
    store = SpanStore(database)
    for trace in ("a", "b"):
        calls = [
            span_row(trace=trace, span=_span_id("0"), day="2026-11-20", start=0, end=100),
            _model_call("1", 10, "one", day="2026-11-20"),
            _model_call("2", 20, "two", day="2026-11-25"),
            _model_call("3", 30, "three", day="2026-11-25"),
            _model_call("4", 40, "four", day="2026-11-25"),
        ]
        store.upsert([row._replace(trace_id=trace) for row in calls], 0)
    eraser = Eraser(database, "p")
    eraser.erase(eraser.attribute("call", "2", whole_traces=False))
    assert _every_end(database) == {"a": ("one", "FOUR"), "b": ("one", "FOUR")}
    remove_days_before(database, date(2026, 11, 22))
    assert _every_end(database) == {"a": ("three", "FOUR"), "b": ("three", "FOUR")}
    assert_exact(database)


def test_retention_takes_the_words_and_sessions_of_removed_days(database: Database) -> None:
    """Removing old days (dropped partitions on PostgreSQL) leaves no word, attribute
    or session of their spans."""
    old = _indexed(span_row(trace="b", content="y", day="2026-11-20", session="s2"))
    new = _indexed(span_row(trace="c", content="y", day="2026-11-25", session="s3"))
    SpanStore(database).upsert([old, new], WINDOW_MS)
    assert _find(database, words=("bravo",)) == ["c", "b"]
    remove_days_before(database, date(2026, 11, 22))
    assert _find(database, words=("bravo",)) == ["c"]
    assert_exact(database)


def test_the_spans_stored_before_the_indexes_get_theirs(database_url: str) -> None:
    """A store migrated with spans already stored: its sessions are summed by the
    migration, and the upgrade indexes every stored trace, once."""
    from storage import find_upgrade

    db = Database(database_url)
    try:
        migrate(db, until=12)
        rows = [
            _indexed(span_row(trace=trace, span=span, content=content, session="s1"))
            for trace, span, content in (("a", "1", "y"), ("a", "2", "z"), ("b", "1", "x"))
        ]
        SpanStore(db, find_index=False).upsert(rows, WINDOW_MS)
        migrate(db)
        assert find_upgrade.upgrade(db) == 2
        assert_exact(db)
        assert _find(db, words=("bravo",)) == ["a"]
        assert find_upgrade.upgrade(db) == 0
        assert find_upgrade.preview(db) == 0  # its texts were written with their previews
        assert find_upgrade.facet(db) == 0  # nor its documents of tokens
    finally:
        db.close()


def _said(role: str, text: str) -> str:
    return orjson.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}]).decode()


def _call(answer: str) -> SpanRow:
    """An LLM call of trace `a` asked "Hi?" that answered `answer`."""
    said = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": _said("user", "Hi?")}},
        {"key": "gen_ai.output.messages", "value": {"stringValue": _said("assistant", answer)}},
    ]
    return span_row(trace="a", span="a" * 16, content="y")._replace(
        attributes=orjson.dumps(said).decode(), llm_type="llm"
    )


def _store_whole(db: Database, trace: str, text: str, texts: str = "trace_texts") -> None:
    """SQLite: a trace's text as an earlier build stored it, whole (FTS5 given it anew:
    its external content is deleted by the body it indexed); `texts`: the table of the
    texts (`span_texts` before schema 20, whose index was `span_text_words`)."""
    of_trace = f"FROM {texts} WHERE trace_id = ?"
    index = texts.replace("texts", "text_words")
    with db.transaction() as tx:
        tx.execute(
            f"INSERT INTO {index} ({index}, rowid, body) SELECT 'delete', id, body {of_trace}",
            (trace,),
        )
        tx.execute(f"UPDATE {texts} SET body = ? WHERE trace_id = ?", (text, trace))
        tx.execute(f"INSERT INTO {index} (rowid, body) SELECT id, body {of_trace}", (trace,))


def _store_before_documents(db: Database, row: SpanRow, body: str) -> None:
    """A span and its text as a build from schema 16 to 19 stored them (a text a span
    with its previews, its words in its row on PostgreSQL: the parser's before schema
    18)."""
    SpanStore(db, find_index=False).upsert([row], WINDOW_MS)
    given = text_and_previews(row.llm_type or "llm", row.attributes, row.events)
    assert given is not None
    text = (row.project_id, row.trace_id, row.span_id, row.start_day, body, given[1])
    with db.transaction() as tx:
        if db.postgres:
            tx.execute(
                "INSERT INTO span_texts (project_id, trace_id, span_id, start_day, body, "
                "previews, words) VALUES (?, ?, ?, ?, ?, ?, to_tsvector('simple', ?))",
                (*text, body),
            )
            return
        tx.execute(
            "INSERT INTO span_texts (project_id, trace_id, span_id, start_day, body, "
            "previews) VALUES (?, ?, ?, ?, ?, ?)",
            text,
        )
        tx.execute(
            "INSERT INTO span_text_words (rowid, body) "
            "SELECT id, body FROM span_texts WHERE id = last_insert_rowid()"
        )


def test_a_word_is_found_in_any_case_as_stored_or_as_an_earlier_build_stored_it(
    database: Database,
) -> None:
    """A text is stored as its case-folded words (ß folds to ss, a final sigma to σ, İ
    to an i and a mark, which is no letter): a word is found as written and in any case
    that folds as it does; a word FTS5's tokenizer splits (a letter of New Tai Lue) too.
    On SQLite a text an earlier build stored whole, indexed by
    FTS5's own folding (lower case), is found by the word as written in it too."""
    SpanStore(database).upsert([_call("Die Straße ΟΔΟΣ İzmir ǰam x\u19b0y")], WINDOW_MS)
    for word in ("straße", "STRASSE", "strasse", "οδος", "ΟΔΟΣ", "die", "İzmir", "ǰam", "X\u19b0Y"):
        assert _find(database, words=(word,)) == ["a"], word
    for word in ("x", "y", "x\u19b0", "strass"):  # none is a word of the text
        assert _find(database, words=(word,)) == [], word
    assert_exact(database)
    if database.postgres:
        return
    _store_whole(database, "a", "Hi?\nDie Straße ΟΔΟΣ İzmir ǰam x\u19b0y")
    for word in ("straße", "Straße", "οδος", "ΟΔΟΣ", "die", "İzmir", "ǰam", "x\u19b0y"):
        assert _find(database, words=(word,)) == ["a"], word
    assert_exact(database)


def test_the_texts_indexed_with_their_words_positions_are_indexed_anew(
    database_url: str,
) -> None:
    """Schema 19 (SQLite: the full-text index without positions) indexes the texts
    already stored anew, as their words and whole (an earlier build's): each is found,
    by each of its words alone, and the index holds each once."""
    db = Database(database_url)
    try:
        migrate(db, 18)
        _store_before_documents(db, _call("Yo there x\u19b0y"), joined("Hi?\nYo there x\u19b0y"))
        whole = _call("Ahoy elsewhere z\u19b0w")._replace(trace_id="b", span_id="b" * 16)
        text = "Hi?\nAhoy elsewhere z\u19b0w"  # as an earlier build stored it
        _store_before_documents(db, whole, text)
        migrate(db)
        from storage import find_upgrade

        assert find_upgrade.reword(db) == (2 if db.postgres else 0)
        assert find_upgrade.facet(db) == 2
        assert _find(db, words=("there",)) == ["a"]
        assert _find(db, words=("hi", "yo")) == ["a"]
        assert _find(db, words=("x\u19b0y",)) == ["a"]
        assert _find(db, words=("elsewhere",)) == ["b"]
        assert _find(db, words=("z\u19b0w",)) == ["b"]
        assert sorted(_find(db, words=("hi",))) == ["a", "b"]
        assert _find(db, words=("x",)) == [] and _find(db, words=("w",)) == []
        assert_exact(db)
    finally:
        db.close()


def test_the_texts_stored_before_their_previews_get_them(database_url: str) -> None:
    """A listed trace's input and output come from its texts' previews; a text stored
    without them (before schema 16) has them read from its span until the upgrade gives
    them theirs; once every text has previews, an LLM span with no text has none."""
    from storage import find_upgrade

    db = Database(database_url)
    try:
        migrate(db)
        call = _call("Yo")
        quiet = span_row(trace="b", span="b" * 16, content="q")._replace(llm_type="llm")
        SpanStore(db).upsert([call, quiet], WINDOW_MS)

        def ends() -> dict[str, tuple[str | None, str | None]]:
            traces = TraceSummaries(db).page("p", TraceFilter(), 10).traces
            return {t.trace_id: (t.input, t.output) for t in traces}

        assert ends() == {"a": ("Hi?", "Yo"), "b": (None, None)}
        with db.transaction() as tx:  # as a store upgraded to schema 16 finds its texts
            tx.execute("UPDATE span_texts SET previews = NULL")
            tx.execute("DELETE FROM schema_migrations WHERE version = ?", (find_upgrade.PREVIEWED,))
        assert ends() == {"a": ("Hi?", "Yo"), "b": (None, None)}
        # on SQLite the same row, given its previews: its rowid orders the text index's
        # newest (PostgreSQL's rows have none)
        which = "trace_id" if db.postgres else "id, trace_id"
        with db.transaction() as tx:
            (before,) = tx.query(f"SELECT {which} FROM span_texts")
        assert find_upgrade.preview(db) == 2
        with db.transaction() as tx:
            stored = tx.query(f"SELECT {which}, previews FROM span_texts")
        assert [tuple(row) for row in stored] == [(*before, '["Hi?","Yo"]')]
        assert ends() == {"a": ("Hi?", "Yo"), "b": (None, None)}
        assert find_upgrade.preview(db) == 0
    finally:
        db.close()


def test_an_upgraded_trace_s_next_call_gives_its_input_once_the_first_is_erased(
    database_url: str,
) -> None:
    """A store whose texts had no previews (a row each call, before schema 16): the
    upgrade gives its trace's ends theirs and forgets the other rows, so that the call
    that becomes the first when the first is erased is given its own."""
    from storage import find_upgrade

    db = Database(database_url)
    try:
        migrate(db)
        calls = [_model_call(n, 10 * int(n), said) for n, said in (("1", "one"), ("2", "two"))]
        SpanStore(db).upsert([*calls, _model_call("3", 30, "three")], 0)
        with db.transaction() as tx:  # as a store upgraded to schema 16 finds its texts
            tx.execute("UPDATE span_texts SET previews = NULL")
            tx.execute(
                "INSERT INTO span_texts (project_id, trace_id, span_id, start_day) "
                "VALUES (?, ?, ?, ?)",
                calls[1][:4],
            )
            tx.execute("DELETE FROM schema_migrations WHERE version = ?", (find_upgrade.PREVIEWED,))
        assert find_upgrade.preview(db) == 1
        _erase_the_first_call(db)
    finally:
        db.close()


def test_the_texts_stored_before_the_worker_split_their_words_get_its(
    database_url: str,
) -> None:
    """PostgreSQL kept the words its parser made of a text (before schema 18), some of
    which the `text` filter no longer looks up (a host name is one word to the parser):
    the upgrade gives each stored text the worker's words. On SQLite (FTS5) it records
    itself done."""
    from storage import find_upgrade

    db = Database(database_url)
    try:
        migrate(db)
        call = _call("See shop.example.com")
        SpanStore(db).upsert([call], WINDOW_MS)
        assert _find(db, words=("example",)) == ["a"]
        if db.postgres:  # as a store upgraded to schema 18 finds its texts
            with db.transaction() as tx:
                whole = "Hi?\nSee shop.example.com"
                tx.execute(
                    "UPDATE trace_texts SET body = ?, words = to_tsvector('simple', ?)",
                    (whole, whole),
                )
        assert _find(db, words=("example",)) == ([] if db.postgres else ["a"])
        assert find_upgrade.reword(db) == (1 if db.postgres else 0)
        assert _find(db, words=("example",)) == ["a"]
        assert _find(db, words=("shop", "com", "hi")) == ["a"]
        assert find_upgrade.reword(db) == 0
        assert_exact(db)
    finally:
        db.close()


def test_the_texts_an_earlier_build_wrote_before_the_index_upgrade_get_theirs(
    database_url: str,
) -> None:
    """A store whose texts an earlier build wrote (without previews; on PostgreSQL with
    its parser's words) before the traces stored earlier were indexed: the index's
    upgrade keeps them as they are, and the previews' and words' upgrades still walk."""
    from storage import find_upgrade

    db = Database(database_url)
    try:
        migrate(db, 12)
        long = "見" * 800  # 2,400 bytes: a word longer than PostgreSQL keeps
        call = _call(f"See shop.example.com {long}")
        SpanStore(db, find_index=False).upsert([call], WINDOW_MS)
        migrate(db, 19)
        _store_before_documents(db, call, f"Hi?\nSee shop.example.com {long}")  # as it was
        migrate(db)
        assert find_upgrade.upgrade(db) == 1
        find_upgrade.preview(db)
        find_upgrade.reword(db)
        assert find_upgrade.facet(db) == 0
        assert _find(db, words=("example",)) == ["a"]
        assert_exact(db)
    finally:
        db.close()


def test_the_traces_stored_before_their_documents_of_tokens_get_them(
    database_url: str,
) -> None:
    """A store of schema 20 (an attribute and span-name row of each trace): the
    migration drops them, and the walk at the worker's start makes each stored trace's
    documents of tokens, which the `attr` and `span_name` filters then find, once."""
    from storage import find_upgrade

    db = Database(database_url)
    try:
        migrate(db, 20)
        rows = [
            _indexed(span_row(trace=trace, span=span, content=content))
            for trace, span, content in (("a", "1", "y"), ("a", "2", "z"), ("b", "1", "x"))
        ]
        SpanStore(db, find_index=False).upsert(rows, WINDOW_MS)
        migrate(db)
        assert _find(db, attributes=(("retries", "3"),)) == []
        assert find_upgrade.facet(db) == 2
        assert _find(db, attributes=(("retries", "3"),)) == ["a"]
        assert _find(db, attributes=(("tenant", None),)) == ["b", "a"]
        assert _find(db, span_name="NAME X") == ["b"]
        assert _find(db, span_name="me z") == ["a"]
        assert find_upgrade.facet(db) == 0
        with db.transaction() as tx:  # its texts are not: no text index was written
            assert _stored_tokens(tx) == _expected(tx)[2]
    finally:
        db.close()


@pytest.mark.parametrize("walked", [False, True])
def test_a_span_name_filter_finds_the_traces_of_every_name_that_holds_it(
    database: Database, walked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`span_name` finds the traces with a span whose name holds it, in any case: by
    the tokens of the names that hold it when they are few, by a query of them when
    there are more than NAMES_MATCHED; none when no name holds it. Its matches drive
    the page, or (`walked`) each trace of the start index is checked."""
    if walked:
        monkeypatch.setattr(trace_query, "DRIVING_MATCHES", 0)
        monkeypatch.setattr(trace_query, "DRIVING_MATCHES_POSTGRES", 0)
    rows = [
        span_row(trace=f"{n:02x}", content=f"c{n}")._replace(name=f"Op {n}", start_ns=n)
        for n in range(NAMES_MATCHED + 6)
    ]
    SpanStore(database).upsert(rows, WINDOW_MS)
    every = [f"{n:02x}" for n in reversed(range(NAMES_MATCHED + 6))]

    def found(name: str) -> list[str]:
        traces = TraceSummaries(database).page("p", TraceFilter(span_name=name), 100).traces
        return [t.trace_id for t in traces]

    with database.transaction() as tx:
        assert name_tokens(tx, "p", "op") is None
        assert len(name_tokens(tx, "p", "op 1") or ()) == 11
    assert found("op") == every
    assert found("OP 1") == ["13", "12", "11", "10", "0f", "0e", "0d", "0c", "0b", "0a", "01"]
    assert found("op 7") == ["07"]
    assert found("op 99") == found("nothing") == []


@FUZZ
@given(st.lists(st.integers(-(2**63), 2**63 - 1)))
def test_a_documents_text_is_its_tokens_in_hex(tokens: list[int]) -> None:
    """A document's text is each token's 16 hex digits, a space apart, as SQLite's
    printf('%016x') writes them (what a span name's token is matched by); its bytes give
    its tokens back."""
    assert hex_tokens(packed(tokens)) == " ".join(map(hex_token, tokens))
    assert all(len(token) == 16 for token in hex_tokens(packed(tokens)).split())
    assert list(unpacked(packed(tokens))) == tokens


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["stringValue", "intValue", "boolValue", "zz"]),
        st.one_of(st.text(max_size=8), st.integers(-5, 5), st.booleans()),
        min_size=1,
        max_size=3,
    )
)
def test_a_values_json_text_hashes_as_its_pair_does(value: dict[str, Any]) -> None:
    """The hash of an AnyValue's JSON text (what the C row builder asks for) is the one
    its attribute's pair is indexed by, whatever the value holds (a text with a quote,
    an object of two members)."""
    attributes = orjson.dumps([{"key": "k", "value": value}]).decode()
    ((_, hashed), _) = attribute_pairs(attributes)
    assert text_hash(orjson.dumps(value).decode()) == hashed


@pytest.mark.parametrize(
    "values",
    [
        ({"doubleValue": -0.0}, {"doubleValue": 0.0}),
        ({"stringValue": 1}, {"stringValue": True}, {"stringValue": 1.0}),
        ({"intValue": "1"}, {"intValue": 1}, {"boolValue": True}),
    ],
)
def test_values_equal_in_python_are_hashed_by_their_own_text(values: tuple[Any, ...]) -> None:
    """Values Python holds equal whose string forms differ (-0.0 and 0.0; True, 1 and
    1.0 of a kind sent with another type than its own) each hash as their own text,
    whichever was hashed first, from a row's attributes and from their JSON text."""
    for ordered in (values, values[::-1]):
        attribute_hashes._hashes.clear()
        attribute_hashes._text_hashes.clear()
        for value in ordered:
            expected = attribute_hashes.value_hash(attribute_hashes.value_text(value) or "")
            attributes = orjson.dumps([{"key": "k", "value": value}]).decode()
            assert attribute_pairs(attributes)[0][1] == expected
            assert text_hash(orjson.dumps(value).decode()) == expected


def test_long_values_are_hashed_without_being_kept() -> None:
    """A model call's messages, hashed for the attribute index, are not kept for the
    next span (a worker's cache of 100,000 of them held 150-200 MB): the same hash, and
    only short values kept."""
    for n in range(50):
        value = {"stringValue": f'[{{"role": "user", "content": "question {n} {"x" * 2000}"}}]'}
        hashed = attribute_hashes.value_hash(value["stringValue"])
        assert text_hash(orjson.dumps(value).decode()) == hashed
        assert (
            attribute_pairs(orjson.dumps([{"key": "k", "value": value}]).decode())[0][1] == hashed
        )
    kept = max(
        (len(inner) for _, _, inner in attribute_hashes._hashes if isinstance(inner, str)),
        default=0,
    )
    assert kept <= attribute_hashes.KEPT_CHARS


@pytest.mark.parametrize("size", [10, 40_000])
def test_a_long_array_is_indexed_by_its_key_without_being_parsed(size: int) -> None:
    """An array or map whose JSON is over MAX_HASHED_JSON is indexed by its key alone,
    from a row's attributes and from its JSON text alike, and its text is not parsed
    (an array of a million zeros took the worker 350 MB); a short one by its value."""
    for value in (
        {"arrayValue": {"values": [{"intValue": "0"}] * size}},
        {"kvlistValue": {"values": [{"key": f"k{n}", "value": {"intValue": "0"}}
                                    for n in range(size)]}},
    ):  # fmt: skip
        text = orjson.dumps(value).decode()
        long = len(text) > attribute_hashes.MAX_HASHED_JSON
        assert long == (size > 10)
        ((_, from_pair), _) = attribute_pairs(orjson.dumps([{"key": "k", "value": value}]).decode())
        attribute_hashes._text_hashes.clear()
        tracemalloc.start()
        from_text = text_hash(text)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert from_text == from_pair
        assert (from_text == attribute_hashes.KEY_ONLY) == long
        if long:
            assert peak < len(text) // 10


def _under_resource(trace: str, service: str, environment: str, route: int = 1) -> bytes:
    """The canonical body of a span of `trace` that an OTel SDK sends under its resource
    (its content changes with `route`)."""
    resource = {
        "attributes": [
            {"key": "service.name", "value": {"stringValue": service}},
            {"key": "deployment.environment", "value": {"stringValue": environment}},
            {"key": "process.pid", "value": {"intValue": "4172"}},
        ]
    }
    routed = {"key": "http.route", "value": {"stringValue": f"/{route}"}}
    span = {"traceId": trace * 32, "spanId": "1" * 16, "name": "GET /orders", "kind": 2,
            "startTimeUnixNano": "1764000000000000000", "endTimeUnixNano": "1764000000000000009",
            "attributes": [routed]}  # fmt: skip
    request = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}
    return proto_json.convert_otlp(orjson.dumps(request)).payload


@pytest.mark.parametrize("builder", ["c", "python"])
def test_a_resources_attributes_find_its_spans_traces(database: Database, builder: str) -> None:
    """`attr=service.name=checkout-api`, `attr=deployment.environment`: a resource's
    attributes are its spans', whichever builder made the documents; a span replaced
    under another resource takes its trace out of the old one's."""
    send = partial(_send, SpanStore(database), builder)
    send(_under_resource("a", "checkout-api", "production"))
    send(_under_resource("b", "agent-app", "staging"))
    assert _find(database, attributes=(("service.name", "checkout-api"),)) == ["a" * 32]
    assert _find(database, attributes=(("process.pid", "4172"),)) == ["b" * 32, "a" * 32]
    assert _find(database, attributes=(("deployment.environment", None),)) == ["b" * 32, "a" * 32]
    assert _find(database, attributes=(("service.name", "billing"),)) == []
    assert_exact(database)
    send(_under_resource("a", "billing", "production", 2), received_ms=WINDOW_MS + 2)
    assert _find(database, attributes=(("service.name", "checkout-api"),)) == []
    assert _find(database, attributes=(("service.name", "billing"),)) == ["a" * 32]
    assert_exact(database)


def _send(store: SpanStore, builder: str, *bodies: bytes, received_ms: int = 1) -> None:
    """Store the bodies in one batch as the worker does, their documents of tokens made
    by the C row builder (`builder` "c") or in Python from the rows."""
    from genai.prices import Pricer
    from storage.span_genai import rows_with_views

    if builder == "c" and not span_rows_built():
        pytest.skip("the C row builder is not built")
    rows: list[SpanRow] = []
    documents: list[Any] = []
    for body in bodies:
        made, facets = rows_with_views(body, "p", received_ms, Pricer())
        assert (facets is not None) == span_rows_built()
        rows += made
        documents += facets or []
    store.upsert(store.prepared(rows, documents if builder == "c" else None), WINDOW_MS)


@pytest.mark.parametrize("builder", ["c", "python"])
def test_a_span_sent_again_under_another_resource_is_found_by_its_first(
    database: Database, builder: str
) -> None:
    """The same span sent again under another resource (its content leaves the resource
    out: an exporter restarted, retrying): received in the same millisecond (by another
    collector), within the window, after it, and twice in one batch, it is stored as it
    was, and the other resource finds nothing."""
    store = SpanStore(database)
    _send(store, builder, _under_resource("a", "checkout-api", "production"))
    _send(store, builder, _under_resource("a", "billing", "staging"))
    _send(store, builder, _under_resource("a", "billing", "staging"), received_ms=2)
    _send(store, builder, _under_resource("a", "billing", "staging"), received_ms=WINDOW_MS + 5)
    twice = (_under_resource("b", "agent-app", "production"), _under_resource("b", "x", "y"))
    _send(store, builder, *twice, received_ms=3)
    for service in ("billing", "x"):
        assert _find(database, attributes=(("service.name", service),)) == []
    assert _find(database, attributes=(("deployment.environment", "staging"),)) == []
    assert _find(database, attributes=(("service.name", "checkout-api"),)) == ["a" * 32]
    assert _find(database, attributes=(("service.name", "agent-app"),)) == ["b" * 32]
    assert store.trace("p", "a" * 32)[0]["resource"]["attributes"][0]["value"] == {
        "stringValue": "checkout-api"
    }
    assert_exact(database)


@pytest.mark.parametrize("builder", ["c", "python"])
def test_a_span_stored_before_its_first_send_is_found_by_the_first(
    database: Database, builder: str
) -> None:
    """The same span sent again under another resource reaches the store before its
    first send (a worker taking over a stopped one's entries: received later, within
    two windows): the first send takes the row's place (storage/resend.py), and the
    index follows, its resource found, the other's not."""
    store = SpanStore(database)
    _send(store, builder, _under_resource("a", "billing", "staging"), received_ms=50)
    _send(store, builder, _under_resource("a", "checkout-api", "production"), received_ms=1)
    again, first = _under_resource("b", "x", "y"), _under_resource("b", "agent-app", "production")
    _send(store, builder, again, received_ms=60)
    _send(store, builder, first, received_ms=2)
    for service in ("billing", "x"):
        assert _find(database, attributes=(("service.name", service),)) == []
    assert _find(database, attributes=(("service.name", "checkout-api"),)) == ["a" * 32]
    assert _find(database, attributes=(("service.name", "agent-app"),)) == ["b" * 32]
    assert_exact(database)


def span_rows_built() -> bool:
    """Whether the C row builder (and its documents of tokens) is built here."""
    from storage.span_genai import _MAKERS, _PLAN
    from storage.span_rows import FAST_ROWS

    return FAST_ROWS is not None and _PLAN is not None and _MAKERS is not None


def test_traces_indexed_before_their_resources_were_get_their_tokens(database: Database) -> None:
    """A store whose documents hold its spans' attributes alone (as builds before this
    one wrote them): the walk makes them anew with the resources'; run again, nothing."""
    from genai.prices import Pricer
    from storage import find_upgrade, trace_facets
    from storage.span_genai import rows_with_views

    rows, _ = rows_with_views(_under_resource("a", "checkout-api", "production"), "p", 1, Pricer())
    store = SpanStore(database)
    store.upsert(store.prepared(rows), WINDOW_MS)
    with database.transaction() as tx:
        tx.execute("DELETE FROM trace_facets")
        spans = [(r.project_id, r.trace_id, r.name, r.attributes, "{}") for r in rows]
        trace_facets.write(tx, trace_facets.documents_of(spans), [])
        tx.execute("DELETE FROM schema_migrations WHERE version = ?", (find_upgrade.RESOURCED,))
    assert _find(database, attributes=(("service.name", "checkout-api"),)) == []
    assert find_upgrade.resource(database) == 1
    assert _find(database, attributes=(("service.name", "checkout-api"),)) == ["a" * 32]
    assert_exact(database)
    assert find_upgrade.resource(database) == 0
