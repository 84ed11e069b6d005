"""Span rows with their GenAI view's facts (genai/): what the summaries add up.

The worker calls `with_views` on the rows it decoded, before it writes them. Most spans
of most projects are no model call: a row is read only when its SDK kind is one of the
native agent kinds, or when its attributes' text names an attribute of an LLM
convention (the canonical text writes every key as `"key":"…"`, and a quote inside a
value is escaped, so a value cannot pass for a key). The others cost a few substring
searches and stay as they are.
"""

from __future__ import annotations

import logging
import re

import orjson

from genai import conventions, view_of
from genai.prices import Pricer
from genai.view import GenAIView
from storage.span_rows import SpanRow

log = logging.getLogger("spangate.worker")

#: An attribute of the conventions genai/conventions.py reads that makes a span one of
#: theirs (a row without any is described by none of them, but by its native kind): one
#: regular expression, which scans the text once, where a search a name scanned the few
#: KB of a prompt seven times.
_MARKED = re.compile(
    r'"key":"(?:gen_ai\.|llm\.|traceloop\.|openinference\.span\.kind"'
    r'|embedding\.model_name"|ai\.(?:operationId"|model\.|usage\.|prompt|response\.))'
)
_EVENT_MARKER = '"name":"gen_ai.'
_FIRST_FIELDS = 20  # SpanRow's fields before the GenAI ones


def described(kind: str, attributes: str, events: str) -> bool:
    """Whether a convention may describe a span of this SDK kind, attributes and events
    (their stored JSON texts): a cheap test, no parsing."""
    if kind in conventions.NATIVE_TYPES:
        return True
    return _MARKED.search(attributes) is not None or _EVENT_MARKER in events


def facts(view: GenAIView, pricer: Pricer) -> tuple[object, ...]:
    """The values of SpanRow's GenAI fields (after its first 20) that a view gives."""
    cost, source = pricer.cost(view)
    return (
        view.type,
        view.name,
        view.model,
        view.provider,
        view.user_id,
        view.input_tokens,
        view.output_tokens,
        view.total_tokens,
        view.cache_read_tokens,
        view.cache_write_tokens,
        view.reasoning_tokens,
        cost,
        source,
    )


def stored_view(name: str, kind: str, attributes: str, events: str) -> GenAIView | None:
    """The view of a span as stored (its name, SDK kind, attributes' and events'
    texts), without its messages: the store keeps none of them (the pages read them
    from the attributes)."""
    read = (lambda: orjson.loads(events)) if _EVENT_MARKER in events else None
    return view_of(orjson.loads(attributes), read, name, kind, messages=False)


def with_view(row: SpanRow, pricer: Pricer) -> SpanRow:
    """The row with its view's facts (the same row when no convention describes it).
    A conversation id stands for the session a span gives none of."""
    try:
        view = stored_view(row.name, row.kind, row.attributes, row.events)
    except Exception:  # a span is stored whatever its view makes of it
        log.exception("span's GenAI view failed; stored without it")
        return row
    if view is None:
        return row
    stored = SpanRow._make((*row[:_FIRST_FIELDS], *facts(view, pricer)))
    if row.session_id is None and view.session_id is not None:
        stored = stored._replace(session_id=view.session_id)
    return stored


def with_views(rows: list[SpanRow], pricer: Pricer) -> list[SpanRow]:
    """`rows`, each described one replaced by `with_view`'s (in place)."""
    for at, row in enumerate(rows):
        if described(row.kind, row.attributes, row.events):
            rows[at] = with_view(row, pricer)
    return rows
