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

import orjson

from genai import conventions, view_of
from genai.prices import Pricer
from genai.view import GenAIView
from storage.span_rows import SpanRow

log = logging.getLogger("spangate.worker")

#: Key prefixes of the conventions genai/conventions.py reads (a row without any is
#: described by none of them, but by its native kind).
_MARKERS = tuple(
    f'"key":"{prefix}'
    for prefix in (
        "gen_ai.",
        "llm.",
        "openinference.span.kind",
        "traceloop.",
        "ai.operationId",
        "ai.model.",
        "embedding.model_name",
    )
)
_EVENT_MARKER = '"name":"gen_ai.'


def described(kind: str, attributes: str, events: str) -> bool:
    """Whether a convention may describe a span of this SDK kind, attributes and events
    (their stored JSON texts): a cheap test, no parsing."""
    if kind in conventions.NATIVE_TYPES:
        return True
    return any(marker in attributes for marker in _MARKERS) or _EVENT_MARKER in events


def facts(view: GenAIView, pricer: Pricer) -> dict[str, object]:
    """The row fields a view sets (SpanRow's GenAI fields)."""
    cost, source = pricer.cost(view)
    return {
        "llm_type": view.type,
        "llm_name": view.name,
        "model": view.model,
        "provider": view.provider,
        "user_id": view.user_id,
        "input_tokens": view.input_tokens,
        "output_tokens": view.output_tokens,
        "total_tokens": view.total_tokens,
        "cache_read_tokens": view.cache_read_tokens,
        "cache_write_tokens": view.cache_write_tokens,
        "reasoning_tokens": view.reasoning_tokens,
        "cost_usd": cost,
        "cost_source": source,
        "input_preview": view.input_preview,
        "output_preview": view.output_preview,
    }


def stored_view(name: str, kind: str, attributes: str, events: str) -> GenAIView | None:
    """The view of a span as stored: its name, SDK kind, attributes' and events' texts."""
    read = (lambda: orjson.loads(events)) if _EVENT_MARKER in events else None
    return view_of(orjson.loads(attributes), read, name, kind)


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
    found = facts(view, pricer)
    if row.session_id is None and view.session_id is not None:
        found["session_id"] = view.session_id
    return row._replace(**found)  # type: ignore[arg-type]


def with_views(rows: list[SpanRow], pricer: Pricer) -> list[SpanRow]:
    """`rows`, each described one replaced by `with_view`'s (in place)."""
    for at, row in enumerate(rows):
        if described(row.kind, row.attributes, row.events):
            rows[at] = with_view(row, pricer)
    return rows
