"""A batch's LLM texts as documents of a trace's day, each word once, bounded."""

from __future__ import annotations

import orjson
import pytest

from storage import trace_texts
from storage.database import Database
from storage.span_rows import SpanRow
from storage.spans import SpanStore
from storage.text_words import joined
from tests.storage.rows import span_row


def _call(trace: str, span: str, question: str, answer: str, day: str = "2026-11-23") -> SpanRow:
    def said(role: str, text: str) -> str:
        return orjson.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}]).decode()

    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": said("user", question)}},
        {"key": "gen_ai.output.messages", "value": {"stringValue": said("assistant", answer)}},
    ]
    return span_row(trace=trace, span=span, content=span, day=day)._replace(
        attributes=orjson.dumps(attributes).decode(), llm_type="llm"
    )


def test_a_batch_gives_a_document_a_trace_and_day_of_its_words_once() -> None:
    """Calls that repeat the conversation give their trace's day one document, each
    word once; another day or trace has its own; the first and last calls of a trace's
    day keep their previews, not the calls between."""
    rows = [
        _call("a", "1", "Where is my order?", "Which order?"),
        _call("a", "2", "Where is my order? Order 42", "Order 42 ships today"),
        _call("a", "5", "Where is my order?", "Order 42 ships today"),
        _call("a", "3", "Hello again", "Hi", day="2026-11-24"),
        _call("b", "1", "Hello", "Hi there"),
        span_row(trace="a", span="4", content="4"),  # no model call: no text
    ]
    previews, documents = trace_texts.texts_of(rows)
    assert documents == [
        ("p", "a", "2026-11-23", "where is my order which 42 ships today"),
        ("p", "a", "2026-11-24", "hello again hi"),
        ("p", "b", "2026-11-23", "hello hi there"),
    ]
    assert [(p[1], p[2], orjson.loads(p[4])) for p in previews] == [
        ("a", "1", ["Where is my order?", "Which order?"]),
        ("a", "5", ["Where is my order?", "Order 42 ships today"]),
        ("a", "3", ["Hello again", "Hi"]),
        ("b", "1", ["Hello", "Hi there"]),
    ]


def test_a_documents_texts_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace's day whose texts pass MAX_TEXT characters is more documents, each of
    texts within it (but for one text alone); together they hold every word."""
    monkeypatch.setattr(trace_texts, "MAX_TEXT", 40)
    rows = [_call("a", str(n), f"question{n} " * 3, f"answer{n}") for n in range(6)]
    _, documents = trace_texts.texts_of(rows)
    assert len(documents) > 1
    assert all(len(body) <= 40 for *_, body in documents)
    every = {word for *_, body in documents for word in body.split()}
    assert every == {w for n in range(6) for w in joined(f"question{n} answer{n}").split()}


def _conversation(trace: str, turns: list[tuple[str, str]]) -> list[SpanRow]:
    """A model call a turn, each input holding the conversation so far."""

    def messages(pairs: list[tuple[str, str]]) -> str:
        return orjson.dumps(
            [{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in pairs]
        ).decode()

    rows = []
    so_far: list[tuple[str, str]] = [("system", "Be brief.")]
    for n, (question, answer) in enumerate(turns):
        so_far.append(("user", question))
        attributes = [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": messages(so_far)}},
            {
                "key": "gen_ai.output.messages",
                "value": {"stringValue": messages([("assistant", answer)])},
            },
        ]
        rows.append(
            span_row(trace=trace, span=str(n), content=str(n))._replace(
                attributes=orjson.dumps(attributes).decode(), llm_type="llm"
            )
        )
        so_far.append(("assistant", answer))
    return rows


def test_a_conversations_words_are_read_once_a_turn() -> None:
    """Each call of a conversation begins with the text of the call before: its
    document holds what each call adds, and every word of every call."""
    turns = [(f"question{n} about order{n}", f"answer{n}") for n in range(30)]
    rows = _conversation("a", turns)
    _, documents = trace_texts.texts_of(rows)
    texts = [trace_texts.text_and_previews("llm", r.attributes, r.events) for r in rows]
    every = {word for given in texts if given for word in joined(given[0]).split()}
    assert {word for *_, body in documents for word in body.split()} == every
    read = sum(len(given[0]) for given in texts if given)
    added = len(texts[-1][0]) if texts[-1] else 0
    assert read > 10 * added  # the calls' texts repeat one another
    assert sum(len(part) for part in _parts(texts)) == added


def _parts(texts: list[tuple[str, str] | None]) -> list[str]:
    earlier: list[str] = []
    parts = []
    for given in texts:
        assert given is not None
        parts.append(trace_texts._added(given[0], earlier))
        earlier.append(given[0])
    return parts


@pytest.mark.parametrize(
    ("earlier", "text", "added"),
    [
        (["Where is order"], "Where is order42", "Where is order42"),  # a word runs on
        (["Where is order"], "Where is order\n42", "\n42"),
        (["a\nb", "a"], "a\nb\nc", "\nc"),  # the longest it begins with
        (["a\nb"], "a\nb", ""),
        (["x"], "a\nb", "a\nb"),
    ],
)
def test_what_a_text_adds(earlier: list[str], text: str, added: str) -> None:
    assert trace_texts._added(text, earlier) == added


def test_a_conversation_made_anew_reads_each_call_once(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trace's day made anew from its stored rows (after a replaced span) reads its
    calls in the order they started, so that each adds only what it says anew; its
    words are found as before."""
    rows = _conversation("a", [(f"question{n}", f"answer{n}") for n in range(5)])
    rows = [  # ids in the reverse of the calls' order: the store's key order
        row._replace(span_id=f"{9 - n:016x}", start_ns=row.start_ns + n)
        for n, row in enumerate(rows)
    ]
    SpanStore(database).upsert(list(reversed(rows)), 10**12)
    read: list[str] = []
    monkeypatch.setattr(trace_texts, "joined", lambda text: read.append(text) or joined(text))
    with database.transaction() as tx:
        trace_texts.rebuild(tx, [("p", "a", rows[0].start_day)])
        bodies = [body for (body,) in tx.query("SELECT body FROM trace_texts")]
    said = [trace_texts.text_and_previews("llm", row.attributes, row.events) for row in rows]
    last = said[-1][0] if said[-1] else ""
    assert sum(map(len, read)) <= len(last) + len(rows)  # and a line between parts
    assert bodies == [joined(last)]


def test_a_text_is_compared_with_its_days_latest_texts_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call whose text begins with one read more than _LOOK_BACK texts before is read
    whole (each text is compared with a few, not with every earlier one)."""
    first, later = _conversation("a", [("question0", "answer0"), ("question1", "answer1")])
    fillers = [_call("a", f"f{n}", f"filler{n}", "x") for n in range(trace_texts._LOOK_BACK)]
    read: list[str] = []
    monkeypatch.setattr(trace_texts, "joined", lambda text: read.append(text) or joined(text))
    trace_texts.texts_of([first, *fillers, later])
    assert "".join(read).count("Be brief.") == 2
    read.clear()
    trace_texts.texts_of([first, *fillers[1:], later])
    assert "".join(read).count("Be brief.") == 1
