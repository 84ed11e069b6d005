"""A batch's LLM texts as documents of a trace's day, each word once, bounded."""

from __future__ import annotations

import orjson
import pytest

from storage import trace_texts
from storage.span_rows import SpanRow
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
    word once; another day or trace has its own; each call keeps its previews."""
    rows = [
        _call("a", "1", "Where is my order?", "Which order?"),
        _call("a", "2", "Where is my order? Order 42", "Order 42 ships today"),
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
        ("a", "2", ["Where is my order? Order 42", "Order 42 ships today"]),
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
