"""The `text` filter on SQLite pages exactly under every sort, whichever way it is
answered: driving the page from FTS5, or checking walked traces against the set of a
word's newest texts and, below that set, FTS5 by rowid; texts stored out of the sort's
order, replaced, erased and removed by retention."""

from __future__ import annotations

import re
import sqlite3
import tempfile
from datetime import date
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from storage import index_filters, trace_query
from storage.database import Database
from storage.erasure import Eraser
from storage.retention import remove_days_before
from storage.schema import migrate
from storage.span_rows import SpanRow
from storage.spans import SpanStore
from storage.text_words import TOKENIZE, WORD, joined
from storage.trace_list import Cursor, TraceFilter, TraceOrder, TraceSummaries
from storage.trace_query import SORTS
from tests.fuzz import FUZZ
from tests.storage.rows import span_row

WINDOW_MS = 1_200_000
#: Words whose LIKE patterns meet each other's (`alpha` is in `alphas`), in any case.
SAID = ["alpha", "Alpha bravo", "alphas", "bravo", "ALPHA charlie", "charlie bravo alpha"]
ASKED = [("alpha",), ("alpha", "bravo"), ("alphas",), ("charlie", "alpha")]


def _llm(trace: int, span: int, said: str, start: int, end: int | None, day: str) -> SpanRow:
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": said}]}]
    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.output.messages", "value": {"stringValue": orjson.dumps(answer).decode()}},
    ]
    row = span_row(
        trace=f"{trace:032x}", span=f"{span:016x}", day=day, content="y", start=start, end=end
    )
    return row._replace(attributes=orjson.dumps(attributes).decode())


_SPAN = st.tuples(
    st.integers(0, 7),  # trace
    st.integers(0, 2),  # span
    st.sampled_from(SAID),
    st.integers(0, 4),  # start: ties between traces
    st.one_of(st.none(), st.integers(5, 9)),  # end: some traces have no duration
    st.sampled_from(["2026-11-23", "2026-11-24"]),
)


def _words_of(body: str) -> set[str]:
    return set(re.findall("[a-z0-9]+", body.lower()))


def _pages(db: Database, filters: TraceFilter, order: TraceOrder) -> list[str]:
    """Every trace of the list, read two at a time through its cursors; read back from
    the last page through each page's previous cursor, the same pages."""
    summaries, pages, after = TraceSummaries(db), list[list[str]](), None
    while True:
        page = summaries.page("p", filters, 2, after, ends=False, order=order)
        pages.append([trace.trace_id for trace in page.traces])
        assert (page.previous is None) == (after is None or not page.traces)
        if page.next is None:
            break
        after = Cursor.decode(page.next.encode())
    back, before = [pages[-1]], page.previous
    while before is not None:
        page = summaries.page("p", filters, 2, Cursor.decode(before.encode()), ends=False)
        back.append([trace.trace_id for trace in page.traces])
        before = page.previous
        # the cursor it begins after opens the same page reading forward (the export's)
        forward = summaries.page("p", filters, 2, page.at, ends=False, order=order)
        assert forward.traces == page.traces and (page.at is None) == (before is None)
    if pages[-1]:  # past the last trace (all read): nothing to read back from
        assert back[::-1] == pages
    return [trace for page_traces in pages for trace in page_traces]


def _assert_pages_exact(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    with db.transaction() as tx:
        texts = tx.query("SELECT trace_id, body FROM trace_texts WHERE project_id = 'p'")
    orders = [TraceOrder(sort, descending) for sort in SORTS for descending in (True, False)]
    every = {order: _pages(db, TraceFilter(), order) for order in orders}
    for words in ASKED:
        having = {
            trace
            for trace in {t for t, _ in texts}
            if all(any(w in _words_of(b) for t2, b in texts if t2 == trace) for w in words)
        }
        for order in orders:
            expected = [trace for trace in every[order] if trace in having]
            for newest in (1, 1000):  # the set's edge among the texts, or below all
                monkeypatch.setattr(index_filters, "NEWEST_TEXTS", newest)
                for drive in (0, 10**9):  # walked, or driven by the first word
                    monkeypatch.setattr(trace_query, "DRIVING_MATCHES", drive)
                    found = _pages(db, TraceFilter(words=words), order)
                    assert found == expected, (words, order, newest, drive)


@settings(FUZZ, max_examples=max(1, FUZZ.max_examples // 4))  # each pages ~400 times
@given(st.lists(st.lists(_SPAN, min_size=1, max_size=6), min_size=1, max_size=4), st.booleans())
def test_text_pages_are_exact_under_every_sort(
    batches: list[list[tuple[Any, ...]]], erase: bool
) -> None:
    """Batches of LLM spans (texts stored out of their traces' order, spans sent again
    after the window with other words), then an erasure and a retention: each page of
    the `text` filter is the unfiltered list's matching traces, in its order."""
    with tempfile.TemporaryDirectory() as work, pytest.MonkeyPatch.context() as monkeypatch:
        db = Database(f"sqlite:///{work}/spans.db")
        try:
            migrate(db)
            store = SpanStore(db)
            for at, batch in enumerate(batches):
                rows = [_llm(*span) for span in batch]
                store.upsert([r._replace(received_ms=at * 2 * WINDOW_MS) for r in rows], WINDOW_MS)
            _assert_pages_exact(db, monkeypatch)
            if erase:
                Eraser(db, "p").erase(Eraser(db, "p").trace(f"{batches[0][0][0]:032x}"))
                _assert_pages_exact(db, monkeypatch)
            remove_days_before(db, date(2026, 11, 24))
            _assert_pages_exact(db, monkeypatch)
        finally:
            db.close()


@FUZZ
@example("\u19b0 a\u19b0b \u0130 stra\u00dfe")
@given(
    st.text(
        st.one_of(st.characters(codec="utf-8"), st.sampled_from('aZ9 -_"*^:\u19b0\u0130\u00df')),
        max_size=24,
    )
)
def test_each_word_of_a_text_is_a_query_that_finds_it(text: str) -> None:
    """Whatever a text holds, each word the filter splits from it (the dashboard's
    pattern) is an FTS5 query that runs and finds the text as the worker stores it (its
    words); and as an earlier build stored it (whole) where FTS5's tokenizer splits the
    text where str.isalnum() does, but for letters it takes for no letter (FTS5 keeps
    a run of unassigned or private-use characters in a token, where no word is). A
    word of only characters FTS5 takes for none (New Tai Lue's vowel signs, which are
    letters to Python) finds no text."""
    connection = sqlite3.connect(":memory:")
    connection.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, detail=none, tokenize={TOKENIZE})")
    connection.execute("INSERT INTO t (rowid, body) VALUES (1, ?), (2, ?)", (joined(text), text))
    whole = [(2,)] if all(ch.isascii() or ch.isalnum() or ch.isspace() for ch in text) else []
    for word in WORD.findall(text):
        found = connection.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid", (index_filters.fts5_word(word),)
        ).fetchall()
        if not index_filters.fts5_tokens(word):
            assert found == [], word
            continue
        assert found == [(1,), *whole] or found == [(1,), (2,)], word
