"""Span rows with their GenAI view's facts (genai/): what the summaries add up.

The worker calls `rows_with_views` on each queue entry's body. Where the C row builder
takes the body, it fills each span's facts as it builds the rows, by genai/view.py's
own tables (storage/_rows_genai.h), and leaves here only the pricing and the spans out
of the ordinary. Otherwise `with_views` reads the rows: most spans of most projects are
no model call, and a row is read only when its SDK kind is one of the native agent
kinds, or when its attributes' text names an attribute of an LLM convention (the
canonical text writes every key as `"key":"…"`, and a quote inside a value is escaped,
so a value cannot pass for a key). The others cost one regular expression's scan.
"""

from __future__ import annotations

import logging
import re

import orjson

from genai import conventions, view_of
from genai.prices import Pricer
from genai.view import GenAIView, reading_plan, user_and_session_of
from proto_json import fastpath
from storage.attribute_hashes import text_hash
from storage.llm_text import EVENT_MARKER, gen_ai_events
from storage.span_rows import FAST_ROWS, SpanRow, rows_of_json
from storage.trace_facets import Facets, key_token, span_name_token

log = logging.getLogger("spangate.worker")

#: What makes a span one of the conventions' that genai/conventions.py reads (a row
#: without any is described by none of them, but by its native kind): an attribute whose
#: name starts with one of MARKED_PREFIXES or is one of MARKED_NAMES.
MARKED_PREFIXES = (
    "gen_ai.",
    "llm.",
    "traceloop.",
    "ai.model.",
    "ai.usage.",
    "ai.prompt",
    "ai.response.",
)
MARKED_NAMES = (
    "openinference.span.kind",
    "embedding.model_name",
    "ai.operationId",
    "input.value",
    "output.value",
)
#: The same test on an attributes' text: one regular expression, which scans the text
#: once, where a search a name scanned the few KB of a prompt seven times.
_MARKED = re.compile(
    '"key":"(?:'
    + "|".join(
        [re.escape(prefix) for prefix in MARKED_PREFIXES]
        + [re.escape(name) + '"' for name in MARKED_NAMES]
    )
    + ")"
)
_FIRST_FIELDS = 20  # SpanRow's fields before the GenAI ones
_COST = SpanRow._fields.index("cost_usd")  # then cost_source, the last


def described(kind: str, attributes: str, events: str) -> bool:
    """Whether a convention may describe a span of this SDK kind, attributes and events
    (their stored JSON texts): a cheap test, no parsing."""
    if kind in conventions.NATIVE_TYPES:
        return True
    return _MARKED.search(attributes) is not None or EVENT_MARKER in events


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
    return view_of(orjson.loads(attributes), gen_ai_events(events), name, kind, messages=False)


def with_view(row: SpanRow, pricer: Pricer) -> SpanRow:
    """The row with its view's facts (the same row when no convention describes it).
    A conversation id stands for the session a span gives none of."""
    try:
        view = stored_view(row.name, row.kind, row.attributes, row.events)
    except Exception:  # a span is stored whatever its view makes of it
        log.exception("span's GenAI view failed; stored without it")
        return row
    if view is None:
        return with_user(row)
    stored = SpanRow._make((*row[:_FIRST_FIELDS], *facts(view, pricer)))
    if row.session_id is None and view.session_id is not None:
        stored = stored._replace(session_id=view.session_id)
    return stored


def with_views(rows: list[SpanRow], pricer: Pricer) -> list[SpanRow]:
    """`rows`, each described one replaced by `with_view`'s, each other by `with_user`'s
    (in place)."""
    for at, row in enumerate(rows):
        if described(row.kind, row.attributes, row.events):
            rows[at] = with_view(row, pricer)
        else:
            rows[at] = with_user(row)
    return rows


#: The user and session attributes as the canonical text writes their keys.
_USER_KEYS = tuple(f'"key":"{key}"' for key in conventions.USER)
_SESSION_KEYS = tuple(f'"key":"{key}"' for key in conventions.SESSION)


def with_user(row: SpanRow) -> SpanRow:
    """A row no convention describes, with the user its attributes name (`user.id`,
    `enduser.id`) and, when it has none, the session (`gen_ai.conversation.id`, as for
    a described span); the same row when they name neither. A trace's user is the
    least of its spans' (storage/summary_genai.py), whichever spans carry it."""
    user, session = stored_ids(row.attributes, row.session_id is None)
    if session is not None:
        return row._replace(user_id=user, session_id=session)
    return row if user is None else row._replace(user_id=user)


def stored_ids(attributes: str, session: bool) -> tuple[str | None, str | None]:
    """The user and (when `session`) the session a span's attributes (their stored
    JSON text) name, as its view reads them; None for each they name none of."""
    keys = (*_USER_KEYS, *_SESSION_KEYS) if session else _USER_KEYS
    if not any(key in attributes for key in keys):
        return None, None
    try:
        user, named = user_and_session_of(orjson.loads(attributes))
    except Exception:  # a span is stored whatever its attributes make of it
        log.exception("span's user failed; stored without it")
        return None, None
    return user, named if session else None


def _plan() -> object:
    fields, keys, types, native = reading_plan()
    assert FAST_ROWS is not None
    return FAST_ROWS.genai_plan((fields, keys, types, MARKED_PREFIXES, MARKED_NAMES, native))


#: genai/view.py's reading tables, for the C row builder where it was built (and not
#: turned off: SPANGATE_PURE_PYTHON=storage._rows_genai, to measure what it buys).
_PLAN = None if FAST_ROWS is None or fastpath.turned_off("storage._rows_genai") else _plan()


#: What the C row builder makes the attribute index's tokens with (storage/_rows_tokens.h;
#: SPANGATE_PURE_PYTHON=storage._rows_tokens leaves them to Python, to measure what it buys).
_MAKERS = (
    None if fastpath.turned_off("storage._rows_tokens") else (text_hash, key_token, span_name_token)
)


def rows_with_views(
    body: bytes, project_id: str, received_ms: int, pricer: Pricer, facets: bool = True
) -> tuple[list[SpanRow], list[Facets] | None]:
    """`with_views(rows_of_json(...))`, and (when `facets`: the store keeps the
    attribute index) the documents of tokens of their traces where the C row builder
    made them: where it takes the body, it fills the facts of each span's view as it
    builds the rows; here the rows it filled are priced, and those it left are read."""
    if _PLAN is not None and FAST_ROWS is not None:
        makers = _MAKERS if facets else None
        built = FAST_ROWS.span_rows_json(body, project_id, received_ms, SpanRow, _PLAN, makers)
        if built is not None:
            rows: list[SpanRow]
            rows, priced, left, made = built
            for at in priced:
                rows[at] = _priced(rows[at], pricer)
            for at in left:
                rows[at] = with_views([rows[at]], pricer)[0]
            given = None if made is None else [(project_id, t, tokens) for t, tokens in made]
            return rows, given
    return with_views(rows_of_json(body, project_id, received_ms), pricer), None


def _priced(row: SpanRow, pricer: Pricer) -> SpanRow:
    """A row whose facts are filled (a model and tokens among them), with its cost."""
    cost, source = pricer.usage_cost(row)
    return row if cost is None else SpanRow._make((*row[:_COST], cost, source))
