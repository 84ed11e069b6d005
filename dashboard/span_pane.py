"""A span's attributes as its details pane shows them: each value once, readable.

A long text sent in several attributes (an 8 KB system prompt in three of them) is
shown at its first, and the others say where; an attribute that the Messages view
above already shows is folded shut under a line saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from markupsafe import Markup

from dashboard.span_text import FOLD_CHARS, folded, json_html, value_html
from dashboard.waterfall import plain
from genai.conventions import SYSTEM_INSTRUCTIONS
from genai.messages import MAX_CONTENT, was_cut

_MESSAGE_FIELDS = ("inputMessages", "outputMessages")


def message_sources(sources: Mapping[str, str] | None) -> tuple[str, ...]:
    """The attributes (or indexed prefixes, `llm.input_messages.`) that messages came
    from."""
    if not sources:
        return ()
    found = []
    for field in _MESSAGE_FIELDS:
        source = sources.get(field)
        if source:
            found.append(source[:-1] if source.endswith(".N") else source)
    if "inputMessages" in sources:  # read with the input messages, when there are any
        found.append(SYSTEM_INSTRUCTIONS)
    return tuple(found)


def message_texts(view: Mapping[str, Any] | None) -> dict[str, str]:
    """The long texts of a span's messages (as the pane shows them above), each to
    the role of its first message."""
    if not view:
        return {}
    texts: dict[str, str] = {}
    for message in [*view["inputMessages"], *view["outputMessages"]]:
        content = message.get("content")
        if content is not None and len(content) > FOLD_CHARS:
            texts.setdefault(content, message["role"])
    return texts


def messages_cut(view: Mapping[str, Any] | None) -> bool:
    """Whether any message of a span's view was cut (genai/messages.py: MAX_CONTENT)."""
    if not view:
        return False
    return any(
        was_cut(message.get("content"))
        for message in [*view["inputMessages"], *view["outputMessages"]]
    )


#: A conversation longer than this folds its history (`conversation_ends`).
SHOWN_MESSAGES = 10
#: What stays open of a folded conversation: its leading instructions, its last turns.
OPEN_INSTRUCTIONS, OPEN_TURNS = 2, 6


def conversation_ends(messages: list[Mapping[str, Any]]) -> tuple[int, int]:
    """Where a conversation's folded history starts and ends (messages[first:last]):
    none for a short one; else all but its leading system (or developer) messages, at
    most OPEN_INSTRUCTIONS, and its last OPEN_TURNS. An agent's 70th call sends the 140
    messages before it, and what it answered came after them."""
    if len(messages) <= SHOWN_MESSAGES:
        return len(messages), len(messages)
    first = 0
    while first < OPEN_INSTRUCTIONS and messages[first].get("role") in ("system", "developer"):
        first += 1
    return first, len(messages) - OPEN_TURNS


def _is_source(key: str, sources: tuple[str, ...]) -> bool:
    return any(key == s or (s.endswith(".") and key.startswith(s)) for s in sources)


def _other_html(value: Any) -> Markup:
    """A value that is no string: JSON, indented when nested."""
    if isinstance(value, dict | list):
        return json_html(value)
    text = orjson.dumps(value).decode()
    return folded(Markup('<div class="text">{}</div>').format(text), len(text))


def attribute_rows(
    pairs: list[dict[str, Any]],
    sources: tuple[str, ...] = (),
    messages: Mapping[str, str] | None = None,
    cut: bool = False,
) -> list[tuple[str, Markup]]:
    """(key, value as HTML) for a list of OTLP attributes (`messages`: the long texts
    the messages above show, by role; `cut`: whether any of them is cut, so that the
    attributes they came from hold more than they show)."""
    messages = messages or {}
    first_key: dict[str, str] = {}  # a long text -> the key it was first shown under
    rows = []
    for pair in pairs:
        key = str(pair.get("key", ""))
        value = plain(pair.get("value", {}))
        if not isinstance(value, str):
            rows.append((key, _other_html(value)))
            continue
        long = len(value) > FOLD_CHARS
        if long and value in messages:
            html = Markup('<p class="muted same">Same text as the {} message above</p>').format(
                messages[value]
            )
        elif long and value in first_key:
            html = Markup('<p class="muted same">Same text as <code>{}</code> above</p>').format(
                first_key[value]
            )
        elif _is_source(key, sources) and cut and len(value) > MAX_CONTENT:
            html = Markup(
                '<details class="shown-above" open><summary>The whole text of the messages '
                "above, which show {} characters a message ({} characters)</summary>{}</details>"
            ).format(f"{MAX_CONTENT:,}", f"{len(value):,}", value_html(value))
        elif _is_source(key, sources):
            html = Markup(
                '<details class="shown-above"><summary>Shown as messages above '
                "({} characters)</summary>{}</details>"
            ).format(f"{len(value):,}", value_html(value))
        else:
            html = value_html(value)
        if long:
            first_key.setdefault(value, key)
        rows.append((key, html))
    return rows
